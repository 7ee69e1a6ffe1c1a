"""``table --layout privacy``: per dataset and ε, each method's privacy claim, its audit and the
attack on its output side by side — the ledger's ε (and the independent accountant's), the
lower bound of ``bench audit`` where one was run for that method, dataset and ε, the membership
attack's AUC with its confidence interval, the DCR share, the fidelity detection AUC and the
dataset's utility metric. Non-private runs (``real``: the attack's ceiling) and data-independent
baselines are kept as reference rows.

Each cell is mean ± sd over seeds (n); the attack's CI is the widest of its seeds' 95% CIs, so it
is never narrower than one run's.
"""

from __future__ import annotations

import math

import pandas as pd

from bench.report.source import MlflowSource, RunSource
from bench.report.tables import epsilon_text, format_number, format_table, summary_text
from bench.report.frame import TableError

UTILITY = ("downstream.roc_auc", "downstream.f1_weighted", "marginals.tv_3", "nll.mean")
AUDIT_EXPERIMENT = "audit"
SHADOW_AUC = "shadow-mia.shadow_auc"  # shown as a column where any run has it


class AuditedBound(float):
    """An audit's ε lower bound, with the most its runs could have shown (a perfect separation,
    ``bench.privacy.audit.attainable_bound``) and the ε it tested: at or below the claim, a bound
    that could not have exceeded it is no evidence either way."""

    def __new__(cls, bound: float, attainable: float = math.inf, claimed: float = math.nan) -> "AuditedBound":
        value = super().__new__(cls, bound)
        value.attainable, value.claimed = attainable, claimed
        return value

    def text(self) -> str:
        if self.attainable <= self.claimed and self <= self.claimed:
            return f"{format_number(self)} (inconclusive: its runs could show at most {format_number(self.attainable)})"
        return format_number(self)


def audit_bounds(
    experiment: str = AUDIT_EXPERIMENT, source: RunSource | None = None
) -> dict[tuple[str, str, float], AuditedBound]:
    """The largest ε lower bound logged by ``bench audit`` per (method, dataset, ε), with what its
    runs could have shown; empty when no audit was run (the ``audit`` experiment does not exist)."""
    from bench.privacy.audit import attainable_bound

    bounds: dict[tuple[str, str, float], AuditedBound] = {}
    for run in (source or MlflowSource()).finished_runs(experiment) or []:
        metrics = run.all_metrics()
        if "audit.epsilon_lower_bound" not in metrics or "audit.epsilon_target" not in metrics:
            continue  # an audit logged before its target ε was kept as a number: not shown
        # the audited names, without what qualifies them ("dp-gan (DP-SGD step)", "cervical (first 100 rows)")
        method, dataset = (run.params.get(name, "").split(" ")[0] for name in ("method", "dataset"))
        key = (method, dataset, metrics["audit.epsilon_target"])
        attainable = metrics.get("audit.epsilon_attainable")  # older audits: from their runs and δ
        if attainable is None and "audit.runs_per_side" in metrics:
            attainable = attainable_bound(int(metrics["audit.runs_per_side"]), float(run.params.get("delta", 0.0)))
        bound = AuditedBound(
            metrics["audit.epsilon_lower_bound"],
            math.inf if attainable is None else attainable,
            metrics.get("audit.epsilon_claimed", math.nan),
        )
        if key not in bounds or bound > bounds[key]:
            bounds[key] = bound
    return bounds


def _claimed(values: pd.Series) -> str:
    """An ε that every seed spends alike (a calibrated claim) as one number; spread, as a cell."""
    values = values.dropna()
    if values.empty:
        return "—"
    if values.max() - values.min() <= 1e-6 * max(abs(values.max()), 1e-12):
        return f"{format_number(values.mean())} ({len(values)})"
    return _mean_sd(values)


def _mean_sd(values: pd.Series) -> str:
    return summary_text(values) or "—"


