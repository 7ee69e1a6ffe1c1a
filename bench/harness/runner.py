"""The grid runner: resume, parallel worker processes, timeouts, progress, logging.

Each cell runs in a fresh ``spawn`` process (``bench.harness.worker``). The parent skips cells whose key
already has a FINISHED run (unless ``rerun``), keeps up to ``jobs`` workers alive, kills a worker
past ``timeout`` seconds, and logs every cell to MLflow the moment it ends — so a later failure,
a Ctrl-C or a crash never loses the cells already done.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_module
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from bench.harness import tracking
from bench.harness.grid import Cell
from bench.harness.worker import Outcome, worker_main

POLL_SECONDS = 0.2


@dataclass
class GridReport:
    finished: list[Cell] = field(default_factory=list)
    failed: list[tuple[Cell, str]] = field(default_factory=list)
    skipped: list[Cell] = field(default_factory=list)
    run_ids: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        lines = [
            f"{len(self.finished)} finished, {len(self.failed)} failed, "
            f"{len(self.skipped)} skipped (already finished; --rerun forces)"
        ]
        lines += [f"  FAILED {cell.label}: {error}" for cell, error in self.failed]
        return "\n".join(lines)


@dataclass
class _Running:
    cell: Cell
    process: mp.Process
    folder: Path
    started: float
    fraction: float = 0.0


def run_grid(
    cells: list[Cell],
    experiment: str = tracking.DEFAULT_EXPERIMENT,
    jobs: int = 1,
    timeout: float | None = None,
    rerun: bool = False,
    show_progress: bool = True,
) -> GridReport:
    mlflow_client = tracking.client()
    experiment_id = tracking.experiment_id(mlflow_client, experiment)
    report = GridReport()
    done_keys = set() if rerun else tracking.finished_cell_keys(mlflow_client, experiment_id)
    pending = []
    for cell in cells:
        (report.skipped if cell.key in done_keys else pending).append(cell)
    common_tags = {"git_commit": tracking.git_commit(), **tracking.package_versions()}

    context = mp.get_context("spawn")
    progress_queue = context.Queue()
    threads = max(1, (os.cpu_count() or 1) // max(1, jobs))
    scratch = Path(tempfile.mkdtemp(prefix="dpbench-"))
    running: dict[str, _Running] = {}
    bar = tqdm(total=len(pending), desc="grid", unit="cell", disable=not show_progress, dynamic_ncols=True)

    def finish(item: _Running, outcome: Outcome) -> None:
        run_id = tracking.log_cell(mlflow_client, experiment_id, item.cell, outcome, item.folder, common_tags)
        report.run_ids[item.cell.key] = run_id
        if outcome.status == "FINISHED":
            report.finished.append(item.cell)
        else:
            report.failed.append((item.cell, outcome.error or "unknown error"))
            bar.write(f"FAILED {item.cell.label}: {outcome.error}")
        shutil.rmtree(item.folder, ignore_errors=True)
        bar.update(1)

    try:
        queue_index = 0
        shown_status = ""
        while queue_index < len(pending) or running:
            while queue_index < len(pending) and len(running) < jobs:
                cell = pending[queue_index]
                queue_index += 1
                folder = scratch / f"cell-{queue_index}"
                folder.mkdir()
                process = context.Process(
                    target=worker_main, args=(cell.to_dict(), str(folder), progress_queue, threads), daemon=True
                )
                process.start()
                running[str(folder)] = _Running(cell, process, folder, time.monotonic())

            _drain(progress_queue, running)
            for key, item in list(running.items()):
                elapsed = time.monotonic() - item.started
                if not item.process.is_alive():
                    item.process.join()
                    outcome = Outcome.read(item.folder) or Outcome(
                        status="FAILED", error=f"worker process died (exit code {item.process.exitcode})"
                    )
                    del running[key]
                    finish(item, outcome)
                elif timeout is not None and elapsed > timeout:
                    item.process.kill()
                    item.process.join()
                    del running[key]
                    finish(item, Outcome(status="FAILED", error=f"timed out after {timeout:g} s (--timeout)"))
            if running:
                status = " | ".join(f"{r.cell.label} fit {100 * r.fraction:.0f}%" for r in running.values())
                if status != shown_status:
                    bar.set_postfix_str(status, refresh=True)
                    shown_status = status
                time.sleep(POLL_SECONDS)
    finally:
        for item in running.values():  # Ctrl-C or an error in the parent: stop the workers
            item.process.kill()
        bar.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return report


def _drain(progress_queue, running: dict[str, _Running]) -> None:
    while True:
        try:
            folder, fraction = progress_queue.get_nowait()
        except queue_module.Empty:
            return
        if folder in running:
            running[folder].fraction = fraction
