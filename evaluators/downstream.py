"""``downstream``: train 12 classifiers on the synthetic rows, test them on the real test split.

This is the "synthetic-to-real generalisation" protocol of DP-MERF and DP-HP (Table 1/2 of the
papers: DP-MERF (arXiv:2002.11603) Sec. 6, DP-HP (arXiv:2106.05042) Sec. 5.3; the authors' code,
github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py and
github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py). Tabular
rows are encoded with :class:`bench.core.encoding.TabularEncoder`: ``onehot`` under the sound
protocol, the reference code's raw integer ``codes`` under ``paper``. ``real_train`` is not used:
the "Real" column of the tables comes from the ``real`` method, whose synthetic data *are* the
real training rows.

Metrics (``<classifier>`` is one of :data:`CLASSIFIER_NAMES`; the plain name is the mean over the
classifiers that produced a value, NaN when none did):

* binary (class index 1 is the positive class): ``roc_auc`` and ``pr_auc`` (average precision)
  from **scores** (``predict_proba`` of class 1, else ``decision_function``), ``accuracy`` and
  ``f1`` from ``predict``;
* multi-class: ``f1_weighted``, ``f1_macro``, ``accuracy`` (all from ``predict``);
* always ``<classifier>.fit_seconds`` (wall time of ``fit`` alone), ``<classifier>.failed``
  (1.0 when the classifier raised, timed out or its worker died; its quality metrics are then
  NaN), ``n_failed`` and ``worker_peak_mib`` (all diagnostics: no better direction).

Under ``protocol="paper"`` the above is computed too (on the ``codes`` encoding), and in addition:

* ``paper.<classifier>.<m>`` and ``paper.<m>``: the reference code's numbers, computed from
  **hard** ``predict`` labels: binary ``roc_auc`` (which then equals balanced accuracy) and
  ``pr_auc``; multi-class ``f1_weighted``. So ``<classifier>.roc_auc`` (scores) and
  ``paper.<classifier>.roc_auc`` (hard labels) of the same fitted model sit side by side.
* ``test_selected_best.<classifier>.<m>`` and ``test_selected_best.<m>``: DP-HP's
  best-of-variants: the maximum of the hard-label metric over {our base setting, DP-HP's base
  setting, DP-HP's variants} **chosen on the test set**, each metric maximised separately, as in
  ``all_aux_files_tab_data.py::test_models``. Its gap to ``paper.<m>`` measures the inflation of
  selecting on the test set. Variants that fail are skipped (and listed in the errors).

Errors: a failing classifier never fails the evaluation. Its error text is in the returned
``Evaluation.errors`` (``{"<classifier>": "...", "<classifier>/<variant>": "..."}``) and
emitted as a :class:`DownstreamWarning`.

Execution: each fit runs in a pool of ``n_jobs`` single-threaded worker processes (attribute
``n_jobs``; else ``$DPBENCH_EVAL_JOBS``; else 2, capped by the available cores) with a timeout
of ``timeout_s`` per fit (per variant under ``paper``); see ``evaluators.fitpool``.
``in_process=True`` fits serially in the calling process without timeouts (tests, debugging).

Seeding: every estimator that has a ``random_state`` gets ``random_state=seed`` (attribute,
default 0; deliberately not the cell's ``EvalContext.seed``). The evaluator is deterministic: the same data give the same numbers. The reference
code set no seed at all
(github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py), so its classifier noise is not reproducible anyway.

Caveats:

* BernoulliNB binarises at 0 (its default): on the ``onehot`` encoding every numerical column
  scaled to [0, 1] becomes 1 except at its lower bound, so BernoulliNB only uses the
  categorical and binary columns (the reference had the same effect on positive raw values).
* The paper variant lists are DP-HP's, complete (binary ≈ 30 fits, multi-class ≈ 60 fits,
  including AdaBoost with 1000 estimators, 200-tree bagging and a 200-stage GBM); each fit has
  its own ``timeout_s``. Settings that differ only in a forest's or bagging's size are one fit:
  the largest ensemble, grown by warm start, answers for each smaller one with the same bits
  (:func:`tasks_for`). On adult (paper split, 11,077 rows) the paper protocol takes ≈ 25 s
  with 2 jobs.
* A classifier that can fit a single class (trees, naive Bayes, ...) is kept when the synthetic
  labels collapse to one class: it predicts that class (ROC 0.5); the others fail.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.ensemble import (
    AdaBoostClassifier,
    BaggingClassifier,
    GradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    f1_score,
    roc_auc_score,
)
from sklearn.multiclass import OneVsRestClassifier
from sklearn.naive_bayes import BernoulliNB, GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.svm import LinearSVC
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from xgboost import XGBClassifier

from evaluators import fitpool
from bench.core.encoding import TabularEncoder
from evaluators.fitpool import GROWABLE, Stage, Task, TaskResult, ensemble_of
from bench.core.data import DataKind, LabelledData, RunProtocol, Schema, check_same_schema
from bench.api.contracts import Direction, EvalContext, Evaluation, MetricSpec

SCALINGS = ("none", "standard")
JOBS_VARIABLE = "DPBENCH_EVAL_JOBS"
DEFAULT_JOBS = 2
BASE = "base"

BINARY_METRICS = ("roc_auc", "pr_auc", "accuracy", "f1")
MULTICLASS_METRICS = ("f1_weighted", "f1_macro", "accuracy")
PAPER_BINARY_METRICS = ("roc_auc", "pr_auc")  # what the reference code reports, hard labels
PAPER_MULTICLASS_METRICS = ("f1_weighted",)


class DownstreamWarning(RuntimeWarning):
    """A classifier (or a paper variant) failed; the evaluation went on without it."""


@dataclass(frozen=True)
class TrainingFacts:
    """What the classifier builders may look at, all from the synthetic training data.

    ``class_frequencies`` covers the classes *present* in the synthetic labels, in label order
    (the worker re-indexes labels to those classes before fitting)."""

    seed: int
    binary: bool
    class_frequencies: np.ndarray
    n_features: int
    x_mean: float


def training_facts(x_train: np.ndarray, y_train: np.ndarray, n_classes: int, seed: int) -> TrainingFacts:
    counts = np.bincount(y_train, minlength=n_classes)
    return TrainingFacts(
        seed=seed,
        binary=n_classes == 2,
        class_frequencies=counts[counts > 0] / max(len(y_train), 1),
        n_features=x_train.shape[1],
        x_mean=float(x_train.mean()) if x_train.size else 0.0,
    )


Variants = Callable[[TrainingFacts], list[tuple[str, Any]]]


def _no_variants(facts: TrainingFacts) -> list[tuple[str, Any]]:
    return []


@dataclass(frozen=True)
class ClassifierSpec:
    """One of the 12 classifiers: its base setting (used by both protocols) and, for the paper
    protocol's test-selected best, the other settings DP-HP's code also tried."""

    name: str
    base: Callable[[TrainingFacts], Any]
    source: str
    variants: Variants = _no_variants


# --------------------------------------------------------------------------------------------
# The 12 classifiers. Base settings: one documented setting per classifier, the source cited.
# "MERF" = DP-MERF code_tab/single_generator_priv_all.py::test_models (sklearn 0.21.2),
# "HP" = DP-HP dp_mehp/all_aux_files_tab_data.py::test_models (sklearn 0.24.2, xgboost 0.90);
# github.com/ParkLabML/DP-MERF and github.com/ParkLabML/DP-HP. Variants: DP-HP's retrained models, binary branch then
# multi-class branch, transcribed from that function (github.com/ParkLabML/DP-HP).
# Installed library adaptations are marked "ADAPT".
# --------------------------------------------------------------------------------------------


def _lr_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    s = f.seed
    # ADAPT: sklearn 1.8 deprecated `penalty`; penalty='l1' is l1_ratio=1.0 (saga, liblinear).
    # ADAPT: `multi_class` was removed (1.7); lbfgs/saga are multinomial for ≥ 3 classes, as
    # the reference's multi_class='multinomial' / 'auto' were. liblinear no longer fits ≥ 3
    # classes; OneVsRestClassifier reproduces 0.24's one-vs-rest liblinear (class_weight is then
    # balanced per binary problem, slightly different from 0.24).
    liblinear = [
        (
            f"liblinear_l1_balanced_C{c}",
            LogisticRegression(
                solver="liblinear", l1_ratio=1.0, class_weight="balanced", tol=1e-8, C=c, random_state=s
            ),
        )
        for c in (0.1, 0.05)
    ]
    if not f.binary:
        liblinear = [(name, OneVsRestClassifier(model)) for name, model in liblinear]
    return [
        ("dphp_base", LogisticRegression(random_state=s)),  # HP base: LogisticRegression()
        ("lbfgs_maxiter50000_tol1e-12", LogisticRegression(solver="lbfgs", max_iter=50000, tol=1e-12, random_state=s)),
        ("saga_l1_tol1e-12", LogisticRegression(solver="saga", l1_ratio=1.0, tol=1e-12, random_state=s)),
        *liblinear,
    ]


def _gnb_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    if f.binary:
        # HP quirk kept on purpose: priors=(mean(y), 1 - mean(y)) give class 0 the *positive*
        # rate (all_aux_files_tab_data.py::test_models). Fails (as in the reference) when a class is missing.
        positive = f.class_frequencies[-1] if len(f.class_frequencies) == 2 else 1.0
        return [("vs1e-3_reversed_priors", GaussianNB(var_smoothing=1e-3, priors=(positive, 1 - positive)))]
    priors = f.class_frequencies
    grid = [
        (1e-3, True),
        (1e-12, True),
        (1e-13, False),
        (0.2, True),
        (0.5, True),
        (0.8, True),
        (1.2, True),
        (2.0, True),
        (10.0, True),
        (20.0, True),
        (0.34, True),
        (0.138, True),
        (1e-2, True),
    ]
    return [
        (f"vs{vs:g}" + ("_priors" if use else ""), GaussianNB(var_smoothing=vs, priors=priors if use else None))
        for vs, use in grid
    ]


def _bnb_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    if f.binary:
        return [("dphp_base", BernoulliNB())] + [
            (f"alpha{a:g}_binarize{b:g}", BernoulliNB(alpha=a, binarize=b))
            for a, b in ((0.02, 0.0), (0.5, 0.0), (1.0, 0.0), (1.0, 0.4), (1.0, 0.5))
        ]
    prior = f.class_frequencies
    return [("dphp_base", BernoulliNB())] + [
        (f"alpha{a:g}_binarize{b:g}_prior", BernoulliNB(alpha=a, binarize=b, class_prior=prior))
        for a, b in ((0.02, 0.0), (0.5, 0.0), (1.0, 0.0), (5.0, 0.4), (10.0, 0.05), (1.0, f.x_mean))
    ]


def _svc_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    s = f.seed
    # loss='hinge' needs the dual solver; dual='auto' (the 1.5+ default) picks it.
    out = [
        ("hinge_tol1e-8", LinearSVC(max_iter=10000, tol=1e-8, loss="hinge", random_state=s)),
        (
            "hinge_tol1e-8_balanced",
            LinearSVC(max_iter=10000, tol=1e-8, loss="hinge", class_weight="balanced", random_state=s),
        ),
        ("hinge_tol1e-12_C0.01", LinearSVC(max_iter=10000, tol=1e-12, loss="hinge", C=0.01, random_state=s)),
    ]
    if not f.binary:
        out += [
            (
                "crammer_singer_tol1e-12",
                LinearSVC(max_iter=10000, tol=1e-12, multi_class="crammer_singer", random_state=s),
            ),
            (
                "crammer_singer_tol1e-16_C0.1",
                LinearSVC(max_iter=10000, tol=1e-16, loss="hinge", multi_class="crammer_singer", C=0.1, random_state=s),
            ),
            ("hinge_maxiter20000_tol1e-16", LinearSVC(max_iter=20000, tol=1e-16, loss="hinge", random_state=s)),
        ]
    return out


def _tree_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    # ADAPT: max_features='auto' was removed (1.3); for classifiers it meant 'sqrt', so the
    # reference's 'auto' variant is the 'sqrt' one and is not repeated.
    return [
        (
            f"entropy_balanced_{mf}",
            DecisionTreeClassifier(criterion="entropy", class_weight="balanced", max_features=mf, random_state=f.seed),
        )
        for mf in ("log2", "sqrt")
    ]


def _lda_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    priors = None if f.binary else f.class_frequencies  # HP passes priors in the multi-class branch only
    out = [
        ("eigen_auto_shrinkage", LinearDiscriminantAnalysis(solver="eigen", tol=1e-12, shrinkage="auto", priors=priors))
    ]
    for shrinkage in (0.6, 0.75) + (() if f.binary else (0.9,)):
        out.append(
            (f"lsqr_shrinkage{shrinkage:g}", LinearDiscriminantAnalysis(solver="lsqr", tol=1e-12, shrinkage=shrinkage))
        )
    return out


def _ada_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    # ADAPT: `algorithm` was removed (1.8; SAMME.R deprecated in 1.4): every AdaBoost is SAMME
    # now, so the reference's SAMME.R base/variants and its explicit SAMME variant all run SAMME.
    grid = [(100, 0.8), (200, 0.5), (100, 0.5)]
    if not f.binary:
        grid += [(100, 5.0), (1000, 5.0), (1000, 4.0)]
    return [
        (f"n{n}_lr{lr:g}", AdaBoostClassifier(n_estimators=n, learning_rate=lr, random_state=f.seed)) for n, lr in grid
    ]


def _bagging_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    s = f.seed
    out = [("maxsamples0.1_n20", BaggingClassifier(max_samples=0.1, n_estimators=20, random_state=s))]
    if not f.binary:
        # warm_start=True in the reference is a no-op for a single fit and is dropped; the
        # reference's max_features=10 is capped at the number of features.
        out += [
            ("n200", BaggingClassifier(n_estimators=200, random_state=s)),
            (
                "n200_maxfeatures10",
                BaggingClassifier(n_estimators=200, max_features=min(10, f.n_features), random_state=s),
            ),
        ]
    return out


def _rf_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    return [(f"n{n}", RandomForestClassifier(n_estimators=n, random_state=f.seed)) for n in (200, 70, 30, 10)]


def _gbm_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    if f.binary:
        return []  # the reference's binary branch has no GBM variant
    s = f.seed
    return [
        ("lr0.5_n100", GradientBoostingClassifier(learning_rate=0.5, n_estimators=100, random_state=s)),
        ("lr0.5_n200", GradientBoostingClassifier(learning_rate=0.5, n_estimators=200, random_state=s)),
        ("sklearn_default", GradientBoostingClassifier(random_state=s)),
        *[
            (
                f"subsample0.5_n100_lr{lr:g}",
                GradientBoostingClassifier(subsample=0.5, n_estimators=100, learning_rate=lr, random_state=s),
            )
            for lr in (0.05, 0.01, 0.001)
        ],
    ]


def _mlp_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    s = f.seed
    return [
        ("adaptive_alpha0.01", MLPClassifier(learning_rate="adaptive", alpha=0.01, tol=1e-10, random_state=s)),
        ("lbfgs_alpha1e-3", MLPClassifier(solver="lbfgs", alpha=0.001, tol=1e-8, random_state=s)),
        ("sgd_alpha1e-3", MLPClassifier(solver="sgd", alpha=0.001, tol=1e-8, random_state=s)),
    ]


def _xgb(learning_rate: float, seed: int) -> XGBClassifier:
    # HP: XGBClassifier(disable_default_eval_metric=1, learning_rate=0.5) under xgboost 0.90,
    # whose sklearn defaults were max_depth=3, n_estimators=100 (pinned here; xgboost ≥ 1.0 uses
    # max_depth=6). ADAPT: disable_default_eval_metric only matters with an eval set (none here),
    # so it is left out; tree_method is now 'hist' (0.90: 'auto' = exact/approx) and base_score
    # is fitted (0.90: 0.5). n_jobs=1: the pool parallelises over classifiers.
    return XGBClassifier(
        learning_rate=learning_rate, max_depth=3, n_estimators=100, n_jobs=1, random_state=seed, verbosity=0
    )


def _xgb_variants(f: TrainingFacts) -> list[tuple[str, Any]]:
    rates = (0.7, 0.8, 1.0) + (() if f.binary else (5.0,))
    return [(f"lr{lr:g}", _xgb(lr, f.seed)) for lr in rates]


CLASSIFIERS: tuple[ClassifierSpec, ...] = (
    ClassifierSpec(
        "logistic_regression",
        lambda f: LogisticRegression(solver="lbfgs", max_iter=2000, random_state=f.seed),
        "MERF id 0: LogisticRegression(solver='lbfgs', max_iter=2000)",
        _lr_variants,
    ),
    ClassifierSpec("gaussian_nb", lambda f: GaussianNB(), "MERF id 1 = HP: GaussianNB()", _gnb_variants),
    ClassifierSpec(
        "bernoulli_nb",
        # sklearn ≥ 1.4 force_alpha=True: alpha=0.02 is used as given (it was too under 0.21).
        lambda f: BernoulliNB(alpha=0.02),
        "MERF id 2: BernoulliNB(alpha=0.02)",
        _bnb_variants,
    ),
    ClassifierSpec(
        "linear_svm",
        # dual=True: the 0.21/0.24 default; 1.5+ defaults to 'auto' (primal when n > d).
        lambda f: LinearSVC(dual=True, random_state=f.seed),
        "MERF id 3 = HP: LinearSVC()",
        _svc_variants,
    ),
    ClassifierSpec(
        "decision_tree",
        lambda f: DecisionTreeClassifier(random_state=f.seed),
        "MERF id 4 = HP: DecisionTreeClassifier()",
        _tree_variants,
    ),
    ClassifierSpec(
        "lda",
        # n_components is not set (the image Table 10's n_components=9 would exceed
        # n_classes - 1 and is an error in current sklearn; it does not affect prediction).
        lambda f: LinearDiscriminantAnalysis(),
        "MERF id 5 = HP: LinearDiscriminantAnalysis()",
        _lda_variants,
    ),
    ClassifierSpec(
        "adaboost",
        # ADAPT: the reference default algorithm='SAMME.R' no longer exists; SAMME is used.
        lambda f: AdaBoostClassifier(random_state=f.seed),
        "MERF id 6 = HP: AdaBoostClassifier() (50 stumps, lr 1.0)",
        _ada_variants,
    ),
    ClassifierSpec(
        "bagging",
        lambda f: BaggingClassifier(random_state=f.seed),
        "MERF id 7 = HP: BaggingClassifier() (10 trees)",
        _bagging_variants,
    ),
    ClassifierSpec(
        "random_forest",
        # 100 trees: the default since sklearn 0.22, so HP's (0.24.2); MERF's 0.21.2 had 10.
        lambda f: RandomForestClassifier(random_state=f.seed),
        "HP: RandomForestClassifier() (100 trees)",
        _rf_variants,
    ),
    ClassifierSpec(
        "gradient_boosting",
        lambda f: GradientBoostingClassifier(subsample=0.1, n_estimators=50, random_state=f.seed),
        "HP: GradientBoostingClassifier(subsample=0.1, n_estimators=50)",
        _gbm_variants,
    ),
    ClassifierSpec(
        "mlp", lambda f: MLPClassifier(random_state=f.seed), "MERF id 10 = HP: MLPClassifier()", _mlp_variants
    ),
    ClassifierSpec(
        "xgboost",
        lambda f: _xgb(0.5, f.seed),
        "HP: XGBClassifier(disable_default_eval_metric=1, learning_rate=0.5), xgboost 0.90 defaults",
        _xgb_variants,
    ),
)

CLASSIFIER_NAMES: tuple[str, ...] = tuple(spec.name for spec in CLASSIFIERS)


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


def _safe(metric: Callable[[], float]) -> float:
    try:
        return float(metric())
    except ValueError:  # e.g. ROC with a single class in the test labels
        return math.nan


def score_metrics(y_test: np.ndarray, pred: np.ndarray, scores: np.ndarray | None, binary: bool) -> dict[str, float]:
    """The sound protocol's metrics of one fitted classifier."""
    if binary:
        return {
            "roc_auc": _safe(lambda: roc_auc_score(y_test, scores)),
            "pr_auc": _safe(lambda: average_precision_score(y_test, scores)),
            "accuracy": float(accuracy_score(y_test, pred)),
            "f1": float(f1_score(y_test, pred, zero_division=0)),
        }
    return {
        "f1_weighted": float(f1_score(y_test, pred, average="weighted", zero_division=0)),
        "f1_macro": float(f1_score(y_test, pred, average="macro", zero_division=0)),
        "accuracy": float(accuracy_score(y_test, pred)),
    }


