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

import json
import math
import re


import pandas as pd

from bench.core.errors import UsageError
from bench.report.layouts import TABLE_FORMATS as FORMATS
from bench.harness.grid import Cell
from bench.harness.record import Record
from bench.report.published import published
from bench.report.source import MlflowSource, RunSource
from bench.report.stats import marks, one_sample, paired, welch
from bench.api.contracts import Direction, MetricKind, MetricSpec, metric_key
from bench.core.params import HyperParameterError
from bench.api.registry import EVALUATORS, METHODS, RegistryError
from bench.privacy.budget import DEFAULT_DELTA, epsilon_text


class TableError(UsageError, ValueError):
    pass


# Logged params that are not settings of a cell: the seed, which a table aggregates over, and
# facts of the seed's own split (its sizes; δ resolved from n_train under --delta auto).
PER_SEED_PARAMS = frozenset({"seed", "n_train", "n_test", "delta_resolved"})
# Logged params that do not change a metric's value, so runs differing only there are seeds of
# one setting: which evaluators ran beside a metric (the synthetic data are drawn before any
# evaluator runs and each evaluator seeds itself — evaluators/downstream.py), and the profile,
# which acts only through the hp.* values it resolves to (compared below; the cell key leaves
# it out for the same reason).
NOT_RESULT_PARAMS = frozenset({"evaluators", "profile"})
IDENTITY_PARAMS = ("method", "dataset", "epsilon")
# Grid-wide settings that qualify a table row (the dataset label) when they differ from these.
# A non-private run logs δ = "none": it has no δ, so it never qualifies a row.
ROW_SETTING_DEFAULTS = {"protocol": "sound", "calibrator": "tight", "delta": f"{DEFAULT_DELTA:g}"}


def load_runs(experiment: str, source: RunSource | None = None) -> pd.DataFrame:
    """One row per finished cell (the latest run of each cell key), with its setting and
    metrics, from ``source`` (default: the MLflow store)."""
    source = source or MlflowSource()
    runs = source.finished_runs(experiment)
    if runs is None:
        raise TableError(f"no experiment {experiment!r} in {source.describe()}; run `python -m bench run` first")
    runs = [run for run in runs if run.cell is not None]  # not an audit's or an encoder checkpoint's run
    if not runs:
        raise TableError(f"experiment {experiment!r} has no finished runs yet")
    return runs_frame(runs)


def settings_of(cell: Cell) -> dict[str, str]:
    """Everything about a cell that can change its numbers, as text, except method, dataset and ε
    (table coordinates of their own) and the seed (what a table aggregates over)."""
    skip = PER_SEED_PARAMS | NOT_RESULT_PARAMS | set(IDENTITY_PARAMS)
    return {key: value for key, value in cell.mlflow_params().items() if key not in skip}


def runs_frame(runs: list[Record]) -> pd.DataFrame:
    """The runs as a frame whose (``dataset``, ``method``, ``epsilon``) cells each hold seeds of
    exactly one setting: ``dataset`` is qualified by non-default grid-wide settings (protocol,
    calibrator, δ, --eval-set values), ``method`` by a non-default profile and hyperparameters
    that differ from the method's resolved defaults (--set); any remaining difference between two
    settings that would share a label is spelled out, so no two settings are ever averaged.
    Every column comes from the run's typed cell. ``method_name`` keeps the registered name,
    ``settings`` the full setting as JSON."""
    latest: dict[str, Record] = {}
    for run in sorted(runs, key=lambda r: r.start_time):
        latest[run.key] = run  # a rerun (--rerun) of a cell replaces it
    rows = []
    for run in latest.values():
        cell = run.cell
        rows.append(
            {
                "run_id": run.run_id,
                "start_time": run.start_time,
                "cell_key": run.key,
                "setup_key": cell.setup_key,
                "method": _method_label(cell),
                "method_name": cell.method,
                "dataset": _row_label(cell),
                "epsilon": cell.epsilon,
                "seed": cell.seed,
                "dirty": run.code.dirty,
                "settings": json.dumps(settings_of(cell), sort_keys=True),
                **run.all_metrics(),
            }
        )
    frame = pd.DataFrame(rows).sort_values("start_time").reset_index(drop=True)
    return _separate_remaining_settings(frame)


