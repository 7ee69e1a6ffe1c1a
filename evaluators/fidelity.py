"""``fidelity``: how close the synthetic table is to the real one, on the table itself.

Utility by TSTR says little on small test splits (cervical: 151 rows, about 11 positives); these
scores compare the synthetic rows with the real *training* rows directly (the distribution the
generator was asked to match), label included as a categorical column:

* ``column_shapes``: the mean over columns of 1 − KS statistic (numerical) or 1 − total
  variation distance (categorical, ordinal, binary) — SDMetrics' KSComplement / TVComplement.
* ``column_pairs``: the mean over column pairs of 1 − |ρ_real − ρ_syn| / 2 (Pearson, both
  numerical: SDMetrics' CorrelationSimilarity) or 1 − TV of the 2-way contingency table
  (otherwise: SDMetrics' ContingencySimilarity, except that a numerical column is binned at the
  real column's deciles where SDMetrics takes 10 equal-width bins — deciles keep every bin
  populated on skewed columns such as capital gains, whose equal-width bins leave all but one
  nearly empty).
  Both sides are scored on the same rows where their sizes agree (a sample of the training rows
  themselves scores 1 on both), else on one draw of at most ``4·max_rows`` each.
  At most ``max_pairs`` pairs, drawn with the evaluation's seed, when a table has more.
* ``detection_auc``: a classifier-two-sample test (Lopez-Paz & Oquab, ICLR 2017): gradient-boosted
  trees told real from synthetic rows on the mixed-type encoding, 5-fold cross-validated ROC AUC on
  equal numbers of each (at most ``max_rows``). 0.5: indistinguishable; 1: always told apart. The
  real rows are *test* rows drawn in the training split's class mix: against training rows, a
  generator that copies them would put each row in both classes, and the cross-validated
  classifier, learning the twin's opposite label, would score far below 0.5.

* ``alpha_precision`` and ``beta_recall``: the integrated α-precision and β-recall of Alaa et al.,
  "How Faithful is your Synthetic Data?" (ICML 2022, §3). P_α is the share of synthetic rows inside
  the real data's α-support, R_β the share of real rows inside the synthetic data's β-support;
  each curve is integrated as 1 − 2·mean over the levels of |P_α − α| (|R_β − β|): 1 when the
  synthetic rows fill the real support with the real density, towards 0 for a collapsed or a
  spread-out generator. Deviation, stated: the paper learns an embedding with a one-class objective
  and takes the supports as balls around its centre; here the embedding is the fixed mixed-type
  distance space of the privacy scores (evaluators/rows.py) and each support a ball around its
  sample's mean (synthcity's embedding-free variant), so no network is trained on private rows
  inside an evaluator.

SDMetrics itself is not a dependency (it pulls in RDT, Copulas and plotly); the formulas above are
its documented ones.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
from scipy import stats

from bench.core.data import ColumnKind, DataKind, LabelledData, Schema
from bench.api.contracts import Direction, EvalContext, Evaluation, MetricSpec
from evaluators.rows import distance_features, in_class_mix, is_tabular, subset

DECILES = 10


def _metrics() -> dict[str, MetricSpec]:
    q, d = MetricSpec.quality, MetricSpec.diagnostic
    return {
        "column_shapes": q(
            Direction.HIGHER, "mean 1 − KS (numerical) / 1 − TV (categorical) per column, label included"
        ),
        "column_pairs": q(Direction.HIGHER, "mean correlation / contingency similarity over column pairs"),
        "detection_auc": q(
            Direction.LOWER, "C2ST: cross-validated AUC of a classifier telling real from synthetic rows (0.5 ideal)"
        ),
        "alpha_precision": q(
            Direction.HIGHER, "integrated α-precision: synthetic rows inside the real α-supports (1 ideal)"
        ),
        "beta_recall": q(Direction.HIGHER, "integrated β-recall: real rows inside the synthetic β-supports (1 ideal)"),
        "pairs_scored": d("column pairs scored"),
        "time_s": d("seconds for the whole fidelity evaluation"),
    }


@dataclass(frozen=True)
class Fidelity:
    name: str = "fidelity"
    description: str = (
        "fidelity on the table: column shapes (KS/TV), column pairs (correlation/contingency), detection AUC (C2ST)"
    )
    data_kinds: frozenset[DataKind] = frozenset({DataKind.TWO_D, DataKind.TABULAR, DataKind.DISCRETE})
    max_rows: int = 5000
    max_pairs: int = 300
    metrics: Mapping[str, MetricSpec] = field(default_factory=_metrics)
    run_by_default: bool = False  # named-only: --evaluators fidelity

    def __post_init__(self) -> None:
        if self.max_rows < 20 or self.max_pairs < 1:
            raise ValueError(f"max_rows must be ≥ 20 and max_pairs ≥ 1 (got {self.max_rows}, {self.max_pairs})")

    def applies_to(self, schema: Schema) -> bool:
        return is_tabular(schema)

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        started = time.perf_counter()
        rng = np.random.default_rng([context.seed, 0xF1D])
        real_rows, syn_rows = same_rows(rng, len(real_train), len(synthetic), 4 * self.max_rows)
        real, syn = _columns(subset(real_train, real_rows)), _columns(subset(synthetic, syn_rows))
        kinds = [c.kind for c in real_train.schema.columns] + [ColumnKind.CATEGORICAL]
        sizes = [len(c.categories) if c.categories else 2 for c in real_train.schema.columns] + [
            real_train.schema.n_classes
        ]
        shapes = [column_similarity(r, s, kind, k) for r, s, kind, k in zip(real.T, syn.T, kinds, sizes)]
        pairs = list(itertools.combinations(range(len(kinds)), 2))
        if len(pairs) > self.max_pairs:
            pairs = [pairs[i] for i in np.sort(rng.choice(len(pairs), self.max_pairs, replace=False))]
        codes_real, codes_syn, code_sizes = _codes(real, syn, kinds, sizes)
        pair_scores = [pair_similarity(real, syn, codes_real, codes_syn, kinds, code_sizes, i, j) for i, j in pairs]
        return Evaluation(
            {
                "column_shapes": float(np.mean(shapes)),
                "column_pairs": float(np.mean(pair_scores)) if pair_scores else float("nan"),
                "detection_auc": detection_auc(
                    synthetic,
                    subset(real_test, in_class_mix(real_test, real_train, self.max_rows, rng)),
                    real_train,
                    self.max_rows,
                    rng,
                ),
                **dict(zip(("alpha_precision", "beta_recall"), self._alpha_beta(synthetic, real_train, rng))),
                "pairs_scored": float(len(pair_scores)),
                "time_s": time.perf_counter() - started,
            }
        )

    def _alpha_beta(self, synthetic: LabelledData, real_train: LabelledData, rng) -> tuple[float, float]:
        real_rows, syn_rows = same_rows(rng, len(real_train), len(synthetic), self.max_rows)
        return alpha_precision_beta_recall(
            distance_features(subset(real_train, real_rows), real_train),
            distance_features(subset(synthetic, syn_rows), real_train),
        )


def same_rows(rng: np.random.Generator, n_real: int, n_synthetic: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows each side is scored on, at most ``cap``: one draw for both when the sizes agree,
    so that a sample which is the training rows themselves (``real``) is scored on the same rows
    (drawn apart, adult's column scores were 0.9976, not 1); else one draw each."""
    real_rows = rng.permutation(n_real)[:cap]
    return real_rows, real_rows if n_synthetic == n_real else rng.permutation(n_synthetic)[:cap]