def hard_label_metrics(y_test: np.ndarray, pred: np.ndarray, binary: bool) -> dict[str, float]:
    """The reference code's metrics: ROC-AUC and average precision of the hard 0/1 predictions
    (binary; the ROC is then balanced accuracy), weighted F1 (multi-class)."""
    if binary:
        return {
            "roc_auc": _safe(lambda: roc_auc_score(y_test, pred)),
            "pr_auc": _safe(lambda: average_precision_score(y_test, pred)),
        }
    return {"f1_weighted": float(f1_score(y_test, pred, average="weighted", zero_division=0))}


def _mean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else math.nan


def _params_key(estimator: Any) -> str:
    return f"{type(estimator).__name__}{sorted((k, repr(v)) for k, v in estimator.get_params(deep=True).items())}"


def _declared_metrics() -> dict[str, MetricSpec]:
    higher, diagnostic = Direction.HIGHER, MetricSpec.diagnostic
    return {
        "roc_auc": MetricSpec.quality(
            higher, "ROC-AUC on the real test split (binary; scores, or hard labels under paper.*)"
        ),
        "pr_auc": MetricSpec.quality(
            higher, "average precision on the real test split (binary; scores, or hard labels under paper.*)"
        ),
        "accuracy": MetricSpec.quality(higher, "accuracy on the real test split"),
        "f1": MetricSpec.quality(higher, "F1 of the positive class (class index 1) on the real test split (binary)"),
        "f1_weighted": MetricSpec.quality(higher, "support-weighted F1 on the real test split (multi-class)"),
        "f1_macro": MetricSpec.quality(higher, "macro F1 on the real test split (multi-class)"),
        **POOL_DIAGNOSTICS,
        "n_failed": diagnostic("number of the 12 base classifiers that failed"),
    }


