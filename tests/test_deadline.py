"""``run --deadline``: no cell starts after it, the running ones finish and are logged, the cells
left are listed (exit 4), and the same command resumes with them."""

from __future__ import annotations

import datetime
import time

import pytest

from bench.harness import tracking
from bench.harness.grid import GridError, GridSpec, expand
from bench.harness.runargs import parse_deadline
from bench.harness import runner
from bench.harness.executors import LocalExecutor
from bench.harness.runner import run_grid
from tests.conftest import run_cli

NOW = datetime.datetime(2026, 11, 28, 12, 0, 30)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("2h", NOW + datetime.timedelta(hours=2)),
        ("1h30m", NOW + datetime.timedelta(minutes=90)),
        ("90m", NOW + datetime.timedelta(minutes=90)),
        ("45s", NOW + datetime.timedelta(seconds=45)),
        ("0.5h", NOW + datetime.timedelta(minutes=30)),
        ("14:20", datetime.datetime(2026, 11, 28, 14, 20)),
        ("12:00", datetime.datetime(2026, 11, 29, 12, 0)),  # today's has passed: tomorrow's
        ("0:15", datetime.datetime(2026, 11, 29, 0, 15)),
    ],
)
def test_a_deadline_is_a_duration_from_now_or_the_next_clock_time(text, expected):
    assert parse_deadline(text, NOW) == expected


@pytest.mark.parametrize(
    "text", ["", "soon", "0m", "0s", "-5m", "24:00", "14:60", "2 hours", "1m2h", "1e9999h", "9999999999999h"]
)
def test_a_deadline_that_names_no_future_moment_is_a_usage_error(text):
    with pytest.raises(GridError, match="--deadline .* is neither a duration"):
        parse_deadline(text, NOW)


class LateClock:
    """The runner's ``time`` module, whose wall clock jumps two hours ahead on ``jump()``."""

    def __init__(self) -> None:
        self.offset = 0.0

    def jump(self) -> None:
        self.offset = 7200.0

    def time(self) -> float:
        return time.time() + self.offset

    def __getattr__(self, name):
        return getattr(time, name)


class JumpAtFirstStart(LocalExecutor):
    """Starts cells as usual; the first start moves the runner's clock past the deadline, so the
    runner meets it exactly between the first and the second cell, however long its set-up took."""

    def __init__(self, clock: LateClock) -> None:
        super().__init__()
        self.clock = clock
        self.started: list[str] = []

    def start(self, job) -> None:
        super().start(job)
        self.started.append(job.cell.label)
        self.clock.jump()


def test_no_cell_starts_after_the_deadline_the_running_one_finishes_and_a_rerun_resumes(workdir, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{workdir}/mlflow.db")
    cells, _ = expand(
        GridSpec(
            methods=["real"], datasets=["gmm2d"], epsilons=[1.0], seeds=[0, 1, 2], profile="smoke", evaluators=["nll"]
        )
    )
    clock = LateClock()
    monkeypatch.setattr(runner, "time", clock)
    executor = JumpAtFirstStart(clock)
    report = run_grid(
        cells, "deadline", jobs=1, show_progress=False, executor=executor, start_deadline=time.time() + 3600
    )
    assert executor.started == [cells[0].label]
    assert report.finished == [cells[0]] and report.not_started == cells[1:]
    assert (
        report.ok
        and "1 finished, 0 failed, 0 skipped (already finished; --rerun forces), 2 not started (--deadline passed"
        in report.summary()
    )
    client = tracking.client()
    runs = list(tracking.iter_runs(client, tracking.experiment_id(client, "deadline", create=False)))
    assert [run.info.status for run in runs] == ["FINISHED"]  # nothing claimed for the cells left

    monkeypatch.setattr(runner, "time", time)
    again = run_grid(cells, "deadline", jobs=1, show_progress=False)
    assert again.finished == cells[1:] and again.skipped == [cells[0]] and not again.not_started


def test_the_command_line_exits_4_and_says_how_to_resume(workdir):
    """What a script or a person reads: exit 4 and how to resume (the resume itself: the test above)."""
    smoke = [
        "--methods",
        "real",
        "--datasets",
        "gmm2d",
        "--seeds",
        "0-1",
        "--profile",
        "smoke",
        "--evaluators",
        "nll",
        "--no-progress",
    ]
    late = run_cli("run", *smoke, "--deadline", "0.001s")  # passed before the store is even opened
    assert late.returncode == 4, late.stdout + late.stderr
    assert "0 finished, 0 failed, 0 skipped (already finished; --rerun forces), 2 not started" in late.stdout
    assert "2 cell(s) not started; run the same command again to run them" in late.stderr
    assert "Traceback" not in late.stderr
