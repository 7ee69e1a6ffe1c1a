"""The outbox: a run with its tracking server down keeps every result on disk, and `sync` (or the
next run) logs them once the server is back. A real ``mlflow server`` on 127.0.0.1 is stopped and
started again on the same port and store.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import MlflowServer, run_cli

pytestmark = pytest.mark.slow

SMOKE = ["--datasets", "gmm2d", "--eps", "1", "--profile", "smoke", "--no-progress", "--experiment", "ob"]


@pytest.fixture
def server(tmp_path):
    control = MlflowServer(tmp_path)
    yield control
    control.stop()


def outbox_entries(workdir):
    folder = workdir / ".dpbench-outbox"
    return sorted(p for p in folder.iterdir() if (p / "entry.json").exists()) if folder.exists() else []


def test_results_wait_in_the_outbox_and_sync_logs_them_once(workdir, server):
    env = {"MLFLOW_TRACKING_URI": server.url}
    started = time.monotonic()
    offline = run_cli("run", "--methods", "real", *SMOKE, "--seeds", "0-1", env=env)
    assert offline.returncode == 5, offline.stdout + offline.stderr  # ran, but not in the store yet
    assert "Traceback" not in offline.stdout + offline.stderr
    assert f"the MLflow tracking server at {server.url} is unreachable" in offline.stderr
    assert "2 result(s) are in the outbox" in offline.stdout and "python -m bench sync" in offline.stdout
    assert time.monotonic() - started < 300
    entries = outbox_entries(workdir)
    assert len(entries) == 2 and all((e / "artifacts" / "synthetic_sample.csv").exists() for e in entries)

    again = run_cli("run", "--methods", "real", *SMOKE, "--seeds", "0-1", env=env)
    assert "0 finished, 0 failed, 2 skipped" in again.stdout, again.stdout + again.stderr  # the outbox counts as done

    down = run_cli("sync", env=env)
    assert down.returncode == 2 and "unreachable" in down.stderr and len(outbox_entries(workdir)) == 2

    server.start()
    synced = run_cli("sync", env=env)
    assert synced.returncode == 0 and "logged 2 of 2" in synced.stdout, synced.stdout + synced.stderr
    assert outbox_entries(workdir) == []
    runs = server.runs()
    assert sorted(r.info.status for r in runs) == ["FINISHED", "FINISHED"]
    assert all("nll.mean" in r.data.metrics and r.data.params["method"] == "real" for r in runs)
    assert len(list((server.folder / "server-artifacts").rglob("synthetic_sample.csv"))) == 2

    assert run_cli("sync", env=env).stdout.strip().endswith(f"holds nothing for {server.url}")
    resumed = run_cli("run", "--methods", "real", *SMOKE, "--seeds", "0-1", env=env)
    assert "0 finished, 0 failed, 2 skipped" in resumed.stdout  # logged once, found on the server
    assert len(server.runs()) == 2


def test_an_entry_is_logged_only_into_the_store_it_was_saved_for(workdir, server):
    """Issue 31: an entry saved while server X was down was logged into whatever store the next
    run or sync pointed at. Now it waits for X, and sync says so."""
    env = {"MLFLOW_TRACKING_URI": server.url}
    offline = run_cli("run", "--methods", "real", *SMOKE, "--seeds", "0", env=env)
    assert offline.returncode == 5 and len(outbox_entries(workdir)) == 1, offline.stdout + offline.stderr

    other = {"MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'other.db'}"}
    wrong = run_cli("sync", env=other)
    assert wrong.returncode == 0, wrong.stdout + wrong.stderr
    assert f"1 result(s) in the outbox are for another store, {server.url}" in wrong.stderr
    assert len(outbox_entries(workdir)) == 1
    elsewhere = run_cli("run", "--methods", "real", *SMOKE, "--seeds", "0", env=other)
    assert "1 finished, 0 failed, 0 skipped" in elsewhere.stdout  # ran there: the entry is not that store's result
    assert len(outbox_entries(workdir)) == 1

    server.start()
    synced = run_cli("sync", env=env)
    assert synced.returncode == 0 and "logged 1 of 1" in synced.stdout, synced.stdout + synced.stderr
    assert outbox_entries(workdir) == [] and len(server.runs()) == 1


def test_a_server_that_dies_mid_run_loses_nothing(workdir, server):
    env = {"MLFLOW_TRACKING_URI": server.url, "PAUSE_S": "25"}
    server.start()
    runner = subprocess.Popen(
        [sys.executable, "-m", "bench", "run", "--methods", "test-pausing", *SMOKE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    deadline = time.monotonic() + 300
    while not [r for r in server.runs() if r.info.status == "RUNNING"]:  # claimed: the cell computes
        assert time.monotonic() < deadline and runner.poll() is None, (
            runner.stderr.read() if runner.poll() is not None else ""
        )
        time.sleep(1)
    server.stop()
    out, err = runner.communicate(timeout=600)
    assert runner.returncode == 5, out + err
    assert "Traceback" not in out + err
    assert "1 result(s) are in the outbox" in out
    (entry,) = outbox_entries(workdir)

    server.start()
    # the next run logs the waiting result into the run it claimed, then finds the cell done
    resumed = run_cli("run", "--methods", "test-pausing", *SMOKE, env={**env, "PAUSE_S": "0"})
    assert "outbox: logged 1" in resumed.stderr and "0 finished, 0 failed, 1 skipped" in resumed.stdout, (
        resumed.stdout + resumed.stderr
    )
    (run,) = server.runs()
    assert run.info.status == "FINISHED" and "lease.pid" in run.data.tags


def test_a_server_that_never_answers_is_found_out_in_seconds(workdir, silent_address):
    """Issue 61: a run against a tracking address that accepts and never answers spent 100 s in
    MLflow's retries before its first cell (the one-fit-per-setup query); reading commands stop in
    one line, a run goes to the outbox at once."""
    env = {"MLFLOW_TRACKING_URI": f"http://{silent_address}"}
    started = time.monotonic()
    listed = run_cli("runs", env=env, timeout=120)
    assert listed.returncode == 2 and listed.stderr.count("\n") == 1 and "unreachable (timed out)" in listed.stderr
    assert time.monotonic() - started < 60
    started = time.monotonic()
    ran = run_cli("run", "--methods", "real", *SMOKE, env=env, timeout=300)
    assert ran.returncode == 5 and "results go to the outbox" in ran.stderr, ran.stdout + ran.stderr
    assert len(outbox_entries(workdir)) == 1
    assert time.monotonic() - started < 60, "the probe's 5 s, twice, and the cell; not MLflow's retries"
