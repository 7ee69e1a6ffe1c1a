"""``python -m bench report``: the reproduction report, regenerated from MLflow or a results record.

For every preset (``bench/report/presets.py``) whose experiment is asked for: our numbers beside
the papers' published values, privacy–utility plots (metric against ε, with the runs without
noise and the data-independent baselines as bands), sample grids (the ``samples.png`` artifact of
one run per setup, for presets whose cells log one), and the cells not run here, each with the
exact command that runs it. Written twice from one list of blocks: ``REPORT.md`` (plots as PNG
files beside it, in ``report_files/``) and ``REPORT.html``, a single self-contained page whose
images are embedded as base64 data.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bench.harness import tracking
from bench.report.presets import (
    NOT_IN_MIRROR,
    PAPER_DATASET,
    PRESETS,
    CostKey,
    Preset,
    approximately,
    cost_key,
    duration,
    grid_cells,
    logged_seconds,
    measured_references,
    seconds_for,
)
from bench.report.coverage import (
    EVIDENCE_SEEDS,
    counted_presets,
    finished_cell_keys,
    matrix_rows,
    setup_coverage,
    totals,
)
from bench.report.source import MlflowSource, RunSource
from bench.report.stats import MARK_LEGEND
from bench.report.tables import (
    CELL_LEGEND,
    FEW_SEEDS_MARK,
    MIN_SEEDS_FOR_EVIDENCE,
    TableError,
    summary_text,
    seeds_value,
    base_dataset,
    epsilon_text,
    load_runs,
    versus_seeds_rows,
)

FILES_FOLDER = "report_files"


@dataclass
class Block:
    kind: str  # "h1", "h2", "h3", "p", "code", "list", "table", "image"
    text: str = ""
    items: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    png: bytes = b""
    file: str = ""  # the image's path relative to the report


def _runs_or_empty(experiment: str, source: RunSource) -> pd.DataFrame:
    try:
        return load_runs(experiment, source)
    except TableError:  # no such experiment, or no finished run in it yet
        return pd.DataFrame(columns=["dataset", "method", "method_name", "epsilon", "seed", "cell_key", "setup_key"])


def preset_runs(preset: Preset, frame: pd.DataFrame) -> pd.DataFrame:
    """The experiment's runs that belong to this preset: its methods on its datasets (presets
    may share an experiment, as Table 2 and Table 7 do)."""
    methods = {m for grid in preset.grids for m in grid.methods}
    datasets = {d for grid in preset.grids for d in grid.datasets}
    if frame.empty:
        return frame
    keep = frame["method_name"].isin(methods) & frame["dataset"].map(base_dataset).isin(datasets)
    return frame[keep]


@dataclass(frozen=True)
class MissingCells:
    method: str
    dataset: str
    epsilon: float
    seeds: tuple[int, ...]
    command: str
    key: CostKey | None = None  # what prices these cells (bench.report.presets.cost_key)


def missing_cells(preset: Preset, finished_keys: set[str]) -> list[MissingCells]:
    """The preset's cells without a finished run, grouped per (grid, method, dataset, ε) into one
    command each, narrowed to exactly those seeds."""
    missing = []
    for grid in preset.grids:
        groups: dict[tuple[str, str, float], list[int]] = {}
        keys: dict[tuple[str, str, float], CostKey] = {}
        for cell in grid_cells(grid, preset.experiment):
            if cell.key not in finished_keys:
                groups.setdefault((cell.method, cell.dataset, cell.epsilon), []).append(cell.seed)
                keys.setdefault((cell.method, cell.dataset, cell.epsilon), cost_key(cell))
        for (method, dataset, epsilon), seeds in groups.items():
            # a non-private method runs at ∞ whatever --eps says
            command = grid.narrowed(
                methods=[method], datasets=[dataset], epsilons=[epsilon], seeds=sorted(seeds)
            ).command(preset.experiment)
            missing.append(
                MissingCells(method, dataset, epsilon, tuple(sorted(seeds)), command, keys[(method, dataset, epsilon)])
            )
    return missing


def _png(fig: Any) -> bytes:
    from bench.core.plotting import pyplot

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    pyplot().close(fig)
    return buffer.getvalue()


def _data_independent_methods() -> set[str]:
    from bench.api.registry import METHODS

    return {m.name for m in METHODS if getattr(m, "data_independent", False)}


def missing_cost(missing: MissingCells, timings: dict[CostKey, float]) -> str:
    """The estimated CPU time of one missing command: its cells × the median logged (or
    documented) seconds of cells of the same setting; never a guess."""
    seconds = None if missing.key is None else seconds_for(missing.key, timings)
    if seconds is None:
        return "not measured: no run of this setting timed yet"
    return f"{approximately(seconds)} {duration(seconds * len(missing.seeds))} on 2 CPU cores"


@dataclass(frozen=True)
class PresetStatus:
    """What the store holds of one preset: its finished runs and the cells still to run."""

    runs: pd.DataFrame
    missing: list[MissingCells]
    total: int

    @property
    def to_run(self) -> int:
        return sum(len(m.seeds) for m in self.missing)

    @property
    def finished(self) -> int:
        return self.total - self.to_run

    @property
    def lacking_data(self) -> list[str]:
        return sorted({m.dataset for m in self.missing if m.dataset in NOT_IN_MIRROR})


def preset_status(preset: Preset, frame: pd.DataFrame) -> PresetStatus:
    runs = preset_runs(preset, frame)
    missing = missing_cells(preset, finished_cell_keys(preset, runs))
    return PresetStatus(runs, missing, sum(len(grid_cells(grid, preset.experiment)) for grid in preset.grids))


def preset_blocks(
    preset: Preset,
    status: PresetStatus,
    timings: dict[CostKey, float],
    earlier_report: Path | None = None,
    experiment_runs: pd.DataFrame | None = None,
    source: RunSource | None = None,
) -> list[Block]:
    """A preset's section; ``timings``: logged seconds per cost key (presets.cost_key);
    ``experiment_runs``: every run of its experiment (the calibration reads its real-data runs)."""
    experiment_runs = status.runs if experiment_runs is None else experiment_runs
    runs = status.runs
    blocks = [
        Block("h2", f"{preset.reproduces} — preset `{preset.name}`"),
        Block(
            "p",
            f"{preset.description}. Experiment `{preset.experiment}`; {status.finished} of its "
            f"{status.total} cells finished"
            + (
                f"; the tables also show {len(runs) - status.finished} other run(s) of its methods on its "
                "datasets in that experiment (other ε or settings, e.g. ablations or another preset's cells)"
                if len(runs) > status.finished
                else ""
            )
            + ".",
        ),
        Block("code", f"python -m bench run --preset {preset.name}"),
    ]
    columns = list(preset.columns)
    blocks += calibration_blocks(preset, experiment_runs)
    if preset.published or len(runs):
        tests: list[list[str]] = []
        rows = versus_seeds_rows(
            runs,
            columns,
            preset.published,
            "paper",
            preset.digits,
            published_datasets=True,
            paper_settings=preset.paper_settings,
            tests=tests,
            references=measured_references(preset),
        )
        if rows:
            blocks.append(
                Block(
                    "p",
                    f"Ours: {CELL_LEGEND} {MARK_LEGEND} 3 significant digits; "
                    f"paper: the published value ({preset.source or 'no published values'})."
                    + (f" {preset.references_note}" if preset.references else "")
                    + " A column's metric is named in the legend below the table.",
                )
            )
            blocks.append(Block("table", header=["dataset", "setup", "numbers", *[h for h, _ in columns]], rows=rows))
            blocks.append(Block("list", items=[f"{header}: `{metric}`" for header, metric in columns]))
        if tests:
            blocks.append(
                Block(
                    "p",
                    "The tests behind the marks (two-sided t at the 5% level, no correction for the "
                    "number of tests; Δ: ours − the paper's value, or the mean paired difference to "
                    "`uniform`):",
                )
            )
            blocks.append(
                Block(
                    "table",
                    header=["dataset", "setup", "column", "against", "result"],
                    rows=[
                        row[:4] + [row[4] + (" ✱" if float(row[4].rsplit("p = ", 1)[1]) < 0.05 else "")]
                        for row in tests
                    ],
                )
            )
    blocks += _triad_blocks(preset, runs, source or MlflowSource())
    blocks += _selection_gain_blocks(preset, runs)
    blocks += _plot_blocks(preset, runs)
    if preset.sample_grids:
        blocks += _sample_blocks(preset, runs, earlier_report, source or MlflowSource())
    blocks.append(Block("h3", f"Not run here ({status.to_run} of {status.total} cells)"))
    if status.missing:
        blocks.append(
            Block(
                "p",
                "Each command runs exactly the missing seeds of one method, dataset and ε "
                "(add --jobs N, --data-dir DIR as needed); the comment estimates its time from the "
                "median logged time of cells of the same setting (method, dataset, profile, protocol, hyperparameters, "
                "evaluators) on this machine, or says none was measured (no GPU time "
                "is measured: no GPU was lent to this project's runs):",
            )
        )
        blocks.append(Block("code", "\n".join(f"{m.command}  # {missing_cost(m, timings)}" for m in status.missing)))
        if status.lacking_data:
            blocks.append(
                Block(
                    "p",
                    "Not runnable on this project's machines: the offline data mirror lacks "
                    + "; ".join(f"{d} ({NOT_IN_MIRROR[d]})" for d in status.lacking_data)
                    + ". Their commands run where those files are (--data-dir).",
                )
            )
    else:
        blocks.append(Block("p", "Every cell of this preset has a finished run."))
    return blocks


@dataclass(frozen=True)
class Calibration:
    """Real data under one dataset label, ours against the paper's, for one column."""

    dataset: str
    column: str
    ours: pd.Series  # one value per seed
    paper: float | tuple[float, float] | str | None  # as published: a value, (mean, sd), or text read off a figure
    comparable: bool  # the label's protocol is the one the paper's value was computed under

    @property
    def paper_value(self) -> float | None:
        """The published number (a mean where an sd was printed); None for none or a figure's reading."""
        if isinstance(self.paper, tuple):
            return self.paper[0]
        return float(self.paper) if isinstance(self.paper, (int, float)) else None

    @property
    def sd(self) -> float:
        return float(self.ours.std(ddof=1)) if len(self.ours) > 1 else 0.0

    @property
    def tested(self) -> bool:
        """Enough seeds for a verdict: fewer are shown, never used as evidence (issue 32)."""
        return len(self.ours) >= MIN_SEEDS_FOR_EVIDENCE

    @property
    def miss(self) -> bool:
        """The paper's value lies more than one seed-sd from our mean (at ≥ 3 seeds)."""
        if self.paper_value is None or not self.comparable or not self.tested:
            return False
        return abs(self.ours.mean() - self.paper_value) > self.sd

    def verdict(self) -> str:
        if self.paper is None:
            return "the paper gives no real-data value"
        if self.ours.empty:
            return "no real-data run yet: not calibrated"
        if not self.comparable:
            return (
                "not comparable by design: the sound protocol (natural class balance, nothing chosen on the test set)"
            )
        if self.paper_value is None:
            return "the paper's value is read off a figure: not tested against the seed-sd"
        gap, sd = self.ours.mean() - self.paper_value, self.sd
        if not self.tested:
            return (
                f"{len(self.ours)} seed(s), fewer than {MIN_SEEDS_FOR_EVIDENCE}: not tested yet (Δ {gap:+.3f} so far)"
            )
        if not self.miss:
            return f"agrees: Δ {gap:+.3f} within one seed-sd ({sd:.3f})"
        return f"**MISS**: Δ {gap:+.3f} exceeds one seed-sd ({sd:.3f}), a pipeline difference to explain before any method comparison"


