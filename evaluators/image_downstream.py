"""``image-downstream``: the 12 classifiers of the seeds' image experiments, trained on synthetic
images and tested on the real test images (DP-HP Fig. 6; DP-MERF's image table).

Classifiers: the settings of DP-HP's Table 10, "hyper-parameters for downstream models used in
image data experiments" (DP-HP (arXiv:2106.05042) Table 10; the same as DP-MERF's ``synth_data_benchmark.py``
except AdaBoost, github.com/ParkLabML/DP-MERF), written for scikit-learn 0.24.2 and xgboost 0.90.
Each adaptation to the installed versions is marked "ADAPT" beside the setting it changes. The
classifiers carry the short names of the seeds' Fig. 6 (:data:`IMAGE_CLASSIFIER_NAMES`, in the
figure's column order), which ``bench.report.tables`` maps to the seeds' values.

Data: pixels are used as they are, flattened channel-first in [0, 1] (the dataset's layout,
``datasets/images.py``), with no normalisation or standardisation, as the seeds' code (ToTensor
only). Generated images arrive as the 8-bit pixels the run stores (``bench/harness/samples.py``:
rounded before any evaluator sees them, ≤ 1/510 a pixel from the generator's float output, which
the seeds' code scored), so a later rescoring of the stored sample gives the run's own numbers. ``real_train`` is not used: the "real data" row comes from the ``real`` method.

Metrics (``<clf>`` one of the short names): ``<clf>.accuracy`` and ``<clf>.f1_macro`` on the real
test split, their means over the classifiers that produced a value (``accuracy``, ``f1_macro``;
the seeds report accuracy; their code also computed macro F1), ``<clf>.fit_seconds``,
``<clf>.failed``, ``n_failed``, ``worker_peak_mib`` (diagnostics, as ``downstream``) and
``n_train``, the number of synthetic images the classifiers were trained on (a diagnostic).

``sample_fraction`` (default 1.0, the seeds' Fig. 6: all 60,000 images): the seeds' code's
``--sampling-rate-synth`` option, a class-balanced subset of that fraction of the synthetic set
(:func:`balanced_indices`, seeded by ``seed``). The registered ``image-downstream-10pct`` uses
0.1, the default of the seeds' end-of-training check
(github.com/ParkLabML/DP-HP dp_mehp/prod_and_sum_kernel_image.py --sampling-rate-synth).

Both protocols are the same here: the seeds' image protocol has no hard-label or test-selected
variants. Execution, seeding and failures are as in ``downstream`` (``evaluators.fitpool``, one
single-threaded process per fit, ``n_jobs`` workers, ``timeout_s`` per fit; failures in
``Evaluation.errors``).
Cost on 2 cores: all 12 on 60,000 MNIST images in ≈ 4.7 min (``benchmarks/bench_image_downstream.py``,
docs/performance.md); AdaBoost's 1,000 rounds run from histograms (``evaluators/stump_boost.py``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any
from dataclasses import dataclass, field

import numpy as np
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.ensemble import (
    BaggingClassifier,
    GradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.naive_bayes import BernoulliNB, GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier
from xgboost import XGBClassifier

from evaluators.cache import content_key, load_arrays, save_arrays
from evaluators.fitpool import Task, TaskResult
from evaluators.stump_boost import SammeStumpBoost
from bench.core.data import DataKind, LabelledData, Schema, check_same_schema
from bench.api.contracts import Direction, EvalContext, Evaluation, MetricSpec
from bench.core.images import is_image_schema
from evaluators.downstream import (
    POOL_DIAGNOSTICS,
    ClassifierSpec,
    Fits,
    PooledClassifiers,
    TrainingFacts,
    build_estimator,
    check_classifier_names,
    estimated_cost,
    summarise_fits,
    training_facts,
)

IMAGE_METRICS = ("accuracy", "f1_macro")

# --------------------------------------------------------------------------------------------
# The 12 classifiers of DP-HP Table 10 (DP-HP (arXiv:2106.05042) Sec. 5.3), in the column order of the seeds'
# Fig. 6 (DP-HP (arXiv:2106.05042) App. H.1). "T10" = Table 10 under scikit-learn 0.24.2 / xgboost 0.90.
# --------------------------------------------------------------------------------------------


def _lda(f: TrainingFacts) -> LinearDiscriminantAnalysis:
    # T10: solver eigen, n_components 9, tol 1e-8, shrinkage 0.5. n_components only shapes
    # `transform`, never `predict`; 9 = 10 classes − 1 is allowed. ADAPT: capped at (classes
    # present − 1), because sklearn raises for more and a synthetic set may lack a class. `tol`
    # is used by the svd solver only (as in 0.24), kept for the record.
    n_components = max(1, min(9, len(f.class_frequencies) - 1))
    return LinearDiscriminantAnalysis(solver="eigen", n_components=n_components, tol=1e-8, shrinkage=0.5)


def _xgb(f: TrainingFacts) -> XGBClassifier:
    # T10: colsample_bytree 0.1, objective multi:softprob, n_estimators 50, the rest xgboost
    # 0.90's sklearn defaults, pinned here because xgboost ≥ 1.0 changed them: max_depth=3 (now
    # 6) and learning_rate=0.1 (now 0.3). ADAPT: tree_method is 'hist' now (0.90: 'auto', exact
    # greedy at this size); 8-bit pixels have at most 256 values, which hist's 256 bins hold, so
    # the split candidates are the same. base_score is fitted now (0.90: 0.5). n_jobs=1: the pool
    # parallelises over classifiers.
    return XGBClassifier(
        colsample_bytree=0.1,
        objective="multi:softprob",
        n_estimators=50,
        max_depth=3,
        learning_rate=0.1,
        n_jobs=1,
        random_state=f.seed,
        verbosity=0,
    )


IMAGE_CLASSIFIERS: tuple[ClassifierSpec, ...] = (
    ClassifierSpec(
        "LR",
        # ADAPT: `multi_class='auto'` was removed (sklearn 1.7); lbfgs is multinomial for ≥ 3
        # classes, which is what 'auto' chose. T10 says max_iter 5000; the seeds' code used 50000
        # (github.com/ParkLabML/DP-HP dp_mehp/all_aux_files.py); the table's value is used.
        lambda f: LogisticRegression(solver="lbfgs", max_iter=5000, random_state=f.seed),
        "T10: LogisticRegression(solver='lbfgs', max_iter=5000, multi_class='auto')",
    ),
    ClassifierSpec(
        "RF",
        lambda f: RandomForestClassifier(n_estimators=100, class_weight="balanced", random_state=f.seed),
        "T10: RandomForestClassifier(n_estimators=100, class_weight='balanced')",
    ),
    ClassifierSpec("GNB", lambda f: GaussianNB(), "T10: GaussianNB()"),
    ClassifierSpec(
        "BNB",
        # alpha=1.0 (default); force_alpha (sklearn 1.4) changes nothing at alpha 1.
        lambda f: BernoulliNB(binarize=0.5),
        "T10: BernoulliNB(binarize=0.5)",
    ),
    ClassifierSpec(
        "LSVC",
        # dual=True: the 0.24 default, and the only solver for the hinge loss (1.5+ defaults to
        # 'auto', which would pick it too). One-vs-rest, as in 0.24.
        lambda f: LinearSVC(max_iter=10000, tol=1e-8, loss="hinge", dual=True, random_state=f.seed),
        "T10: LinearSVC(max_iter=10000, tol=1e-8, loss='hinge')",
    ),
    ClassifierSpec(
        "DT",
        lambda f: DecisionTreeClassifier(class_weight="balanced", random_state=f.seed),
        "T10: DecisionTreeClassifier(class_weight='balanced')",
    ),
    ClassifierSpec(
        "LDA", _lda, "T10: LinearDiscriminantAnalysis(solver='eigen', n_components=9, tol=1e-8, shrinkage=0.5)"
    ),
    ClassifierSpec(
        "Ada",
        # ADAPT: algorithm='SAMME.R' no longer exists (deprecated in sklearn 1.4, the parameter
        # removed in 1.8); every AdaBoost is discrete SAMME now, which uses the stumps' hard
        # votes instead of their class probabilities, so its accuracy may differ from the seeds'.
        # Fitted from histograms on the 8-bit pixels (evaluators/stump_boost.py): scikit-learn's
        # SAMME and stumps, ≈ 10× faster (tests/test_stump_boost.py compares the predictions).
        lambda f: SammeStumpBoost(n_estimators=1000, learning_rate=0.7, random_state=f.seed),
        "T10: AdaBoostClassifier(n_estimators=1000, learning_rate=0.7, algorithm='SAMME.R')",
    ),
    ClassifierSpec("MLP", lambda f: MLPClassifier(random_state=f.seed), "T10: MLPClassifier()"),
    ClassifierSpec(
        "Bag",
        lambda f: BaggingClassifier(max_samples=0.1, n_estimators=20, random_state=f.seed),
        "T10: BaggingClassifier(max_samples=0.1, n_estimators=20)",
    ),
    ClassifierSpec(
        "GBM",
        lambda f: GradientBoostingClassifier(subsample=0.1, n_estimators=50, random_state=f.seed),
        "T10: GradientBoostingClassifier(subsample=0.1, n_estimators=50)",
    ),
    ClassifierSpec(
        "XGB", _xgb, "T10: XGBClassifier(colsample_bytree=0.1, objective='multi:softprob', n_estimators=50)"
    ),
)

IMAGE_CLASSIFIER_NAMES: tuple[str, ...] = tuple(spec.name for spec in IMAGE_CLASSIFIERS)

# Fit seconds on 60,000 MNIST images, one core, to start the costliest first (the pool's order:
# a wrong guess costs wall time, never a result). The committed DP-MEPF MNIST record's timings
# (results/runs/dpmepf-table2), Ada from benchmarks/bench_image_downstream.py after the histograms.
IMAGE_FIT_SECONDS: Mapping[str, float] = {
    "GBM": 409.0,
    "Ada": 150.0,
    "RF": 109.0,
    "LSVC": 97.0,
    "DT": 75.0,
    "Bag": 51.0,
    "XGB": 47.0,
    "MLP": 31.0,
    "LR": 15.0,
    "LDA": 2.8,
    "GNB": 0.8,
    "BNB": 0.5,
}


# --------------------------------------------------------------------------------------------
# Class-balanced subsets
# --------------------------------------------------------------------------------------------


def balanced_indices(y: np.ndarray, size: int, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted row indices of a class-balanced subset of about ``size`` rows, drawn without
    replacement: ``size // n_classes`` rows of every class (at least one), the remainder
    ``size % n_classes`` one extra row each for that many classes chosen at random (none for the
    seeds' sizes, multiples of 10). A class with fewer rows than its quota gives all its rows, so
    the subset is then smaller than ``size`` (callers report its length)."""
    if size < 1:
        raise ValueError(f"a subset needs at least one row; got size {size}")
    quota = np.full(n_classes, max(1, size // n_classes))
    if size > n_classes:
        quota[rng.permutation(n_classes)[: size % n_classes]] += 1
    chosen = []
    for label in range(n_classes):
        rows = np.flatnonzero(y == label)
        take = min(int(quota[label]), len(rows))
        chosen.append(rng.choice(rows, size=take, replace=False) if take < len(rows) else rows)
    return np.sort(np.concatenate(chosen)).astype(np.int64)


def subset_rows(y: np.ndarray, size: int, n_classes: int, seed: int) -> np.ndarray | None:
    """The rows a fit on ``size`` of the ``len(y)`` synthetic images uses: None (all of them, as
    generated) when ``size`` is the whole set — the seeds' ratio 1 — else a balanced subset."""
    if size >= len(y):
        return None
    return balanced_indices(y, size, n_classes, np.random.default_rng(seed))


def accuracy_and_f1(y_test: np.ndarray, result: TaskResult) -> dict[str, float]:
    return {
        "accuracy": float(accuracy_score(y_test, result.pred)),
        "f1_macro": float(f1_score(y_test, result.pred, average="macro", zero_division=0)),
    }


def check_image_inputs(synthetic: LabelledData, real_test: LabelledData) -> None:
    check_same_schema(synthetic, real_test)
    if len(synthetic) == 0:
        raise ValueError("the synthetic set is empty; the classifiers need training images")


FIT_CACHE = "image-fits"
FIT_CACHE_VERSION = "image-fit/1"  # bump when what a fit's predictions depend on changes


def fit_key(estimator: Any, data_key: str, rows: np.ndarray | None) -> str:
    """The cache key of one fit: the data's (training images, labels, test images), the rows of
    the subset, the estimator's class, its ``fit_version`` where it declares one (this project's own
    estimators: bumped when a change moves their predictions) and every parameter (its seed included)."""
    settings = repr(sorted((name, repr(value)) for name, value in estimator.get_params(deep=True).items()))
    version = getattr(type(estimator), "fit_version", None)
    return content_key(
        data_key,
        type(estimator).__module__,
        type(estimator).__name__,
        *([f"fit_version={version}"] if version else []),
        settings,
        np.arange(0) if rows is None else rows,
    )


# --------------------------------------------------------------------------------------------
# The evaluator
# --------------------------------------------------------------------------------------------


def _declared_metrics(
    classifiers: str = "the 12 classifiers", accuracy: str = "the seeds' Fig. 6 metric"
) -> dict[str, MetricSpec]:
    higher = Direction.HIGHER
    return {
        "accuracy": MetricSpec.quality(higher, f"mean accuracy of {classifiers} on the real test images ({accuracy})"),
        "f1_macro": MetricSpec.quality(higher, f"mean macro F1 of {classifiers} on the real test images"),
        **POOL_DIAGNOSTICS,
        "n_failed": MetricSpec.diagnostic(f"number of {classifiers} that failed"),
        "n_train": MetricSpec.diagnostic("synthetic images the classifiers were trained on"),
    }


@dataclass(frozen=True)
class ImageClassifiers(PooledClassifiers):
    """What ``image-downstream`` and ``effective-size`` share: the classifiers (``classifiers``;
    None: :data:`IMAGE_CLASSIFIERS`) fitted on class-balanced subsets of the synthetic images."""

    data_kinds: frozenset[DataKind] = frozenset({DataKind.IMAGE})
    classifiers: tuple[ClassifierSpec, ...] | None = None
    run_by_default: bool = True  # False: only when --evaluators names it (it repeats another's work)

    def applies_to(self, schema: Schema) -> bool:
        return is_image_schema(schema) and schema.n_classes >= 2

    def fit_sizes(
        self, synthetic: LabelledData, real_test: LabelledData, sizes: list[int], cache_dir: Path | None = None
    ) -> tuple[list[str], Fits, dict[int, int]]:
        """Fit every classifier on a subset of each size (:func:`subset_rows`, one subset per
        size shared by the classifiers), all in one pool, in the order given. Returns the
        classifier names, the fits (results keyed (name, size); error keys ``<name>/n<size>``,
        or ``<name>`` when there is one size) and the images used per size.

        ``cache_dir`` (the grid's evaluation cache): a fit's test predictions are kept there under
        a key of everything that decides them (:func:`fit_key`), so a second evaluator that asks
        for the same fit — ``effective-size`` at the full size after ``image-downstream`` — reads
        it instead of fitting again; its ``fit_seconds`` is the original fit's."""
        check_image_inputs(synthetic, real_test)
        specs = self.classifiers if self.classifiers is not None else IMAGE_CLASSIFIERS
        names = check_classifier_names(specs)
        x_train, y_train = synthetic.x, np.asarray(synthetic.y, dtype=np.int64)
        n_classes = synthetic.schema.n_classes
        tasks: list[Task] = []
        known: dict[Hashable, TaskResult] = {}
        n_train: dict[int, int] = {}
        keys: dict[Hashable, str] = {}
        data_key = content_key(FIT_CACHE_VERSION, x_train, y_train, real_test.x) if cache_dir is not None else ""
        for size in sizes:
            rows = subset_rows(y_train, size, n_classes, self.seed)
            used = y_train if rows is None else y_train[rows]
            n_train[size] = len(used)
            facts = training_facts(x_train if rows is None else x_train[rows], used, n_classes, self.seed)
            for spec in specs:
                estimator, failure = build_estimator(spec, facts)
                if failure is not None:
                    known[(spec.name, size)] = failure
                    continue
                if cache_dir is not None:
                    keys[(spec.name, size)] = fit_key(estimator, data_key, rows)
                    stored = load_arrays(Path(cache_dir) / FIT_CACHE / f"{keys[(spec.name, size)]}.npz")
                    if stored is not None:
                        known[(spec.name, size)] = TaskResult(
                            pred=stored["pred"], fit_seconds=float(stored["fit_seconds"])
                        )
                        continue
                cost = IMAGE_FIT_SECONDS.get(spec.name, estimated_cost(estimator)) * len(used) / len(y_train)
                tasks.append(Task((spec.name, size), estimator, want_scores=False, rows=rows, cost=cost))
        describe = (lambda task_id: task_id[0]) if len(sizes) == 1 else (lambda task_id: f"{task_id[0]}/n{task_id[1]}")
        fits = self.run_fits(tasks, x_train, y_train, real_test.x, known, describe)
        for task in tasks:
            result = fits.results[task.id]
            if cache_dir is not None and result.error is None and result.pred is not None:
                save_arrays(
                    Path(cache_dir) / FIT_CACHE / f"{keys[task.id]}.npz",
                    {"pred": result.pred, "fit_seconds": np.float64(result.fit_seconds)},
                )
        return names, fits, n_train


@dataclass(frozen=True)
class ImageDownstreamClassifiers(ImageClassifiers):
    name: str = "image-downstream"
    description: str = (
        "train the seeds' 12 image classifiers (DP-HP Table 10) on synthetic images, accuracy on the real test images"
    )
    metrics: Mapping[str, MetricSpec] = field(default_factory=_declared_metrics)
    sample_fraction: float = 1.0
    # ``--profile smoke`` cells train on 2% of the synthetic images (1,200 of MNIST's 60,000): a
    # check that the run works in minutes, not a number to compare with the papers
    profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {"smoke": {"sample_fraction": 0.02}})

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.sample_fraction <= 1:
            raise ValueError(f"sample_fraction must lie in (0, 1]; got {self.sample_fraction}")

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        size = max(1, int(round(self.sample_fraction * len(synthetic))))
        names, fits, n_train = self.fit_sizes(synthetic, real_test, [size], context.cache_dir)
        y_test = np.asarray(real_test.y, dtype=np.int64)
        values = summarise_fits(
            names,
            {name: fits.results[(name, size)] for name in names},
            lambda r: accuracy_and_f1(y_test, r),
            IMAGE_METRICS,
        )
        values["n_train"] = float(n_train[size])
        values["worker_peak_mib"] = fits.worker_peak_mib
        return Evaluation(values, fits.errors)


def with_fraction(fraction: float, name: str) -> ImageDownstreamClassifiers:
    percent = f"{fraction * 100:g}%"
    return ImageDownstreamClassifiers(
        name=name,
        description=(
            f"image-downstream on a class-balanced {percent} subset of the synthetic images "
            "(the seeds' --sampling-rate-synth check)"
        ),
        sample_fraction=fraction,
        run_by_default=False,
    )


IMAGE_DOWNSTREAM = ImageDownstreamClassifiers()
IMAGE_DOWNSTREAM_10PCT = with_fraction(0.1, "image-downstream-10pct")
# DP-MEPF (arXiv:2205.12900) Tables 1, 2, 10 and 11 report two classifiers, LogisticRegression(solver
# 'lbfgs', max_iter 5000) and MLPClassifier() with defaults, on all 60,000 generated images (its code,
# github.com/ParkLabML/DP-MEPF, also fits XGBoost, unreported): the same two estimators
# as DP-HP Table 10's LR and MLP above, so their fits (and the evaluation cache's keys) are the same;
# the other ten would cost a DP-MEPF cell most of its hour on two cores for no published number.
IMAGE_LOGREG_MLP = ImageDownstreamClassifiers(
    name="image-logreg-mlp",
    description=(
        "DP-MEPF's downstream check (Tables 1, 2, 10, 11): LogisticRegression and MLP alone, "
        "trained on the synthetic images, accuracy on the real test images"
    ),
    classifiers=tuple(spec for spec in IMAGE_CLASSIFIERS if spec.name in ("LR", "MLP")),
    metrics=_declared_metrics("LogisticRegression and MLP", "DP-MEPF's classifiers; the tables give each"),
    run_by_default=False,
)
