"""``shadow-mia``: membership inference on the synthetic output by shadow models (Shokri et al.,
S&P 2017, adapted to synthetic data by Stadler, Oprisanu & Troncoso, USENIX Security 2022).

The attacker knows the generator (the run's method, its settings and ε: Kerckhoffs) and holds
reference rows from the data's distribution. For each of ``shadows`` shadow models it draws a
random half of the candidate rows, adds them to its reference rows, fits the run's method on that
shadow training set (``EvalContext.shadow_fit``: a fresh fit with a fresh ledger, never the run's
own) and samples from it. The features of a candidate against a synthetic sample are the
logarithms of its distances to its nearest synthetic rows (``neighbours``; the mixed-type
distance of ``evaluators/rows.py``), beside their differences from the candidate's own mean over
the shadows that held it and over those that did not (a per-example calibration in the spirit of
LiRA, Carlini et al., S&P 2022) — which removes how isolated a row is by itself, the confounder of a
plain distance attack (GAN-Leaks in ``privacy``), and duplicates of a candidate elsewhere in the
data. A logistic regression learns in/out from the shadows (each shadow's calibration leaves that
shadow out) and
scores the candidates against the run's own sample. Every shadow samples as many rows as the run
did, so the distances compare (its training set is smaller than the run's, so under DP its fit is
noisier per row: the attack is, if anything, conservative). ``shadow_auc`` (95% CI, Hanley &
McNeil) and the TPR at 1% FPR are on members (training rows) against non-members (test rows), equal per class.

Which rows: candidates as in ``privacy`` (members: training rows; non-members: test rows); the
attacker's reference rows are the other test rows in the training class mix. No method reads
them for a release and no selection uses them; the shadow fits are an evaluation, not a release.
Cost: ``shadows`` fits of the method on shadow sets of (reference + half the candidates) rows —
named-only, run it where a fit is cheap (cervical, gmm2d, discretized adult with the marginal
methods) or with fewer shadows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bench.core.data import DataKind, LabelledData, Schema
from bench.api.contracts import Direction, EvalContext, Evaluation, MetricSpec
from evaluators.privacy import nearest, hanley_mcneil_interval, tpr_at_fpr
from evaluators.rows import class_matched, distance_features, in_class_mix, is_tabular, subset


def _metrics() -> dict[str, MetricSpec]:
    q, d = MetricSpec.quality, MetricSpec.diagnostic
    return {
        "shadow_auc": q(
            Direction.LOWER, "shadow-model membership-inference AUC on members vs non-members (0.5: no signal)"
        ),
        "shadow_auc_low": d("lower end of the 95% CI of shadow_auc (Hanley & McNeil)"),
        "shadow_auc_high": d("upper end of the 95% CI of shadow_auc (Hanley & McNeil)"),
        "shadow_tpr_at_fpr_1pct": q(Direction.LOWER, "shadow-model attack's true-positive rate at 1% false positives"),
        "shadow_targets": d("members (= non-members) the attack was scored on"),
        "shadow_fits": d("shadow models fitted"),
        "shadow_rows": d("rows of each shadow training set (reference + half the candidates)"),
        "time_s": d("seconds for the whole attack, shadow fits included"),
    }


@dataclass(frozen=True)
class ShadowModelAttack:
    name: str = "shadow-mia"
    description: str = (
        "membership inference by shadow models: the run's method refitted on reference rows plus half "
        "the candidates, a classifier of nearest-synthetic-row distances learnt from the shadows; "
        "lower AUC is better"
    )
    data_kinds: frozenset[DataKind] = frozenset({DataKind.TWO_D, DataKind.TABULAR, DataKind.DISCRETE})
    shadows: int = 8
    max_targets: int = 200  # members (= non-members), class-matched
    max_reference: int = 2000  # the attacker's own rows
    neighbours: tuple[int, ...] = (1, 2, 5)
    metrics: Mapping[str, MetricSpec] = field(default_factory=_metrics)
    run_by_default: bool = False  # named-only: --evaluators shadow-mia (it refits the method)

    def __post_init__(self) -> None:
        if self.shadows < 2:
            raise ValueError(f"shadows must be at least 2 (got {self.shadows})")
        if self.max_targets < 2 or self.max_reference < 1:
            raise ValueError("max_targets must be at least 2 and max_reference at least 1")
        if not self.neighbours or min(self.neighbours) < 1:
            raise ValueError(f"neighbours must be positive counts (got {self.neighbours})")

    def applies_to(self, schema: Schema) -> bool:
        return is_tabular(schema)

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        if context.shadow_fit is None:
            raise ValueError(
                "shadow-mia refits the run's method: run it in a cell (--evaluators shadow-mia) or "
                "through `python -m bench evaluate`, which rebuild the method from the run"
            )
        started = time.perf_counter()
        rng = np.random.default_rng([context.seed, 0x5AD0])
        members, non_members, _ = class_matched(real_train, real_test, self.max_targets, rng)
        if len(members) < 2:
            raise ValueError("too few test rows per class for non-members: shadow-mia needs test rows of each class")
        left = np.setdiff1d(np.arange(len(real_test)), non_members)
        reference = subset(real_test, left[in_class_mix(subset(real_test, left), real_train, self.max_reference, rng)])
        targets = _concatenate(subset(real_train, members), subset(real_test, non_members))
        is_member = np.r_[np.ones(len(members)), np.zeros(len(non_members))]
        sample_rows = len(synthetic)  # nearest-row distances shrink with the sample: every sample this size
        candidates = distance_features(targets, real_train)

        def features(sample: LabelledData) -> np.ndarray:
            distances = nearest(distance_features(sample, real_train), candidates, max(self.neighbours))
            return np.log(distances[:, [min(k, distances.shape[1]) - 1 for k in self.neighbours]] + 1e-6)

        shadow_features, shadow_in = [], []
        for k in range(self.shadows):
            chosen = rng.random(len(targets)) < 0.5
            training = _concatenate(reference, subset(targets, np.flatnonzero(chosen)))
            shadow_features.append(features(context.shadow_fit(training, context.seed * 1000 + k, sample_rows)))
            shadow_in.append(chosen)
            context.progress(k + 1, self.shadows)
        stacked = np.stack(shadow_features)  # shadows × targets × neighbours
        inside = np.stack(shadow_in)[:, :, None].astype(float)  # shadows × targets × 1
        training = [per_target(f, stacked, inside, leave_out=k) for k, f in enumerate(stacked)]
        attack = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(
            np.vstack(training), np.concatenate(shadow_in).astype(int)
        )
        scores = attack.decision_function(per_target(features(synthetic), stacked, inside))
        auc = float(roc_auc_score(is_member, scores))
        low, high = hanley_mcneil_interval(auc, len(members), len(non_members))
        return Evaluation(
            {
                "shadow_auc": auc,
                "shadow_auc_low": low,
                "shadow_auc_high": high,
                "shadow_tpr_at_fpr_1pct": tpr_at_fpr(scores[is_member == 1], scores[is_member == 0], 0.01),
                "shadow_targets": float(len(members)),
                "shadow_fits": float(self.shadows),
                "shadow_rows": float(len(reference) + int(np.mean([c.sum() for c in shadow_in]))),
                "time_s": time.perf_counter() - started,
            }
        )


def per_target(values: np.ndarray, shadows: np.ndarray, inside: np.ndarray, leave_out: int | None = None) -> np.ndarray:
    """The attack's features of one sample (targets × neighbours log distances): the values
    themselves and their differences from the candidate's own mean over the shadows that held it
    and over those that did not (without shadow ``leave_out``, the one being learnt from, so
    training sees what scoring will). Where a candidate has no such shadow, the mean over all
    candidates stands in."""
    keep = np.ones(len(shadows), dtype=bool)
    if leave_out is not None:
        keep[leave_out] = False
    found, held = shadows[keep], inside[keep]
    columns = [values]
    for weight in (held, 1.0 - held):
        count = weight.sum(0)
        overall = (found * weight).sum((0, 1)) / max(weight.sum(), 1.0)
        mean = np.where(count > 0, (found * weight).sum(0) / np.maximum(count, 1.0), overall)
        columns.append(values - mean)
    return np.hstack(columns)


def _concatenate(first: LabelledData, second: LabelledData) -> LabelledData:
    return LabelledData(np.vstack([first.x, second.x]), np.concatenate([first.y, second.y]), first.schema)


SHADOW_MIA = ShadowModelAttack()