def render_run_list(frame: pd.DataFrame, method: str | None = None, dataset: str | None = None) -> str:
    """The run ids behind a table's cells, one line each, under the labels the table gives them."""
    chosen = frame
    if method is not None:
        chosen = chosen[chosen["method_name"] == method]
    if dataset is not None:
        chosen = chosen[chosen["dataset"].map(base_dataset) == dataset]
    if chosen.empty:
        raise TableError(
            f"no finished run of method {method or 'any'} on dataset {dataset or 'any'} in this experiment; "
            "`python -m bench runs` without --method/--dataset lists them all"
        )
    chosen = chosen.sort_values(["dataset", "method", "epsilon", "seed"], key=lambda column: column.astype(str))
    header = f"{'run id':<32}  dataset | method | ε | seed"
    lines = [
        f"{row.run_id:<32}  {row.dataset} | {row.method} | {epsilon_text(row.epsilon)} | {row.seed}"
        for row in chosen.itertuples()
    ]
    return "\n".join([header, *lines])


def _row_label(cell: Cell) -> str:
    """The dataset, qualified by non-default grid-wide settings so that they are never averaged
    together: protocol, calibrator, δ, and every --eval-set value (``<evaluator>.<name>``)."""
    grid_wide = {"protocol": cell.protocol.value, "calibrator": cell.calibrator.value, "delta": cell.delta.text}
    qualifiers = [
        f"{key} {grid_wide[key]}"
        for key, default in ROW_SETTING_DEFAULTS.items()
        if grid_wide[key] not in (default, "none")
    ]
    qualifiers += sorted(
        f"{evaluator}.{name}={value}"
        for evaluator, settings in cell.evaluator_settings.items()
        for name, value in settings.items()
    )
    return f"{cell.dataset} [{', '.join(qualifiers)}]" if qualifiers else cell.dataset


def _method_label(cell: Cell) -> str:
    """The method, qualified by its profile where the profile changes its hyperparameters and by
    each hyperparameter whose value differs from what the method resolves today for this
    dataset and profile (a --set value, or a default changed since the run)."""
    logged = {name: str(value) for name, value in cell.params.items()}
    try:
        adapter = METHODS.get(cell.method)
        hyper = adapter.hyperparameters
        private = not math.isinf(cell.epsilon)
        as_run_profile = {
            k: str(v) for k, v in hyper.resolve(cell.dataset, cell.profile, private=private).values.items()
        }
        as_paper = {k: str(v) for k, v in hyper.resolve(cell.dataset, "paper", private=private).values.items()}
    except (RegistryError, HyperParameterError):
        # not registered now (a plugin that is not loaded): name the profile; any hyperparameter
        # difference is spelled out by _separate_remaining_settings
        adapter, as_run_profile, as_paper = None, None, None
    qualifiers = []
    if cell.profile != "paper" and (as_run_profile is None or as_run_profile != as_paper):
        qualifiers.append(f"profile {cell.profile}")
    # what a method asks to be shown always (dp-mepf: its encoder, the public data it depends on)
    always = tuple(getattr(adapter, "label_params", ()))
    qualifiers += [f"{key}={logged[key]}" for key in always if key in logged]
    if as_run_profile is not None:
        qualifiers += [
            f"{key}={value}"
            for key, value in sorted(logged.items())
            if as_run_profile.get(key) != value and key not in always
        ]
    return f"{cell.method} [{', '.join(qualifiers)}]" if qualifiers else cell.method


def _separate_remaining_settings(frame: pd.DataFrame) -> pd.DataFrame:
    """Where runs sharing a (dataset, method, ε) label still differ in some setting, append the
    settings that differ to the method label, so that each label holds one setting."""
    for _, group in frame.groupby(["dataset", "method", "epsilon"], dropna=False):
        if group["settings"].nunique() < 2:
            continue
        settings = {index: json.loads(text) for index, text in group["settings"].items()}
        keys = sorted({k for s in settings.values() for k in s})
        differing = [k for k in keys if len({s.get(k) for s in settings.values()}) > 1]
        for index, setting in settings.items():
            extra = ", ".join(f"{k.removeprefix('hp.')}={setting.get(k, '(not logged)')}" for k in differing)
            label = frame.at[index, "method"]
            frame.at[index, "method"] = f"{label[:-1]}, {extra}]" if label.endswith("]") else f"{label} [{extra}]"
    # each label must now hold one setting; anything else is a bug here, not a result to print
    mixed = frame.groupby(["dataset", "method", "epsilon"], dropna=False)["settings"].nunique()
    if (mixed > 1).any():
        raise TableError(f"runs with different settings share the row {mixed[mixed > 1].index[0]}")
    return frame


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
    f"(NLL) as median and [interquartile range]. {FEW_SEEDS_MARK}: fewer than {MIN_SEEDS_FOR_EVIDENCE} seeds, shown "
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


