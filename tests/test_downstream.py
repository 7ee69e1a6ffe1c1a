"""The ``downstream`` evaluator: 12 classifiers trained on synthetic rows, tested on real ones."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.ensemble import BaggingClassifier, ExtraTreesClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bench.core.encoding import TabularEncoder
from bench.core.data import Column, ColumnKind, LabelledData, Schema
from bench.api.contracts import EvalContext, MetricKind
from bench.api.registry import EVALUATORS
from evaluators import downstream, fitpool
from evaluators.downstream import (
    CLASSIFIER_NAMES,
    ClassifierSpec,
    DownstreamClassifiers,
    DownstreamWarning,
    hard_label_metrics,
)

SOUND, PAPER = EvalContext(protocol="sound"), EvalContext(protocol="paper")

COLUMNS = (
    Column("a", ColumnKind.NUMERICAL, bounds=(-8.0, 8.0)),
    Column("b", ColumnKind.NUMERICAL, bounds=(-8.0, 8.0)),
    Column("colour", ColumnKind.CATEGORICAL, categories=("red", "green", "blue", "grey")),
    Column("flag", ColumnKind.BINARY),
    Column("constant", ColumnKind.NUMERICAL, bounds=(0.0, 10.0)),
)
BINARY = Schema(COLUMNS, "label", ("no", "yes"))
THREE = Schema(COLUMNS, "label", ("x", "y", "z"))


def draw(schema: Schema, n: int, seed: int, separation: float = 1.0, purity: float = 0.8) -> LabelledData:
    """Every feature but the constant one carries the class: Gaussian means ±separation, the
    category equals the class with probability ``purity`` (else uniform), the flag is
    (class > 0) with probability (1 + purity) / 2."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, schema.n_classes, n)
    centre = separation * (2 * y / max(schema.n_classes - 1, 1) - 1)
    colour = np.where(rng.random(n) < purity, y, rng.integers(0, 4, n))
    flag = np.where(rng.random(n) < (1 + purity) / 2, y > 0, y == 0)
    x = np.column_stack([rng.normal(centre, 1.0), rng.normal(-centre, 1.0), colour, flag, np.full(n, 5.0)]).astype(
        np.float32
    )
    x[:, :2] = np.clip(x[:, :2], -8, 8)
    return LabelledData(x, y, schema)


@pytest.fixture(scope="module")
def binary_data():
    return draw(BINARY, 300, seed=0), draw(BINARY, 400, seed=1)


@pytest.fixture(scope="module")
def sound_binary(binary_data):
    train, test = binary_data
    return DownstreamClassifiers(in_process=True).evaluate(train, train, test, SOUND).metrics


@pytest.fixture(scope="module")
def paper_binary(binary_data):
    train, test = binary_data
    return DownstreamClassifiers(in_process=True).evaluate(train, train, test, PAPER)


def declared_last_components(values: dict[str, float]) -> set[str]:
    return {name.rsplit(".", 1)[-1] for name in values}


def test_registered_and_every_returned_name_is_declared(sound_binary, paper_binary):
    evaluator = EVALUATORS.get("downstream")
    assert evaluator.applies_to(BINARY) and evaluator.applies_to(THREE)
    assert not evaluator.applies_to(Schema(COLUMNS, "label", ("only",)))
    for values in (sound_binary, paper_binary.metrics):
        assert declared_last_components(values) <= set(evaluator.metrics)  # the runner's rule


def test_quality_and_diagnostic_metrics_are_told_apart():
    metrics = EVALUATORS.get("downstream").metrics
    for name in ("roc_auc", "pr_auc", "accuracy", "f1", "f1_weighted", "f1_macro"):
        assert metrics[name].kind == MetricKind.QUALITY and metrics[name].direction is not None
    for name in ("fit_seconds", "failed", "n_failed", "worker_peak_mib"):
        assert metrics[name].kind == MetricKind.DIAGNOSTIC and metrics[name].direction is None


