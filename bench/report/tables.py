"""Results tables regenerated from MLflow: mean ± std over seeds (and the seed count).

A cell aggregates over seeds only: runs whose logged settings differ (hyperparameters, δ,
calibrator, protocol, --eval-set values) are kept apart under labels naming the difference
(:func:`runs_frame`). Numbers have 3 significant digits (:func:`format_number`).

Rows are dataset × ε, columns are methods. A non-private method (logged with ε = inf) is shown
in every ε row of its dataset, like the "Real" column of the seeds' tables; a private method's
non-private variant (run with --eps inf, as Table 7's columns) gets an ε = ∞ row. Within a row the best
private mean of a quality metric is marked (bold in Markdown/LaTeX) by its direction;
diagnostics (timings, counts, sizes: ``MetricKind.DIAGNOSTIC``) are never marked.
"""

from __future__ import annotations

import math
import re


import pandas as pd

from bench.report.layouts import TABLE_FORMATS as FORMATS
from bench.api.contracts import Direction, MetricKind, MetricSpec, metric_key
from bench.api.registry import EVALUATORS
from bench.privacy.budget import epsilon_text
from bench.report.frame import TableError
from bench.report.stats import equal_seeds


def metric_specs() -> dict[str, MetricSpec]:
    return {metric_key(e.name, m): spec for e in EVALUATORS for m, spec in e.metrics.items()}


def spec_for(metric: str) -> MetricSpec | None:
    """The spec of a logged metric; ``ev.group.name`` (e.g. per classifier) uses ``ev.name``'s."""
    specs = metric_specs()
    evaluator, _, rest = metric.partition(".")
    return specs.get(metric) or specs.get(f"{evaluator}.{rest.rsplit('.', 1)[-1]}")


def declared_metrics(frame: pd.DataFrame) -> list[str]:
    """The evaluators' declared metrics present in these runs (timings and privacy excluded)."""
    return [name for name in metric_specs() if name in frame.columns]


MIN_SEEDS_FOR_EVIDENCE = 3
FEW_SEEDS_MARK = "◦"  # fewer than MIN_SEEDS_FOR_EVIDENCE seeds: shown, never evidence
DIRTY_MARK = "‡"  # a run behind the cell was logged from uncommitted code
CELL_LEGEND = (
    f"Cells: mean ± sd over seeds, [95% t confidence interval of the mean], (number of seeds); heavy-tailed metrics "
    f"(NLL) as median and [interquartile range]; (n equal): every seed gave this value, no spread measured (where nothing in the cell depends on the seed, one measurement: tested as one draw). {FEW_SEEDS_MARK}: fewer than {MIN_SEEDS_FOR_EVIDENCE} seeds, shown "
    f"but not evidence; {DIRTY_MARK}: a run behind the cell was logged from uncommitted code."
)


def t_interval(values: pd.Series, level: float = 0.95) -> tuple[float, float]:
    """The t confidence interval of the mean over seeds (needs ≥ 2 values)."""
    from scipy import stats

    n = len(values)
    half = stats.t.ppf(0.5 + level / 2, n - 1) * values.std(ddof=1) / math.sqrt(n)
    return values.mean() - half, values.mean() + half


def summary_text(values: pd.Series, heavy_tailed: bool = False, dirty: bool = False) -> str:
    """A table cell over the seeds, each number to 3 significant digits: ``mean ± sd [95% CI] (n)``;
    ``median [q1, q3] (n)`` for a heavy-tailed metric. One seed has no spread (``mean (1)``, not a
    misleading ``± 0``); with fewer than 3 seeds the interval is left out and the cell marked."""
    values = values.dropna()
    if values.empty:
        return ""
    n = len(values)
    marks = (FEW_SEEDS_MARK if n < MIN_SEEDS_FOR_EVIDENCE else "") + (DIRTY_MARK if dirty else "")
    if n == 1:
        text = format_number(values.iloc[0])
    elif equal_seeds(values):  # no spread measured, no interval to give
        return f"{format_number(values.iloc[0])} ({n} equal){marks}"
    elif heavy_tailed:
        text = f"median {format_number(values.median())}"
        if n >= MIN_SEEDS_FOR_EVIDENCE:
            text += f" [{format_number(values.quantile(0.25))}, {format_number(values.quantile(0.75))}]"
    else:
        text = f"{format_number(values.mean())} ± {format_number(values.std(ddof=1))}"
        if n >= MIN_SEEDS_FOR_EVIDENCE:
            low, high = t_interval(values)
            text += f" [{format_number(low)}, {format_number(high)}]"
    return f"{text} ({n}){marks}"


