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

import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from bench.harness import provenance
from bench.report.presets import PRESETS
from bench.report.costs import CostKey, approximately, duration, logged_seconds, measured_cost_blocks, seconds_for
from bench.report.preset import NOT_IN_MIRROR, Preset, grid_cells, measured_references
from bench.report.status import PresetStatus, missing_cost, preset_frame, preset_status
from bench.report.coverage import (
    EVIDENCE_SEEDS,
    counted_presets,
    finished_cell_keys,
    matrix_rows,
    setup_coverage,
    totals,
)
from bench.report.source import MlflowSource, RunSource
from bench.report.stats import EQUIVALENCE_MARGIN, MARK_LEGEND
from bench.report.tables import CELL_LEGEND
from bench.report.versus import versus_seeds_rows
from bench.report.gaps import Gap, gap_blocks, narrative_of, read_tags, summary_blocks
from bench.report.frame import TableError
from bench.report.blocks import Block, to_html, to_markdown
from bench.report.calibration import calibration_blocks, selection_gain_blocks
from bench.report.figures import FILES_FOLDER, plot_blocks, sample_blocks, triad_blocks


def preset_blocks(
    preset: Preset,
    status: PresetStatus,
    timings: dict[CostKey, float],
    earlier_report: Path | None = None,
    experiment_runs: pd.DataFrame | None = None,
    source: RunSource | None = None,
    gaps_found: dict[str, list[Gap]] | None = None,
) -> list[Block]:
    """A preset's section; ``timings``: logged seconds per cost key (costs.cost_key);
    ``experiment_runs``: every run of its experiment (the calibration reads its real-data runs);
    ``gaps_found`` collects the preset's gaps to the paper by its name (:mod:`bench.report.gaps`)."""
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
        gaps: list[Gap] = []
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
            best_of_seeds=preset.best_of_seeds,
            gaps=gaps,
        )
        if rows:
            ours_legend = (
                "each column's best over its seeds (the better direction), as the paper's best of five runs; no "
                "test: an order statistic is no estimate of a mean, and the two grow with the number of runs alike."
                if preset.best_of_seeds
                else f"{CELL_LEGEND} {MARK_LEGEND}"
            )
            blocks.append(
                Block(
                    "p",
                    f"Ours: {ours_legend} 3 significant digits; "
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
                    "The tests behind the marks (two-sided t; ✱: p < 0.05 after Holm's correction over this "
                    "table's tests, the Holm p beside the raw one; Δ: ours − the paper's mean, the mean paired "
                    "difference to `uniform`, or ours − the other code's mean; ≈: equivalent within "
                    f"±{EQUIVALENCE_MARGIN:g} by TOST, for the other code's rows, beside Brown–Forsythe's test of "
                    "whether the two codes' seeds spread alike; neither is a mark nor in Holm's family):",
                )
            )
            blocks.append(
                Block(
                    "table",
                    header=["dataset", "setup", "column", "against", "result"],
                    rows=tests,
                )
            )
        blocks += gap_blocks(preset.name, gaps, read_tags(narrative_of(earlier_report)))
        if gaps_found is not None:
            gaps_found[preset.name] = gaps
    blocks += triad_blocks(preset, runs, source or MlflowSource())
    blocks += selection_gain_blocks(preset, runs)
    blocks += plot_blocks(preset, runs)
    if preset.sample_grids:
        blocks += sample_blocks(preset, runs, earlier_report, source or MlflowSource())
    blocks += measured_cost_blocks(runs)
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
    return blocks + failed_blocks(preset, runs, source or MlflowSource())


def failed_blocks(preset: Preset, runs: pd.DataFrame, source: RunSource) -> list[Block]:
    """The preset's cells whose last run failed as a result (a library that crashed, a fit past its
    --timeout; not an interrupted one), each with its one-line reason and code."""
    from bench.harness.record import failure_reason

    wanted = {cell.key for grid in preset.grids for cell in grid_cells(grid, preset.experiment)}
    finished = finished_cell_keys(preset, runs)
    failed: dict[str, Any] = {}
    for record in getattr(source, "failed_runs", lambda experiment: [])(preset.experiment):
        if record.key in wanted and record.key not in finished:
            if record.key not in failed or failed[record.key].start_time < record.start_time:
                failed[record.key] = record
    if not failed:
        return []
    return [
        Block(
            "p",
            f"Failed here ({len(failed)} cells): each a recorded run with its reason, never a lost one "
            "(its command is among those above; a rerun records it again):",
        ),
        Block(
            "list",
            items=[
                f"{r.label}: {failure_reason(r.tags)} (code {r.code.commit[:7]})"
                for r in sorted(failed.values(), key=lambda r: r.label)
            ],
        ),
    ]


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
            f"(code {provenance.git_commit()}); never edited by hand. "
            "Every number of ours is a mean over seeds of one setting: runs whose settings differ "
            "(profile, --set, δ, calibrator, protocol, --eval-set) are separate rows, labelled by the "
            "difference. `uniform` and `independent` are the trivial baselines (methods/baselines.py); "
            "`uniform` reads no row (ε spent 0) and is drawn as a band.",
        ),
    ]
    frames: dict[str, pd.DataFrame] = {}
    timings = logged_seconds(source=source)
    summary, sections, gaps = [], [], {}
    for preset in presets:
        frame = preset_frame(preset, frames, source)
        status = preset_status(preset, frame)
        summary.append(summary_row(preset, status, timings))
        sections += preset_blocks(preset, status, timings, earlier_report, frame, source, gaps)
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
    blocks += coverage_blocks(
        presets, {preset.name: preset_frame(preset, frames, source) for preset in presets}, timings
    )
    blocks += summary_blocks(gaps, read_tags(narrative_of(earlier_report)), whole_record=not experiments)
    return blocks + sections


def coverage_blocks(
    presets: list[Preset], frames: dict[str, pd.DataFrame], timings: dict[CostKey, float] | None = None
) -> list[Block]:
    """The coverage matrix (bench/report/coverage.py): totals for the tabular and 2-D setups and
    for the image setups, then one matrix per reproduced table or figure; ``frames``: each
    preset's runs (:func:`preset_frame`) by its name."""
    found = []
    for preset in counted_presets(presets):
        frame = frames[preset.name]
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
