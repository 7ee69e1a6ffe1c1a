"""The report's calibration rows (our real-data numbers beside the paper's, with why a miss is) and the gain of DP-HP's test-set selection."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
from bench.core.data import RunProtocol
from bench.report.blocks import Block

from bench.report.preset import PAPER_DATASET, Preset
from bench.report.published import Value
from bench.report.stats import EQUIVALENCE_MARGIN, Equivalence, TTest, equal_seeds, tost, versus_published
from bench.report.tables import CELL_LEGEND, MIN_SEEDS_FOR_EVIDENCE, summary_text
from bench.report.versus import seeds_value, versus_seeds_rows
from bench.report.frame import base_dataset


@dataclass(frozen=True)
class Calibration:
    """Real data under one dataset label, ours against the paper's, for one column. The verdict is
    a test (:mod:`bench.report.stats`): where the paper publishes its spread, Welch's t for a
    difference and TOST for agreement; against a point value, TOST with the value as a constant —
    "agrees" when equivalence within ±``EQUIVALENCE_MARGIN`` is shown, a miss when the 90%
    interval of the difference lies wholly beyond the margin, else inconclusive. Seeds that are
    all equal are one measurement: tested as one draw against the paper's runs, and against a
    point value compared plainly (beyond the margin: a miss, said to be no test)."""

    dataset: str
    column: str
    ours: pd.Series  # one value per seed
    paper: Value | None  # as published: a value, (mean, sd, runs), or text read off a figure
    comparable: bool  # the label's protocol is the one the paper's value was computed under

    @property
    def paper_value(self) -> float | None:
        """The published number (a mean where an sd was printed); None for none or a figure's reading."""
        if isinstance(self.paper, tuple):
            return self.paper[0]
        return float(self.paper) if isinstance(self.paper, (int, float)) else None

    @property
    def tested(self) -> bool:
        """Enough seeds for a verdict: fewer are shown, never used as evidence (issue 32)."""
        return len(self.ours) >= MIN_SEEDS_FOR_EVIDENCE

    @property
    def equivalence(self) -> Equivalence | None:
        if self.paper_value is None or not self.comparable or not self.tested:
            return None
        if isinstance(self.paper, tuple):  # a two-sample TOST from the paper's mean, sd and runs
            mean, sd, runs = self.paper
            theirs = _pseudo_sample(mean, sd, int(runs))
        else:
            theirs = self.paper_value
        return tost(self.ours, theirs, "paper", EQUIVALENCE_MARGIN, MIN_SEEDS_FOR_EVIDENCE)

    @property
    def difference(self) -> TTest | None:
        """Welch's t against the paper's (mean, sd, runs); None for a point value."""
        if not self.comparable or not self.tested:
            return None
        return versus_published(self.ours, self.paper, MIN_SEEDS_FOR_EVIDENCE)

    @property
    def miss(self) -> bool:
        """A difference shown: Welch's t where the paper gives its spread, else the 90% interval of
        the difference wholly beyond ±``EQUIVALENCE_MARGIN``."""
        test, same = self.difference, self.equivalence
        if test is not None:
            return test.significant and abs(test.difference) > EQUIVALENCE_MARGIN
        if same is None and self.tested and self.paper_value is not None and equal_seeds(self.ours):
            return self.plainly_beyond  # one measurement against a point value: no test to make
        return same is not None and (same.low > same.margin or same.high < -same.margin)

    @property
    def plainly_beyond(self) -> bool:
        """The plain comparison of a point value: |mean − value| beyond ``EQUIVALENCE_MARGIN``."""
        return abs(self.ours.mean() - self.paper_value) > EQUIVALENCE_MARGIN

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
            return "the paper's value is read off a figure: not tested"
        gap = self.ours.mean() - self.paper_value
        if not self.tested:
            return (
                f"{len(self.ours)} seed(s), fewer than {MIN_SEEDS_FOR_EVIDENCE}: not tested yet (Δ {gap:+.3f} so far)"
            )
        same = self.equivalence
        if equal_seeds(self.ours):
            one = f"one measurement: its {len(self.ours)} seeds are equal, nothing in it depends on the seed"
            if same is None and self.difference is None:
                if self.plainly_beyond:
                    return (
                        f"**MISS** by a plain comparison, not a test: Δ {gap:+.3f} beyond ±{EQUIVALENCE_MARGIN:g} "
                        f"({one}; against a point value), a pipeline difference to explain before any method comparison"
                    )
                return f"{one}; against a point value: Δ {gap:+.3f} within ±{EQUIVALENCE_MARGIN:g}, not tested"
            point = f" ({one}; tested as one draw against the paper's runs)"
        else:
            point = "" if isinstance(self.paper, tuple) else " (the paper's value taken as a point value)"
        interval = f"90% CI [{same.low:+.3f}, {same.high:+.3f}]" if same else ""
        if self.miss:
            test = self.difference
            shown = f"{'t' if equal_seeds(self.ours) else 'Welch'} {test.text()}" if test else interval
            return (
                f"**MISS**: Δ {gap:+.3f} beyond ±{EQUIVALENCE_MARGIN:g} ({shown}){point}, a pipeline difference "
                "to explain before any method comparison"
            )
        if same is not None and same.significant:
            return f"agrees: Δ {gap:+.3f} within ±{EQUIVALENCE_MARGIN:g} (TOST p = {same.p:.2g}, {interval}){point}"
        return f"inconclusive: Δ {gap:+.3f}, {interval} reaches beyond ±{EQUIVALENCE_MARGIN:g}{point}"


def _pseudo_sample(mean: float, sd: float, runs: int) -> list[float]:
    """``runs`` values with exactly this mean and sample sd (all TOST needs of the paper's side):
    ± a around the mean, and the mean itself once when ``runs`` is odd."""
    if runs < 2:
        return [mean]
    pairs = runs // 2
    a = sd * ((runs - 1) / (2 * pairs)) ** 0.5  # Σ(v − mean)² = 2·pairs·a² = (runs − 1)·sd²
    return [mean + a for _ in range(pairs)] + [mean - a for _ in range(pairs)] + [mean] * (runs % 2)


def _paper_protocol_datasets(preset: Preset) -> set[str]:
    return {d for grid in preset.grids if grid.protocol == RunProtocol.PAPER for d in grid.datasets}


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
    value, per dataset and protocol; a miss (a test, :class:`Calibration`) is flagged with the preset's
    explanation beside it (or a demand for one). None where the paper's values are bests of n runs:
    a test of our mean against a best would flag every real-data row (the table shows best against
    best instead)."""
    found = [] if preset.best_of_seeds else calibrations(preset, runs)
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
            "Every method row below inherits this pipeline, so a miss is a difference of data or evaluation, not "
            f"of any generator. Verdicts are tests at the 5% level: agreement by TOST within ±{EQUIVALENCE_MARGIN:g}; "
            "a miss by Welch's t where the paper gives its spread, else by the 90% interval of the difference "
            f"lying wholly beyond ±{EQUIVALENCE_MARGIN:g} (the paper's value then taken as a point value).",
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
