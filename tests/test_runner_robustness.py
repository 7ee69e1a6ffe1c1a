"""A runner that never loses a result: signals, kill -9, leases, --jobs invariance, broken cells.

These start real runner processes and send them real signals, so they take tens of seconds
each on 2 shared cores: all slow (`tox -e slow`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from bench.harness import tracking
from bench.harness import leases
from tests.conftest import run_cli

pytestmark = pytest.mark.slow

SMOKE = ["--datasets", "gmm2d", "--eps", "1", "--profile", "smoke", "--no-progress"]


def start_cli(*args: str, env: dict | None = None) -> subprocess.Popen:
    """The runner in its own process group, as a shell would start it (Ctrl-C goes to the group)."""
    # the store exists before the test polls it: two processes creating one SQLite store race
    tracking.experiment_id(tracking.client(), "dpbench")
    return subprocess.Popen(
        [sys.executable, "-m", "bench", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )


def runs(experiment="dpbench"):
    client = tracking.client()
    experiment_id = tracking.experiment_id(client, experiment, create=False)
    return [] if experiment_id is None else list(tracking.iter_runs(client, experiment_id))


def wait_for(predicate, timeout=300.0, what=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(1)
    pytest.fail(f"timed out waiting for {what}")


def statuses(method: str | None = None) -> list[str]:
    return sorted(
        r.info.status
        for r in runs()
        if method is None or r.data.params.get("method", r.data.tags.get("method")) == method
    )


def workers_of(pid: int) -> list[int]:
    """The runner's live spawn workers (children of ``pid``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                try:
                    command = (entry / "cmdline").read_bytes()
                except OSError:
                    continue
                if b"spawn_main" in command:  # not multiprocessing's resource tracker
                    found.append(int(entry.name))
    return found


