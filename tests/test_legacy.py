"""Runs stored before key version 2 are read once (``bench.harness.legacy``): the rebuilt cell is
the one the run was keyed by, and it gets the version-2 key a run of the same setting gets today."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from bench.harness.cell import Cell, CellCodecError
from bench.harness.legacy import NOT_LOGGED, cell_from_v1, v1_key
from tests.conftest import REPO

RUNS = json.loads(
    (Path(__file__).parent / "fixtures" / "v1_runs.json").read_text()
)  # copied from results/runs at 4a569b1


def rebuilt(name: str) -> tuple[dict, Cell]:
    run = RUNS[name]
    return run, cell_from_v1(run["config"], run["params"], run["tags"], {"noise": run["ledger_noise"]})


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_version_1_run_is_rebuilt_as_the_cell_it_was_keyed_by(name):
    run, cell = rebuilt(name)
    assert v1_key(run["config"], run["params"], run["tags"], {"noise": run["ledger_noise"]}) == run["key_v1"]
    assert (cell.method, cell.epsilon, cell.seed) == (
        run["params"]["method"],
        float(run["params"]["epsilon"]),
        int(run["params"]["seed"]),
    )
    # the committed records of that cell (in each experiment holding it) were re-keyed to this cell's version-2 key
    rekeyed = [
        json.loads(Path(p).read_text())
        for p in glob.glob(str(REPO / "results/runs/*/*.json"))
        if run["key_v1"] in Path(p).read_text()
    ]
    assert {r["key"] for r in rekeyed if r["tags"].get("cell_key.v1") == run["key_v1"]} == {cell.key}


def test_a_parameter_added_after_the_run_is_filled_in_at_the_value_the_run_behaved_as():
    """dp-merf.length_scale_rule came after this run: it ran as 'public-range', so its cell says so
    and a run of today's defaults at 'public-range' has its key; another value is another cell."""
    from dataclasses import replace

    run, cell = rebuilt("params_only")
    assert "hp.length_scale_rule" not in run["params"]
    assert cell.params["length_scale_rule"] == "public-range" and cell.param_sources["length_scale_rule"] == NOT_LOGGED
    assert replace(cell, params={**cell.params, "length_scale_rule": "dp-median"}).key != cell.key


def test_the_codec_refuses_a_version_1_cell_and_says_where_it_is_read():
    _, cell = rebuilt("config_unkeyed")
    assert Cell.from_json(json.loads(json.dumps(cell.to_json()))) == cell
    with pytest.raises(CellCodecError, match="bench.harness.legacy"):
        Cell.from_json(RUNS["config_unkeyed"]["config"]["cell"])