def test_separable_binary_every_classifier_beats_chance(sound_binary):
    values = sound_binary
    assert values["n_failed"] == 0
    for name in CLASSIFIER_NAMES:
        assert values[f"{name}.roc_auc"] > 0.9, name
        assert values[f"{name}.pr_auc"] > 0.9, name
        assert values[f"{name}.failed"] == 0.0
        assert values[f"{name}.fit_seconds"] >= 0
    for metric in ("roc_auc", "pr_auc", "accuracy", "f1"):
        per_classifier = [values[f"{name}.{metric}"] for name in CLASSIFIER_NAMES]
        assert values[metric] == pytest.approx(np.mean(per_classifier), abs=1e-12)
    assert not any(name.startswith(("paper.", "test_selected_best.")) for name in values)
    assert "f1_weighted" not in values


def test_shuffled_training_labels_give_chance():
    """On weakly informative data (so that the test ROC of a classifier that learned a random
    direction stays near 0.5), training on the true labels beats chance clearly, training on
    shuffled labels does not."""
    train, test = (
        draw(BINARY, 500, seed=6, separation=0.3, purity=0.1),
        draw(BINARY, 1500, seed=7, separation=0.3, purity=0.1),
    )
    evaluator = DownstreamClassifiers(in_process=True)
    informed = evaluator.evaluate(train, train, test, SOUND).metrics["roc_auc"]
    shuffled = []
    for seed in (0, 1):
        labels = np.random.default_rng(seed).permutation(train.y)
        data = LabelledData(train.x, labels, train.schema)
        shuffled.append(evaluator.evaluate(data, data, test, SOUND).metrics["roc_auc"])
    assert np.mean(shuffled) == pytest.approx(0.5, abs=0.06)
    assert informed > 0.62 and informed > max(shuffled) + 0.1


def test_hard_label_roc_is_balanced_accuracy(binary_data, paper_binary):
    train, test = binary_data
    values = paper_binary.metrics
    # The identity itself, on arbitrary hard predictions.
    rng = np.random.default_rng(3)
    y, pred = rng.integers(0, 2, 500), rng.integers(0, 2, 500)
    assert hard_label_metrics(y, pred, binary=True)["roc_auc"] == pytest.approx(balanced_accuracy_score(y, pred))
    # The evaluator's paper number is the balanced accuracy of the same fitted model: refit the
    # deterministic GaussianNB on the reference ('codes') encoding and compare.
    encoder = TabularEncoder(BINARY, "codes")
    pred = GaussianNB().fit(encoder.encode(train.x), train.y).predict(encoder.encode(test.x))
    assert values["paper.gaussian_nb.roc_auc"] == pytest.approx(balanced_accuracy_score(test.y, pred), abs=1e-12)
    # For every classifier: balanced accuracy reconstructed from the same model's accuracy and
    # F1 (two equations in TP and FP) equals the hard-label ROC.
    positives, n = int(test.y.sum()), len(test.y)
    negatives = n - positives
    for name in CLASSIFIER_NAMES:
        accuracy, f1 = values[f"{name}.accuracy"], values[f"{name}.f1"]
        if f1 == 1.0:  # perfect predictions
            balanced = 1.0
        else:
            true_pos = f1 * (n - accuracy * n) / (2 * (1 - f1))
            false_pos = true_pos - (accuracy * n - negatives)
            balanced = (true_pos / positives + (negatives - false_pos) / negatives) / 2
        assert values[f"paper.{name}.roc_auc"] == pytest.approx(balanced, abs=1e-9), name
    # ... and it is not the score-based ROC of that model (which ranks, so is higher here; a
    # fully grown tree scores 0/1, so there the two coincide).
    differing = [n for n in CLASSIFIER_NAMES if values[f"{n}.roc_auc"] > values[f"paper.{n}.roc_auc"] + 1e-3]
    assert len(differing) >= 9
    assert values["roc_auc"] > values["paper.roc_auc"]