def _paper_protocol_datasets(preset: Preset) -> set[str]:
    return {d for grid in preset.grids if grid.protocol == "paper" for d in grid.datasets}


def calibrations(preset: Preset, frame: pd.DataFrame) -> list[Calibration]:
    """Per dataset label of the preset with a real-data run in its experiment (presets sharing an
    experiment share its real runs) × column; a dataset whose paper gives a real-data value but
    that has no run yet gets one row, so a missing calibration is visible."""
    datasets = {d for grid in preset.grids for d in grid.datasets}
    if frame.empty or "method_name" not in frame.columns:
        real = frame.iloc[0:0]
    else:
        real = frame[(frame["method_name"] == "real") & frame["dataset"].map(base_dataset).isin(datasets)]
    paper_protocol = _paper_protocol_datasets(preset)
    labels = set(real["dataset"]) if len(real) else set()
    covered = {base_dataset(label) for label in labels}
    out = []
    for dataset in sorted(labels | {d for d in datasets if d not in covered}):
        base = base_dataset(dataset)
        published = (preset.published.get(base) or preset.published.get(PAPER_DATASET.get(base, base), {})).get(
            ("real", math.inf), {}
        )
        comparable = base not in paper_protocol or "protocol paper" in dataset
        rows = real[real["dataset"] == dataset]
        found = []
        for header, metric in preset.columns:
            value = published.get(header)
            ours = rows[metric].dropna() if metric in rows.columns else pd.Series(dtype=float)
            if value is None or (ours.empty and dataset in labels):
                continue  # the paper has nothing to compare, or the column is another protocol's
            found.append(Calibration(dataset, header, ours, value, comparable))
            if ours.empty:
                break  # one row says that this dataset's calibration has not run
        if not found:  # no published value for any column: our real-data number, for reference
            found = [
                Calibration(dataset, header, rows[metric].dropna(), None, comparable)
                for header, metric in preset.columns
                if metric in rows.columns and rows[metric].notna().any()
            ][:1]
        out += found
    return out


