"""The benchmark scripts fit methods through the same interface as a grid cell: when that interface
changes (``fit(PrivateData, context)`` replaced ``fit(rows, context)``) they must change with it,
or the numbers in docs/performance.md can no longer be reproduced."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(autouse=True)
def one_torch_thread():
    # a second OpenMP thread on a core another program keeps busy makes these fits ~30× slower
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_method_rows_times_a_fit_through_the_private_data_handle(data_dir, monkeypatch):
    monkeypatch.setenv("DPBENCH_DATA_DIR", str(data_dir))
    seconds = _script("method_rows").fit_seconds("dp-merf", "gmm2d", "sound", profile="smoke")
    assert 0 < seconds < 600


def test_end_to_end_runs_a_cell_in_process(data_dir, capsys):
    smoke = {"epochs": "1", "n_features": "500"}
    timings = _script("end_to_end").end_to_end("dp-merf", "gmm2d", "sound", str(data_dir), smoke)
    assert timings["fit"] >= 0 and any(phase.startswith("evaluate ") for phase in timings)
    assert "peak memory" in capsys.readouterr().out


def test_step_profile_splits_a_fit_into_tenths(data_dir, monkeypatch):
    monkeypatch.setenv("DPBENCH_DATA_DIR", str(data_dir))
    script = _script("step_profile")
    seconds, marks = script.step_marks("dp-merf", "gmm2d", "sound", {"epochs": "1", "n_features": "500"})
    tenths = script.per_tenth(marks)
    assert len(tenths) == 10 and all(ms > 0 for ms in tenths)
    assert marks[-1, 0] == 180 and marks[-1, 1] <= seconds  # 90,000 rows / batch 500


def test_detection_columns_names_the_column_whose_atom_a_generator_never_emits(data_dir):
    """cervical's "Smokes (years)" is 0 for 83% of the rows: the training rows with that column
    moved off its zeros (by at most a year, its shape otherwise kept) are told from real rows by
    that column alone, and the script says so; the training rows themselves are not."""
    import numpy as np

    from bench.core.data import LabelledData
    from bench.api.registry import DATASETS

    script = _script("detection_columns")
    split = DATASETS.get("cervical").load(data_dir, 0)
    column = [c.name for c in split.train.schema.columns].index("Smokes (years)")
    x = split.train.x.copy()
    x[:, column] += np.random.default_rng(0).uniform(0.01, 1.0, len(x))
    shifted = script.diagnose(LabelledData(x, split.train.y, split.train.schema), split.train, split.test, seed=0)
    name, auc, on_atoms_real, on_atoms_synthetic = shifted["best_columns"][0]
    assert name == "Smokes (years)" and auc > 0.8 and on_atoms_real > 0.7 and on_atoms_synthetic == 0, shifted
    assert shifted["detection_auc"] > 0.8
    copied = script.diagnose(split.train, split.train, split.test, seed=0)
    assert copied["detection_auc"] < 0.65 and copied["best_columns"][0][1] < 0.7, copied
    from evaluators.rows import distance_features

    assert len(script.column_names(split.train.schema)) == distance_features(split.train, split.train).shape[1]


def test_collect_records_replaces_a_ledgerless_record_only_by_a_rerun_that_reproduces_its_numbers(tmp_path):
    collect = _script("collect_records")
    old = {
        "run_id": "old",
        "status": "FINISHED",
        "code": {"commit": "a" * 40, "dirty": False},
        "ledger": None,
        "metrics": {"marginals.tv_3": 0.25, "peak_memory_mib": 900.0, "fit_seconds": 12.0},
    }
    rerun = dict(old, run_id="new", ledger={"releases": []})
    rerun["metrics"] = {"marginals.tv_3": 0.25, "peak_memory_mib": 950.0, "fit_seconds": 30.0}  # machine numbers move
    moved = dict(rerun, metrics=dict(rerun["metrics"], **{"marginals.tv_3": 0.2500001}))
    assert collect.verdict(rerun, old) == "another run of this cell is recorded"  # never without --replace
    assert collect.verdict(rerun, old, replace=True).startswith("replace a ledgerless record")
    old["machine"] = rerun["machine"] = moved["machine"] = {"cpu": "AMD EPYC avx2"}
    assert collect.verdict(moved, old, replace=True).startswith(
        "a rerun of a ledgerless record at its commit on its CPU moved 1"
    )
    elsewhere = dict(moved, machine={"cpu": "Intel(R) Xeon(R) avx2"})  # another CPU: replaced, the move printed
    assert collect.verdict(elsewhere, old, replace=True) == (
        "replace a ledgerless record (rerun on another CPU moved 1 number(s): marginals.tv_3 0.25 → 0.2500001)"
    )
    later = dict(elsewhere, code={"commit": "b" * 40, "dirty": False})
    assert "(rerun on another commit and CPU moved 1" in collect.verdict(later, old, replace=True)
    assert collect.verdict(dict(rerun, ledger=None), old, replace=True) == "another run of this cell is recorded"
    with_ledger = dict(old, ledger={"releases": []})
    assert collect.verdict(rerun, with_ledger, replace=True) == "another run of this cell is recorded"
    failed = dict(old, status="FAILED", metrics={})
    assert collect.verdict(rerun, failed, replace=True) == "replace a failed record"

    source, target = tmp_path / "exported", tmp_path / "record"
    source.mkdir(), target.mkdir()
    (target / "cell.json").write_text(json.dumps(old))
    (source / "cell.json").write_text(json.dumps(moved))
    counts = collect.collect(source, target, dry=False, replace=True)
    assert counts == {"a rerun of a ledgerless record at its commit on its CPU moved 1 number(s)": 1}
    assert json.loads((target / "cell.json").read_text())["run_id"] == "old"  # kept
    (source / "cell.json").write_text(json.dumps(rerun))
    collect.collect(source, target, dry=False, replace=True)
    assert json.loads((target / "cell.json").read_text())["run_id"] == "new"