POOL_DIAGNOSTICS = {
    "fit_seconds": MetricSpec.diagnostic("wall time of one classifier's fit on the synthetic data"),
    "failed": MetricSpec.diagnostic("1 if the classifier raised, timed out or died (see errors), else 0"),
    "worker_peak_mib": MetricSpec.diagnostic("largest peak RSS of one classifier worker process (NaN in-process)"),
}


# --------------------------------------------------------------------------------------------
# Machinery shared with the image evaluators (evaluators/image_downstream.py, effective_size.py)
# --------------------------------------------------------------------------------------------


def summarise_fits(
    names: list[str],
    results: Mapping[str, TaskResult],
    score: Callable[[TaskResult], dict[str, float]],
    metrics: tuple[str, ...],
    suffix: str = "",
) -> dict[str, float]:
    """Per classifier ``<name>.<metric><suffix>`` (NaN when it failed), ``<name>.fit_seconds<suffix>``
    and ``<name>.failed<suffix>``; the means over the classifiers with a value ``<metric><suffix>``;
    ``n_failed<suffix>``. ``score`` turns a successful result into the metric values."""
    values: dict[str, float] = {}
    per: dict[str, list[float]] = {metric: [] for metric in metrics}
    n_failed = 0
    for name in names:
        result = results[name]
        failed = result.error is not None
        n_failed += failed
        scored = {m: math.nan for m in metrics} if failed else score(result)
        for metric in metrics:
            values[f"{name}.{metric}{suffix}"] = scored[metric]
            per[metric].append(scored[metric])
        values[f"{name}.fit_seconds{suffix}"] = result.fit_seconds
        values[f"{name}.failed{suffix}"] = float(failed)
    for metric, series in per.items():
        values[f"{metric}{suffix}"] = _mean(series)
    values[f"n_failed{suffix}"] = float(n_failed)
    return values


