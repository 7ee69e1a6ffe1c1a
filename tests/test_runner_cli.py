"""End to end through the command line: grid, resume, failures, timeouts, tables, ledger."""

from __future__ import annotations

import math
import os

import pytest

from bench.harness import tracking
from bench.cli import main
from tests.conftest import run_cli

SMOKE = ["--datasets", "gmm2d", "--eps", "1", "--profile", "smoke", "--no-progress"]
FAST_MERF = ["--set", "dp-merf.epochs=1"]


def runs_by_method(experiment="dpbench"):
    client = tracking.client()
    experiment_id = tracking.experiment_id(client, experiment, create=False)
    runs = {}
    for run in tracking.iter_runs(client, experiment_id):
        runs.setdefault(run.data.params["method"], []).append(run)
    return runs


def test_grid_logs_failures_without_stopping_and_resumes(workdir):
    marker = workdir / "flaky-marker"
    marker.touch()
    methods = "real,dp-merf,test-raising,test-flaky,test-overspending"
    first = run_cli("run", "--methods", methods, *SMOKE, *FAST_MERF, "--jobs", "2", env={"FLAKY_MARKER": str(marker)})
    assert first.returncode == 1, first.stderr
    assert "2 finished, 3 failed, 0 skipped" in first.stdout
    assert "deliberate failure for the test" in first.stdout
    assert "PrivacyBudgetExceeded" in first.stdout

    runs = runs_by_method()
    assert runs["real"][0].info.status == runs["dp-merf"][0].info.status == "FINISHED"
    assert runs["test-raising"][0].info.status == "FAILED"
    assert "deliberate failure" in runs["test-raising"][0].data.tags["error"]
    merf = runs["dp-merf"][0]
    assert merf.data.metrics["privacy.epsilon_spent"] == pytest.approx(1.0, rel=1e-6)
    assert "nll.mean" in merf.data.metrics and "nll.paper_sum" in merf.data.metrics
    assert merf.data.params["hp.n_features"] == "500" and merf.data.params["epsilon"] == "1.0"
    assert runs["real"][0].data.params["epsilon"] == "inf"
    # ε as a number too, so that an MLflow filter finds the run (the param is the key's text '1.0')
    found = tracking.client().search_runs(
        [merf.info.experiment_id], filter_string="metrics.`privacy.epsilon_target` = 1"
    )
    assert merf.info.run_id in {r.info.run_id for r in found}  # with test-overspending's failed run
    assert {r.data.params["epsilon"] for r in found} == {"1.0"}
    assert {"git_commit", "version.torch", "device", "cell_key"} <= set(merf.data.tags)
    assert merf.data.tags["cpu"].strip()  # the processor: float results may differ between machines
    artifacts = {a.path for a in tracking.client().list_artifacts(merf.info.run_id)}
    assert {"ledger.json", "cell.json", "synthetic_sample.csv", "samples.png"} <= artifacts

    marker.unlink()
    second = run_cli("run", "--methods", methods, *SMOKE, *FAST_MERF, "--jobs", "2", env={"FLAKY_MARKER": str(marker)})
    assert "1 finished, 2 failed, 2 skipped" in second.stdout, second.stdout + second.stderr
    runs = runs_by_method()
    assert len(runs["real"]) == 1 and len(runs["dp-merf"]) == 1  # finished cells were not rerun
    assert sorted(r.info.status for r in runs["test-flaky"]) == ["FAILED", "FINISHED"]

    forced = run_cli("run", "--methods", "real", *SMOKE, "--rerun")
    assert forced.returncode == 0 and "1 finished, 0 failed, 0 skipped" in forced.stdout

    table = run_cli("table", "--metric", "nll.mean")
    assert table.returncode == 0, table.stderr
    assert "| gmm2d | 1 |" in table.stdout and "dp-merf" in table.stdout and "(1)" in table.stdout

    plotted = run_cli("plot", "--metric", "nll.mean", "--out", "plots")
    assert plotted.returncode == 0, plotted.stderr
    assert (workdir / "plots" / "dpbench_gmm2d_nll.mean.png").stat().st_size > 10_000

    shown = run_cli("show", merf.info.run_id)
    assert "labelled mean embedding" in shown.stdout and "σ = 3.73" in shown.stdout
    assert "class_proportions" in shown.stdout

    # the store alone, on a machine without the run's artifacts (a committed store): not "failed"
    import shutil

    shutil.rmtree(workdir / "mlartifacts")
    shown = run_cli("show", merf.info.run_id)
    assert shown.returncode == 0 and "no ledger here: its artifacts stay where the run ran" in shown.stdout
    assert "failed before its method started" not in shown.stdout


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: every pool already has one thread")
def test_evaluators_run_with_their_thread_pools_held_to_the_cells_threads(workdir):
    """scikit-learn's OpenMP code would otherwise start a thread per core whatever the cell's
    share (229 s instead of 19 s for the fidelity evaluator beside a busy core)."""
    result = run_cli(
        "run",
        "--methods",
        "real",
        *SMOKE,
        "--threads",
        "1",
        "--evaluators",
        "nll,test-pool-threads",
        "--experiment",
        "pools",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 finished, 0 failed" in result.stdout


def test_a_cell_past_its_timeout_is_killed_and_logged_as_failed(workdir):
    result = run_cli("run", "--methods", "test-sleeping", *SMOKE, "--timeout", "3")
    assert result.returncode == 1
    assert "timed out after 3 s" in result.stdout
    (run,) = runs_by_method()["test-sleeping"]
    assert run.info.status == "FAILED" and "timed out" in run.data.tags["error"]


@pytest.mark.parametrize(
    "arguments,message",
    [
        (["--methods", "real", "--datasets", "gmm2d", "--eps", "0"], "ε must be > 0"),
        (["--methods", "real", "--datasets", "gmm2d", "--eps=-1,1"], "ε must be > 0"),
        (["--methods", "real", "--datasets", "gmm2d", "--delta", "1"], "δ must lie in (0, 1)"),
        (["--methods", "real", "--datasets", "gmm2d", "--delta", "x"], "is not a number"),
        (["--methods", "dp-nope", "--datasets", "gmm2d"], "unknown method 'dp-nope'; valid: "),
        (["--methods", "real", "--datasets", "mnist2"], "unknown dataset 'mnist2'; valid: "),
        (["--methods", "real", "--datasets", "gmm2d", "--evaluators", "fid9"], "unknown evaluator 'fid9'"),
        (["--methods", "dp-merf", "--datasets", "gmm2d", "--set", "dp-merf.n_feat=3"], "unknown parameter"),
        (["--methods", "real", "--datasets", "gmm2d", "--seeds", "a-b"], "--seeds"),
        (["--methods", "real", "--datasets", "gmm2d", "--data-dir", "/no/such/dir"], "is not a folder"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(workdir, capsys, arguments, message):
    assert main(["run", *arguments]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and message in error and "\n" not in error


def test_table_without_runs_says_what_to_do(workdir, capsys):
    assert main(["table", "--experiment", "nothing-here"]) == 2
    assert "run `python -m bench run` first" in capsys.readouterr().err


def test_list_shows_every_registry(workdir, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "dp-merf" in out and "gmm2d" in out and "nll" in out


def test_cell_keys_are_stable_and_sensitive_to_what_matters():
    from bench.harness.grid import GridSpec, expand

    spec = GridSpec(methods=["dp-merf", "real"], datasets=["gmm2d"], epsilons=[0.5, 1.0], seeds=[0, 1])
    cells, _ = expand(spec)
    assert len(cells) == 2 * 2 + 2  # the non-private method runs once per seed
    assert [c.key for c in cells] == [c.key for c in expand(spec)[0]]
    assert len({c.key for c in cells}) == len(cells)
    real = [c for c in cells if c.method == "real"]
    assert all(math.isinf(c.epsilon) for c in real)
    moved, _ = expand(GridSpec(["dp-merf"], ["gmm2d"], [0.5], [0], device="cuda", data_dir="/elsewhere"))
    assert moved[0].key == cells[0].key  # where it runs does not change what it computes


OPEN_THE_STORE = """
import os, sys
from pathlib import Path
from bench.harness import tracking
import mlflow.tracking  # imported before the start line: the processes open the store together
folder = Path(sys.argv[1])
(folder / f"ready-{os.getpid()}").touch()
while not (folder / "go").exists():
    pass
print(tracking.experiment_id(tracking.client(), "dpbench"))
"""


def test_processes_opening_a_new_store_at_once_all_open_it(tmp_path):
    """Issue 61: MLflow migrates a new SQLite store's schema as a client opens it; processes doing
    so at once raced ("duplicate column name", alembic errors; 3 of 3 tries here failed). The store
    is now opened under a lock on its folder: every process gets the same experiment."""
    import subprocess
    import sys
    import time

    for attempt in range(2):
        folder = tmp_path / f"attempt-{attempt}"
        folder.mkdir()
        env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'mlflow.db'}"}
        processes = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_THE_STORE, str(folder)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for _ in range(3)
        ]
        deadline = time.monotonic() + 300
        while len(list(folder.glob("ready-*"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        (folder / "go").touch()
        answers = [process.communicate(timeout=300) for process in processes]
        assert [process.returncode for process in processes] == [0, 0, 0], [err[-500:] for _, err in answers]
        assert len({out.strip() for out, _ in answers}) == 1


def test_a_store_that_cannot_be_written_is_one_line_before_any_cell(workdir, capsys):
    """Issue 61: a read-only SQLite store sent every cell to the outbox with SQLAlchemy tracebacks,
    the words "the tracking server was unreachable" and exit 0. (An immutable file: root ignores
    file modes, so the test needs chattr, as a read-only mount would.)"""
    import shutil
    import subprocess

    if shutil.which("chattr") is None:
        pytest.skip("needs chattr to make a file immutable")
    tracking.experiment_id(tracking.client(), "dpbench")
    store = workdir / "mlflow.db"
    if subprocess.run(["chattr", "+i", str(store)], capture_output=True).returncode != 0:
        pytest.skip("this file system or user cannot make a file immutable")
    try:
        assert main(["run", "--methods", "real", *SMOKE]) == 2
        err = capsys.readouterr().err
        assert f"the MLflow store {store} cannot be written (Operation not permitted)" in err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert main(["table"]) == 2 and "has no finished runs yet" in capsys.readouterr().err  # reading still works
    finally:
        subprocess.run(["chattr", "-i", str(store)], check=True)
