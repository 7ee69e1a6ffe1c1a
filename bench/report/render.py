"""``bench table``: an experiment's runs rendered in one of the layouts (``bench.report.layouts``):
the generic per-metric tables (``tables``) or a paper's layout (Table 1, Fig. 6, Fig. 3, the
privacy triad). Above both, so neither imports the other."""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from bench.report.source import RunSource
from bench.report.tables import declared_metrics, render, render_combined, tidy
from bench.report.versus import render_fig3, render_fig6, render_table1
from bench.report.frame import TableError, load_runs
from bench.report.triad import render_triad


def render_all(
    experiment: str,
    metrics: Iterable[str] | None,
    fmt: str,
    combine: bool = False,
    layout: str = "default",
    source: RunSource | None = None,
) -> str:
    frame = load_runs(experiment, source)
    if layout == "table1":
        return render_table1(frame, fmt)
    if layout == "fig6":
        evaluators = list(metrics or ["image-downstream"])
        return "\n".join(render_fig6(frame, fmt, evaluator) for evaluator in evaluators)
    if layout == "fig3":
        return render_fig3(frame, fmt)
    if layout == "privacy":
        return render_triad(frame, fmt, source=source)
    chosen = list(metrics or declared_metrics(frame))
    if not chosen:
        raise TableError("no evaluator metric in these runs; name one with --metric")
    if combine:
        return render_combined(frame, chosen, fmt)
    if fmt == "csv":  # one CSV with a metric column, not one header per metric
        return pd.concat([tidy(frame, metric) for metric in chosen]).to_csv(index=False)
    return "\n".join(render(frame, metric, fmt) for metric in chosen)