def statistic_legend(metrics: list[str]) -> str:
    """What a table's cells are, for its title: the heavy-tailed metrics' cells are medians."""
    heavy = [m for m in metrics if is_heavy_tailed(m)]
    if not heavy:
        return "mean ± sd [95% CI] (seeds)"
    if len(heavy) == len(metrics):
        return "median [IQR] (seeds)"
    return f"mean ± sd [95% CI] (seeds), median [IQR] for {', '.join(heavy)}"


def is_heavy_tailed(metric: str) -> bool:
    spec = spec_for(metric)
    return spec is not None and spec.heavy_tailed


def cell_text(selected: pd.DataFrame, metric: str) -> str:
    """:func:`summary_text` of ``metric`` over the runs ``selected`` (one table cell), marked when a
    run behind it is dirty."""
    if metric not in selected.columns:
        return ""
    rows = selected.dropna(subset=[metric])
    dirty = bool(rows["dirty"].any()) if "dirty" in rows.columns else False
    return summary_text(rows[metric], is_heavy_tailed(metric), dirty)


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def format_number(value: float, digits: int = 3) -> str:
    """``digits`` significant digits, trailing zeros kept (3.50, 0.0123); thousands grouped
    (377,000) from 1,000 up to a million, ×10ⁿ outside [0.001, 10⁶) (3.77×10⁶, 1.20×10⁻⁴) —
    never Python's 3.769e+05."""
    if not math.isfinite(value):
        return "∞" if value > 0 else "−∞" if value < 0 else "nan"
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")  # rounds once, to `digits` digits
    exponent_value = int(exponent)
    if -3 <= exponent_value < 6:
        rounded = float(f"{mantissa}e{exponent}")
        return f"{rounded:,.{max(0, digits - 1 - exponent_value)}f}"
    return f"{mantissa}×10{str(exponent_value).translate(SUPERSCRIPT)}"


