"""How many cores other programs keep busy, so the runner lends only cores that are idle.

A lent thread on a core that another program also uses is far worse than no lent thread: torch's
parallel regions wait at every operation for the thread the scheduler has put aside. Measured on
the 2 development cores with one nice-19 job on the other core, DP-HP's 20-epoch adult fit took
137 s at 2 threads against 8.6 s at 1 (8.2 s at 2 threads on the idle machine).

``ForeignLoad`` reads Linux's ``/proc``: the machine's busy time (``/proc/stat``) minus the CPU
time of this runner's own process tree (the runner, its cell workers and their classifier
workers; a reaped child's time is in its parent's ``cutime``), over windows of ``window_s``
seconds. Where ``/proc`` is missing (macOS, Windows) it reports no foreign load: the runner then
lends as before.
"""

from __future__ import annotations

import math
import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

# A core counts as taken when another program kept it busy more than this share of a window:
# a shell, an editor or the tracking server's idle chatter must not cost a lent core.
BUSY_THRESHOLD = 0.25


@dataclass(frozen=True)
class ProcessTimes:
    parent: int
    ticks: int  # utime + stime + cutime + cstime


def read_machine_busy_ticks(proc: Path) -> int | None:
    """Busy ticks of all cores since boot (user, nice, system, irq, softirq, steal)."""
    try:
        fields = (proc / "stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:9]] + [0] * max(0, 9 - len(fields))
    user, nice, system, _idle, _iowait, irq, softirq, steal = values[:8]
    return user + nice + system + irq + softirq + steal


def read_process(proc: Path, pid: int) -> ProcessTimes | None:
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None  # gone between listing and reading
    # The command name is in parentheses and may hold spaces: the fields start after the last ')'.
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) < 15:
        return None
    parent = int(fields[1])
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return ProcessTimes(parent, utime + stime + cutime + cstime)


def process_tree_ticks(proc: Path, root: int) -> int:
    """CPU ticks of ``root`` and every live descendant, with their reaped children's."""
    table: dict[int, ProcessTimes] = {}
    try:
        names = [name for name in os.listdir(proc) if name.isdigit()]
    except OSError:
        return 0
    for name in names:
        times = read_process(proc, int(name))
        if times is not None:
            table[int(name)] = times
    children: dict[int, list[int]] = {}
    for pid, times in table.items():
        children.setdefault(times.parent, []).append(pid)
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        if pid in table:
            total += table[pid].ticks
        stack.extend(children.get(pid, ()))
    return total


class ForeignLoad:
    """Cores kept busy by programs outside this process's tree, the largest over the last
    ``windows`` windows (a job that pulses must not be lent over in its quiet second)."""

    def __init__(
        self,
        window_s: float = 1.0,
        windows: int = 3,
        proc: Path = Path("/proc"),
        root: int | None = None,
        clock=time.monotonic,
    ) -> None:
        self.window_s = window_s
        self.proc = proc
        self.root = os.getpid() if root is None else root
        self.clock = clock
        self.tick_hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.recent: deque[float] = deque(maxlen=windows)
        self.last = self._sample()

    def _sample(self) -> tuple[float, int, int] | None:
        machine = read_machine_busy_ticks(self.proc)
        if machine is None:
            return None
        return self.clock(), machine, process_tree_ticks(self.proc, self.root)

    def cores_busy(self) -> float:
        """Foreign busy cores (0 where /proc is missing); a new window is read when the last
        one is ``window_s`` old, so calling it at every poll is cheap."""
        if self.last is None:
            return 0.0
        now = self.clock()
        if now - self.last[0] >= self.window_s:
            sample = self._sample()
            if sample is not None:
                seconds = sample[0] - self.last[0]
                foreign_ticks = (sample[1] - self.last[1]) - (sample[2] - self.last[2])
                self.recent.append(max(0.0, foreign_ticks / self.tick_hz / seconds))
                self.last = sample
        return max(self.recent, default=0.0)

    def cores_taken(self) -> int:
        """Whole cores to keep out of lending: a core counts once another program keeps more
        than ``BUSY_THRESHOLD`` of it busy."""
        return max(0, math.ceil(self.cores_busy() - BUSY_THRESHOLD))