def _table1_by_alpha() -> dict[str, dict[int, dict[tuple[str, float], float]]]:
    """DP-HP's Table 1 by dataset and α (bench/report/published/dphp-table1.toml; its columns are
    ``<α>-way (seeds' code)``)."""
    out: dict[str, dict[int, dict[tuple[str, float], float]]] = {}
    for dataset, setups in published("dphp-table1").items():
        for setup, columns in setups.items():
            for header, value in columns.items():
                out.setdefault(dataset, {}).setdefault(int(header.split("-", 1)[0]), {})[setup] = value
    return out


SEEDS_TABLE1 = _table1_by_alpha()
TABLE1_METHODS = ("privbayes", "dp-merf", "dp-hp", "mst", "aim")


def base_dataset(dataset_label: str) -> str:
    """``adult-discrete [protocol paper]`` → ``adult-discrete``."""
    return dataset_label.split(" [", 1)[0]


def render_table1(frame: pd.DataFrame, fmt: str) -> str:
    """The seeds' Table 1 shape: per dataset and α, one row for each convention of ours (all
    C(D, α) subsets; the seeds' code's (α+1)-way) and one with the seeds' published values;
    columns are method × ε (ε descending, as Table 1)."""
    alphas_of = lambda dataset: sorted(  # noqa: E731
        {
            int(c.rsplit("_", 1)[1])
            for c in frame.columns
            if c.startswith("marginals.tv_") and frame.loc[frame["dataset"] == dataset, c].notna().any()
        }
        | set(SEEDS_TABLE1.get(base_dataset(dataset), {}))
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
            for label, metric in (
                ("ours: all C(D,α) subsets", f"marginals.tv_{alpha}"),
                ("ours: seeds' code, (α+1)-way", f"marginals.paper.tv_{alpha}"),
            ):
                cells = []
                for method, eps in columns:
                    selected = frame[
                        (frame["dataset"] == dataset) & (frame["method"] == method) & (frame["epsilon"] == eps)
                    ]
                    cells.append(cell_text(selected, metric))
                rows.append([dataset, str(alpha), label, *cells])
            seeds = SEEDS_TABLE1.get(base_dataset(dataset), {}).get(alpha, {})
            if seeds:
                rows.append(
                    [
                        dataset,
                        str(alpha),
                        "seeds' Table 1",
                        *[f"{seeds[(m, e)]:.3f}" if (m, e) in seeds else "" for m, e in columns],
                    ]
                )
    title = "Table 1: mean TV distance of α-way marginals (lower is better), mean ± sd [95% CI] (seeds); ◦ fewer than 3 seeds, ‡ dirty code"
    return format_table(header, rows, title, fmt)


# --------------------------------------------------------------------------------------------
# The seeds' image figures: Fig. 6 (per-classifier accuracy) and Fig. 3 (effective size)
# --------------------------------------------------------------------------------------------

# Our method names → the seeds' setup names (GS-WGAN has no adapter here; its values are shown).
SEEDS_SETUP_NAMES = {
    "real": "real data",
    "full-mmd": "full MMD",
    "dp-hp": "DP-HP",
    "dp-merf": "DP-MERF",
    "dp-gan": "DP-GAN",
    "dp-cgan": "DP-CGAN",
    "gs-wgan": "GS-WGAN",
    "dp-mepf": "DP-MEPF",
}
# The columns of Fig. 6 (and the short names of evaluators/image_downstream.py), then MEAN.
FIG6_CLASSIFIERS = ("LR", "RF", "GNB", "BNB", "LSVC", "DT", "LDA", "Ada", "MLP", "Bag", "GBM", "XGB")

# The columns of Fig. 3: the training-set sizes.
FIG3_SIZES = (60000, 30000, 12000, 6000, 3000, 1200, 600, 300, 120, 60)
# The seeds' Fig. 6 and Fig. 3 (bench/report/published/dphp-fig6.toml, dphp-fig3.toml) as the
# layouts read them: {dataset: {(method, ε): (the 12 classifiers..., MEAN)}} and {dataset:
# {(method, ε): (one value per FIG3_SIZES, a value or (mean, sd))}}.
SEEDS_FIG6 = {
    dataset: {setup: tuple(columns[name] for name in (*FIG6_CLASSIFIERS, "MEAN")) for setup, columns in setups.items()}
    for dataset, setups in published("dphp-fig6").items()
}
SEEDS_FIG3 = {
    dataset: {setup: tuple(columns[f"n={size}"] for size in FIG3_SIZES) for setup, columns in setups.items()}
    for dataset, setups in published("dphp-fig3").items()
}


def setup_name(method: str, epsilon: float) -> str:
    """("dp-hp", 1.0) → "DP-HP ε=1"; the real data need no ε."""
    if method == "real":
        return SEEDS_SETUP_NAMES["real"]
    return f"{SEEDS_SETUP_NAMES.get(method, method)} ε={epsilon_text(epsilon)}"


def seeds_value(value: float | tuple[float, float] | str, digits: str) -> str:
    if isinstance(value, str):  # transcribed as printed (e.g. "≈ 3.1×10⁵" read from a figure)
        return value
    if isinstance(value, tuple):
        return f"{value[0]:{digits}} ± {value[1]:{digits}}"
    return f"{value:{digits}}"


def versus_seeds_rows(
    frame: pd.DataFrame,
    columns: list[tuple[str, str]],
    seeds: dict[str, dict[tuple[str, float], dict[str, float | tuple[float, float] | str]]],
    seeds_label: str,
    digits: str,
    published_datasets: bool = False,
    paper_settings: dict[str, dict[tuple[str, float], tuple[str, ...]]] | None = None,
    tests: list[list[str]] | None = None,
    references: dict[str, dict[tuple[str, float], tuple[str, dict[str, list[float]]]]] | None = None,
) -> list[list[str]]:
    """Rows of :func:`render_versus_seeds` (dataset, setup, numbers, one cell per column);
    ``published_datasets``: also the seeds' datasets that have no run of ours; ``paper_settings``:
    {dataset: {(method, ε): ("method.param=value", …)}}, the settings a published setup used
    beyond the method's defaults — ours is set beside it only where its runs used them, else its
    row says which setting differs. Cells of ours carry the marks of :mod:`bench.report.stats`
    (against the paper's value, against ``uniform`` on the same seeds); ``tests`` collects one row
    per test performed (dataset, setup, column, against, result) for the report to spell out.
    ``references``: {dataset: {(method, ε): (numbers label, {header: per-seed values})}},
    the same setup measured by other code on the same rows (the authors' own code), shown after
    the setup's paper row as mean ± sd (seeds); each of our rows of the setup is compared with it by
    Welch's t, listed in ``tests``."""
    present = [metric for _, metric in columns if metric in frame.columns]
    data = frame.dropna(subset=present, how="all") if present else frame.iloc[0:0]
    rows = []
    datasets = set(data["dataset"].unique()) if len(data) else set()
    if published_datasets:
        covered = {base_dataset(d) for d in datasets}
        datasets |= {d for d in seeds if d not in covered}
    for dataset in sorted(datasets):
        ours = data[data["dataset"] == dataset]
        published = seeds.get(base_dataset(dataset), {})
        names = ours["method_name"] if "method_name" in ours.columns else ours["method"]
        ours_setups = sorted(set(zip(ours["method"], names, ours["epsilon"])), key=lambda s: (s[0], -s[2]))
        # each published setup is preceded by ours of the same registered method and ε, whatever
        # qualifies our label (a profile, a --set value); ours without a published twin follow
        required = (paper_settings or {}).get(base_dataset(dataset), {})
        mismatch = {
            (label, eps): _setting_mismatch(
                ours[(ours["method"] == label) & (ours["epsilon"] == eps)], required.get((name, eps), ())
            )
            for label, name, eps in ours_setups
        }
        placed: list[tuple[tuple[str, float], list[tuple[str, float]]]] = [
            (
                setup,
                [
                    (label, eps)
                    for label, name, eps in ours_setups
                    if (name, eps) == setup and not mismatch[(label, eps)]
                ],
            )
            for setup in published
        ]
        twinned = {label_eps for _, labels in placed for label_eps in labels}
        shown: set[tuple[str, float]] = set()
        placed += [((None, None), [(label, eps)]) for label, _, eps in ours_setups if (label, eps) not in twinned]
        for (method, eps), labels in placed:
            for label, label_eps in labels:
                selected = ours[(ours["method"] == label) & (ours["epsilon"] == label_eps)]
                differs = mismatch[(label, label_eps)]
                name = setup_name(label, label_eps) + (f" (not the paper's setting: {differs})" if differs else "")
                baseline = ours[(names == "uniform") & (ours["epsilon"] == label_eps)]
                twin = published.get((method, eps), {}) if (method, eps) in published else {}
                own_name = names[(ours["method"] == label) & (ours["epsilon"] == label_eps)].iloc[0]
                reference = (references or {}).get(base_dataset(dataset), {}).get((own_name, label_eps))
                cells = []
                for header, metric in columns:
                    found = _tests(selected, baseline, metric, twin.get(header))
                    if tests is not None:
                        tests += [[dataset, name, header, test.against, test.text()] for test in found if test]
                        if reference and header in reference[1] and metric in selected.columns:
                            versus = welch(
                                selected.set_index("seed")[metric],
                                reference[1][header],
                                reference[0],
                                MIN_SEEDS_FOR_EVIDENCE,
                            )
                            tests += [[dataset, name, header, versus.against, versus.text()]] if versus else []
                    text = cell_text(selected, metric)
                    cells.append(text + marks(*found, higher_is_better(metric)) if text else text)
                rows.append([dataset, name, "ours", *cells])
            if (method, eps) in published:
                values = published[(method, eps)]
                rows.append(
                    [
                        dataset,
                        setup_name(method, eps),
                        seeds_label,
                        *[seeds_value(values[header], digits) if header in values else "" for header, _ in columns],
                    ]
                )
            # the setups measured by other code, once each, after the block of ours (and the paper's row)
            block = [
                (names[(ours["method"] == label) & (ours["epsilon"] == label_eps)].iloc[0], label_eps)
                for label, label_eps in labels
            ] + ([(method, eps)] if method is not None else [])
            for key in dict.fromkeys(block):
                if key in (references or {}).get(base_dataset(dataset), {}) and key not in shown:
                    shown.add(key)
                    label, values = references[base_dataset(dataset)][key]
                    rows.append(
                        [
                            dataset,
                            setup_name(*key),
                            label,
                            *[
                                _spread_text(values[header], digits) if header in values else ""
                                for header, _ in columns
                            ],
                        ]
                    )
    return rows


def _spread_text(values: list[float], digits: str) -> str:
    series = pd.Series(values, dtype=float)
    return f"{series.mean():{digits}} ± {series.std(ddof=1):{digits}} ({len(series)})"


def higher_is_better(metric: str) -> bool | None:
    spec = spec_for(metric)
    if spec is None or spec.kind != MetricKind.QUALITY:
        return None
    return spec.direction == Direction.HIGHER


def _tests(runs: pd.DataFrame, uniform_runs: pd.DataFrame, metric: str, published: object) -> tuple:
    """(against the paper's value, against uniform on the same seeds), each a TTest or None."""
    if metric not in runs.columns:
        return None, None
    ours = runs.set_index("seed")[metric].dropna()
    paper = published[0] if isinstance(published, tuple) else published
    versus_paper = (
        one_sample(ours, float(paper), MIN_SEEDS_FOR_EVIDENCE)
        if isinstance(paper, (int, float)) and not is_heavy_tailed(metric)
        else None
    )
    versus_uniform = None
    if (
        not uniform_runs.empty
        and metric in uniform_runs.columns
        and not runs["method_name"].eq("uniform").all()
        and runs["epsilon"].map(math.isfinite).all()
    ):
        versus_uniform = paired(ours, uniform_runs.set_index("seed")[metric], MIN_SEEDS_FOR_EVIDENCE)
    return versus_paper, versus_uniform


def _setting_mismatch(runs: pd.DataFrame, required: tuple[str, ...]) -> str:
    """Which of the ``method.param=value`` settings ``required`` these runs did not use, as
    ``param=ours ≠ value``; empty when they all match (or nothing is required)."""
    if not required or runs.empty:
        return ""
    logged = json.loads(runs["settings"].iloc[0])
    differ = []
    for item in required:
        key, value = item.split("=", 1)
        param = key.split(".", 1)[1]
        if logged.get(f"hp.{param}") != value:
            differ.append(f"{param}={logged.get(f'hp.{param}', 'default')} ≠ {value}")
    return ", ".join(differ)


def render_versus_seeds(
    frame: pd.DataFrame,
    columns: list[tuple[str, str]],
    seeds: dict[str, dict[tuple[str, float], dict[str, float | tuple[float, float]]]],
    seeds_label: str,
    digits: str,
    title: str,
    fmt: str,
) -> str:
    """Per dataset with any of the metrics, one row per setup (method × ε): ours (mean ± std
    over seeds, seed count) followed by the seeds' published row for the same setup; setups in
    the seeds' order, then ours that the seeds lack; the seeds' other setups are shown too.
    ``columns``: (header, metric); ``seeds``: {dataset: {(method, ε): {header: value}}}."""
    if not any(metric in frame.columns for _, metric in columns):
        raise TableError(f"none of the metrics {columns[0][1]} … {columns[-1][1]} is in these runs")
    rows = versus_seeds_rows(frame, columns, seeds, seeds_label, digits)
    return format_table(["dataset", "setup", "numbers", *[header for header, _ in columns]], rows, title, fmt)


def effective_size_columns(frame: pd.DataFrame) -> dict[int, str]:
    """{size: column} of the ``effective-size.acc_n<size>`` metrics in these runs, largest first."""
    prefix = "effective-size.acc_n"
    found = {int(c[len(prefix) :]): c for c in frame.columns if c.startswith(prefix) and c[len(prefix) :].isdigit()}
    return dict(sorted(found.items(), reverse=True))


def render_fig6(frame: pd.DataFrame, fmt: str, evaluator: str = "image-downstream") -> str:
    """The seeds' Fig. 6: accuracy per classifier (columns in the figure's order, then MEAN)."""
    columns = [(name, f"{evaluator}.{name}.accuracy") for name in FIG6_CLASSIFIERS] + [
        ("MEAN", f"{evaluator}.accuracy")
    ]
    seeds = {
        dataset: {setup: dict(zip([header for header, _ in columns], values)) for setup, values in setups.items()}
        for dataset, setups in SEEDS_FIG6.items()
    }
    title = (
        f"Fig. 6: accuracy on the real test images per classifier ({evaluator}; higher is better), "
        "ours: mean ± sd [95% CI] (seeds); ◦ fewer than 3 seeds, ‡ dirty code"
    )
    return render_versus_seeds(frame, columns, seeds, "seeds' Fig. 6", ".4g", title, fmt)


def render_fig3(frame: pd.DataFrame, fmt: str) -> str:
    """The seeds' Fig. 3: mean accuracy of the 12 classifiers per training-set size."""
    sizes = sorted(set(effective_size_columns(frame)) | set(FIG3_SIZES), reverse=True)
    columns = [(f"n={size}", f"effective-size.acc_n{size}") for size in sizes]
    seeds = {
        dataset: {
            setup: {f"n={size}": value for size, value in zip(FIG3_SIZES, values)} for setup, values in setups.items()
        }
        for dataset, setups in SEEDS_FIG3.items()
    }
    title = (
        "Fig. 3: mean accuracy of the 12 classifiers vs training images (effective-size; higher is better), "
        "ours: mean ± sd [95% CI] (seeds); ◦ fewer than 3 seeds, ‡ dirty code"
    )
    return render_versus_seeds(frame, columns, seeds, "seeds' Fig. 3", ".4f", title, fmt)
