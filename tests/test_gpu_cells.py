"""benchmarks/gpu_cells.py, the script a session lent a GPU runs: checked here on the CPU, so that it
works when a GPU is lent (it is measured there, within minutes of device time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_a_stopped_fit_is_extrapolated_and_written_with_its_commit(data_dir, tmp_path):
    env = {**os.environ, "DPBENCH_DATA_DIR": str(data_dir), "GPU_CELLS_COMMIT": "c0ffee", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/gpu_cells.py",
            "--out",
            str(tmp_path / "out"),
            "--work",
            str(tmp_path / "work"),
            "--device",
            "cpu",
            "--only",
            "full-mmd:mnist",
            "--fit-cap",
            "3",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    written = json.loads((tmp_path / "out" / "cells.json").read_text())
    assert written["commit"] == "c0ffee"
    (row,) = written["rows"]
    assert (row["method"], row["dataset"], row["device"], row["finished"]) == ("full-mmd", "mnist", "cpu", False)
    assert 0 < row["measured_fraction"] < 1 and row["fit_seconds"] > row["first_report_s"] + row["measured_s"]


def test_an_unknown_setup_is_a_one_line_error():
    done = subprocess.run(
        [sys.executable, "benchmarks/gpu_cells.py", "--out", "/tmp/unused", "--only", "nope:mnist"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.strip().startswith("error: unknown setup(s) nope:mnist")
