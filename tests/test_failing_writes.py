"""Issue 31, item 2: a store and an outbox that cannot be written (a full or read-only disk) fail
one cell at a time, keep every computed result on disk and name where, and the grid goes on."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from bench.harness import outbox, tracking
from bench.harness.grid import GridSpec, expand
from bench.harness.runner import run_grid


def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.setenv(outbox.OUTBOX_VARIABLE, str(tmp_path / "outbox"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    return tmp_path


def two_cells():
    cells, _ = expand(
        GridSpec(
            methods=["real"], datasets=["gmm2d"], epsilons=[1.0], seeds=[0, 1], profile="smoke", evaluators=["nll"]
        )
    )
    return cells


def test_a_full_artifact_store_and_a_full_outbox_fail_each_cell_keep_its_results_and_the_grid_goes_on(
    store, monkeypatch
):
    monkeypatch.setattr(tracking, "log_cell", full_disk)
    monkeypatch.setattr(outbox.shutil, "copytree", full_disk)
    report = run_grid(two_cells(), "full", jobs=1, show_progress=False)
    assert len(report.unsaved) == 2 and not report.ok  # both cells ran: the first failure did not end the grid
    for cell, place in report.unsaved:
        outcome = json.loads((Path(place) / "outcome.json").read_text())
        assert outcome["status"] == "FINISHED" and "nll.mean" in outcome["metrics"]
        assert Path(place).name.startswith(f"dpbench-kept-{cell.key}")
    assert list((store / "outbox").iterdir()) == []  # no half-written entry for `sync` to trip on
    assert report.summary().count("NOT SAVED") == 2 and "its results stay in" in report.summary()


def test_when_only_the_store_is_full_the_outbox_takes_the_result_and_sync_can_log_it_later(store, monkeypatch):
    monkeypatch.setattr(tracking, "log_cell", full_disk)
    report = run_grid(two_cells(), "full", jobs=1, show_progress=False)
    assert report.outboxed == 2 and not report.unsaved
    entries = list(outbox.entries())
    assert len(entries) == 2 and all((entry.folder / "artifacts" / "outcome.json").is_file() for entry in entries)