def scratch_of(pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"dpbench-{pid}-*"))


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_stops_workers_marks_cells_and_prints_the_resume_command(workdir, signame):
    args = ["run", "--methods", "test-sleeping", *SMOKE, "--seeds", "0-2", "--jobs", "2"]
    runner = start_cli(*args)
    wait_for(lambda: statuses().count("RUNNING") == 2, what="two claimed cells")
    wait_for(lambda: len(workers_of(runner.pid)) >= 2, what="two worker processes")
    workers = workers_of(runner.pid)
    if signame == "SIGINT":
        os.killpg(runner.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole group
    else:
        os.kill(runner.pid, signal.SIGTERM)  # what `kill PID` or a batch system does
    out, err = runner.communicate(timeout=120)
    assert runner.returncode == (130 if signame == "SIGINT" else 143), out + err
    assert "Traceback" not in out + err
    assert (
        f"interrupted by {signame}" in err
        and "resume with: python" in err
        and "-m bench run --methods test-sleeping" in err
    )
    assert statuses() == ["FAILED", "FAILED"]  # the third cell never started
    assert all("interrupted" in r.data.tags["error"] for r in runs())
    assert not scratch_of(runner.pid)
    time.sleep(1)
    assert not [w for w in workers if Path(f"/proc/{w}").exists()], "worker processes survived"


def descendants(pid: int) -> dict[int, bytes]:
    """Every live process below ``pid``, with its command line."""
    parent_of, commands = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                commands[int(entry.name)] = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if fields[0] != "Z":
                parent_of[int(entry.name)] = int(fields[1])
    found, frontier = {}, {pid}
    while frontier:
        frontier = {child for child, parent in parent_of.items() if parent in frontier and child not in found}
        found.update({child: commands.get(child, b"") for child in frontier})
    return found


def test_sigterm_during_evaluation_stops_the_classifier_pool_without_a_traceback(workdir):
    """Issue 61: SIGTERM while the 12 classifiers ran printed 4 BrokenPipeError tracebacks from
    evaluators/fitpool.py, three after the runner's "interrupted" line, and a child outlived the
    runner. Here the cell is inside its evaluation, both pool workers fitting, when it comes."""
    runner = start_cli("run", "--methods", "real", *SMOKE, "--evaluators", "test-pooled-sleep")
    pool = lambda: [pid for pid, command in descendants(runner.pid).items() if b"fitpool" in command]  # noqa: E731
    wait_for(lambda: len(pool()) == 2, what="the evaluation's two pool workers")
    workers = pool()
    os.kill(runner.pid, signal.SIGTERM)
    out, err = runner.communicate(timeout=120)
    assert runner.returncode == 143, out + err
    assert "Traceback" not in out + err and "BrokenPipeError" not in out + err, out + err
    assert err.count("interrupted by SIGTERM") == 1 and err.rstrip().splitlines()[-1].startswith(
        "interrupted by SIGTERM"
    )
    assert statuses() == ["FAILED"]
    wait_for(
        lambda: not [w for w in workers if Path(f"/proc/{w}").exists()], timeout=10, what="the pool workers to exit"
    )


def test_kill_9_loses_nothing_and_the_next_run_completes_the_grid(workdir):
    marker = workdir / "slow-marker"
    marker.touch()
    env = {"SLOW_MARKER": str(marker)}
    args = ["run", "--methods", "real,test-slow-while-marked", *SMOKE, "--seeds", "0-1"]
    runner = start_cli(*args, env=env)
    wait_for(
        lambda: statuses("real") == ["FINISHED", "FINISHED"] and "RUNNING" in statuses(), what="real done, slow running"
    )
    workers = workers_of(runner.pid)
    os.kill(runner.pid, signal.SIGKILL)
    runner.communicate(timeout=60)
    time.sleep(2)
    assert not [w for w in workers if Path(f"/proc/{w}").exists()], "an orphaned worker kept computing"
    assert statuses("real") == ["FINISHED", "FINISHED"]  # finished cells stay logged
    assert "RUNNING" in statuses()  # the killed runner could not say anything
    assert scratch_of(runner.pid)  # left behind by kill -9; the next start removes it

    marker.unlink()
    again = run_cli(*args, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "was left RUNNING by a runner that is gone; marked FAILED (killed)" in again.stderr
    assert "2 finished, 0 failed, 2 skipped" in again.stdout
    slow = [r for r in runs() if r.data.tags.get("method") == "test-slow-while-marked"]
    assert sorted(r.info.status for r in slow) == ["FAILED", "FINISHED", "FINISHED"]
    assert "killed" in next(r for r in slow if r.info.status == "FAILED").data.tags["error"]
    assert not scratch_of(runner.pid)


def test_a_second_runner_leaves_cells_held_by_a_live_runner_alone(workdir):
    args = ["run", "--methods", "test-pausing", *SMOKE]
    first = start_cli(*args, env={"PAUSE_S": "40"})
    wait_for(lambda: statuses() == ["RUNNING"], what="the first runner's claim")
    second = run_cli(*args, env={"PAUSE_S": "0"})
    assert (
        "0 finished, 0 failed, 0 skipped (already finished; --rerun forces), 1 left to another live runner"
        in second.stdout
    ), second.stdout + second.stderr
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0 and "1 finished" in out, out + err
    assert statuses() == ["FINISHED"]  # one run: the second runner did not compute it too


def test_two_runners_started_together_on_a_new_store_both_finish(workdir):
    """Issue 61: the second of two runners started at once on a new SQLite store died at once
    (exit 3, "duplicate column name: deleted_time": MLflow's schema migration raced on the new file)."""
    assert not (workdir / "mlflow.db").exists()
    env = {**os.environ}
    runners = [
        subprocess.Popen(
            [sys.executable, "-m", "bench", "run", "--methods", "real", *SMOKE, "--seeds", str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for seed in (0, 1)
    ]
    for runner in runners:
        out, err = runner.communicate(timeout=600)
        assert runner.returncode == 0 and "1 finished" in out and "Traceback" not in err, out + err
    assert statuses() == ["FINISHED", "FINISHED"]


def test_a_live_runner_takes_over_the_cell_of_a_runner_killed_during_its_run(workdir):
    """Issue 31: B found A's cell claimed, A was killed while B ran, and B exited 0 with the cell
    never run ("claimed by a live runner (pid dead for 70 s)"). Now B adopts it at its end."""
    first = start_cli("run", "--methods", "test-pausing", *SMOKE, "--seeds", "0", env={"PAUSE_S": "120"})
    wait_for(lambda: statuses() == ["RUNNING"], what="the first runner's claim")
    second = start_cli("run", "--methods", "test-pausing", *SMOKE, "--seeds", "0-1", env={"PAUSE_S": "15"})
    wait_for(lambda: statuses() == ["RUNNING", "RUNNING"], what="the second runner's own cell")
    workers = workers_of(first.pid)
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate(timeout=60)
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, out + err
    assert "2 finished, 0 failed" in out and "left to another live runner" not in out, out + err
    assert "was abandoned by a runner that is gone; marked FAILED (killed) and taken over" in out + err
    assert statuses() == ["FAILED", "FINISHED", "FINISHED"]
    assert not [w for w in workers if Path(f"/proc/{w}").exists()]


def test_a_lease_is_taken_over_when_its_runner_is_gone(workdir):
    """The race-free part of claiming: a claim whose pid is dead does not block anyone."""
    from bench.harness.grid import GridSpec, expand

    cell = expand(GridSpec(["real"], ["gmm2d"], [1.0], [0], profile="smoke"))[0][0]
    client = tracking.client()
    experiment = tracking.experiment_id(client, "dpbench")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = {**leases.lease_tags(), "lease.pid": dead.stdout.strip()}
    tracking.create_cell_run(client, experiment, cell, {**tracking.cell_tags(cell, {}), **stale})
    run_id, why = leases.claim_cell(client, experiment, cell, {}, set(), rerun=False)
    assert run_id is not None, why


def metrics_without_timings(run) -> dict[str, float]:
    return {k: v for k, v in run.data.metrics.items() if not k.startswith("time.") and k != "peak_memory_mib"}


def test_results_do_not_depend_on_jobs(workdir):
    args = ["run", "--methods", "dp-merf", *SMOKE, "--seeds", "0-1", "--set", "dp-merf.epochs=2"]
    one = run_cli(*args, "--experiment", "jobs1", "--jobs", "1")
    two = run_cli(*args, "--experiment", "jobs2", "--jobs", "2")
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    by_seed = {
        name: {r.data.params["seed"]: metrics_without_timings(r) for r in runs(name)} for name in ("jobs1", "jobs2")
    }
    assert by_seed["jobs1"] == by_seed["jobs2"]
    assert len(by_seed["jobs1"]) == 2 and "nll.mean" in by_seed["jobs1"]["0"]
    assert {r.data.params["threads"] for r in runs("jobs2")} == {"1"}


def test_broken_cells_fail_with_one_line_and_the_grid_goes_on(workdir):
    args = [
        "run",
        "--methods",
        "real,test-nan-samples,test-wrong-schema,test-full-disk",
        *SMOKE,
        "--jobs",
        "2",
    ]
    result = run_cli(*args, env={"FULL_DISK_BYTES": "2000"})
    crash = run_cli("run", "--methods", "real", *SMOKE, "--evaluators", "nll,test-crashing", "--experiment", "crash")
    assert result.returncode == 1 and crash.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr + crash.stdout + crash.stderr
    failed = {
        line.split(":", 1)[0].split()[-1].split("/")[0]: line
        for line in result.stdout.splitlines()
        if "FAILED " in line
    }
    assert "features contain NaN or infinite values" in failed["test-nan-samples"]
    assert "another schema" in failed["test-wrong-schema"]
    assert "File too large" in failed["test-full-disk"]
    assert "1 finished, 3 failed" in result.stdout
    assert "deliberate evaluator crash" in crash.stdout and "0 finished, 1 failed" in crash.stdout
    assert statuses("real") == ["FINISHED"]


@pytest.fixture
def full_artifact_folder(workdir):
    """``mlartifacts/`` on a 64 KiB tmpfs that a file then fills: the store answers, its artifact
    folder takes nothing (a real ENOSPC, not a mock)."""
    folder = workdir / "mlartifacts"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("needs to mount a small tmpfs (root, or a user namespace)")
    try:
        filler = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(filler, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(filler)
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_full_artifact_folder_keeps_every_result_in_the_outbox_and_exits_5(workdir, full_artifact_folder):
    """Issue 61: with the artifact folder full, every result reached the outbox, but the run exited
    0 and left its claimed runs RUNNING. Now: exit 5 (not everything reached the store), the runs
    FAILED saying their results wait in the outbox, and `sync` fills those same runs once there is
    room: one run per cell, FINISHED."""
    ran = run_cli("run", "--methods", "real", *SMOKE, "--seeds", "0-1")
    assert ran.returncode == 5, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stdout + ran.stderr
    assert "2 result(s) are in the outbox" in ran.stdout and "No space left on device" in ran.stdout
    waiting = runs()
    assert [r.info.status for r in waiting] == ["FAILED", "FAILED"]
    assert all(
        "waits in the outbox: `python -m bench sync` logs it into this run" in r.data.tags["error"] for r in waiting
    )

    subprocess.run(["umount", "-l", str(full_artifact_folder)], check=True)
    synced = run_cli("sync")
    assert synced.returncode == 0 and "logged 2 of 2" in synced.stdout, synced.stdout + synced.stderr
    after = runs()
    assert sorted(r.info.run_id for r in after) == sorted(r.info.run_id for r in waiting)  # the same runs, filled
    assert [r.info.status for r in after] == ["FINISHED", "FINISHED"]
    assert all("error" not in r.data.tags and "nll.mean" in r.data.metrics for r in after)
    again = run_cli("run", "--methods", "real", *SMOKE, "--seeds", "0-1")
    assert again.returncode == 0 and "0 finished, 0 failed, 2 skipped" in again.stdout, again.stdout + again.stderr