def estimated_cost(estimator: Any) -> float:
    """A rough fit cost (≈ seconds on adult's 11k–24k rows, one core) from the settings that scale
    it, used only to order the pool's queue (costliest first); a wrong guess costs time, never
    changes a result. Measured: LinearSVC ≈ 2 ms per iteration (the paper's 10,000-iteration hinge
    variants dominate), MLP ≈ 11 s, 100-tree forest ≈ 3.5 s, 50-stump AdaBoost ≈ 1.6 s."""
    params = estimator.get_params(deep=False)
    kind = type(estimator).__name__
    if kind == "Pipeline":
        return estimated_cost(params["steps"][-1][1])
    if kind == "OneVsRestClassifier":
        return 3 * estimated_cost(params["estimator"])
    if kind == "LinearSVC":
        return params["max_iter"] / 500
    if kind == "MLPClassifier":
        return 10.0
    if "n_estimators" in params:  # forests, bagging, boosting
        return params["n_estimators"] / 30
    if kind == "LogisticRegression" and params["solver"] in ("liblinear", "saga"):
        return 2.0
    return 0.1


def _growth_key(estimator: Any) -> str | None:
    """Estimators with equal keys differ only in their ensemble's size and can be grown as one."""
    if type(ensemble_of(estimator)).__name__ not in GROWABLE:
        return None
    sizeless = clone(estimator)
    ensemble_of(sizeless).set_params(n_estimators=None)
    return _params_key(sizeless)


