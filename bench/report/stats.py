"""Tests behind the marks in the tables, and how a family of them is corrected.

- Against the paper: a two-sample Welch t from the paper's own mean, sd and run count where the
  paper publishes its spread (DP-MEPF's App. C tables, some of DP-HP Fig. 3); against a value
  printed without a spread no test is made — the paper's run-to-run noise is unknown, and a
  one-sample t that treats it as a constant would overstate every difference. Those cells show
  the point value beside ours, untested.
- Against `uniform` on the same seeds: a paired t.
- Against other code on the same rows (the authors' code here): Welch's t for a difference, and
  TOST (two one-sided Welch tests) at the margin ``EQUIVALENCE_MARGIN`` for "agrees with": a
  large p alone never says two numbers are the same; and the Brown–Forsythe test (Levene's,
  median-centred: robust to a skewed seed) of whether the seeds spread alike.

Seeds that all give the same value measured no spread (:func:`equal_seeds`): where nothing in a
cell depends on the seed — the real data on a fixed split, scored by classifiers of fixed seeds —
they are one measurement repeated, and a zero sd would make any difference "significant" and any
closeness "equivalent". Against another's runs such a cell is tested as one draw, the runs' own sd
standing for its error (a prediction interval, :func:`one_against_runs`); against a point value it
is not tested.

Every test is two-sided at the 5% level and needs at least ``MIN_SEEDS_FOR_EVIDENCE`` values (with
fewer a cell is greyed and never tested). The tests of one table are a family: their p-values are
adjusted by Holm's step-down method (:func:`holm`), and a mark stands only where the adjusted p is
below 5%. Each test is listed under its table with its raw and adjusted p.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

LEVEL = 0.05
EQUIVALENCE_MARGIN = 0.02  # absolute, on the scale of a score in [0, 1] (accuracy, ROC, PRC, F1)
PAPER_MARK = "≠"  # our mean differs from the paper's
BETTER_MARK = "▲"  # better than uniform on the same seeds
WORSE_MARK = "▼"  # worse than uniform on the same seeds
MARK_LEGEND = (
    f"{PAPER_MARK}: the mean over seeds differs from the paper's where the paper publishes its spread "
    f"(Welch t from the paper's mean, sd and run count; a value printed without a spread is a point value, "
    f"not tested); {BETTER_MARK}/{WORSE_MARK}: better/worse than `uniform` on the same seeds (paired t); "
    f"two-sided, p < {LEVEL} after Holm's correction over the table's tests; tests need ≥ 3 seeds and are "
    "listed below each table."
)


@dataclass(frozen=True)
class TTest:
    against: str  # "paper", "uniform", or the other code's label
    n: int  # degrees of freedom + 1
    difference: float  # ours − reference (mean of the paired differences)
    statistic: float
    p: float
    adjusted: float | None = None  # Holm-adjusted within its table (None: not part of a family)

    @property
    def significant(self) -> bool:
        return (self.p if self.adjusted is None else self.adjusted) < LEVEL

    def text(self) -> str:
        holm_text = "" if self.adjusted is None else f", Holm p = {self.adjusted:.2g}"
        return f"Δ = {self.difference:+.3g}, t({self.n - 1}) = {self.statistic:.2f}, p = {self.p:.2g}{holm_text}"


@dataclass(frozen=True)
class Equivalence:
    """TOST: ours and the reference agree within ±``margin`` when both one-sided tests reject."""

    against: str
    margin: float
    difference: float
    low: float  # the 90% confidence interval of the difference (the TOST's interval at 5%)
    high: float
    p: float  # the larger of the two one-sided p-values

    @property
    def significant(self) -> bool:
        return self.p < LEVEL

    def text(self) -> str:
        verdict = "equivalent" if self.significant else "not shown equivalent"
        return (
            f"TOST ±{self.margin:g}: Δ = {self.difference:+.3g}, 90% CI [{self.low:+.3g}, {self.high:+.3g}], "
            f"p = {self.p:.2g}: {verdict}"
        )


@dataclass(frozen=True)
class Spread:
    """Brown–Forsythe: do our seeds and the reference's spread alike (equal variances)?"""

    against: str
    sd: float  # ours
    reference_sd: float
    p: float

    @property
    def significant(self) -> bool:
        return self.p < LEVEL

    def text(self) -> str:
        verdict = "the spreads differ" if self.significant else "spreads not shown to differ"
        return f"Brown–Forsythe: sd {self.sd:.3g} against {self.reference_sd:.3g}, p = {self.p:.2g}: {verdict}"


def spread(ours: pd.Series, theirs: Sequence[float], against: str, min_seeds: int) -> Spread | None:
    """Brown–Forsythe (Levene's test about the medians) of our seeds against another code's."""
    from scipy import stats

    ours, other = ours.dropna(), pd.Series(list(theirs), dtype=float).dropna()
    if len(ours) < min_seeds or len(other) < min_seeds or equal_seeds(ours) or equal_seeds(other):
        return None  # equal seeds measured no spread to compare
    p = float(stats.levene(ours, other, center="median").pvalue)
    return Spread(against, float(ours.std(ddof=1)), float(other.std(ddof=1)), p)


