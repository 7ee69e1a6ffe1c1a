"""The report's calibration rows (our real-data numbers beside the paper's, with why a miss is) and the gain of DP-HP's test-set selection."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
from bench.report.blocks import Block

from bench.report.preset import PAPER_DATASET, Preset
from bench.report.tables import CELL_LEGEND, MIN_SEEDS_FOR_EVIDENCE, summary_text
from bench.report.versus import seeds_value, versus_seeds_rows
from bench.report.frame import base_dataset


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


def selection_gain_blocks(preset: Preset, runs: pd.DataFrame) -> list[Block]:
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
