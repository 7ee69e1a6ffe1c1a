"""``privacy``: what the synthetic rows reveal about the training rows (output privacy).

The ledger states what the mechanism promises and ``bench audit`` lower-bounds ε from its
releases; this evaluator attacks the *output*. On the mixed-type distance of ``evaluators/rows.py``:

* **Distance to closest record.** ``dcr_share``: the share of synthetic rows closer to a training
  row than to a holdout row, against equal-sized, class-matched sets of training rows (members)
  and test rows (non-members); ties count one half (Platzer & Reutterer 2021, "Holdout-based
  fidelity and privacy assessment"). 0.5 is what a generator that never saw the members gives.
  One draw of members and holdout is one noisy number (on cervical one DP-MERF sample scored
  0.03–0.93 over 200 draws), so ``dcr_share`` is the mean over ``DCR_DRAWS`` class-matched draws
  of both, and ``dcr_share_sd`` their standard deviation (the first draw is the members and
  non-members the attacks below use). The members are a subset of the training rows (the holdout cannot be larger than the test
  split), so a copy of a training row outside that subset counts as a fresh row here:
  ``dcr_copies`` counts exact copies of *any* training row (distance 0) among the synthetic rows,
  and ``dcr_copies_null`` the same share among fresh real rows (reference test rows), which a
  coarsely discretized table has too. ``dcr_p5``: the 5th percentile of each synthetic row's
  distance to its closest training row; ``nndr_p5``: the 5th percentile of the ratio of the
  closest to the second-closest training row's distance (0: a synthetic row sits on one row).
* **Membership inference on the output**, scored on members against non-members (equal, class
  matched), with AUC (95% CI by Hanley & McNeil 1982) and TPR at FPR 1% and 0.1% (the resolution
  is one over the non-member count, reported as ``mia_rows``):
  ``mia_auc``: DOMIAS (van Breugel et al., AISTATS 2023) — the density of the synthetic data over
  the density of reference rows (further test rows, drawn in the training class mix), here with
  1-nearest-neighbour density estimates, log d_ref(x) − log d_syn(x) (a kNN density ∝ 1/d^D; D and
  the constants do not change a ranking); ``gan_leaks_auc``: the full black-box attack of GAN-Leaks
  (Chen et al., CCS 2020), −d_syn(x).

Which rows: members are training rows the method fitted on; non-members (the holdout) and the
reference are test rows, which no method reads and no selection uses (under both protocols;
under the paper protocol the test rows are undersampled like the training rows, see
docs/data.md). Members and non-members have the same size per class (undersampling changes the
training split's class mix, which an attack must not score), at most ``max_rows``; the reference
rows follow the training class mix. Distances are exact (brute force, chunked by scikit-learn):
the DCR queries are at most ``2·max_rows`` synthetic rows against every training row, and the
attacks query the ``2·max_rows`` candidates against every synthetic row, so time and memory grow
linearly in the split and sample sizes (census: see docs/results.md). Images are not scored (see
docs/results.md: the same attacks on encoder features are future work).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
from scipy import stats
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import NearestNeighbors

from bench.core.data import DataKind, LabelledData, Schema
from bench.api.contracts import Direction, EvalContext, Evaluation, MetricSpec
from evaluators.rows import class_matched, distance_features, is_tabular, subset


# distances come from ‖a‖² + ‖b‖² − 2a·b (scikit-learn's brute force), which leaves about 1e-7 of
# round-off on identical rows; every real difference in the mixed-type encoding is far larger
COPY_DISTANCE = 1e-6
DCR_DRAWS = 20  # draws of members and holdout behind dcr_share


def _metrics() -> dict[str, MetricSpec]:
    q, d = MetricSpec.quality, MetricSpec.diagnostic
    return {
        "dcr_share": q(
            Direction.LOWER,
            f"share of synthetic rows closer to a training row than to a holdout row (ties ½), mean over "
            f"{DCR_DRAWS} class-matched draws of members and holdout",
        ),
        "dcr_share_sd": d(f"standard deviation of the share over its {DCR_DRAWS} draws of members and holdout"),
        "dcr_copies": q(Direction.LOWER, "share of synthetic rows that are exact copies of a training row"),
        "dcr_copies_null": d("share of fresh real rows (reference test rows) that equal a training row"),
        "dcr_p5": q(
            Direction.HIGHER, "5th percentile of the distance from a synthetic row to its closest training row"
        ),
        "nndr_p5": q(
            Direction.HIGHER, "5th percentile of closest / second-closest training-row distance of synthetic rows"
        ),
        "mia_auc": q(Direction.LOWER, "DOMIAS membership-inference AUC on members vs non-members (0.5: no signal)"),
        "mia_auc_low": d("lower end of the 95% CI of mia_auc (Hanley & McNeil)"),
        "mia_auc_high": d("upper end of the 95% CI of mia_auc (Hanley & McNeil)"),
        "mia_tpr_at_fpr_1pct": q(Direction.LOWER, "DOMIAS true-positive rate at 1% false positives"),
        "mia_tpr_at_fpr_01pct": q(Direction.LOWER, "DOMIAS true-positive rate at 0.1% false positives"),
        "gan_leaks_auc": q(Direction.LOWER, "GAN-Leaks (distance to the synthetic data) membership AUC"),
        "mia_rows": d("members (= non-members) the attacks were scored on"),
        "time_s": d("seconds for the whole privacy evaluation"),
    }


@dataclass(frozen=True)
class OutputPrivacy:
    name: str = "privacy"
    description: str = "output privacy: distance to closest record vs a holdout (share, copies, DCR, NNDR) and membership-inference AUC (DOMIAS, GAN-Leaks); lower AUC is better"
    data_kinds: frozenset[DataKind] = frozenset({DataKind.TWO_D, DataKind.TABULAR, DataKind.DISCRETE})
    max_rows: int = 5000
    metrics: Mapping[str, MetricSpec] = field(default_factory=_metrics)
    run_by_default: bool = False  # named-only: --evaluators privacy

    def __post_init__(self) -> None:
        if self.max_rows < 10:
            raise ValueError(f"max_rows must be at least 10 (got {self.max_rows})")

    def applies_to(self, schema: Schema) -> bool:
        return is_tabular(schema)

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        import time

        started = time.perf_counter()
        rng = np.random.default_rng([context.seed, 0x5EC])
        members, non_members, reference = class_matched(real_train, real_test, self.max_rows, rng)
        if len(members) < 2:
            raise ValueError(
                "too few test rows per class for a holdout: the privacy evaluator needs test rows of each class"
            )
        kept = rng.permutation(len(synthetic))[: 2 * self.max_rows]

        def features(data: LabelledData, index: np.ndarray) -> np.ndarray:
            return distance_features(subset(data, index), real_train)

        train = distance_features(real_train, real_train)
        syn_all = distance_features(synthetic, real_train)
        mem, non, ref = train[members], features(real_test, non_members), features(real_test, reference)
        syn = syn_all[kept]
        to_train = nearest(train, syn, 2)
        closest = to_train[:, 0]
        test = features(real_test, np.arange(len(real_test)))
        draws = [(members, non_members)] + [
            class_matched(real_train, real_test, self.max_rows, rng)[:2] for _ in range(DCR_DRAWS - 1)
        ]
        shares = [closer_share(nearest(train[m], syn, 1)[:, 0], nearest(test[n], syn, 1)[:, 0]) for m, n in draws]
        copies_null = float(np.mean(nearest(train, ref, 1)[:, 0] <= COPY_DISTANCE)) if len(ref) else 0.0
        ratio = np.where(to_train[:, 1] > 0, closest / np.maximum(to_train[:, 1], 1e-12), 1.0)

        candidates = np.vstack([mem, non])
        is_member = np.r_[np.ones(len(mem)), np.zeros(len(non))]
        d_syn = nearest(syn_all, candidates, 1)[:, 0]
        d_ref = nearest(ref, candidates, 1)[:, 0] if len(ref) else np.ones(len(candidates))
        domias = np.log(d_ref + 1e-6) - np.log(d_syn + 1e-6)
        auc = float(roc_auc_score(is_member, domias))
        low, high = hanley_mcneil_interval(auc, len(mem), len(non))
        return Evaluation(
            {
                "dcr_share": float(np.mean(shares)),
                "dcr_share_sd": float(np.std(shares, ddof=1)),
                "dcr_copies": float(np.mean(closest <= COPY_DISTANCE)),
                "dcr_copies_null": copies_null,
                "dcr_p5": float(np.percentile(closest, 5)),
                "nndr_p5": float(np.percentile(ratio, 5)),
                "mia_auc": auc,
                "mia_auc_low": low,
                "mia_auc_high": high,
                "mia_tpr_at_fpr_1pct": tpr_at_fpr(domias[is_member == 1], domias[is_member == 0], 0.01),
                "mia_tpr_at_fpr_01pct": tpr_at_fpr(domias[is_member == 1], domias[is_member == 0], 0.001),
                "gan_leaks_auc": float(roc_auc_score(is_member, -d_syn)),
                "mia_rows": float(len(mem)),
                "time_s": time.perf_counter() - started,
            }
        )


def closer_share(to_train: np.ndarray, to_holdout: np.ndarray) -> float:
    """The share of rows closer to the training set than to the holdout, ties counting one half."""
    tie = np.abs(to_train - to_holdout) <= COPY_DISTANCE
    return float(np.mean((to_train < to_holdout) & ~tie) + 0.5 * np.mean(tie))


def nearest(points: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Distances from each query to its ``k`` nearest ``points`` (exact, Euclidean)."""
    k = min(k, len(points))
    index = NearestNeighbors(n_neighbors=k, algorithm="brute").fit(points)
    distances, _ = index.kneighbors(queries)
    return distances


def hanley_mcneil_interval(auc: float, positives: int, negatives: int, confidence: float = 0.95) -> tuple[float, float]:
    """The normal-approximation CI of an AUC by Hanley & McNeil (1982), eq. 2."""
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    variance = (auc * (1 - auc) + (positives - 1) * (q1 - auc**2) + (negatives - 1) * (q2 - auc**2)) / (
        positives * negatives
    )
    half = float(stats.norm.ppf(0.5 + confidence / 2)) * math.sqrt(max(variance, 0.0))
    return max(0.0, auc - half), min(1.0, auc + half)


def tpr_at_fpr(member_scores: np.ndarray, non_member_scores: np.ndarray, fpr: float) -> float:
    """The share of members scored above the threshold that at most ``fpr`` of non-members exceed."""
    threshold = np.quantile(non_member_scores, 1 - fpr, method="higher")
    return float(np.mean(member_scores > threshold))


OUTPUT_PRIVACY = OutputPrivacy()