def tasks_for(name: str, estimators: list[tuple[str, Any]], binary: bool) -> list[Task]:
    """One task per setting, except that settings differing only in an ensemble's size (the paper
    protocol's 10- to 200-tree forests) share one task that grows the largest and answers for each
    prefix: the same trees and predictions as separate fits, at the largest one's cost."""
    groups: dict[str | None, list[tuple[str, Any]]] = {}
    tasks = []
    for label, estimator in estimators:
        key = _growth_key(estimator)
        if key is None:
            tasks.append(Task((name, label), estimator, binary and label == BASE, cost=estimated_cost(estimator)))
        else:
            groups.setdefault(key, []).append((label, estimator))
    for group in groups.values():
        largest = max(group, key=lambda item: ensemble_of(item[1]).n_estimators)[1]
        if len(group) == 1:
            label = group[0][0]
            tasks.append(Task((name, label), largest, binary and label == BASE, cost=estimated_cost(largest)))
            continue
        stages = tuple(
            Stage((name, label), ensemble_of(e).n_estimators, binary and label == BASE) for label, e in group
        )
        tasks.append(Task((name, "grown"), largest, False, cost=estimated_cost(largest), grown=stages))
    return tasks


def build_estimator(spec: ClassifierSpec, facts: TrainingFacts) -> tuple[Any, TaskResult | None]:
    """(the spec's base estimator, None), or (None, the failure) when building it raised."""
    try:
        return spec.base(facts), None
    except Exception as error:  # noqa: BLE001 - a classifier that cannot be built fails alone
        return None, TaskResult(error=f"building the classifier: {type(error).__name__}: {error}")