def test_test_selected_best_is_at_least_the_base(paper_binary):
    values = paper_binary.metrics
    assert values["n_failed"] == 0
    assert paper_binary.errors == {}
    for metric in ("roc_auc", "pr_auc"):
        for name in CLASSIFIER_NAMES:
            assert values[f"test_selected_best.{name}.{metric}"] >= values[f"paper.{name}.{metric}"], name
        assert values[f"test_selected_best.{metric}"] >= values[f"paper.{metric}"]
    # Selection on the test set inflates somewhere (more than one candidate for most models).
    assert values["test_selected_best.roc_auc"] > values["paper.roc_auc"]


def test_multiclass_metrics_and_paper_variants():
    train, test = draw(THREE, 300, seed=2), draw(THREE, 300, seed=3)
    evaluator = DownstreamClassifiers(in_process=True)
    values = evaluator.evaluate(train, train, test, SOUND).metrics
    assert values["n_failed"] == 0
    assert not {"roc_auc", "pr_auc", "f1"} & declared_last_components(values)
    for metric in ("f1_weighted", "f1_macro", "accuracy"):
        per_classifier = [values[f"{name}.{metric}"] for name in CLASSIFIER_NAMES]
        assert values[metric] == pytest.approx(np.mean(per_classifier))
        assert values[metric] > 0.8
    # The paper protocol's longer multi-class variant lists all run (liblinear one-vs-rest,
    # Crammer-Singer, class priors, ...) and the best is never below the base.
    evaluation = evaluator.evaluate(train, train, test, PAPER)
    paper = evaluation.metrics
    assert evaluation.errors == {}
    for name in CLASSIFIER_NAMES:
        assert paper[f"test_selected_best.{name}.f1_weighted"] >= paper[f"paper.{name}.f1_weighted"]
        # hard-label weighted F1 is what the sound protocol reports too
        assert paper[f"paper.{name}.f1_weighted"] == paper[f"{name}.f1_weighted"]


BROKEN = ClassifierSpec("broken", lambda f: LogisticRegression(C=-1.0), "test: invalid C raises in fit")


def test_a_raising_classifier_is_recorded_and_the_others_finish(binary_data, sound_binary, monkeypatch):
    train, test = binary_data
    monkeypatch.setattr(downstream, "CLASSIFIERS", downstream.CLASSIFIERS + (BROKEN,))
    evaluator = DownstreamClassifiers(in_process=True)
    with pytest.warns(DownstreamWarning, match="broken failed"):
        evaluation = evaluator.evaluate(train, train, test, SOUND)
    values = evaluation.metrics
    assert values["broken.failed"] == 1.0 and values["n_failed"] == 1.0
    assert math.isnan(values["broken.roc_auc"]) and math.isnan(values["broken.fit_seconds"])
    assert set(evaluation.errors) == {"broken"} and "C" in evaluation.errors["broken"]
    for name in CLASSIFIER_NAMES:  # the others are untouched, the mean skips the failure
        assert values[f"{name}.roc_auc"] == sound_binary[f"{name}.roc_auc"]
    assert values["roc_auc"] == pytest.approx(sound_binary["roc_auc"], abs=1e-12)


def test_worker_pool_parallel_failures_timeouts_and_same_numbers(binary_data, sound_binary):
    train, test = binary_data
    sleepy = ClassifierSpec(
        "sleepy",
        lambda f: MLPClassifier(hidden_layer_sizes=(1024, 1024), max_iter=10**6, tol=0.0, n_iter_no_change=10**6),
        "test: runs far past the timeout",
    )
    kept = tuple(spec for spec in downstream.CLASSIFIERS if spec.name in ("gaussian_nb", "lda", "xgboost"))
    evaluator = DownstreamClassifiers(classifiers=kept + (BROKEN, sleepy), n_jobs=2, timeout_s=5)
    with pytest.warns(DownstreamWarning):
        evaluation = evaluator.evaluate(train, train, test, SOUND)
    values = evaluation.metrics
    assert values["n_failed"] == 2.0
    assert "TimeoutError" in evaluation.errors["sleepy"]
    assert "broken" in evaluation.errors and values["broken.failed"] == 1.0
    assert values["worker_peak_mib"] > 10  # reported by the worker processes
    for spec in kept:  # worker processes give the in-process numbers exactly
        for metric in ("roc_auc", "pr_auc", "accuracy", "f1"):
            assert values[f"{spec.name}.{metric}"] == sound_binary[f"{spec.name}.{metric}"]


