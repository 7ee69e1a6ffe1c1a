"""The typed run spec: one set of types and one codec from every edge to the stored record."""

import glob
import json
import math
from pathlib import Path

import pytest

from bench.core.contracts import RunProtocol
from bench.harness.grid import Cell, GridError, GridSpec, expand, seeds_argument
from bench.harness.runargs import grid_spec_from_argv
from bench.privacy.budget import Calibrator, Delta, epsilon_argument, parse_epsilons
from tests.conftest import REPO


def test_plain_values_are_typed_once_at_the_edge():
    spec = GridSpec(["dp-merf"], ["gmm2d"], [1, "inf"], [0], delta="auto", protocol="paper", calibrator="paper",
                    data_dir="relative/folder")
    assert spec.epsilons == [1.0, math.inf] and spec.delta == Delta.auto()
    assert spec.protocol is RunProtocol.PAPER and spec.calibrator is Calibrator.PAPER
    assert spec.data_dir == Path("relative/folder").resolve()
    with pytest.raises(GridError, match="unknown protocol"):
        GridSpec(["real"], ["gmm2d"], [1.0], [0], protocol="papers")


def test_a_spec_round_trips_through_its_arguments(monkeypatch, tmp_path):
    monkeypatch.delenv("DPBENCH_DATA_DIR", raising=False)
    spec = GridSpec(["dp-merf", "real"], ["gmm2d"], [0.1, 13.8, math.inf], [0, 1, 2, 7], delta="auto",
                    protocol="paper", overrides={"dp-merf": {"epochs": "2"}},
                    evaluator_overrides={"downstream": {"scaling": "standard"}}, secure_noise=True, threads=2,
                    data_dir=tmp_path, device="cpu")
    assert grid_spec_from_argv(spec.to_argv()) == spec
    assert seeds_argument([0, 1, 2, 7]) == "0-2,7"
    assert parse_epsilons(epsilon_argument([0.1, 1.0, 1 / 3, math.inf])) == [0.1, 1.0, 1 / 3, math.inf]


def test_a_non_private_cell_has_no_delta_and_its_config_reads_back():
    cells, _ = expand(GridSpec(["real", "uniform"], ["gmm2d"], [1.0], [0], profile="smoke"))
    for cell in cells:
        assert cell.delta == Delta.not_applicable() and math.isinf(cell.epsilon)
        stored = json.loads(json.dumps(cell.to_dict()))
        assert stored["delta"] == "none" and stored["protocol"] == "sound"
        assert Cell.from_dict(stored) == cell and Cell.from_dict(stored).key == cell.key


def test_every_committed_record_s_cell_key_is_reproduced_from_its_stored_config():
    """The typed spec did not change a key: each committed run's stored cell gives its key again."""
    checked = 0
    for path in glob.glob(str(REPO / "results" / "runs" / "*" / "*.json")):
        record = json.loads(Path(path).read_text())
        stored = (record.get("config") or {}).get("cell")
        if stored:
            assert Cell.from_dict(stored).key == record["key"], path
            checked += 1
    assert checked > 400
