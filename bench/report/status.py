"""What the store holds of a preset: its runs (its experiment's, and those of the experiments it
shares cells with), its finished cells and the cells still to run, each with its command and cost."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from bench.report.costs import CostKey, approximately, cost_key, duration, seconds_for
from bench.report.coverage import finished_cell_keys
from bench.report.frame import TableError, base_dataset, load_runs
from bench.report.preset import NOT_IN_MIRROR, Preset, grid_cells
from bench.report.source import RunSource


def _runs_or_empty(experiment: str, source: RunSource) -> pd.DataFrame:
    try:
        return load_runs(experiment, source)
    except TableError:  # no such experiment, or no finished run in it yet
        return pd.DataFrame(columns=["dataset", "method", "method_name", "epsilon", "seed", "cell_key", "setup_key"])


def preset_frame(preset: Preset, frames: dict[str, pd.DataFrame], source: RunSource) -> pd.DataFrame:
    """The runs a preset reads: its experiment's, and from each experiment it shares cells with
    (``Preset.shares``) the runs of its own cells that its experiment lacks. ``frames`` caches one
    frame per experiment."""
    frame = frames.setdefault(preset.experiment, _runs_or_empty(preset.experiment, source))
    if not preset.shares:
        return frame
    lacking = {cell.key for grid in preset.grids for cell in grid_cells(grid, preset.experiment)} - set(
        frame["cell_key"]
    )
    parts = [frame] if len(frame) else []
    for experiment in preset.shares:
        other = frames.setdefault(experiment, _runs_or_empty(experiment, source))
        taken = other[other["cell_key"].isin(lacking)] if len(other) else other.iloc[0:0]
        lacking -= set(taken["cell_key"])
        parts += [taken] if len(taken) else []
    # one block per dtype again (a concatenation of frames of other columns is fragmented)
    return pd.concat(parts, ignore_index=True).copy() if parts else frame


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
    key: CostKey | None = None  # what prices these cells (bench.report.costs.cost_key)


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
