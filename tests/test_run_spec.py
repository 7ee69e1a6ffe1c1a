"""The typed run spec: one set of types and one codec from every edge to the stored record."""

import glob
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from bench.core.data import RunProtocol
from bench.harness.grid import GridError, GridSpec, expand, seeds_argument
from bench.harness.cell import KEY_VERSION, Cell
from bench.harness.record import Record
from bench.privacy.budget import Calibrator, Delta, epsilon_argument, parse_epsilons
from tests.conftest import REPO


def spec_of_argv(argv: list[str]) -> GridSpec:
    """The spec the command line builds from ``run``'s arguments ``argv``."""
    from bench.cli import build_parser
    from bench.harness.runargs import grid_spec_from_args

    return grid_spec_from_args(build_parser().parse_args(["run", *argv]))


def test_plain_values_are_typed_once_at_the_edge():
    spec = GridSpec(
        ["dp-merf"],
        ["gmm2d"],
        [1, "inf"],
        [0],
        delta="auto",
        protocol="paper",
        calibrator="paper",
        data_dir="relative/folder",
    )
    assert spec.epsilons == [1.0, math.inf] and spec.delta == Delta.auto()
    assert spec.protocol is RunProtocol.PAPER and spec.calibrator is Calibrator.PAPER
    assert spec.data_dir == Path("relative/folder").resolve()
    with pytest.raises(GridError, match="unknown protocol"):
        GridSpec(["real"], ["gmm2d"], [1.0], [0], protocol="papers")


def test_a_spec_round_trips_through_its_arguments(monkeypatch, tmp_path):
    monkeypatch.delenv("DPBENCH_DATA_DIR", raising=False)
    spec = GridSpec(
        ["dp-merf", "real"],
        ["gmm2d"],
        [0.1, 13.8, math.inf],
        [0, 1, 2, 7],
        delta="auto",
        protocol="paper",
        overrides={"dp-merf": {"epochs": "2"}},
        evaluator_overrides={"downstream": {"scaling": "standard"}},
        secure_noise=True,
        threads=2,
        data_dir=tmp_path,
        device="cpu",
    )
    assert spec_of_argv(spec.to_argv()) == spec
    assert seeds_argument([0, 1, 2, 7]) == "0-2,7"
    assert parse_epsilons(epsilon_argument([0.1, 1.0, 1 / 3, math.inf])) == [0.1, 1.0, 1 / 3, math.inf]


def test_a_non_private_cell_has_no_delta_and_its_stored_form_reads_back():
    cells, _ = expand(GridSpec(["real", "uniform"], ["gmm2d"], [1.0], [0], profile="smoke"))
    for cell in cells:
        assert cell.delta == Delta.not_applicable() and math.isinf(cell.epsilon)
        stored = json.loads(json.dumps(cell.to_json(), allow_nan=False))  # plain JSON: ∞ as "inf"
        assert stored["delta"] == "none" and stored["protocol"] == "sound" and stored["epsilon"] == "inf"
        assert stored["key_version"] == KEY_VERSION
        assert Cell.from_json(stored) == cell and Cell.from_json(stored).key == cell.key


def test_every_setting_is_in_the_key_and_the_evaluators_only_in_the_cell_key():
    (cell,), _ = expand(GridSpec(["dp-merf"], ["gmm2d"], [1.0], [0], profile="smoke", evaluators=["nll"]))
    changed = [
        replace(cell, epsilon=2.0),
        replace(cell, delta=Delta.parse("1e-06")),
        replace(cell, seed=1),
        replace(cell, params={**cell.params, "epochs": 3}),
        replace(cell, calibrator=Calibrator.PAPER),
        replace(cell, protocol=RunProtocol.PAPER),
        replace(cell, secure_noise=True),
        replace(cell, threads=2),
    ]
    assert len({cell.key, *(c.key for c in changed)}) == len(changed) + 1
    assert len({cell.setup_key, *(c.setup_key for c in changed)}) == len(changed) + 1
    scored = [replace(cell, evaluators=("marginals",)), replace(cell, evaluator_settings={"nll": {"n_samples": 7}})]
    assert all(c.key != cell.key and c.setup_key == cell.setup_key for c in scored)
    # where it runs is not what it computes
    moved = replace(cell, device="cuda", data_dir="/elsewhere", lendable=True, param_sources={})
    assert (moved.key, moved.setup_key) == (cell.key, cell.setup_key)


def test_every_committed_record_holds_the_typed_cell_of_its_key():
    """One form from the worker to the record: each committed record's cell gives its key and its
    file name, and its params are that cell's text for the tracking UI."""
    checked = 0
    for path in glob.glob(str(REPO / "results" / "runs" / "*" / "*.json")):
        record = Record.from_json(Path(path).read_text(), path)
        if record.kind == "audit":  # an audit releases nothing and has no cell; its own test reads it
            assert record.cell is None and path.endswith(f"__{record.key}.json"), path
            continue
        assert record.cell.key == record.key and path.endswith(f"__{record.key}.json"), path
        logged = {k: v for k, v in record.params.items() if k not in ("n_train", "n_test", "delta_resolved")}
        assert {k: v for k, v in record.cell.mlflow_params().items() if k in logged} == logged, path
        checked += 1
    assert checked > 1500
