"""Tests behind the marks in the tables: is our mean over seeds different from the paper's value
(one-sample t), and is a method different from the `uniform` baseline on the same seeds (paired t)?

Both are two-sided at the 5% level and need at least ``MIN_SEEDS_FOR_EVIDENCE`` values: with fewer
seeds a cell is shown greyed and never tested. Each test performed is listed in the report with its
statistic and p-value, so a mark can be checked (and a reader can apply another correction for the
number of tests: none is applied here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

LEVEL = 0.05
PAPER_MARK = "≠"  # our mean differs from the paper's value
BETTER_MARK = "▲"  # better than uniform on the same seeds
WORSE_MARK = "▼"  # worse than uniform on the same seeds
MARK_LEGEND = (
    f"{PAPER_MARK}: the mean over seeds differs from the paper's value (one-sample t, two-sided, p < {LEVEL}); "
    f"{BETTER_MARK}/{WORSE_MARK}: better/worse than `uniform` on the same seeds (paired t, two-sided, "
    f"p < {LEVEL}); tests need ≥ 3 seeds and are listed below each table."
)


@dataclass(frozen=True)
class TTest:
    against: str  # "paper" or "uniform"
    n: int
    difference: float  # ours − reference (mean of the paired differences)
    statistic: float
    p: float

    @property
    def significant(self) -> bool:
        return self.p < LEVEL

    def text(self) -> str:
        return f"Δ = {self.difference:+.3g}, t({self.n - 1}) = {self.statistic:.2f}, p = {self.p:.2g}"


def one_sample(values: pd.Series, reference: float, min_seeds: int) -> TTest | None:
    from scipy import stats

    values = values.dropna()
    if len(values) < min_seeds or values.std(ddof=1) == 0 or not math.isfinite(reference):
        return None
    result = stats.ttest_1samp(values, reference)
    return TTest("paper", len(values), float(values.mean() - reference), float(result.statistic), float(result.pvalue))


def paired(ours: pd.Series, baseline: pd.Series, min_seeds: int) -> TTest | None:
    """``ours`` and ``baseline`` indexed by seed; only the seeds both have are compared."""
    from scipy import stats

    both = pd.concat([ours, baseline], axis=1, join="inner").dropna()
    if len(both) < min_seeds:
        return None
    differences = both.iloc[:, 0] - both.iloc[:, 1]
    if differences.std(ddof=1) == 0:
        return None
    result = stats.ttest_rel(both.iloc[:, 0], both.iloc[:, 1])
    return TTest("uniform", len(both), float(differences.mean()), float(result.statistic), float(result.pvalue))


def welch(ours: pd.Series, theirs: list[float], against: str, min_seeds: int) -> TTest | None:
    """Welch's two-sample t of our seeds against another code's seeds (unpaired: their seeds draw
    other splits and noise); its ``n`` − 1 is the Welch–Satterthwaite degrees of freedom, rounded."""
    from scipy import stats

    ours = ours.dropna()
    if len(ours) < min_seeds or len(theirs) < min_seeds:
        return None
    result = stats.ttest_ind(ours, theirs, equal_var=False)
    a, b = ours.var(ddof=1) / len(ours), pd.Series(theirs).var(ddof=1) / len(theirs)
    df = (
        (a + b) ** 2 / (a**2 / (len(ours) - 1) + b**2 / (len(theirs) - 1)) if a + b > 0 else len(ours) + len(theirs) - 2
    )
    return TTest(
        against,
        round(df) + 1,
        float(ours.mean() - pd.Series(theirs).mean()),
        float(result.statistic),
        float(result.pvalue),
    )


def marks(versus_paper: TTest | None, versus_uniform: TTest | None, higher_is_better: bool | None) -> str:
    text = PAPER_MARK if versus_paper is not None and versus_paper.significant else ""
    if versus_uniform is not None and versus_uniform.significant and higher_is_better is not None:
        better = (versus_uniform.difference > 0) == higher_is_better
        text += BETTER_MARK if better else WORSE_MARK
    return text
