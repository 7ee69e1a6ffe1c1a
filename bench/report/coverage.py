"""The coverage matrix at the top of the report: every setup (dataset × method × ε) of every
seeds' table and figure a preset reproduces, marked by what the record holds of it.

A setup is one published value's row and column: the presets' ``published`` tables are the
transcriptions of the papers. Its status, in order:

* ``run (n)``: n seeds of the preset's own cells for it finished (the paper protocol where the
  preset runs both, the paper's settings where ``paper_settings`` names them);
* ``not implemented``: no adapter for the method (GS-WGAN);
* ``no data``: the dataset's files are not in the offline mirror (``NOT_IN_MIRROR``);
* ``needs a GPU``: an image setup at the paper profile with no run; ``not run``: everything
  else, with its command in the preset's section.

A setup short of 5 seeds also shows what one more seed costs on 2 CPU cores, measured (the
median logged time of cells of its exact setting, else a documented measurement:
``costs.seconds_for``), or "cost not measured" — never a guess.

"Beyond the seeds" presets (ablations) carry copies of published values and are not counted, nor
is a value a table prints from another setup for comparison (a registered method the preset runs
no cell of, e.g. Table 7's private columns, which are Table 2's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.core.data import RunProtocol
from bench.api.registry import DATASETS, METHODS, RegistryError
from bench.harness.tracking import has_evaluator_metrics
from bench.privacy.budget import epsilon_text
from bench.report.costs import CostKey, approximately, cost_key, duration, seconds_for
from bench.report.preset import NOT_IN_MIRROR, Preset, grid_cells
from bench.report.published import registered_method
from bench.report.tables import MIN_SEEDS_FOR_EVIDENCE

RUN, NOT_IMPLEMENTED, NO_DATA, NEEDS_GPU, NOT_RUN = "run", "not implemented", "no data", "needs a GPU", "not run"
EVIDENCE_SEEDS = 5  # the papers average 5 runs; a setup counts as reproduced at this many seeds
# "needs a GPU": a setup one seed of which costs more than this on 2 CPU cores (measured); a
# cheaper or unmeasured setup is "not run", with its cost
GPU_SECONDS = 2 * 3600


@dataclass(frozen=True)
class Setup:
    reproduces: str
    dataset: str
    method: str
    epsilon: float

    @property
    def column(self) -> str:
        return f"{self.method} ε={epsilon_text(self.epsilon)}"


@dataclass(frozen=True)
class Coverage:
    setup: Setup
    status: str
    seeds: int = 0
    profile: str = "paper"
    seed_seconds: float | None = None  # measured CPU time of one more seed (None: not measured)

    @property
    def image(self) -> bool:
        try:
            return "image" in DATASETS.card(self.setup.dataset).kinds
        except RegistryError:
            return False

    def text(self) -> str:
        profile = f"{self.profile} profile" if self.profile != "paper" else ""
        if self.status in (NO_DATA, NOT_IMPLEMENTED):
            return self.status
        if self.status == RUN and self.seeds >= EVIDENCE_SEEDS:
            return f"{self.seeds}" + (f" ({profile})" if profile else "")
        cost = (
            "not timed"
            if self.seed_seconds is None
            else f"{approximately(self.seed_seconds)} {duration(self.seed_seconds)} a seed"
        )
        head = f"{self.seeds}" if self.status == RUN else self.status
        return f"{head} ({'; '.join(filter(None, (profile, cost)))})"


def counted_presets(presets: list[Preset]) -> list[Preset]:
    return [p for p in presets if p.published and not p.reproduces.startswith("beyond the seeds")]


def _registered(registry, name: str) -> bool:
    try:
        registry.card(name)
    except RegistryError:
        return False
    return True


def finished_cell_keys(preset: Preset, frame: Any) -> set[str]:
    """The preset's cells that have their result in ``frame`` (``runs_frame``): a run of the cell
    itself, or a run of its setup (one fit, ``Cell.setup_key``) scored by each of its evaluators."""
    if not len(frame):
        return set()
    finished = set(frame["cell_key"])
    by_setup = {key: row for key, row in zip(frame["setup_key"], frame.to_dict("records")) if key}
    for grid in preset.grids:
        for cell in grid_cells(grid, preset.experiment):
            row = by_setup.get(cell.setup_key)
            if cell.key in finished or row is None:
                continue
            logged = [name for name, value in row.items() if isinstance(value, float) and value == value]
            if all(has_evaluator_metrics(logged, name) for name in cell.evaluators):
                finished.add(cell.key)
    return finished


def setup_coverage(
    preset: Preset, finished_keys: set[str], timings: dict[CostKey, float] | None = None
) -> list[Coverage]:
    """Each published setup's coverage; ``timings``: logged seconds per cost key (for the cost of
    one more seed of a setup short of 5)."""
    cells = [(grid, cell) for grid in preset.grids for cell in grid_cells(grid, preset.experiment)]
    result = []
    for dataset, setups in preset.published.items():
        for method, epsilon in setups:
            setup = Setup(preset.reproduces, dataset, method, float(epsilon))
            mine = [
                (grid, cell)
                for grid, cell in cells
                if cell.method == registered_method(method)
                and cell.dataset == dataset
                and cell.epsilon == setup.epsilon
            ]
            paper = [(grid, cell) for grid, cell in mine if grid.protocol == RunProtocol.PAPER]
            mine = paper or mine
            required = preset.paper_settings.get(dataset, {}).get((method, setup.epsilon), ())
            if required:
                mine = [(grid, cell) for grid, cell in mine if _uses(grid, required)]
            done = sum(cell.key in finished_keys for _, cell in mine)
            profile = mine[0][0].profile if mine else "paper"
            if not mine and _registered(METHODS, registered_method(method)):
                continue  # printed beside the table for comparison: counted where its own table is
            status = None
            if done:
                status = RUN
            elif not _registered(METHODS, registered_method(method)):
                status = NOT_IMPLEMENTED
            elif dataset in NOT_IN_MIRROR:
                status = NO_DATA
            seconds = seconds_for(cost_key(mine[0][1]), timings or {}) if mine else None
            if status is None:
                status = NEEDS_GPU if seconds is not None and seconds > GPU_SECONDS else NOT_RUN
            result.append(Coverage(setup, status, done, profile, seconds))
    return result


def _uses(grid: Any, required: tuple[str, ...]) -> bool:
    """The grid sets every one of the ``method.param=value`` settings (a number as a number)."""

    def same(a: str, b: str) -> bool:
        (key_a, value_a), (key_b, value_b) = a.split("=", 1), b.split("=", 1)
        try:
            return key_a == key_b and (value_a == value_b or float(value_a) == float(value_b))
        except ValueError:
            return False

    return all(any(same(item, given) for given in grid.set_items()) for item in required)


@dataclass(frozen=True)
class Totals:
    setups: int
    at_evidence: int  # run at ≥ EVIDENCE_SEEDS seeds
    run: int  # at ≥ 1 seed
    in_mirror: int  # setups whose data is in the mirror and whose method exists
    at_tested: int  # run at ≥ MIN_SEEDS_FOR_EVIDENCE seeds: the fewest a test against the paper takes

    def text(self, what: str) -> str:
        share = lambda k: f"{k / self.setups:.0%}" if self.setups else "—"  # noqa: E731
        mirror = lambda k: f"{k / self.in_mirror:.0%}" if self.in_mirror else "—"  # noqa: E731
        return (
            f"{what}: {self.setups} setups; {self.run} run ({share(self.run)}), {self.at_tested} at ≥ "
            f"{MIN_SEEDS_FOR_EVIDENCE} seeds ({share(self.at_tested)}; {mirror(self.at_tested)} of the "
            f"{self.in_mirror} whose data is in the mirror and whose method exists), {self.at_evidence} at ≥ "
            f"{EVIDENCE_SEEDS} ({share(self.at_evidence)}; {mirror(self.at_evidence)})"
        )


def totals(coverage: list[Coverage]) -> Totals:
    feasible = [c for c in coverage if c.status not in (NO_DATA, NOT_IMPLEMENTED)]
    return Totals(
        len(coverage),
        sum(c.status == RUN and c.seeds >= EVIDENCE_SEEDS for c in coverage),
        sum(c.status == RUN for c in coverage),
        len(feasible),
        sum(c.status == RUN and c.seeds >= MIN_SEEDS_FOR_EVIDENCE for c in coverage),
    )


def matrix_rows(coverage: list[Coverage]) -> tuple[list[str], list[list[str]]]:
    """One row per (table, dataset), one column per method × ε the table has."""
    columns = list(dict.fromkeys(c.setup.column for c in coverage))
    by_row: dict[tuple[str, str], dict[str, str]] = {}
    for c in coverage:
        by_row.setdefault((c.setup.reproduces, c.setup.dataset), {})[c.setup.column] = c.text()
    rows = [
        [reproduces, dataset, *[cells.get(column, "") for column in columns]]
        for (reproduces, dataset), cells in by_row.items()
    ]
    return ["table", "dataset", *columns], rows