def holm(tests: Sequence[TTest]) -> list[TTest]:
    """The tests with Holm's step-down adjusted p-values (family-wise error at ``LEVEL``): the
    k-th smallest of m p-values times (m − k + 1), made monotone, at most 1."""
    order = sorted(range(len(tests)), key=lambda i: tests[i].p)
    adjusted = [1.0] * len(tests)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(tests) - rank) * tests[index].p))
        adjusted[index] = running
    return [dataclasses.replace(test, adjusted=value) for test, value in zip(tests, adjusted)]


def equal_seeds(values: pd.Series) -> bool:
    """Two or more seeds, every one the same value up to float rounding (a relative 1e-9, as
    :mod:`bench.report.gaps` reads an sd): no spread was measured (module docstring)."""
    values = values.dropna()
    if len(values) < 2:
        return False
    return float(values.max() - values.min()) <= 1e-9 * max(1.0, abs(float(values.mean())))


def one_against_runs(value: float, mean: float, sd: float, runs: int) -> tuple[float, float, int] | None:
    """(difference, its standard error, degrees of freedom) of one measurement against another's
    ``runs`` runs of ``mean`` and ``sd``, assuming a draw of ours varies as one of theirs: the
    prediction error ``sd·√(1 + 1/runs)``, ``runs − 1`` degrees of freedom. None without a spread."""
    if runs < 2 or not sd > 0:
        return None
    return value - mean, sd * math.sqrt(1 + 1 / runs), runs - 1


def one_draw_t(value: float, mean: float, sd: float, runs: int, against: str) -> TTest | None:
    """The t test of one measurement against another's runs (:func:`one_against_runs`)."""
    from scipy import stats

    one = one_against_runs(value, mean, sd, runs)
    if one is None:
        return None
    difference, error, df = one
    t = difference / error
    return TTest(against, df + 1, difference, t, float(2 * stats.t.sf(abs(t), df)))


def versus_published(ours: pd.Series, published: object, min_seeds: int) -> TTest | None:
    """Welch's t of our seeds against the paper's ``(mean, sd, runs)`` (equal seeds: one
    measurement against its runs, :func:`one_against_runs`); None for a point value (a number
    printed without its spread), text read off a figure, or too few seeds."""
    from scipy import stats

    ours = ours.dropna()
    if not (isinstance(published, tuple) and len(published) == 3) or len(ours) < min_seeds:
        return None
    mean, sd, runs = (float(v) for v in published)
    if equal_seeds(ours):
        return one_draw_t(float(ours.iloc[0]), mean, sd, int(runs), "paper")
    a, b = ours.var(ddof=1) / len(ours), sd**2 / runs
    if a + b == 0:
        return None
    result = stats.ttest_ind_from_stats(ours.mean(), ours.std(ddof=1), len(ours), mean, sd, int(runs), equal_var=False)
    df = (a + b) ** 2 / (a**2 / (len(ours) - 1) + b**2 / (runs - 1))
    return TTest("paper", round(df) + 1, float(ours.mean() - mean), float(result.statistic), float(result.pvalue))


def tost(
    ours: pd.Series, theirs: Sequence[float] | float, against: str, margin: float, min_seeds: int
) -> Equivalence | None:
    """Two one-sided Welch t-tests of |mean(ours) − mean(theirs)| < ``margin`` (``theirs`` a
    number: a one-sample TOST against it, as a constant). Equal seeds of ours are one measurement:
    against runs, tested with their spread (:func:`one_against_runs`); against a number, not tested."""
    from scipy import stats

    ours = ours.dropna()
    if len(ours) < min_seeds:
        return None
    if equal_seeds(ours):
        if isinstance(theirs, (int, float)):
            return None
        other = pd.Series(list(theirs), dtype=float).dropna()
        one = one_against_runs(float(ours.iloc[0]), float(other.mean()), float(other.std(ddof=1)), len(other))
        if len(other) < min_seeds or one is None:
            return None
        difference, error, df = one
        a, b = error**2, 0.0
    elif isinstance(theirs, (int, float)):
        difference, a, b, df = float(ours.mean() - theirs), ours.var(ddof=1) / len(ours), 0.0, len(ours) - 1
    else:
        other = pd.Series(list(theirs), dtype=float).dropna()
        if len(other) < min_seeds:
            return None
        a, b = ours.var(ddof=1) / len(ours), other.var(ddof=1) / len(other)
        difference = float(ours.mean() - other.mean())
        df = (
            (a + b) ** 2 / (a**2 / (len(ours) - 1) + b**2 / (len(other) - 1))
            if a + b > 0
            else len(ours) + len(other) - 2
        )
    error = math.sqrt(a + b)  # > 0: ours vary (equal seeds took the branch above)
    lower = stats.t.sf((difference + margin) / error, df)  # H0: Δ ≤ −margin
    upper = stats.t.cdf((difference - margin) / error, df)  # H0: Δ ≥ +margin
    half = stats.t.ppf(1 - LEVEL, df) * error
    return Equivalence(against, margin, difference, difference - half, difference + half, float(max(lower, upper)))


def one_sample(values: pd.Series, reference: float, min_seeds: int) -> TTest | None:
    """One-sample t against a constant (kept for the calibration rows' difference test)."""
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
    if equal_seeds(ours):  # one measurement against their runs
        other = pd.Series(list(theirs), dtype=float)
        return one_draw_t(float(ours.iloc[0]), float(other.mean()), float(other.std(ddof=1)), len(other), against)
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
