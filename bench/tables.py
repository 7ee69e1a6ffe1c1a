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


# The seeds' Table 1 (seed-dphp.md §6.1): mean TV of α-way marginals, δ = 1e-5, lower is better.
# {dataset: {α: {(method, ε): value}}}; computed with their code's (α+1)-way convention, if
# Table 1 came from the published marginals_eval.py (anchors-parklab-code.md §4).
SEEDS_TABLE1 = {
    "adult-discrete": {
        3: {("privbayes", 0.3): 0.446, ("privbayes", 0.1): 0.577, ("dp-merf", 0.3): 0.405,
            ("dp-merf", 0.1): 0.480, ("dp-hp", 0.3): 0.332, ("dp-hp", 0.1): 0.377},
        4: {("privbayes", 0.3): 0.547, ("privbayes", 0.1): 0.673, ("dp-merf", 0.3): 0.508,
            ("dp-merf", 0.1): 0.590, ("dp-hp", 0.3): 0.418, ("dp-hp", 0.1): 0.467},
    },
    "census-discrete": {
        2: {("privbayes", 0.3): 0.180, ("privbayes", 0.1): 0.291, ("dp-merf", 0.3): 0.190,
            ("dp-merf", 0.1): 0.222, ("dp-hp", 0.3): 0.141, ("dp-hp", 0.1): 0.155},
        3: {("privbayes", 0.3): 0.323, ("privbayes", 0.1): 0.429, ("dp-merf", 0.3): 0.302,
            ("dp-merf", 0.1): 0.337, ("dp-hp", 0.3): 0.211, ("dp-hp", 0.1): 0.232},
    },
}
TABLE1_METHODS = ("privbayes", "dp-merf", "dp-hp", "mst", "aim")


def _base_name(dataset_label: str) -> str:
    """``adult-discrete [protocol paper]`` → ``adult-discrete``."""
    return dataset_label.split(" [", 1)[0]


def render_table1(frame: pd.DataFrame, fmt: str) -> str:
    """The seeds' Table 1 shape: per dataset and α, one row for each convention of ours (all
    C(D, α) subsets; the seeds' code's (α+1)-way) and one with the seeds' published values;
    columns are method × ε (ε descending, as Table 1)."""
    alphas_of = lambda dataset: sorted(  # noqa: E731
        {int(c.rsplit("_", 1)[1]) for c in frame.columns if c.startswith("marginals.tv_")
         and frame.loc[frame["dataset"] == dataset, c].notna().any()}
        | set(SEEDS_TABLE1.get(_base_name(dataset), {}))
    )
    datasets = [d for d in sorted(frame["dataset"].unique()) if alphas_of(d)]
    if not datasets:
        raise TableError("no marginals.tv_* metric in these runs")
    present = [m for m in TABLE1_METHODS if m in set(frame["method"])] + sorted(
        set(frame["method"]) - set(TABLE1_METHODS)
    )
    epsilons = sorted({e for e in frame["epsilon"] if math.isfinite(e)}, reverse=True)
    columns = [(m, e) for m in present for e in epsilons]
    header = ["dataset", "α", "numbers", *[f"{m} ε={e:g}" for m, e in columns]]
    rows = []
    for dataset in datasets:
        for alpha in alphas_of(dataset):
            for label, metric in (("ours: all C(D,α) subsets", f"marginals.tv_{alpha}"),
                                  ("ours: seeds' code, (α+1)-way", f"marginals.paper.tv_{alpha}")):
                cells = []
                for method, eps in columns:
                    selected = frame[(frame["dataset"] == dataset) & (frame["method"] == method) & (frame["epsilon"] == eps)]
                    values = selected[metric].dropna() if metric in selected.columns else selected.iloc[0:0, 0]
                    cells.append(_cell_text(values) if len(values) else "")
                rows.append([dataset, str(alpha), label, *cells])
            seeds = SEEDS_TABLE1.get(_base_name(dataset), {}).get(alpha, {})
            if seeds:
                rows.append([dataset, str(alpha), "seeds' Table 1", *[
                    f"{seeds[(m, e)]:.3f}" if (m, e) in seeds else "" for m, e in columns
                ]])
    title = "Table 1: mean TV distance of α-way marginals (lower is better), mean ± std over seeds (number of seeds)"
    return _format(header, rows, title, fmt)


def render_all(
    experiment: str, metrics: Iterable[str] | None, fmt: str, combine: bool = False, layout: str = "default"
) -> str:
    frame = load_runs(experiment)
    if layout == "table1":
        return render_table1(frame, fmt)
    chosen = list(metrics or declared_metrics(frame))
    if not chosen:
        raise TableError("no evaluator metric in these runs; name one with --metric")
    if combine:
        return render_combined(frame, chosen, fmt)
    return "\n".join(render(frame, metric, fmt) for metric in chosen)
