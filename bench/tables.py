"""Results tables regenerated from MLflow: mean ± std over seeds (and the seed count).

Rows are dataset × ε, columns are methods. A non-private method (logged with ε = inf) is shown
in every ε row of its dataset, like the "Real" column of the seeds' tables; a private method's
non-private variant (run with --eps inf, as Table 7's columns) gets an ε = ∞ row. Within a row the best
private mean is marked (bold in Markdown/LaTeX) by the metric's direction.
"""

from __future__ import annotations

import math
from typing import Iterable

import pandas as pd

from bench import tracking
from bench.interfaces import Direction, MetricSpec, metric_key
from bench.registry import EVALUATORS

FORMATS = ("md", "latex", "csv")


class TableError(ValueError):
    pass


def load_runs(experiment: str) -> pd.DataFrame:
    """One row per finished cell (the latest run of each cell key), with params and metrics."""
    mlflow_client = tracking.client()
    experiment_id = tracking.experiment_id(mlflow_client, experiment, create=False)
    if experiment_id is None:
        raise TableError(f"no experiment {experiment!r} in {tracking.tracking_uri()}; run `python -m bench run` first")
    rows = []
    for run in tracking.iter_runs(mlflow_client, experiment_id, "attributes.status = 'FINISHED'"):
        params = run.data.params
        rows.append(
            {
                "run_id": run.info.run_id,
                "start_time": run.info.start_time,
                "cell_key": run.data.tags.get("cell_key", run.info.run_id),
                "method": params.get("method"),
                "dataset": _row_label(params),
                "epsilon": float(params.get("epsilon", "nan")),
                "seed": int(params.get("seed", -1)),
                **run.data.metrics,
            }
        )
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise TableError(f"experiment {experiment!r} has no finished runs yet")
    return frame.sort_values("start_time").drop_duplicates("cell_key", keep="last")


def _row_label(params: dict[str, str]) -> str | None:
    """The dataset, qualified by non-default conventions so that they are never averaged together."""
    qualifiers = [
        f"{key} {params[key]}"
        for key, default in (("protocol", "sound"), ("calibrator", "tight"))
        if params.get(key, default) != default
    ]
    dataset = params.get("dataset")
    return f"{dataset} [{', '.join(qualifiers)}]" if qualifiers and dataset else dataset


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


def _cell_text(values: pd.Series) -> str:
    values = values.dropna()
    if values.empty:
        return ""
    std = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{_number(values.mean())} ± {_number(std)} ({len(values)})"


def _number(value: float) -> str:
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.4g}"
    return f"{value:.3e}"


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
    for (dataset, eps) in row_index:
        for method in methods:
            selected = data[(data["dataset"] == dataset) & (data["method"] == method)]
            if selected.empty:
                continue
            if selected["epsilon"].map(math.isfinite).any():
                selected = selected[selected["epsilon"] == eps]
            if selected.empty:
                continue
            text.loc[(dataset, eps), method] = _cell_text(selected[metric])
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


def render(frame: pd.DataFrame, metric: str, fmt: str) -> str:
    if fmt not in FORMATS:
        raise TableError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    text, means = summarise(frame, metric)
    spec = spec_for(metric)
    arrow = {Direction.LOWER: " (lower is better)", Direction.HIGHER: " (higher is better)"}.get(
        spec.direction if spec else None, ""
    )
    best = _best_methods(means, frame, spec.direction) if spec else {}
    rows = []
    for row in text.index:
        dataset, eps = row
        eps_text = "∞" if math.isinf(eps) else f"{eps:g}"
        cells = []
        for method in text.columns:
            value = text.loc[row, method]
            if value and best.get(row) == method and fmt != "csv":
                value = f"**{value}**" if fmt == "md" else f"\\textbf{{{value}}}"
            cells.append(value)
        rows.append([dataset, eps_text, *cells])
    header = ["dataset", "ε", *text.columns]
    title = f"{metric}{arrow}: mean ± std over seeds (number of seeds)"
    return _format(header, rows, title, fmt)


def _format(header: list[str], rows: list[list[str]], title: str, fmt: str) -> str:
    if fmt == "csv":
        return pd.DataFrame(rows, columns=header).to_csv(index=False)
    if fmt == "md":
        lines = [f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines) + "\n"
    escape = lambda s: s.replace("±", "$\\pm$").replace("∞", "$\\infty$").replace("_", "\\_")  # noqa: E731
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
                text.loc[row, method] for text in texts
                if row in text.index and method in text.columns and text.loc[row, method]
            ]
            cells.append(" / ".join(parts))
        rows.append([dataset, "∞" if math.isinf(eps) else f"{eps:g}", *cells])
    header = ["dataset", "ε", *methods]
    title = " / ".join(present) + ": mean ± std over seeds (number of seeds), metrics a row lacks are left out"
    return _format(header, rows, title, fmt)


def render_all(experiment: str, metrics: Iterable[str] | None, fmt: str, combine: bool = False) -> str:
    frame = load_runs(experiment)
    chosen = list(metrics or declared_metrics(frame))
    if not chosen:
        raise TableError("no evaluator metric in these runs; name one with --metric")
    if combine:
        return render_combined(frame, chosen, fmt)
    return "\n".join(render(frame, metric, fmt) for metric in chosen)