def calibration_blocks(preset: Preset, runs: pd.DataFrame) -> list[Block]:
    """The table's first rows: real data through our pipeline against the paper's real-data
    value, per dataset and protocol; a miss larger than one seed-sd is flagged with the preset's
    explanation beside it (or a demand for one)."""
    found = calibrations(preset, runs)
    if not found:
        return []
    rows = []
    for c in found:
        notes = preset.calibration_notes  # by the row's full label first, else its dataset
        note = (notes.get(c.dataset) or notes.get(base_dataset(c.dataset), "")) if c.miss else ""
        if c.miss and not note:
            note = "unexplained"
        paper = "" if c.paper is None else seeds_value(c.paper, preset.digits)
        rows.append([c.dataset, c.column, summary_text(c.ours), paper, c.verdict(), note])
    return [
        Block(
            "p",
            "Calibration: the real training data through our pipeline, against the paper's real-data value. "
            "Every method row below inherits this pipeline, so a miss larger than one seed-sd is a difference "
            "of data or evaluation, not of any generator.",
        ),
        Block(
            "table",
            header=["dataset", "column", "ours (real data)", "paper (real data)", "verdict", "explanation"],
            rows=rows,
        ),
    ]


def selection_gain_frame(preset: Preset, runs: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """The runs with one column per :attr:`Preset.selection_gain`: per run, the metric chosen on
    the test set minus the same fits' metric without that choice (NaN where a run lacks either,
    e.g. under the sound protocol, which never selects on the test set)."""
    gains, columns = runs.copy(), []
    for header, selected, honest in preset.selection_gain:
        if selected in gains.columns and honest in gains.columns:
            name = f"{selected} − {honest}"
            gains[name] = gains[selected] - gains[honest]
            columns.append((header, name))
    return gains, columns


def _triad_blocks(preset: Preset, runs: pd.DataFrame, source: RunSource) -> list[Block]:
    """The privacy triad of the preset's runs that hold the privacy evaluator's metrics."""
    from bench.report.triad import audit_bounds, triad_rows

    if not preset.triad or "privacy.mia_auc" not in runs.columns or runs["privacy.mia_auc"].isna().all():
        return []
    header, rows = triad_rows(runs, audit_bounds(source=source))
    return [
        Block(
            "p",
            "Privacy side by side, per dataset, ε and method: the ledger's ε and the independent accountant's, "
            "the ε lower bound of `bench audit` (experiment `audit`), the membership attack on the released "
            "rows (DOMIAS AUC with the widest of its seeds' 95% CIs; 0.5: no signal), the DCR share (0.5 ideal), "
            "the detection AUC of a classifier telling synthetic from real test rows (0.5 ideal; where it reads ≈ 1.00, "
            "one column alone may give the rows away — a point mass or an integer grid the generator never "
            "emits: `benchmarks/detection_columns.py` tells, docs/data.md explains) and the "
            "utility metric. Cells: mean ± sd [95% CI] (seeds); runs without these metrics are left out.",
        ),
        Block("table", header=header, rows=rows),
    ]


def _selection_gain_blocks(preset: Preset, runs: pd.DataFrame) -> list[Block]:
    if not preset.selection_gain or runs.empty:
        return []
    gains, columns = selection_gain_frame(preset, runs)
    rows = versus_seeds_rows(gains, columns, {}, "paper", preset.digits) if columns else []
    if not rows:
        return []
    return [
        Block(
            "p",
            "What the paper protocol's test-set selection adds: per run, the seeds' best-of-variants metric "
            "(chosen on the test set) minus the hard-label metric of the same base fits without that choice; "
            f"{CELL_LEGEND} The sound protocol chooses nothing on the test set.",
        ),
        Block("table", header=["dataset", "setup", "numbers", *[h for h, _ in columns]], rows=rows),
        Block("list", items=[f"{header}: `{metric}`" for header, metric in columns]),
    ]


def _plot_blocks(preset: Preset, runs: pd.DataFrame) -> list[Block]:
    from bench.report.plots import privacy_utility_figure

    blocks = []
    if runs.empty:
        return blocks
    bands = _data_independent_methods()
    for metric in preset.plot_metrics:
        if metric not in runs.columns:
            continue
        for dataset, rows in runs.dropna(subset=[metric]).groupby("dataset"):
            if not (rows["epsilon"].map(math.isfinite) & ~rows["method_name"].isin(bands)).any():
                continue  # no private method here: nothing to draw against ε
            fig = privacy_utility_figure(
                rows,
                metric,
                f"{dataset}: {metric} against ε ({preset.name})",
                {m for m in rows["method"] if m.split(" [")[0] in bands},
            )
            name = f"{preset.name}_{dataset}_{metric}".replace(" ", "_").replace("/", "_")
            name = "".join(c if c.isalnum() or c in "._-" else "_" for c in name) + ".png"
            blocks.append(
                Block("image", text=f"{dataset}: {metric} against ε", png=_png(fig), file=f"{FILES_FOLDER}/{name}")
            )
    return blocks


SAMPLES_ARTIFACT = "samples.png"


def sample_file(preset: Preset, run_id: str) -> str:
    """A sample grid's path in the report, named by its run: a file kept from an earlier report
    under this name is that run's artifact and nothing else."""
    return f"{FILES_FOLDER}/samples_{preset.name}_{run_id}.png"


def _sample_blocks(preset: Preset, runs: pd.DataFrame, earlier_report: Path | None, source: RunSource) -> list[Block]:
    """One sample grid per dataset × setup × ε: the ``samples.png`` of its lowest seed's run, read
    from the run's artifacts or, where they are not on this machine, kept from an earlier report
    written to the same folder (the file name carries the run id)."""
    if runs.empty:
        return []
    blocks, unreachable = [], []
    # the same run on every machine: lowest seed, then the earliest and the smallest id (presets
    # sharing an experiment may hold two runs of one seed)
    ordered = runs.sort_values(["seed", "start_time", "run_id"], kind="stable")
    first = (
        ordered.groupby(["dataset", "method", "epsilon"])
        .head(1)
        .sort_values(["dataset", "method", "epsilon"], kind="stable")
    )
    for row in first.itertuples():
        file = sample_file(preset, row.run_id)
        png = source.artifact(row.run_id, SAMPLES_ARTIFACT)
        if png is None and earlier_report is not None and (earlier_report / file).is_file():
            png = (earlier_report / file).read_bytes()
        label = (
            f"{row.dataset}: samples of {row.method} ε={epsilon_text(row.epsilon)}, seed {row.seed} (run {row.run_id})"
        )
        if png is None:
            unreachable.append(f"{row.dataset}, {row.method} ε={epsilon_text(row.epsilon)}: run `{row.run_id}`")
        else:
            blocks.append(Block("image", text=label, png=png, file=file))
    if blocks:
        blocks.insert(
            0,
            Block(
                "p",
                "Samples: real training points or images beside generated ones (the run's "
                f"`{SAMPLES_ARTIFACT}` artifact), one run per setup, its lowest seed.",
            ),
        )
    if unreachable:
        blocks.append(
            Block(
                "p",
                f"No sample grid for these setups: no `{SAMPLES_ARTIFACT}` of their runs is reachable "
                "here (the store carries parameters and metrics; artifacts stay where the run ran).",
            )
        )
        blocks.append(Block("list", items=unreachable))
    return blocks


def presets_of(experiments: list[str] | None) -> list[Preset]:
    return [p for p in PRESETS.values() if not experiments or p.experiment in experiments]


def report_blocks(
    experiments: list[str] | None = None, earlier_report: Path | None = None, source: RunSource | None = None
) -> list[Block]:
    source = source or MlflowSource()
    presets = presets_of(experiments)
    if experiments:
        unknown = set(experiments) - {p.experiment for p in PRESETS.values()}
        if unknown:
            raise TableError(
                f"no preset logs to experiment {sorted(unknown)[0]!r}; presets use "
                f"{', '.join(sorted({p.experiment for p in PRESETS.values()}))}"
            )
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    blocks = [
        Block("h1", "Reproduction report"),
        Block(
            "p",
            f"Regenerated by `python -m bench report` on {now} from {source.describe()} "
            f"(code {tracking.git_commit()}); never edited by hand. "
            "Every number of ours is a mean over seeds of one setting: runs whose settings differ "
            "(profile, --set, δ, calibrator, protocol, --eval-set) are separate rows, labelled by the "
            "difference. `uniform` and `independent` are the trivial baselines (methods/baselines.py); "
            "`uniform` reads no row (ε spent 0) and is drawn as a band.",
        ),
    ]
    frames: dict[str, pd.DataFrame] = {}
    timings = logged_seconds(source=source)
    summary, sections = [], []
    for preset in presets:
        frame = frames.setdefault(preset.experiment, _runs_or_empty(preset.experiment, source))
        status = preset_status(preset, frame)
        summary.append(summary_row(preset, status, timings))
        sections += preset_blocks(preset, status, timings, earlier_report, frame, source)
    blocks.append(
        Block(
            "p",
            "What was run: per preset, the cells with a finished run in the store, the cells still "
            "to run (each listed with its command in the preset's section), their estimated time on "
            "2 CPU cores where a cell of the same setting was timed, and the datasets "
            "whose files the offline data mirror lacks.",
        )
    )
    blocks.append(
        Block(
            "table",
            header=[
                "preset",
                "reproduces",
                "finished",
                "to run",
                "estimated CPU time to run",
                "data not in the mirror",
            ],
            rows=summary,
        )
    )
    blocks += coverage_blocks(presets, frames, timings)
    return blocks + sections


def coverage_blocks(
    presets: list[Preset], frames: dict[str, pd.DataFrame], timings: dict[CostKey, float] | None = None
) -> list[Block]:
    """The coverage matrix (bench/report/coverage.py): totals for the tabular and 2-D setups and
    for the image setups, then one matrix per reproduced table or figure."""
    found = []
    for preset in counted_presets(presets):
        frame = frames[preset.experiment]
        found.append((preset, setup_coverage(preset, finished_cell_keys(preset, frame), timings)))
    if not found:
        return []
    every = [c for _, coverage in found for c in coverage]
    blocks = [
        Block("h2", "Coverage of the papers' tables and figures"),
        Block(
            "p",
            "Every setup (dataset × method × ε) of every table and figure the presets reproduce: the number of "
            "seeds finished (the profile where it is not the paper's), or why none ran — `no data` (files not in "
            "the offline mirror), `needs a GPU` (an image setup at the paper profile), `not implemented` (no "
            "adapter, e.g. GS-WGAN), `not run` (its command is in the preset's section). A setup short of "
            f"{EVIDENCE_SEEDS} seeds also shows what one more seed costs on 2 CPU cores (`≈ 1.3 h a seed`), "
            "measured: the median logged time of cells of its exact setting, else a documented measurement "
            "of its method, dataset and profile (`bench/report/presets.py`), `≥` where that measurement was "
            "stopped before the cell ended; `not timed` where neither exists.",
        ),
        Block(
            "list",
            items=[
                totals([c for c in every if not c.image]).text("tabular, discretized and 2-D"),
                totals([c for c in every if c.image]).text("images"),
            ],
        ),
    ]
    for preset, coverage in found:
        header, rows = matrix_rows(coverage)
        blocks += [
            Block("h3", f"{preset.reproduces} (preset `{preset.name}`)"),
            Block("table", header=header, rows=rows),
        ]
    return blocks


def summary_row(preset: Preset, status: PresetStatus, timings: dict[CostKey, float]) -> list[str]:
    priced = [(m, seconds_for(m.key, timings)) for m in status.missing if m.key is not None]
    timed = [m for m, seconds in priced if seconds is not None]
    seconds = sum(s * len(m.seeds) for m, s in priced if s is not None)
    untimed = status.to_run - sum(len(m.seeds) for m in timed)
    bound = approximately(*(s for _, s in priced))
    parts = ([f"{bound} {duration(seconds)}"] if timed else []) + (
        [f"{untimed} cells not timed yet"] if untimed else []
    )
    return [
        f"`{preset.name}`",
        preset.reproduces,
        str(status.finished),
        str(status.to_run),
        " + ".join(parts) or "—",
        ", ".join(status.lacking_data),
    ]


# ------------------------------------------------------------------------------------------
# Markdown and HTML from the same blocks
# ------------------------------------------------------------------------------------------


def to_markdown(blocks: list[Block]) -> str:
    out = []
    for block in blocks:
        if block.kind in ("h1", "h2", "h3"):
            out.append("#" * int(block.kind[1]) + " " + block.text)
        elif block.kind == "p":
            out.append(block.text)
        elif block.kind == "code":
            out.append("```bash\n" + block.text + "\n```")
        elif block.kind == "list":
            out.append("\n".join(f"- {item}" for item in block.items))
        elif block.kind == "table":
            cell = lambda text: text.replace("|", "\\|")  # noqa: E731
            lines = ["| " + " | ".join(map(cell, block.header)) + " |", "|" + "---|" * len(block.header)]
            lines += ["| " + " | ".join(map(cell, row)) + " |" for row in block.rows]
            out.append("\n".join(lines))
        elif block.kind == "image":
            alt = block.text.replace("[", "(").replace("]", ")")  # brackets would end the alt text
            out.append(f"![{alt}]({block.file})")
    return "\n\n".join(out) + "\n"


def _inline(text: str) -> str:
    """Escape, then `code` spans (the only inline markup the blocks use)."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }
tr.paper td { background: #f3f3f3; color: #555; }
td.few { color: #999; }
pre { background: #f6f6f6; padding: 0.75em; overflow-x: auto; font-size: 0.85em; }
img { max-width: 100%; border: 1px solid #ddd; }
"""


FEW_CLASS = ' class="few"'


def to_html(blocks: list[Block]) -> str:
    body = []
    for block in blocks:
        if block.kind in ("h1", "h2", "h3"):
            body.append(f"<{block.kind}>{_inline(block.text)}</{block.kind}>")
        elif block.kind == "p":
            body.append(f"<p>{_inline(block.text)}</p>")
        elif block.kind == "code":
            body.append(f"<pre><code>{html.escape(block.text)}</code></pre>")
        elif block.kind == "list":
            body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in block.items) + "</ul>")
        elif block.kind == "table":
            head = "".join(f"<th>{html.escape(h)}</th>" for h in block.header)
            rows = "".join(
                ('<tr class="paper">' if len(row) > 2 and row[2] == "paper" else "<tr>")
                + "".join(f"<td{FEW_CLASS if FEW_SEEDS_MARK in c else ''}>{_inline(c)}</td>" for c in row)
                + "</tr>"
                for row in block.rows
            )
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif block.kind == "image":
            data = base64.b64encode(block.png).decode("ascii")
            body.append(
                f'<figure><img alt="{html.escape(block.text)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(block.text)}</figcaption></figure>"
            )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Reproduction report</title>'
        f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def write_report(out_dir: Path, experiments: list[str] | None = None, source: RunSource | None = None) -> list[Path]:
    """``REPORT.md`` (+ ``report_files/*.png``) and the self-contained ``REPORT.html``."""
    blocks = report_blocks(experiments, earlier_report=out_dir, source=source)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = set()
    for block in blocks:
        if block.kind == "image":
            path = out_dir / block.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(block.png)
            written.add(path)
    # a plot of an earlier report that this one no longer shows would otherwise linger beside it;
    # a report narrowed by --experiment leaves the other presets' files alone (a sample grid kept
    # from a machine with the run's artifacts cannot be drawn again here)
    owned = tuple(prefix for p in presets_of(experiments) for prefix in (f"{p.name}_", f"samples_{p.name}_"))
    for stale in set((out_dir / FILES_FOLDER).glob("*.png")) - written:
        if not experiments or stale.name.startswith(owned):
            stale.unlink()
    markdown, page = out_dir / "REPORT.md", out_dir / "REPORT.html"
    markdown.write_text(to_markdown(blocks))
    page.write_text(to_html(blocks))
    return [markdown, page]
