"""A preset's type and vocabulary: a named set of typed grids (``GridSpec`` literals) for one of
the seeds' tables or figures, the columns that compare ours with the published values
(``bench/report/published/``), and the shared constants of the catalogues
(``presets_papers``, ``presets_beyond``; ``presets`` assembles them)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.core.errors import UsageError
from bench.harness.grid import GridSpec
from bench.report.published import Setups

INF = math.inf


FIVE_SEEDS = [0, 1, 2, 3, 4]  # the seeds' tables average 5 runs


def overrides_of(items: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """``("METHOD.PARAM=VALUE", …)`` as a spec's overrides (the notation ``paper_settings`` names
    a published setup's settings in)."""
    from bench.core.params import parse_overrides

    return parse_overrides(list(items), [item.split(".", 1)[0] for item in items])


MEASUREMENTS = Path(__file__).resolve().parents[2] / "docs" / "measurements"


@dataclass(frozen=True)
class MeasuredSeeds:
    """Per-seed numbers of another code on the same rows, read from a committed measurement file
    (``docs/measurements/<file>``, written by the benchmark script named in it), never typed in."""

    label: str  # the table's "numbers" column, e.g. "authors' code"
    file: str
    columns: tuple[tuple[str, str], ...]  # (table header, the file's per-seed key)

    def values(self) -> dict[str, list[float]]:
        seeds = json.loads((MEASUREMENTS / self.file).read_text())["seeds"]
        order = sorted(seeds, key=int)
        return {header: [float(seeds[s][key]) for s in order] for header, key in self.columns}


def measured_references(preset: "Preset") -> dict[str, dict[tuple[str, float], tuple[str, dict[str, list[float]]]]]:
    """A preset's reference rows with their per-seed values loaded."""
    return {
        dataset: {setup: (m.label, m.values()) for setup, m in setups.items()}
        for dataset, setups in preset.references.items()
    }


@dataclass(frozen=True)
class Preset:
    name: str
    reproduces: str  # the paper's table or figure
    description: str
    experiment: str
    grids: tuple[GridSpec, ...]
    columns: tuple[tuple[str, str], ...]  # (header, our metric) of the comparison table
    published: dict[str, dict[tuple[str, float], dict[str, Any]]] = field(default_factory=dict)
    source: str = ""  # where the published values are transcribed from
    digits: str = ".3f"  # how the published values are printed (the seeds' tables print 3 decimals)
    plot_metrics: tuple[str, ...] = ()  # metrics of the privacy–utility plots (those a dataset has)
    sample_grids: bool = False  # its cells log a samples.png (2-D scatter, image grid) the report shows
    # {dataset: {(method, ε): ("method.param=value", …)}}: the settings a published setup used beyond
    # the method's defaults; ours sits beside the paper's row only where it used them
    paper_settings: dict[str, dict[tuple[str, float], tuple[str, ...]]] = field(default_factory=dict)
    # show the privacy triad (ledger ε, audit, attack on the output, fidelity, utility) where its runs
    # hold the privacy evaluator's metrics (added by `python -m bench evaluate`)
    triad: bool = False
    # (header, metric chosen on the test set, the same fits' metric without that choice): the report
    # tabulates their per-run difference, what the paper protocol's selection adds
    selection_gain: tuple[tuple[str, str, str], ...] = ()
    # {dataset: why our real-data calibration row misses the paper's}: shown beside a flagged miss
    calibration_notes: dict[str, str] = field(default_factory=dict)
    # {dataset: {(method, ε): MeasuredSeeds}}: the setup measured by other code on the same rows (the
    # authors' own code), shown after our rows of it; ``references_note`` says where they come from
    references: dict[str, dict[tuple[str, float], "MeasuredSeeds"]] = field(default_factory=dict)
    references_note: str = ""
    # the published values are each column's best of n runs (DP-MERF supp. Table 7): ours shows each
    # column's best over its seeds, untested (an order statistic is no estimate of a mean)
    best_of_seeds: bool = False
    # other experiments holding some of this preset's exact cells (the same cell key: method, data,
    # ε, seed and every setting): their finished runs count as this preset's, in the report and for
    # `run --preset`, so that a cell two presets share is fitted once
    shares: tuple[str, ...] = ()


# The authors' own code on the rows our dataset variant rebuilds, seeds 0 … n−1 on this machine
# (benchmarks/authors_seeds.py; its output is committed under docs/measurements)
BASELINES = ("uniform", "independent")
TABULAR_DATASETS = ("adult", "census", "cervical", "credit", "epileptic", "isolet", "covtype", "intrusion")
# what the offline data mirror has of credit, isolet and covtype (the full files are not in it)
MIRROR_SAMPLES = ("credit-sample", "isolet-subset", "covtype-subset")
# datasets whose files the offline data mirror (shared/data/README.md) lacks, with the files they
# need: their cells cannot run on this project's machines (tests/test_presets.py checks each fails)
NOT_IN_MIRROR = {
    "credit": "creditcard.csv",
    "epileptic": "data.csv",
    "isolet": "isolet1+2+3+4.data and isolet5.data",
    "covtype": "covtype.data.gz",
}


# dataset variants that rebuild one of the papers' input files: their published row is the paper's
PAPER_DATASET = {
    "adult-sdgym": "adult",
    "adult-dphp": "adult",
    "adult-dphp-sorted": "adult",
    "adult-dphp-logs": "adult",
    "adult-dphp-zscored": "adult",
    "cervical-dpmerf": "cervical",
    "census-sdgym": "census",
    "intrusion-sdgym": "intrusion",
}


# Why a real-data calibration row misses the paper's value (the report prints it beside the miss);
# each names the runs that show it (preset `faithfulness`, whose own calibration rows hold the numbers)
def rows_of(setups: dict[str, Setups], dataset: str, methods: tuple[str, ...]) -> Setups:
    """The setups of ``dataset`` in a published table that are ``methods``'."""
    return {setup: cols for setup, cols in setups[dataset].items() if setup[0] in methods}


def combined(*tables: dict[str, Setups]) -> dict[str, Setups]:
    out: dict[str, Setups] = {}
    for table in tables:
        for dataset, setups in table.items():
            out.setdefault(dataset, {}).update(setups)
    return out


class PresetError(UsageError, ValueError):
    pass


def grid_cells(grid: GridSpec, experiment: str, seeds: list[int] | None = None) -> list:
    """The cells of one grid (narrowed to ``seeds``), expanded by the same code as ``bench run``
    itself from the same typed spec, so the two cannot disagree."""
    from bench.harness.grid import expand

    cells, _ = expand(grid.narrowed(seeds=seeds))
    return cells


# Table 4's ε = 0.1 row for adult (DP-HP README: order 5, 7 product dimensions); every other Table 1
# setup uses the dataset's defaults (methods/dp_hp.py, Table 4's ε = 0.3 row)
TABLE1_SETTINGS = {"adult-discrete": {("dp-hp", 0.1): ("dp-hp.prod_order=5", "dp-hp.prod_dims=7")}}