def _columns(data: LabelledData) -> np.ndarray:
    return np.column_stack([data.x.astype(np.float64), data.y.astype(np.float64)])


def column_similarity(real: np.ndarray, synthetic: np.ndarray, kind: ColumnKind, size: int) -> float:
    if kind == ColumnKind.NUMERICAL:
        return 1.0 - float(stats.ks_2samp(real, synthetic).statistic)
    return 1.0 - total_variation(_frequencies(real, size), _frequencies(synthetic, size))


def _frequencies(codes: np.ndarray, size: int) -> np.ndarray:
    counts = np.bincount(np.clip(codes.astype(np.int64), 0, size - 1), minlength=size).astype(float)
    return counts / max(counts.sum(), 1.0)


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    return 0.5 * float(np.abs(p - q).sum())


def _codes(real: np.ndarray, syn: np.ndarray, kinds, sizes) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Every column as small integer codes (numerical ones binned at the real column's deciles),
    and each column's number of codes."""
    codes_real, codes_syn, sizes = real.astype(np.int64), syn.astype(np.int64), list(sizes)
    for j, kind in enumerate(kinds):
        if kind == ColumnKind.NUMERICAL:
            edges = np.unique(np.quantile(real[:, j], np.linspace(0, 1, DECILES + 1)[1:-1]))
            codes_real[:, j], codes_syn[:, j] = np.searchsorted(edges, real[:, j]), np.searchsorted(edges, syn[:, j])
            sizes[j] = len(edges) + 1
    return codes_real, codes_syn, sizes


def pair_similarity(real, syn, codes_real, codes_syn, kinds, sizes, i: int, j: int) -> float:
    if kinds[i] == kinds[j] == ColumnKind.NUMERICAL:
        rho_real = _correlation(real[:, i], real[:, j])
        rho_syn = _correlation(syn[:, i], syn[:, j])
        return 1.0 - abs(rho_real - rho_syn) / 2
    size = sizes[i] * sizes[j]
    joint_real = _frequencies(
        np.clip(codes_real[:, i], 0, sizes[i] - 1) * sizes[j] + np.clip(codes_real[:, j], 0, sizes[j] - 1), size
    )
    joint_syn = _frequencies(
        np.clip(codes_syn[:, i], 0, sizes[i] - 1) * sizes[j] + np.clip(codes_syn[:, j], 0, sizes[j] - 1), size
    )
    return 1.0 - total_variation(joint_real, joint_syn)


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    if a.std() == 0 or b.std() == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


LEVELS = np.linspace(0.0, 1.0, 21)[1:]  # α (and β) = 0.05, 0.10, …, 1


def alpha_precision_beta_recall(real: np.ndarray, synthetic: np.ndarray) -> tuple[float, float]:
    """(integrated α-precision, integrated β-recall) of rows in one feature space (module
    docstring): the α-support of a sample is the ball around its mean whose radius is the
    α-quantile of its rows' distances to that mean."""
    if len(real) < 2 or len(synthetic) < 2:
        return float("nan"), float("nan")

    def coverage(support: np.ndarray, probe: np.ndarray) -> np.ndarray:
        centre = support.mean(axis=0)
        radii = np.quantile(np.linalg.norm(support - centre, axis=1), LEVELS)
        distances = np.linalg.norm(probe - centre, axis=1)
        return (distances[None, :] <= radii[:, None]).mean(axis=1)

    precision = 1.0 - 2.0 * float(np.mean(np.abs(coverage(real, synthetic) - LEVELS)))
    recall = 1.0 - 2.0 * float(np.mean(np.abs(coverage(synthetic, real) - LEVELS)))
    return precision, recall


def detection_auc(
    synthetic: LabelledData, real: LabelledData, scale: LabelledData, max_rows: int, rng: np.random.Generator
) -> float:
    """5-fold cross-validated ROC AUC of gradient-boosted trees separating real from synthetic
    rows (``scale``: the training rows, for numerical columns without public bounds)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    n = min(len(synthetic), len(real), max_rows)
    if n < 10:
        return float("nan")
    rows = np.vstack(
        [
            distance_features(subset(real, rng.permutation(len(real))[:n]), scale),
            distance_features(subset(synthetic, rng.permutation(len(synthetic))[:n]), scale),
        ]
    )
    is_real = np.r_[np.ones(n), np.zeros(n)]
    folds = StratifiedKFold(5, shuffle=True, random_state=int(rng.integers(2**31)))
    # leaves of at most a tenth of the rows: a small test split (cervical: about 150 rows) must still be learnable
    classifier = HistGradientBoostingClassifier(max_iter=100, min_samples_leaf=max(2, min(20, n // 10)), random_state=0)
    return float(np.mean(cross_val_score(classifier, rows, is_real, cv=folds, scoring="roc_auc")))


FIDELITY = Fidelity()
