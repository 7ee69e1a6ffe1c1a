"""Where a cell's worker runs: a :class:`Job` (a cell, its scratch folder, its claimed run) and
the local executor (a fresh ``spawn`` process per cell, lent idle cores for thread-invariant
fits); ``bench.harness.ray_executor`` has the same methods for a Ray cluster."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_module
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness.cell import Cell
from bench.harness.worker import HASH_SEED, Outcome, worker_main


@dataclass
class Job:
    cell: Cell
    folder: Path
    started: float
    run_id: str | None = None
    fraction: float = 0.0
    handle: Any = None
    offer: Any = None  # the threads its fit may use now (a shared integer; local executor)


class LocalExecutor:
    """Cells in fresh ``spawn`` processes on this machine."""

    name = "local"

    def __init__(self) -> None:
        os.environ["PYTHONHASHSEED"] = HASH_SEED  # read by each spawned worker's interpreter (HASH_SEED)
        self.context = mp.get_context("spawn")
        self.queue = self.context.Queue()
        self.errors: dict[str, str] = {}

    def start(self, job: Job) -> None:
        job.offer = self.context.Value("i", job.cell.threads, lock=False)
        process = self.context.Process(
            target=worker_main,
            args=(job.cell.to_json(), str(job.folder), self.queue, job.cell.threads, job.offer),
            daemon=True,
        )
        # Block SIGINT/SIGTERM while the child is created: it inherits the mask, so a Ctrl-C
        # during its (seconds-long) start-up cannot make it print a traceback; worker_main then
        # ignores both and unblocks. The runner receives anything that arrived right after.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        job.handle = process

    def poll(self, job: Job) -> Outcome | None:
        """The job's outcome once its process ended, else None."""
        process = job.handle
        if process.is_alive():
            return None
        process.join()
        outcome = Outcome.read(job.folder)
        if outcome is None:
            reason = self.errors.get(str(job.folder))
            if reason is None:
                code = process.exitcode
                reason = f"worker process died (exit code {code}" + (
                    ", killed: out of memory?)" if code == -signal.SIGKILL else ")"
                )
            outcome = Outcome(status="FAILED", error=reason)
        return outcome

    def progress(self, jobs: dict[str, Job]) -> None:
        while True:
            try:
                folder, kind, value = self.queue.get_nowait()
            except queue_module.Empty:
                return
            if kind == "error":
                self.errors[folder] = value
            elif folder in jobs:
                jobs[folder].fraction = value

    def kill(self, job: Job) -> None:
        job.handle.kill()
        job.handle.join()

    def lend(self, running: dict[str, Job], cores: int) -> None:
        """Spread the cores no running cell uses over the running lendable cells (their fits
        give the same bits at any thread count), so that a grid with fewer cells than cores,
        or its last cell, still uses the machine."""
        idle = cores - sum(job.cell.threads for job in running.values())
        lendable = [job for job in running.values() if job.cell.lendable and job.cell.device != "cuda"]
        for index, job in enumerate(lendable):
            extra = max(0, idle) // len(lendable) + (1 if index < max(0, idle) % len(lendable) else 0)
            job.offer.value = job.cell.threads + extra

    def close(self) -> None:
        self.queue.close()
