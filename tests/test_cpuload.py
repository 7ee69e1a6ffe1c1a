"""The runner lends only idle cores: foreign load is the machine's busy time less this process tree's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.harness.cpuload import ForeignLoad, process_tree_ticks
from bench.harness.executors import LocalExecutor


def write_proc(proc: Path, busy: int, processes: dict[int, tuple[int, int]]) -> None:
    """A /proc with a machine busy count and processes {pid: (parent, ticks)} (utime holds them all)."""
    proc.mkdir(exist_ok=True)
    (proc / "stat").write_text(f"cpu  {busy} 0 0 100000 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")
    for pid, (parent, ticks) in processes.items():
        (proc / str(pid)).mkdir(exist_ok=True)
        # the command name has a space and a parenthesis, as /proc allows
        (proc / str(pid) / "stat").write_text(
            f"{pid} (py thon) x) S {parent} 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0\n"
        )


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_foreign_load_is_machine_busy_time_less_this_tree_including_reaped_children(tmp_path):
    proc, clock, hz = tmp_path / "proc", Clock(), os.sysconf("SC_CLK_TCK")
    # runner 10 with worker 11 (its child) and grandchild 12; 50 is someone else's
    write_proc(proc, 1000, {10: (1, 100), 11: (10, 100), 12: (11, 100), 50: (1, 500)})
    load = ForeignLoad(window_s=1.0, proc=proc, root=10, clock=clock)
    assert process_tree_ticks(proc, 10) == 300
    # one second later: our tree used 1.5 cores (12 was reaped into 11's cutime), another program 1 core
    clock.now = 1.0
    write_proc(proc, 1000 + int(2.5 * hz), {10: (1, 100 + hz // 2), 11: (10, 200 + hz), 50: (1, 500 + hz)})
    (proc / "12" / "stat").unlink()
    assert load.cores_busy() == pytest.approx(1.0)
    assert load.cores_taken() == 1
    # a quiet second does not free the core at once: the largest of the last windows counts
    clock.now = 2.0
    write_proc(proc, 1000 + int(2.5 * hz) + hz // 10, {10: (1, 100 + hz // 2), 11: (10, 200 + hz), 50: (1, 500 + hz)})
    assert load.cores_busy() == pytest.approx(1.0)
    # a slight foreign load (a shell, an idle server) takes no core
    light = ForeignLoad(window_s=1.0, windows=1, proc=proc, root=10, clock=clock)
    clock.now = 3.0
    write_proc(proc, 1000 + int(2.5 * hz) + hz // 10 + hz // 5, {10: (1, 100 + hz // 2), 11: (10, 200 + hz)})
    assert light.cores_busy() == pytest.approx(0.2) and light.cores_taken() == 0


def test_without_proc_there_is_no_foreign_load(tmp_path):
    load = ForeignLoad(proc=tmp_path / "missing")
    assert load.cores_busy() == 0.0 and load.cores_taken() == 0


def test_lending_leaves_the_cores_other_programs_use():
    """2 cores, one 1-thread cell: the idle core is lent; with one core taken elsewhere, none is."""

    class Offer:
        value = 0

    class Cell:
        threads, lendable, device = 1, True, "cpu"

    class Job:
        cell, offer = Cell(), Offer()

    running = {"a": Job()}
    executor = LocalExecutor.__new__(LocalExecutor)
    executor.lend(running, 2)
    assert running["a"].offer.value == 2
    executor.lend(running, 2 - 1)
    assert running["a"].offer.value == 1


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="reads Linux's /proc")
def test_a_real_program_outside_the_tree_is_foreign_and_a_child_is_not(tmp_path):
    baseline = ForeignLoad(window_s=1.0, windows=1)
    time.sleep(1.1)
    if (os.cpu_count() or 1) - baseline.cores_busy() < 1.0:
        pytest.skip("no idle core: a stranger's load cannot be told from what already saturates the machine")
    spin = [sys.executable, "-c", "import time\nend = time.time() + 30\nwhile time.time() < end: pass"]
    child = subprocess.Popen(spin)
    try:
        load = ForeignLoad(window_s=1.5, windows=1)
        time.sleep(1.6)
        with_child = load.cores_busy()
    finally:
        child.kill()
        child.wait()
    # the shell exits at once, so the spinner is reparented away from this tree
    pid = int(
        subprocess.run(
            ["sh", "-c", f"{' '.join(spin[:2])} '{spin[2]}' >/dev/null 2>&1 & echo $!"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    try:
        load = ForeignLoad(window_s=1.5, windows=1)
        time.sleep(1.6)
        with_stranger = load.cores_busy()
    finally:
        os.kill(pid, 9)
    assert with_stranger - with_child > 0.5, (with_child, with_stranger)
