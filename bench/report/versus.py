"""The seeds' layouts: DP-HP's Table 1, Fig. 6 and Fig. 3 in their own shape, and ours beside
each published value (``versus_seeds_rows``) with the tests that compare them."""

from __future__ import annotations

import json
import math


import pandas as pd

from bench.report.published import Value, named_like_twin, published, registered_method
from bench.report.stats import (
    EQUIVALENCE_MARGIN,
    Equivalence,
    Spread,
    TTest,
    holm,
    marks,
    paired,
    spread,
    tost,
    versus_published,
    welch,
)
from bench.api.contracts import Direction, MetricKind
from bench.privacy.budget import epsilon_text
from bench.report.frame import TableError, base_dataset
from bench.report.gaps import Gap, gap_of
from bench.report.tables import (
    MIN_SEEDS_FOR_EVIDENCE,
    cell_text,
    format_number,
    format_table,
    is_heavy_tailed,
    spec_for,
)


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


def seeds_value(value: Value, digits: str) -> str:
    if isinstance(value, str):  # transcribed as printed (e.g. "≈ 3.1×10⁵" read from a figure)
        return value
    if isinstance(value, tuple):
        return f"{value[0]:{digits}} ± {value[1]:{digits}}"
    return f"{value:{digits}}"


def versus_seeds_rows(
    frame: pd.DataFrame,
    columns: list[tuple[str, str]],
    seeds: dict[str, dict[tuple[str, float], dict[str, Value]]],
    seeds_label: str,
    digits: str,
    published_datasets: bool = False,
    paper_settings: dict[str, dict[tuple[str, float], tuple[str, ...]]] | None = None,
    tests: list[list[str]] | None = None,
    references: dict[str, dict[tuple[str, float], tuple[str, dict[str, list[float]]]]] | None = None,
    best_of_seeds: bool = False,
    gaps: list[Gap] | None = None,
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
    Welch's t, listed in ``tests``. ``best_of_seeds``: the published values are each column's best
    of n runs, so ours is each column's best over its seeds (:func:`best_text`), with no test.
    ``gaps`` collects our cells more than one seed-sd from their twin (:mod:`bench.report.gaps`)."""
    present = [metric for _, metric in columns if metric in frame.columns]
    data = frame.dropna(subset=present, how="all") if present else frame.iloc[0:0]
    rows: list[list[str]] = []
    family = Family()
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
                    if (name, eps) == (registered_method(setup[0]), setup[1])
                    and not _setting_mismatch(
                        ours[(ours["method"] == label) & (ours["epsilon"] == eps)], required.get(setup, ())
                    )
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
                shown_as = named_like_twin(label, method) if not differs else label
                name = setup_name(shown_as, label_eps) + (f" (not the paper's setting: {differs})" if differs else "")
                baseline = ours[(names == "uniform") & (ours["epsilon"] == label_eps)]
                twin = published.get((method, eps), {}) if (method, eps) in published else {}
                own_name = names[(ours["method"] == label) & (ours["epsilon"] == label_eps)].iloc[0]
                reference = (references or {}).get(base_dataset(dataset), {}).get((own_name, label_eps))
                cells = []
                for column, (header, metric) in enumerate(columns):
                    if best_of_seeds:
                        cells.append(best_text(selected, metric))
                        continue
                    where = (dataset, name, header)
                    if gaps is not None and header in twin and (gap := gap_of(selected, metric, twin[header], *where)):
                        gaps.append(gap)
                    found = tuple(
                        family.add(where, test) for test in _tests(selected, baseline, metric, twin.get(header))
                    )
                    if reference and header in reference[1] and metric in selected.columns:
                        mine = selected.set_index("seed")[metric]
                        family.add(where, welch(mine, reference[1][header], reference[0], MIN_SEEDS_FOR_EVIDENCE))
                        family.note(
                            where,
                            tost(mine, reference[1][header], reference[0], EQUIVALENCE_MARGIN, MIN_SEEDS_FOR_EVIDENCE),
                        )
                        family.note(where, spread(mine, reference[1][header], reference[0], MIN_SEEDS_FOR_EVIDENCE))
                    text = cell_text(selected, metric)
                    if text:
                        family.marks.append((len(rows), 3 + column, found, higher_is_better(metric)))
                    cells.append(text)
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
    family.finish(rows, tests)
    return rows


def best_text(selected: pd.DataFrame, metric: str) -> str:
    """The best of ``metric`` over the runs ``selected`` (the metric's better direction) and of how
    many: "0.981 (best of 5)"; "" without a value."""
    if metric not in selected.columns or selected[metric].dropna().empty:
        return ""
    values = selected[metric].dropna()
    best = values.min() if higher_is_better(metric) is False else values.max()
    return f"{format_number(float(best))} (best of {len(values)})"


class Family:
    """The tests of one table: collected as the rows are made, then Holm-adjusted together
    (:func:`bench.report.stats.holm`) before any mark is set; equivalence tests ride along, listed."""

    def __init__(self) -> None:
        self.found: list[tuple[tuple[str, str, str], TTest]] = []
        self.listed: list[tuple[tuple[str, str, str], TTest | Equivalence | Spread | int]] = []
        self.marks: list[tuple[int, int, tuple[int | None, ...], bool | None]] = []  # row, cell, tests, direction

    def add(self, where: tuple[str, str, str], test: TTest | None) -> int | None:
        if test is None:
            return None
        self.found.append((where, test))
        self.listed.append((where, len(self.found) - 1))
        return len(self.found) - 1

    def note(self, where: tuple[str, str, str], test: Equivalence | Spread | None) -> None:
        if test is not None:
            self.listed.append((where, test))

    def finish(self, rows: list[list[str]], tests: list[list[str]] | None) -> None:
        adjusted = holm([test for _, test in self.found])
        for row, cell, indices, direction in self.marks:
            paper, uniform = (adjusted[i] if i is not None else None for i in indices) if indices else (None, None)
            rows[row][cell] += marks(paper, uniform, direction)
        if tests is not None:
            for (dataset, setup, column), entry in self.listed:
                result = adjusted[entry] if isinstance(entry, int) else entry
                flag = " ✱" if isinstance(result, TTest) and result.significant else ""
                flag = " ≈" if isinstance(result, Equivalence) and result.significant else flag
                tests.append([dataset, setup, column, result.against, result.text() + flag])


def _spread_text(values: list[float], digits: str) -> str:
    series = pd.Series(values, dtype=float)
    return f"{series.mean():{digits}} ± {series.std(ddof=1):{digits}} ({len(series)})"


def higher_is_better(metric: str) -> bool | None:
    spec = spec_for(metric)
    if spec is None or spec.kind != MetricKind.QUALITY:
        return None
    return spec.direction == Direction.HIGHER


def _tests(runs: pd.DataFrame, uniform_runs: pd.DataFrame, metric: str, published: object) -> tuple:
    """(against the paper's (mean, sd, runs), against uniform on the same seeds), each a TTest or
    None (a point value is not tested)."""
    if metric not in runs.columns:
        return None, None
    ours = runs.set_index("seed")[metric].dropna()
    versus_paper = None if is_heavy_tailed(metric) else versus_published(ours, published, MIN_SEEDS_FOR_EVIDENCE)
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
        if not _same_value(logged.get(f"hp.{param}"), value):
            differ.append(f"{param}={logged.get(f'hp.{param}', 'default')} ≠ {value}")
    return ", ".join(differ)


def _same_value(logged: str | None, wanted: str) -> bool:
    """A logged setting equals a wanted one as text, or as numbers (``1.0`` is ``1``)."""
    if logged == wanted:
        return True
    try:
        return logged is not None and float(logged) == float(wanted)
    except ValueError:
        return False


def render_versus_seeds(
    frame: pd.DataFrame,
    columns: list[tuple[str, str]],
    seeds: dict[str, dict[tuple[str, float], dict[str, Value]]],
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