def test_single_class_synthetic_data_does_not_crash(binary_data):
    train, test = binary_data
    collapsed = LabelledData(train.x, np.zeros(len(train), dtype=np.int64), BINARY)
    evaluator = DownstreamClassifiers(in_process=True)
    for protocol in ("sound", "paper"):
        with pytest.warns(DownstreamWarning):
            evaluation = evaluator.evaluate(collapsed, collapsed, test, EvalContext(protocol=protocol))
        values = evaluation.metrics
        assert 1 <= values["n_failed"] <= 12
        for name in CLASSIFIER_NAMES:
            if values[f"{name}.failed"] == 0:  # a model that fitted one class is constant
                assert values[f"{name}.roc_auc"] == 0.5
                assert values[f"{name}.accuracy"] == pytest.approx(1 - test.y.mean())
            else:
                assert math.isnan(values[f"{name}.roc_auc"]) and name in evaluation.errors


def test_a_class_missing_from_synthetic_data(binary_data):
    train, test = draw(THREE, 300, seed=4), draw(THREE, 300, seed=5)
    without_middle = train.y != 1
    synthetic = LabelledData(train.x[without_middle], train.y[without_middle], THREE)
    values = DownstreamClassifiers(in_process=True).evaluate(synthetic, synthetic, test, SOUND).metrics
    assert values["n_failed"] == 0  # labels are re-indexed, so even xgboost fits {0, 2}
    for name in CLASSIFIER_NAMES:
        assert 0 < values[f"{name}.f1_macro"] < values[f"{name}.f1_weighted"] + 0.2


def test_deterministic(binary_data, sound_binary):
    train, test = binary_data
    again = DownstreamClassifiers(in_process=True).evaluate(train, train, test, SOUND).metrics
    same_keys = [k for k in again if not k.endswith(("fit_seconds", "worker_peak_mib"))]
    assert {k: again[k] for k in same_keys} == {k: sound_binary[k] for k in same_keys}


def test_jobs_from_environment(monkeypatch):
    monkeypatch.setenv("DPBENCH_EVAL_JOBS", "3")
    assert DownstreamClassifiers().resolved_jobs() == 3
    assert DownstreamClassifiers(n_jobs=1).resolved_jobs() == 1
    monkeypatch.delenv("DPBENCH_EVAL_JOBS")
    assert 1 <= DownstreamClassifiers().resolved_jobs() <= 2