def summarise(frame: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(text table, table of means) with rows (dataset, ε) and columns = methods."""
    if metric not in frame.columns:
        known = sorted(c for c in frame.columns if "." in c)
        raise TableError(f"no metric {metric!r} in these runs; available: {', '.join(known)}")
    data = frame.dropna(subset=[metric])
    private = data[data["epsilon"].map(math.isfinite)]
    public = data[~data["epsilon"].map(math.isfinite)]
    methods = list(dict.fromkeys(list(private["method"]) + list(public["method"])))
    row_index: list[tuple[str, float]] = []
    for dataset in sorted(data["dataset"].unique()):
        eps_values = sorted(private.loc[private["dataset"] == dataset, "epsilon"].unique())
        private_methods = set(private.loc[private["dataset"] == dataset, "method"])
        # a private method's non-private variant (--eps inf, Table 7) gets an ε = ∞ row
        has_variant = public.loc[public["dataset"] == dataset, "method"].isin(private_methods).any()
        row_index += [(dataset, eps) for eps in eps_values + ([math.inf] if has_variant or not eps_values else [])]
    text = pd.DataFrame("", index=pd.MultiIndex.from_tuples(row_index, names=["dataset", "ε"]), columns=methods)
    means = pd.DataFrame(math.nan, index=text.index, columns=methods)
    for dataset, eps in row_index:
        for method in methods:
            selected = data[(data["dataset"] == dataset) & (data["method"] == method)]
            if selected.empty:
                continue
            if selected["epsilon"].map(math.isfinite).any():
                selected = selected[selected["epsilon"] == eps]
            if selected.empty:
                continue
            text.loc[(dataset, eps), method] = cell_text(selected, metric)
            means.loc[(dataset, eps), method] = selected[metric].mean()
    return text, means


def _best_methods(means: pd.DataFrame, frame: pd.DataFrame, direction: Direction) -> dict[tuple, str]:
    private_methods = set(frame.loc[frame["epsilon"].map(math.isfinite), "method"])
    best = {}
    for row, values in means.iterrows():
        if not math.isfinite(row[1]):
            continue  # nothing private to rank in the ε = ∞ row
        candidates = values[[m for m in values.index if m in private_methods]].dropna()
        if not candidates.empty:
            best[row] = candidates.idxmin() if direction == Direction.LOWER else candidates.idxmax()
    return best


def tidy(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per table cell, numbers unformatted: metric, dataset, ε, method, mean, std, n
    (the CSV a spreadsheet or a plotting script reads; the md and latex tables are for reading)."""
    rows = []
    for (dataset, method, epsilon), group in frame.dropna(subset=[metric]).groupby(["dataset", "method", "epsilon"]):
        values = group[metric]
        rows.append(
            {
                "metric": metric,
                "dataset": dataset,
                "epsilon": epsilon,
                "method": method,
                "mean": values.mean(),
                "std": values.std(ddof=1) if len(values) > 1 else math.nan,
                "n": len(values),
            }
        )
    return pd.DataFrame(rows, columns=["metric", "dataset", "epsilon", "method", "mean", "std", "n"])


def render(frame: pd.DataFrame, metric: str, fmt: str) -> str:
    if fmt not in FORMATS:
        raise TableError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "csv":
        if metric not in frame.columns:
            raise TableError(f"no run has the metric {metric!r}")
        return tidy(frame, metric).to_csv(index=False)
    text, means = summarise(frame, metric)
    spec = spec_for(metric)
    ranked = spec is not None and spec.kind == MetricKind.QUALITY  # diagnostics have no better direction
    arrow = {Direction.LOWER: " (lower is better)", Direction.HIGHER: " (higher is better)"}.get(
        spec.direction if ranked else None, ""
    )
    best = _best_methods(means, frame, spec.direction) if ranked else {}
    rows = []
    for row in text.index:
        dataset, eps = row
        eps_text = epsilon_text(eps)
        cells = []
        for method in text.columns:
            value = text.loc[row, method]
            if value and best.get(row) == method and fmt != "csv":
                value = f"**{value}**" if fmt == "md" else f"\\textbf{{{value}}}"
            cells.append(value)
        rows.append([dataset, eps_text, *cells])
    header = ["dataset", "ε", *text.columns]
    title = f"{metric}{arrow}: {statistic_legend([metric])}; ◦ fewer than 3 seeds, ‡ dirty code"
    return format_table(header, rows, title, fmt)


def format_table(header: list[str], rows: list[list[str]], title: str, fmt: str) -> str:
    if fmt == "csv":
        return pd.DataFrame(rows, columns=header).to_csv(index=False)
    if fmt == "md":
        lines = [f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines) + "\n"
    escape = lambda s: _latex_powers(s.replace("±", "$\\pm$").replace("∞", "$\\infty$").replace("_", "\\_"))  # noqa: E731
    lines = [
        "% " + title,
        "\\begin{tabular}{" + "l" * 2 + "c" * (len(header) - 2) + "}",
        "\\toprule",
        " & ".join(escape(h).replace("ε", "$\\varepsilon$") for h in header) + " \\\\",
        "\\midrule",
    ]
    lines += [" & ".join(escape(c) for c in r) + " \\\\" for r in rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


_NORMAL_DIGITS = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")


def _latex_powers(text: str) -> str:
    """3.77×10⁶ → 3.77$\\times10^{6}$ for LaTeX."""
    return re.sub("×10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)", lambda m: f"$\\times10^{{{m.group(1).translate(_NORMAL_DIGITS)}}}$", text)


def render_combined(frame: pd.DataFrame, metrics: list[str], fmt: str) -> str:
    """One table whose cells join several metrics with " / " (e.g. ROC / PRC, or F1 where a
    dataset has no ROC): the shape of the seeds' Table 2."""
    present = [m for m in metrics if m in frame.columns]
    if not present:
        raise TableError(f"none of {', '.join(metrics)} is in these runs")
    texts = [summarise(frame, metric)[0] for metric in present]
    rows_index = list(dict.fromkeys(row for text in texts for row in text.index))
    methods = list(dict.fromkeys(method for text in texts for method in text.columns))
    rows = []
    for row in rows_index:
        dataset, eps = row
        cells = []
        for method in methods:
            parts = [
                text.loc[row, method]
                for text in texts
                if row in text.index and method in text.columns and text.loc[row, method]
            ]
            cells.append(" / ".join(parts))
        rows.append([dataset, epsilon_text(eps), *cells])
    header = ["dataset", "ε", *methods]
    title = (
        " / ".join(present)
        + f": {statistic_legend(present)}; ◦ fewer than 3 seeds, ‡ dirty code, metrics a row lacks are left out"
    )
    return format_table(header, rows, title, fmt)