def triad_rows(frame: pd.DataFrame, audits: dict[tuple[str, str, float], float]) -> tuple[list[str], list[list[str]]]:
    if "privacy.mia_auc" not in frame.columns:
        raise TableError(
            "no run here has the privacy evaluator's metrics: run with --evaluators privacy,… or add them "
            "with `python -m bench evaluate --evaluators privacy,fidelity`"
        )
    scored = frame.dropna(subset=["privacy.mia_auc"])
    shadows = SHADOW_AUC in scored.columns and scored[SHADOW_AUC].notna().any()
    header = [
        "dataset",
        "ε",
        "method",
        "ledger ε",
        "independent ε",
        "audited ε ≥",
        "attack AUC [95% CI]",
        *(["shadow-model AUC [95% CI]"] if shadows else []),
        "DCR share",
        "detection AUC",
        "utility",
    ]
    rows = []
    outside = _outside_generators()
    for (dataset, epsilon, method), group in scored.groupby(["dataset", "epsilon", "method"], sort=True):
        name = group["method_name"].iloc[0]
        claim_only = name in outside and math.isfinite(epsilon)  # the library's own accounting
        utility = next((m for m in UTILITY if m in group.columns and group[m].notna().any()), None)
        low = group["privacy.mia_auc_low"].min() if "privacy.mia_auc_low" in group else math.nan
        high = group["privacy.mia_auc_high"].max() if "privacy.mia_auc_high" in group else math.nan
        audited = audits.get((name, dataset.split(" ")[0], float(epsilon)))
        rows.append(
            [
                dataset,
                epsilon_text(epsilon),
                method,
                (
                    _claimed(group.get("privacy.epsilon_spent", pd.Series(dtype=float)))
                    if math.isfinite(epsilon)
                    else "∞ (non-private)"
                )
                + (" (the library's claim)" if claim_only else ""),
                "not recomputed"
                if claim_only
                else _claimed(group.get("privacy.epsilon_independent", pd.Series(dtype=float)))
                if math.isfinite(epsilon)
                else "—",
                (audited.text() if isinstance(audited, AuditedBound) else format_number(audited))
                if audited is not None
                else "not audited",
                f"{_mean_sd(group['privacy.mia_auc'])} [{format_number(low)}, {format_number(high)}]",
                *([_with_interval(group, "shadow-mia.shadow_auc")] if shadows else []),
                _dcr_share(group),
                _mean_sd(group.get("fidelity.detection_auc", pd.Series(dtype=float))),
                f"{utility.split('.', 1)[1]} {_mean_sd(group[utility])}" if utility else "—",
            ]
        )
    return header, rows


def _outside_generators() -> set[str]:
    """Methods whose ε is an outside library's claim (their cards' ``external`` tag; no plugin
    code is imported)."""
    from bench.api.registry import METHODS

    return {card.name for card in METHODS.cards() if "external" in card.tags}


def _dcr_share(group: pd.DataFrame) -> str:
    """mean ± sd over seeds, and where logged the mean spread of one run's draws of members and
    holdout (runs before issue 61 logged one draw, without it)."""
    text = _mean_sd(group.get("privacy.dcr_share", pd.Series(dtype=float)))
    draws = group.get("privacy.dcr_share_sd", pd.Series(dtype=float)).dropna()
    return f"{text} (draw sd {format_number(draws.mean())})" if len(draws) else text


def _with_interval(group: pd.DataFrame, metric: str) -> str:
    """mean ± sd (n) [the widest of the seeds' 95% CIs], or — where no seed has the metric."""
    values = group[metric].dropna()
    if values.empty:
        return "—"
    low, high = group[f"{metric}_low"].min(), group[f"{metric}_high"].max()
    return f"{_mean_sd(values)} [{format_number(low)}, {format_number(high)}]"


def render_triad(
    frame: pd.DataFrame,
    fmt: str,
    audits: dict[tuple[str, str, float], float] | None = None,
    source: RunSource | None = None,
) -> str:
    header, rows = triad_rows(frame, audit_bounds(source=source) if audits is None else audits)
    title = (
        "claimed ε (ledger) — audited ε lower bound (`bench audit`) — membership attack on the output (DOMIAS AUC, "
        "0.5: no signal) — DCR share (0.5 ideal) — detection AUC (0.5 ideal) — utility; mean ± sd over seeds (n)"
    )
    return format_table(header, rows, title, fmt)