def check_classifier_names(specs: tuple[ClassifierSpec, ...]) -> list[str]:
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names) or any("." in name or "/" in name for name in names):
        raise ValueError(f"classifier names must be unique and contain no '.' or '/': {names}")
    return names


@dataclass(frozen=True)
class Fits:
    """The results of one batch of fits, keyed by task id; ``errors`` by ``describe(task id)``;
    ``worker_peak_mib``: the largest peak RSS of a worker process (NaN in-process)."""

    results: dict[Hashable, TaskResult]
    errors: dict[str, str]
    worker_peak_mib: float


@dataclass(frozen=True)
class PooledClassifiers:
    """Settings of the evaluators that fit classifiers through ``evaluators.fitpool``: the seed
    given to every estimator (fixed, not the cell's: the same synthetic data give the same
    numbers in every cell), and the pool (``n_jobs``, ``timeout_s`` per fit, or ``in_process``)."""

    seed: int = 0
    n_jobs: int | None = None
    timeout_s: float | None = 1800.0
    in_process: bool = False

    def __post_init__(self) -> None:
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0 seconds (got {self.timeout_s:g})")
        if self.n_jobs is not None and self.n_jobs < 1:
            raise ValueError(f"n_jobs must be ≥ 1 (got {self.n_jobs})")

    def resolved_jobs(self) -> int:
        if self.n_jobs is not None:
            return max(1, int(self.n_jobs))
        if os.environ.get(JOBS_VARIABLE):
            return max(1, int(os.environ[JOBS_VARIABLE]))
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return max(1, min(DEFAULT_JOBS, cores))

    def run_fits(
        self,
        tasks: list[Task],
        x_train: np.ndarray,
        y_train: np.ndarray,
        x_test: np.ndarray,
        known: dict[Hashable, TaskResult],
        describe: Callable[[Hashable], str],
    ) -> Fits:
        """Fit the tasks (in this process, or in the pool) and return their results together
        with the ``known`` ones (failures found before fitting); warns once per failure with a
        :class:`DownstreamWarning`."""
        results = dict(known)
        if self.in_process:
            results.update(fitpool.run_tasks_in_process(tasks, x_train, y_train, x_test))
        else:
            results.update(fitpool.run_tasks(tasks, x_train, y_train, x_test, self.resolved_jobs(), self.timeout_s))
        peaks = [r.worker_peak_mib for r in results.values() if not math.isnan(r.worker_peak_mib)]
        errors: dict[str, str] = {}
        evaluator = getattr(self, "name", type(self).__name__)
        for task_id, result in results.items():
            if result.error is not None:
                errors[describe(task_id)] = result.error
                warnings.warn(
                    f"{evaluator}: {describe(task_id)} failed: {result.error}", DownstreamWarning, stacklevel=3
                )
        return Fits(results, errors, max(peaks, default=math.nan))


