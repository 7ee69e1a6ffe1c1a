"""``image-downstream`` (the seeds' 12 image classifiers), ``effective-size`` (Fig. 3) and the
effective-size plot. Small MNIST subsets (300 training, 200 test images) keep each test to seconds."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

from bench.core.data import LabelledData
from bench.api.contracts import EvalContext
from bench.api.registry import EVALUATORS
from bench.report.versus import FIG6_CLASSIFIERS
from evaluators.effective_size import FIG3_RATIOS, EffectiveSize, sizes_for
from evaluators.image_downstream import (
    IMAGE_CLASSIFIER_NAMES,
    IMAGE_CLASSIFIERS,
    ImageDownstreamClassifiers,
    balanced_indices,
    subset_rows,
)

N_TRAIN, N_TEST = 300, 200
CONTEXT = EvalContext()
FAST = tuple(spec for spec in IMAGE_CLASSIFIERS if spec.name in ("LR", "GNB", "XGB"))


@pytest.fixture(scope="module")
def mnist_split(data_dir):
    from bench.api.registry import DATASETS

    split = DATASETS.get("mnist").load(data_dir, seed=0)
    return split.train, split.test


@pytest.fixture(scope="module")
def small(mnist_split):
    train, test = mnist_split
    return (
        LabelledData(train.x[:N_TRAIN], train.y[:N_TRAIN], train.schema),
        LabelledData(test.x[:N_TEST], test.y[:N_TEST], test.schema),
    )


@pytest.fixture(scope="module")
def all_twelve(small):
    train, test = small
    evaluator = ImageDownstreamClassifiers(in_process=True)
    return evaluator.evaluate(train, train, test, CONTEXT), evaluator


def test_registered_with_the_seeds_short_names_in_fig6_order():
    assert IMAGE_CLASSIFIER_NAMES == FIG6_CLASSIFIERS
    assert EVALUATORS.get("image-downstream").sample_fraction == 1.0
    assert EVALUATORS.get("image-downstream-10pct").sample_fraction == 0.1
    assert EVALUATORS.get("effective-size").ratios == FIG3_RATIOS
    with pytest.raises(ValueError, match="sample_fraction"):
        ImageDownstreamClassifiers(sample_fraction=0.0)


def test_metrics_are_declared_present_and_in_the_unit_interval(all_twelve):
    evaluation, evaluator = all_twelve
    values = evaluation.metrics
    assert evaluation.errors == {} and evaluation.artifacts == {}
    assert values["n_failed"] == 0 and values["n_train"] == N_TRAIN
    for name in values:
        assert name.rsplit(".", 1)[-1] in evaluator.metrics
    for metric in ("accuracy", "f1_macro"):
        for classifier in IMAGE_CLASSIFIER_NAMES:
            assert 0.0 <= values[f"{classifier}.{metric}"] <= 1.0
            assert values[f"{classifier}.failed"] == 0.0 and values[f"{classifier}.fit_seconds"] > 0
        expected = np.mean([values[f"{c}.{metric}"] for c in IMAGE_CLASSIFIER_NAMES])
        assert values[metric] == pytest.approx(expected)


def test_classifiers_trained_on_real_digits_beat_chance_clearly(all_twelve):
    values = all_twelve[0].metrics
    assert values["accuracy"] > 0.5  # chance is 0.1; the seeds' 60k real-data mean is 0.87
    for classifier in ("LR", "LSVC", "LDA", "MLP", "XGB"):
        assert values[f"{classifier}.accuracy"] > 0.6, classifier


def test_balanced_subsets_have_equal_class_counts_for_every_ratio(mnist_split):
    y = mnist_split[0].y  # 60,000 labels, 5,421 to 6,742 per class
    for size in sizes_for(len(y), FIG3_RATIOS):
        rows = subset_rows(y, size, 10, seed=0)
        if size == len(y):
            assert rows is None  # ratio 1: the whole set, as the seeds
            continue
        assert len(np.unique(rows)) == len(rows) == size
        assert (np.bincount(y[rows], minlength=10) == size // 10).all(), size
    assert np.array_equal(subset_rows(y, 600, 10, seed=3), subset_rows(y, 600, 10, seed=3))
    assert not np.array_equal(subset_rows(y, 600, 10, seed=3), subset_rows(y, 600, 10, seed=4))


def test_a_short_class_gives_all_its_rows_and_a_remainder_is_spread():
    y = np.array([0] * 50 + [1] * 50 + [2] * 2)
    rows = balanced_indices(y, 30, 3, np.random.default_rng(0))
    assert np.bincount(y[rows], minlength=3).tolist() == [10, 10, 2]
    rows = balanced_indices(y, 32, 3, np.random.default_rng(0))
    assert sorted(np.bincount(y[rows], minlength=3).tolist()[:2]) == [10, 11]


def test_sample_fraction_trains_the_pool_on_a_balanced_subset(small):
    train, test = small
    pooled = ImageDownstreamClassifiers(sample_fraction=0.5, classifiers=FAST[:2], n_jobs=2, timeout_s=120)
    values = pooled.evaluate(train, train, test, CONTEXT).metrics
    serial = (
        ImageDownstreamClassifiers(sample_fraction=0.5, classifiers=FAST[:2], in_process=True)
        .evaluate(train, train, test, CONTEXT)
        .metrics
    )
    assert values["n_train"] == 150 and values["n_failed"] == 0
    for name in ("LR.accuracy", "GNB.accuracy", "f1_macro"):
        assert values[name] == pytest.approx(serial[name])


def test_effective_size_metrics_and_artifacts(small):
    train, test = small
    evaluator = EffectiveSize(ratios=(1.0, 0.5, 0.1), classifiers=FAST, in_process=True)
    evaluation = evaluator.evaluate(train, train, test, CONTEXT)
    values = evaluation.metrics
    for name in values:
        assert name.rsplit(".", 1)[-1] in evaluator.metrics, name
    for size in (300, 150, 30):
        assert values[f"n_train_n{size}"] == size
        assert 0.0 <= values[f"acc_n{size}"] <= 1.0
        assert values[f"acc_n{size}"] == pytest.approx(np.mean([values[f"{s.name}.acc_n{size}"] for s in FAST]))
    assert values["acc_n300"] > values["acc_n30"] > 0.1
    assert values["n_failed"] == 0

    assert set(evaluation.artifacts) == {"effective_size.csv", "effective_size.png"}
    table = pd.read_csv(io.BytesIO(evaluation.artifacts["effective_size.csv"]))
    assert table.columns.tolist() == ["size", "n_train", "mean_accuracy", "LR", "GNB", "XGB"]
    assert table["size"].tolist() == [300, 150, 30]
    assert table["mean_accuracy"].tolist() == pytest.approx([values[f"acc_n{s}"] for s in (300, 150, 30)], abs=1e-5)
    assert evaluation.artifacts["effective_size.png"][:8] == b"\x89PNG\r\n\x1a\n"


def test_a_fit_two_evaluators_ask_for_is_made_once_and_read_from_the_cache(small, tmp_path, monkeypatch):
    """image-downstream then effective-size on the same images: the full-size fits are read back,
    the smaller ones fitted; the numbers are those of a run without the cache."""
    from evaluators import image_downstream

    train, test = small
    context = EvalContext(cache_dir=tmp_path)
    downstream = (
        ImageDownstreamClassifiers(classifiers=FAST, in_process=True).evaluate(train, train, test, context).metrics
    )
    assert len(list((tmp_path / image_downstream.FIT_CACHE).glob("*.npz"))) == len(FAST)
    fitted = []
    original = image_downstream.ImageClassifiers.run_fits

    def counting(self, tasks, *args, **kwargs):
        fitted.extend(task.id for task in tasks)
        return original(self, tasks, *args, **kwargs)

    monkeypatch.setattr(image_downstream.ImageClassifiers, "run_fits", counting)
    sizes = EffectiveSize(ratios=(1.0, 0.5), classifiers=FAST, in_process=True)
    cached = sizes.evaluate(train, train, test, context).metrics
    assert sorted(fitted) == sorted((spec.name, 150) for spec in FAST)  # the 300-image fits came from the cache
    uncached = sizes.evaluate(train, train, test, CONTEXT).metrics
    numbers = lambda values: {k: v for k, v in values.items() if "fit_seconds" not in k and "peak" not in k}  # noqa: E731
    assert numbers(cached) == pytest.approx(numbers(uncached))
    for spec in FAST:
        assert cached[f"{spec.name}.acc_n300"] == downstream[f"{spec.name}.accuracy"]
    other = LabelledData(train.x[::-1].copy(), train.y[::-1].copy(), train.schema)  # other images: other keys
    fitted.clear()
    EffectiveSize(ratios=(1.0,), classifiers=FAST, in_process=True).evaluate(other, other, test, context)
    assert len(fitted) == len(FAST)


def test_sized_metric_names_are_declared_for_any_size():
    metrics = EVALUATORS.get("effective-size").metrics
    assert "acc_n60000" in metrics and "acc_n60" in metrics and "acc_n123" in metrics
    assert "n_train_n50000" in metrics and "n_failed" in metrics
    assert "acc" not in metrics and "acc_nx" not in metrics and "bogus_n10" not in metrics
    listed = list(metrics)
    assert "acc_n60000" in listed and "acc_n60" in listed and len(listed) == len(metrics)


def fig3_frame() -> pd.DataFrame:
    rows = []
    for seed, shift in enumerate((0.0, 0.02)):
        for method, eps, top in (("real", math.inf, 0.86), ("dp-hp", 1.0, 0.73)):
            rows.append(
                {
                    "method": method,
                    "dataset": "mnist",
                    "epsilon": eps,
                    "seed": seed,
                    **{f"effective-size.acc_n{n}": top + shift - 0.1 * (n < 1000) for n in (60000, 6000, 600, 60)},
                }
            )
    return pd.DataFrame(rows)


def test_effective_size_plot_writes_one_png_per_dataset(tmp_path):
    from bench.report.plots import plot_effective_size

    frame = fig3_frame()
    frame = pd.concat([frame, frame.assign(dataset="fashion-mnist")])
    paths = plot_effective_size("fake", tmp_path, frame=frame)
    assert sorted(p.name for p in paths) == ["effective_size_fashion-mnist.png", "effective_size_mnist.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in paths)


def test_plot_command_checks_its_options():
    from bench.cli import main

    assert main(["plot"]) == 2  # the default layout needs --metric
    assert main(["plot", "--layout", "effective-size", "--metric", "nll.mean"]) == 2


def test_the_smoke_profile_shrinks_the_image_evaluators_and_eval_set_still_wins():
    from bench.harness.grid import GridSpec, expand

    def settings(**extra):
        (cell,), _ = expand(GridSpec(methods=["real"], datasets=["mnist"], epsilons=[1.0], seeds=[0], **extra))
        return cell.evaluator_settings

    assert settings() == {}  # the paper profile: the evaluators' own (published) settings
    smoke = settings(profile="smoke")
    assert smoke["fid"] == {"n_samples": 500, "n_real": 1000} and smoke["image-downstream"] == {"sample_fraction": 0.02}
    assert settings(profile="smoke", evaluator_overrides={"fid": {"n_samples": "800"}})["fid"]["n_samples"] == 800


def test_dp_mepfs_two_classifiers_are_the_twelves_lr_and_mlp_and_nothing_else(all_twelve, small):
    """``image-logreg-mlp`` (DP-MEPF Tables 10/11) fits DP-HP Table 10's LR and MLP, unchanged: on
    the same images their accuracies are the twelve's, and no other classifier is fitted."""
    from dataclasses import replace

    train, test = small
    two = replace(EVALUATORS.get("image-logreg-mlp"), in_process=True)
    assert two.run_by_default is False and two.sample_fraction == 1.0
    values = two.evaluate(train, train, test, CONTEXT).metrics
    twelve = all_twelve[0].metrics
    assert {name.split(".")[0] for name in values if "." in name} == {"LR", "MLP"}
    for classifier in ("LR", "MLP"):
        for metric in ("accuracy", "f1_macro"):
            assert values[f"{classifier}.{metric}"] == twelve[f"{classifier}.{metric}"]
    assert values["accuracy"] == pytest.approx((twelve["LR.accuracy"] + twelve["MLP.accuracy"]) / 2)
    for name in values:
        assert name.rsplit(".", 1)[-1] in two.metrics
