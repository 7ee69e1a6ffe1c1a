"""The grid runner: resume, leases, parallel workers, timeouts, interrupts, the outbox.

Each cell runs in a fresh ``spawn`` process (``bench.harness.worker``), or a Ray task
(``bench.harness.ray_executor``); the runner is the only MLflow writer. It

- reaps runs left RUNNING by a runner that is gone (kill -9, crash): FAILED, "killed";
- skips cells that finished (unless ``rerun``) or that a live runner holds (its lease);
- claims each cell before starting it (a RUNNING run with this runner's lease, refreshed by a
  heartbeat), keeps up to ``jobs`` workers busy, kills a worker past ``timeout`` seconds, and
  starts none after ``start_deadline`` (the cells left are counted: the same command resumes them);
- logs every cell the moment it ends, into its claimed run; if the tracking server cannot take
  it, into the outbox on disk (``bench.harness.outbox``) — a result is never dropped;
- on SIGINT/SIGTERM stops the workers, marks their runs FAILED ("interrupted"), removes their
  temporary folders and raises ``GridInterrupted`` (the command line prints how to resume).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_module
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from bench.harness import outbox, tracking
from bench.harness.cpuload import ForeignLoad
from bench.harness.grid import Cell
from bench.harness.worker import Outcome, worker_main

POLL_SECONDS = 0.2
SCRATCH_PREFIX = "dpbench-"
_SCRATCH_NAME = re.compile(rf"{SCRATCH_PREFIX}(\d+)-")


@dataclass
class GridReport:
    finished: list[Cell] = field(default_factory=list)
    failed: list[tuple[Cell, str]] = field(default_factory=list)
    skipped: list[Cell] = field(default_factory=list)
    held_elsewhere: list[tuple[Cell, str]] = field(default_factory=list)
    interrupted: list[Cell] = field(default_factory=list)
    not_started: list[Cell] = field(default_factory=list)  # left at the start deadline, for a rerun
    run_ids: dict[str, str] = field(default_factory=dict)
    outboxed: int = 0  # results written to the outbox instead of MLflow
    unsaved: list[tuple[Cell, str]] = field(default_factory=list)  # neither logged nor outboxed: (cell, kept folder)
    reaped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.interrupted and not self.unsaved

    def summary(self) -> str:
        first = (
            f"{len(self.finished)} finished, {len(self.failed)} failed, "
            f"{len(self.skipped)} skipped (already finished; --rerun forces)"
        )
        if self.held_elsewhere:
            first += f", {len(self.held_elsewhere)} left to another live runner"
        if self.interrupted:
            first += f", {len(self.interrupted)} interrupted"
        if self.not_started:
            first += f", {len(self.not_started)} not started (--deadline passed; the same command runs them)"
        lines = [first]
        lines += [f"  FAILED {cell.label}: {error}" for cell, error in self.failed]
        lines += [f"  NOT RUN {cell.label}: {why}" for cell, why in self.held_elsewhere]
        lines += [
            f"  NOT SAVED {cell.label}: neither the store nor the outbox took it; its results stay in {place}"
            for cell, place in self.unsaved
        ]
        if self.outboxed:
            lines.append(
                f"{self.outboxed} result(s) are in the outbox {outbox.outbox_dir()} (the tracking server was "
                "unreachable); `python -m bench sync` logs them once it is back"
            )
        return "\n".join(lines)


class GridInterrupted(Exception):
    """SIGINT or SIGTERM stopped the grid; everything that ended is logged."""

    def __init__(self, signal_name: str, report: GridReport) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.report = report

    @property
    def exit_code(self) -> int:
        return 128 + (signal.SIGTERM if self.signal_name == "SIGTERM" else signal.SIGINT)


class _Stop(BaseException):
    """Raised by the SIGTERM handler (SIGINT raises KeyboardInterrupt)."""


# --- executors --------------------------------------------------------------------------------


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


# --- the runner -------------------------------------------------------------------------------


def available_cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def clean_stale_scratch(root: Path | None = None) -> int:
    """Remove temporary cell folders of runners that are gone (kill -9 leaves them behind)."""
    removed = 0
    root = root or Path(tempfile.gettempdir())
    for folder in root.glob(f"{SCRATCH_PREFIX}*-*"):
        match = _SCRATCH_NAME.match(folder.name)
        if match and folder.is_dir() and not tracking.pid_alive(int(match.group(1))):
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def run_grid(
    cells: list[Cell],
    experiment: str = tracking.DEFAULT_EXPERIMENT,
    jobs: int = 1,
    timeout: float | None = None,
    rerun: bool = False,
    show_progress: bool = True,
    executor: Any = None,
    cores: int | None = None,
    foreign_load: Any = None,
    start_deadline: float | None = None,
) -> GridReport:
    """Run ``cells`` with ``jobs`` worker processes; ``cores`` (default: those this process may
    use) bounds the threads lent to lendable cells' fits, less the cores other programs keep busy
    (``foreign_load.cores_taken()``, default ``ForeignLoad``: a lent thread on a shared core slows
    a fit many times over). From ``start_deadline`` (``time.time()`` seconds) on no cell starts:
    the running ones finish and the rest go to ``report.not_started``."""
    cores = cores or available_cores()
    foreign_load = foreign_load if foreign_load is not None else ForeignLoad()
    report = GridReport()
    common_tags = tracking.run_context_tags()
    mlflow_client = tracking.client()
    online = True
    try:
        tracking.check_tracking(for_writing=True)
    except tracking.TrackingError as error:
        if not tracking.is_remote():
            raise  # a read-only folder is no reason to compute results nobody can store
        online = False
        print(
            f"warning: {error}; results go to the outbox {outbox.outbox_dir()} and "
            "`python -m bench sync` logs them once the server is back",
            file=sys.stderr,
        )

    live_keys: set[str] = set()
    if online:
        if outbox.pending_count():
            logged, errors = outbox.sync(mlflow_client)
            print(f"outbox: logged {logged} waiting result(s)" + (f"; {errors[0]}" if errors else ""), file=sys.stderr)
        experiment_id = tracking.experiment_id(mlflow_client, experiment)
        report.reaped, live_keys = tracking.reap_dead_leases(mlflow_client, experiment_id)
        for label in report.reaped:
            print(f"note: {label} was left RUNNING by a runner that is gone; marked FAILED (killed)", file=sys.stderr)
        done_keys = set() if rerun else tracking.finished_cell_keys(mlflow_client, experiment_id)
    else:
        experiment_id = None
        done_keys = set() if rerun else outbox.finished_keys(experiment)
    clean_stale_scratch()

    pending = []
    for cell in cells:
        if cell.key in done_keys:
            report.skipped.append(cell)
        elif cell.key in live_keys:
            report.held_elsewhere.append((cell, "claimed by another live runner"))
        else:
            pending.append(cell)
    print(
        f"{len(cells)} cells ({len(pending)} to run, {len(report.skipped)} finished before) → "
        f"experiment {experiment!r} at {tracking.tracking_uri()}" + ("" if online else " (unreachable: outbox)"),
        file=sys.stderr,
    )

    executor = executor or LocalExecutor()
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    running: dict[str, Job] = {}
    mine: set[str] = set()  # run ids this runner claimed
    bar = tqdm(total=len(pending), desc="grid", unit="cell", disable=not show_progress, dynamic_ncols=True)

    def to_outbox(job: Job, outcome: Outcome, why: str) -> bool:
        """The result into the outbox; if even that fails (a full or read-only disk), the cell's
        folder is kept where it is, renamed out of the scratch clean-up's reach, and named in
        one line: a result is never deleted, and the grid goes on. False when not outboxed."""
        try:
            place = outbox.put(experiment, job.cell, outcome, job.folder, common_tags, job.run_id)
        except Exception as error:  # noqa: BLE001 — anything: the result must survive it
            kept = job.folder.parent.parent / f"dpbench-kept-{job.cell.key}-{time.strftime('%Y%m%d-%H%M%S')}"
            try:
                job.folder.rename(kept)  # a rename needs no free space
            except OSError:
                kept = job.folder
            job.folder = kept
            report.unsaved.append((job.cell, str(kept)))
            bar.write(
                f"warning: {job.cell.label} could not be logged ({why}) nor saved to the outbox "
                f"({type(error).__name__}: {' '.join(str(error).split())[:160]}); its results stay in {kept}"
            )
            return False
        report.outboxed += 1
        if why != "tracking unreachable":
            bar.write(f"warning: logging {job.cell.label} failed ({why}); kept in the outbox {place.parent}")
        return True

    def finish(job: Job, outcome: Outcome) -> None:
        nonlocal online
        saved = True
        if online:
            try:
                report.run_ids[job.cell.key] = tracking.log_cell(
                    mlflow_client, experiment_id, job.cell, outcome, job.folder, common_tags, job.run_id
                )
            except Exception as error:  # server gone, artifact store full: keep the result on disk
                saved = to_outbox(job, outcome, f"{type(error).__name__}: {' '.join(str(error).split())[:200]}")
                online = False  # later cells go straight to the outbox; `sync` catches up
        else:
            saved = to_outbox(job, outcome, "tracking unreachable")
        if outcome.status == "FINISHED":
            report.finished.append(job.cell)
        else:
            report.failed.append((job.cell, outcome.error or "unknown error"))
            bar.write(f"FAILED {job.cell.label}: {outcome.error}")
        if saved:
            shutil.rmtree(job.folder, ignore_errors=True)
        bar.update(1)

    def on_sigterm(signum, frame):
        raise _Stop("SIGTERM")

    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_term = signal.signal(signal.SIGTERM, on_sigterm) if in_main_thread else None
    stopped_by: str | None = None
    try:
        queue_index = 0
        shown_status = ""
        last_beat = time.monotonic()

        def past_deadline() -> bool:
            return start_deadline is not None and time.time() >= start_deadline

        def adopt_orphans() -> bool:
            """At the end of its own cells: take over the cells another runner held when this
            one started but has since abandoned (killed: its lease is dead). Without this, a
            runner killed mid-grid leaves its cell to nobody while a live runner exits 0."""
            if not online or not report.held_elsewhere or past_deadline():
                return False
            try:
                finished = tracking.finished_cell_keys(mlflow_client, experiment_id)
                adopted = []
                for cell, why in list(report.held_elsewhere):
                    if cell.key in finished:
                        continue
                    reaped, live = tracking.reap_dead_leases(mlflow_client, experiment_id, cell.key)
                    if cell.key in live:
                        continue
                    for label in reaped:
                        bar.write(
                            f"note: {label} was abandoned by a runner that is gone; marked FAILED (killed) "
                            "and taken over"
                        )
                    report.held_elsewhere.remove((cell, why))
                    adopted.append(cell)
            except Exception:  # noqa: BLE001 — the store stopped answering: nothing to adopt now
                return False
            pending.extend(adopted)
            bar.total += len(adopted)
            return bool(adopted)

        while queue_index < len(pending) or running or adopt_orphans():
            if queue_index < len(pending) and past_deadline():
                report.not_started.extend(pending[queue_index:])
                bar.update(len(pending) - queue_index)
                queue_index = len(pending)
            while queue_index < len(pending) and len(running) < jobs:
                cell = pending[queue_index]
                queue_index += 1
                run_id = None
                if online:
                    try:
                        run_id, why = tracking.claim_cell(mlflow_client, experiment_id, cell, common_tags, mine, rerun)
                    except Exception as error:
                        online, why = False, ""
                        bar.write(
                            f"warning: the tracking store stopped answering ({type(error).__name__}); "
                            f"results go to the outbox {outbox.outbox_dir()}"
                        )
                    if online and run_id is None:
                        report.held_elsewhere.append((cell, why))
                        bar.update(1)
                        continue
                folder = scratch / f"cell-{queue_index}"
                folder.mkdir()
                job = Job(cell, folder, time.monotonic(), run_id)
                executor.start(job)
                running[str(folder)] = job

            executor.progress(running)
            if hasattr(executor, "lend"):
                executor.lend(running, max(1, cores - foreign_load.cores_taken()))
            for key, job in list(running.items()):
                outcome = executor.poll(job)
                if outcome is not None:
                    del running[key]
                    finish(job, outcome)
                elif timeout is not None and time.monotonic() - job.started > timeout:
                    executor.kill(job)
                    del running[key]
                    finish(job, Outcome(status="FAILED", error=f"timed out after {timeout:g} s (--timeout)"))
            if online and running and time.monotonic() - last_beat > tracking.HEARTBEAT_S:
                last_beat = time.monotonic()
                try:
                    tracking.heartbeat(mlflow_client, [j.run_id for j in running.values() if j.run_id])
                except Exception:
                    pass  # the lease goes stale; logging the cell will find out whether the store is gone
            if running:
                status = " | ".join(f"{j.cell.label} fit {100 * j.fraction:.0f}%" for j in running.values())
                if status != shown_status:
                    bar.set_postfix_str(status, refresh=True)
                    shown_status = status
                time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        stopped_by = "SIGINT"
    except _Stop:
        stopped_by = "SIGTERM"
    finally:
        # Stop the workers whatever happened; a second Ctrl-C must not cut this short.
        masked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}) if in_main_thread else None
        try:
            for job in running.values():
                try:
                    executor.kill(job)
                except Exception:
                    pass
                report.interrupted.append(job.cell)
                if online and job.run_id:
                    try:
                        tracking.mark_failed(
                            mlflow_client,
                            job.run_id,
                            f"interrupted ({stopped_by or 'runner error'}) before the cell finished; rerun to resume",
                        )
                    except Exception:
                        pass  # left RUNNING; the next start reaps it (its pid is gone by then)
            executor.close()
            bar.close()
            if not any(Path(place).is_relative_to(scratch) for _, place in report.unsaved):
                shutil.rmtree(scratch, ignore_errors=True)
        finally:
            if in_main_thread:
                # signals that arrived during the clean-up are dropped (ignored while unblocked),
                # then the caller's handlers come back
                previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                signal.pthread_sigmask(signal.SIG_SETMASK, masked)
                signal.signal(signal.SIGINT, previous_int)
                signal.signal(signal.SIGTERM, previous_term)
    if stopped_by is not None:
        raise GridInterrupted(stopped_by, report)
    return report