# --------------------------------------------------------------------------------------------
# The evaluator
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DownstreamClassifiers(PooledClassifiers):
    name: str = "downstream"
    description: str = (
        "train 12 classifiers on synthetic rows, test on the real test split (ROC/PRC binary, F1 multi-class)"
    )
    data_kinds: frozenset[DataKind] = frozenset({DataKind.TABULAR})
    metrics: Mapping[str, MetricSpec] = field(default_factory=_declared_metrics)
    classifiers: tuple[ClassifierSpec, ...] | None = None  # None: the module's CLASSIFIERS
    # "none": the classifiers see the encoded columns as they are (the authors' code on raw values);
    # "standard": each classifier's pipeline z-scores every column first, with the mean and sd of
    # the synthetic training rows it is fitted on (never of the test rows) — the z-scored input file
    # that DP-HP's Table 2 ran on (issue 28), and the unscaled liblinear/LinearSVC fits' cost
    scaling: str = "none"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.scaling not in SCALINGS:
            raise ValueError(f"downstream.scaling must be one of {', '.join(SCALINGS)} (got {self.scaling!r})")

    def applies_to(self, schema: Schema) -> bool:
        return schema.n_classes >= 2 and schema.n_features >= 1

    def _scaled(self, estimator: Any) -> Any:
        return make_pipeline(StandardScaler(), estimator) if self.scaling == "standard" else estimator

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        check_same_schema(synthetic, real_test)
        schema = synthetic.schema
        paper = context.protocol == RunProtocol.PAPER
        binary = schema.n_classes == 2
        encoder = TabularEncoder(schema, "codes" if paper else "onehot")
        x_train = encoder.encode(synthetic.x)
        y_train = np.asarray(synthetic.y, dtype=np.int64)
        x_test = encoder.encode(real_test.x)
        y_test = np.asarray(real_test.y, dtype=np.int64)

        facts = training_facts(x_train, y_train, schema.n_classes, self.seed)
        specs = self.classifiers if self.classifiers is not None else CLASSIFIERS
        check_classifier_names(specs)

        tasks: list[Task] = []
        known: dict[Hashable, TaskResult] = {}
        candidates: dict[str, list[str]] = {}
        for spec in specs:
            built: list[tuple[str, Any]] = []
            estimator, failure = build_estimator(spec, facts)
            if failure is None:
                built.append((BASE, self._scaled(estimator)))
            else:
                known[(spec.name, BASE)] = failure
            if paper:
                try:
                    built += [(label, self._scaled(variant)) for label, variant in spec.variants(facts)]
                except Exception as error:  # noqa: BLE001
                    known[(spec.name, "variants")] = TaskResult(
                        error=f"building the variants: {type(error).__name__}: {error}"
                    )
            seen: set[str] = set()
            candidates[spec.name] = [BASE] if (spec.name, BASE) in known else []
            unique: list[tuple[str, Any]] = []
            for label, estimator in built:
                key = _params_key(estimator)
                if key in seen:  # e.g. HP's BernoulliNB() is also its alpha=1 variant
                    continue
                seen.add(key)
                candidates[spec.name].append(label)
                unique.append((label, estimator))
            tasks += tasks_for(spec.name, unique, binary)

        fits = self.run_fits(
            tasks,
            x_train,
            y_train,
            x_test,
            known,
            describe=lambda task_id: task_id[0] if task_id[1] == BASE else f"{task_id[0]}/{task_id[1]}",
        )
        values = self._collect(specs, fits.results, candidates, y_test, binary, paper)
        values["worker_peak_mib"] = fits.worker_peak_mib
        return Evaluation(values, fits.errors)

    def _collect(
        self,
        specs: tuple[ClassifierSpec, ...],
        results: dict[Hashable, TaskResult],
        candidates: dict[str, list[str]],
        y_test: np.ndarray,
        binary: bool,
        paper: bool,
    ) -> dict[str, float]:
        names = [spec.name for spec in specs]
        base = {name: results[(name, BASE)] for name in names}
        values = summarise_fits(
            names,
            base,
            lambda r: score_metrics(y_test, r.pred, r.scores, binary),
            BINARY_METRICS if binary else MULTICLASS_METRICS,
        )
        if not paper:
            return values
        paper_names = PAPER_BINARY_METRICS if binary else PAPER_MULTICLASS_METRICS
        per: dict[str, list[float]] = {}

        def put(group: str, metric: str, value: float) -> None:
            values[f"{group}.{metric}"] = value
            per.setdefault(f"{group.rpartition('.')[0]}|{metric}", []).append(value)

        for name in names:
            failed = base[name].error is not None
            hard = {m: math.nan for m in paper_names} if failed else hard_label_metrics(y_test, base[name].pred, binary)
            for metric in paper_names:
                put(f"paper.{name}", metric, hard[metric])
            scored = [
                hard_label_metrics(y_test, results[(name, label)].pred, binary)
                for label in candidates[name]
                if results[(name, label)].error is None
            ]
            for metric in paper_names:
                best = max((s[metric] for s in scored if not math.isnan(s[metric])), default=math.nan)
                put(f"test_selected_best.{name}", metric, best)

        for key, series in per.items():
            prefix, _, metric = key.partition("|")
            values[f"{prefix}.{metric}"] = _mean(series)
        return values


DOWNSTREAM = DownstreamClassifiers()