def test_standard_scaling_z_scores_with_the_training_rows_statistics_only():
    """scaling=standard puts a StandardScaler in front of every classifier, fitted on the rows
    the classifier is trained on (the synthetic ones), never on the test rows: a logistic
    regression scores exactly as the same pipeline fitted by hand, and the test rows, shifted far
    from the training rows, are not re-centred. An unknown scaling is refused."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train, test = draw(BINARY, 300, seed=0), draw(BINARY, 400, seed=1)
    shifted = LabelledData(test.x + np.asarray([3.0, 0, 0, 0, 0], dtype=np.float32), test.y, BINARY)
    spec = ClassifierSpec("logistic_regression", lambda facts: LogisticRegression(max_iter=1000), "a test")
    scaled = DownstreamClassifiers(in_process=True, classifiers=(spec,), scaling="standard")
    values = scaled.evaluate(train, train, shifted, PAPER).metrics
    encoder = TabularEncoder(BINARY, "codes")
    by_hand = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(encoder.encode(train.x), train.y)
    expected = hard_label_metrics(shifted.y, by_hand.predict(encoder.encode(shifted.x)), True)["roc_auc"]
    assert values["paper.logistic_regression.roc_auc"] == pytest.approx(expected, abs=1e-12)
    unscaled = (
        DownstreamClassifiers(in_process=True, classifiers=(spec,)).evaluate(train, train, shifted, PAPER).metrics
    )
    assert values["paper.logistic_regression.roc_auc"] != unscaled["paper.logistic_regression.roc_auc"]
    with pytest.raises(ValueError, match="scaling must be one of none, standard"):
        DownstreamClassifiers(scaling="minmax")


@pytest.mark.parametrize(
    "make",
    [
        lambda n: RandomForestClassifier(n_estimators=n, random_state=3),
        lambda n: ExtraTreesClassifier(n_estimators=n, random_state=3),
        lambda n: BaggingClassifier(n_estimators=n, random_state=3),
        lambda n: BaggingClassifier(n_estimators=n, max_samples=0.1, random_state=3),
        lambda n: make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=n, random_state=3)),
    ],
    ids=["forest", "extra-trees", "bagging", "bagging-subsampled", "scaled-forest"],
)
def test_a_grown_ensemble_answers_exactly_as_separate_fits(make):
    """The paper protocol's 10- to 200-tree forests are answered by growing one forest (warm
    start): every prefix must give the bits a separate fit of that size gives — predictions and
    scores — in process and through a worker, or the shortcut would change published numbers."""
    train, test = draw(THREE, 400, seed=6), draw(THREE, 300, seed=7)
    x_train, x_test = train.x.astype(np.float64), test.x.astype(np.float64)
    sizes = (200, 10, 70, 30, 100)
    stages = tuple(fitpool.Stage(("forest", n), n, want_scores=True) for n in sizes)
    separate = {
        ("forest", n): fitpool.fit_stages(make(n), x_train, train.y, x_test, (fitpool.Stage(0, 0, True),))[0]
        for n in sizes
    }
    grown_task = fitpool.Task(("forest", "grown"), make(max(sizes)), False, grown=stages)
    in_process = fitpool.run_tasks_in_process([grown_task], x_train, train.y, x_test)
    pooled = fitpool.run_tasks(
        [fitpool.Task(("forest", "grown"), make(max(sizes)), False, grown=stages)],
        x_train,
        train.y,
        x_test,
        n_jobs=1,
        timeout_s=120,
    )
    for answers in (in_process, pooled):
        assert set(answers) == set(separate)
        for key, result in separate.items():
            assert result.error is None and answers[key].error is None
            np.testing.assert_array_equal(answers[key].pred, result.pred)
            np.testing.assert_array_equal(answers[key].scores, result.scores)
        fit_times = [answers[("forest", n)].fit_seconds for n in sorted(sizes)]
        assert fit_times == sorted(fit_times)  # the time spent growing each prefix, cumulative
    assert len({result.pred.tobytes() for result in separate.values()}) > 1  # the sizes do differ


def test_paper_forests_are_one_task_and_other_classifiers_are_not_grown(binary_data):
    """Only settings that differ in an ensemble's size alone share a task; boosting (whose
    warm start is not checked bit for bit here) and differently configured bagging stay apart."""
    facts = downstream.training_facts(binary_data[0].x, binary_data[0].y, 2, seed=0)
    forest = next(spec for spec in downstream.CLASSIFIERS if spec.name == "random_forest")
    settings = [("base", forest.base(facts)), *forest.variants(facts)]
    tasks = downstream.tasks_for("random_forest", settings, binary=True)
    assert len(tasks) == 1 and [s.n_estimators for s in tasks[0].stages] == [100, 200, 70, 30, 10]
    assert [s.want_scores for s in tasks[0].stages] == [True, False, False, False, False]
    for name in ("gradient_boosting", "adaboost", "bagging", "xgboost"):
        spec = next(spec for spec in downstream.CLASSIFIERS if spec.name == name)
        settings = [("base", spec.base(facts)), *spec.variants(facts)]
        assert all(not task.grown for task in downstream.tasks_for(name, settings, binary=True))
