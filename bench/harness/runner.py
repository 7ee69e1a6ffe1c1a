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

import os
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

from bench.harness import leases, outbox, provenance, tracking
from bench.harness.cpuload import ForeignLoad
from bench.harness.cell import Cell
from bench.harness.executors import Job, LocalExecutor
from bench.harness.preparation import prepare_methods
from bench.harness.worker import Outcome

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

    @property
    def exit_code(self) -> int:
        """1 a cell failed or was not saved, 5 every cell ran but some results wait in the outbox
        (not in the store yet: `bench sync`), else 0 (4, the deadline's code, is the caller's)."""
        return 1 if not self.ok else 5 if self.outboxed else 0

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
                f"{self.outboxed} result(s) are in the outbox {outbox.outbox_dir()} (the tracking store could not "
                "be reached or written); `python -m bench sync` logs them once it can"
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
        if match and folder.is_dir() and not leases.pid_alive(int(match.group(1))):
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


class GridRun:
    """One ``run_grid`` call in phases: ``prepare`` (the store or the outbox, leases, which cells
    are left), then ``loop`` (start, poll, log each cell as it ends), and ``stop`` (whatever ended
    the loop: stop the workers, mark their runs, clean up)."""

    def __init__(
        self,
        cells: list[Cell],
        experiment: str,
        jobs: int,
        timeout: float | None,
        rerun: bool,
        show_progress: bool,
        executor: Any,
        cores: int | None,
        foreign_load: Any,
        start_deadline: float | None,
    ) -> None:
        self.cells, self.experiment, self.jobs, self.timeout, self.rerun = cells, experiment, jobs, timeout, rerun
        self.show_progress, self.start_deadline = show_progress, start_deadline
        self.cores = cores or available_cores()
        self.foreign_load = foreign_load if foreign_load is not None else ForeignLoad()
        self.executor = executor
        self.report = GridReport()
        self.common_tags = provenance.run_context_tags()
        self.client = tracking.client()
        self.online = True
        self.experiment_id: str | None = None
        self.pending: list[Cell] = []
        self.running: dict[str, Job] = {}
        self.mine: set[str] = set()  # run ids this runner claimed
        self.waiting_claims: list[str] = []  # claimed runs whose results went to the outbox
        self.queue_index = 0
        self.shown_status = ""
        self.last_beat = time.monotonic()

    # --- prepare ----------------------------------------------------------------------------

    def prepare(self) -> None:
        try:
            tracking.check_tracking(for_writing=True)
        except tracking.TrackingError as error:
            if not tracking.is_remote():
                raise  # a read-only folder is no reason to compute results nobody can store
            self.online = False
            print(
                f"warning: {error}; results go to the outbox {outbox.outbox_dir()} and "
                "`python -m bench sync` logs them once the server is back",
                file=sys.stderr,
            )
        live_keys: set[str] = set()
        if self.online:
            if outbox.pending_count():
                logged, errors = outbox.sync(self.client)
                print(
                    f"outbox: logged {logged} waiting result(s)" + (f"; {errors[0]}" if errors else ""), file=sys.stderr
                )
            self.experiment_id = tracking.experiment_id(self.client, self.experiment)
            self.report.reaped, live_keys = leases.reap_dead_leases(self.client, self.experiment_id)
            for label in self.report.reaped:
                print(
                    f"note: {label} was left RUNNING by a runner that is gone; marked FAILED (killed)", file=sys.stderr
                )
            done_keys = set() if self.rerun else tracking.finished_cell_keys(self.client, self.experiment_id)
        else:
            done_keys = set() if self.rerun else outbox.finished_keys(self.experiment)
        clean_stale_scratch()
        for cell in self.cells:
            if cell.key in done_keys:
                self.report.skipped.append(cell)
            elif cell.key in live_keys:
                self.report.held_elsewhere.append((cell, "claimed by another live runner"))
            else:
                self.pending.append(cell)
        print(
            f"{len(self.cells)} cells ({len(self.pending)} to run, {len(self.report.skipped)} finished before) → "
            f"experiment {self.experiment!r} at {tracking.tracking_uri()}"
            + ("" if self.online else " (unreachable: outbox)"),
            file=sys.stderr,
        )
        prepare_methods(self.pending)
        self.executor = self.executor or LocalExecutor()
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        self.bar = tqdm(
            total=len(self.pending), desc="grid", unit="cell", disable=not self.show_progress, dynamic_ncols=True
        )

    # --- a cell ends ------------------------------------------------------------------------

    def to_outbox(self, job: Job, outcome: Outcome, why: str) -> bool:
        """The result into the outbox; if even that fails (a full or read-only disk), the cell's
        folder is kept where it is, renamed out of the scratch clean-up's reach, and named in
        one line: a result is never deleted, and the grid goes on. False when not outboxed."""
        try:
            place = outbox.put(self.experiment, job.cell, outcome, job.folder, self.common_tags, job.run_id)
        except Exception as error:  # noqa: BLE001 — anything: the result must survive it
            kept = job.folder.parent.parent / f"dpbench-kept-{job.cell.key}-{time.strftime('%Y%m%d-%H%M%S')}"
            try:
                job.folder.rename(kept)  # a rename needs no free space
            except OSError:
                kept = job.folder
            job.folder = kept
            self.report.unsaved.append((job.cell, str(kept)))
            self.bar.write(
                f"warning: {job.cell.label} could not be logged ({why}) nor saved to the outbox "
                f"({type(error).__name__}: {' '.join(str(error).split())[:160]}); its results stay in {kept}"
            )
            return False
        self.report.outboxed += 1
        if why != "tracking unreachable":
            self.bar.write(f"warning: logging {job.cell.label} failed ({why}); kept in the outbox {place.parent}")
        return True

    def finish(self, job: Job, outcome: Outcome) -> None:
        saved = outboxed = True
        if self.online:
            try:
                self.report.run_ids[job.cell.key] = tracking.log_cell(
                    self.client, self.experiment_id, job.cell, outcome, job.folder, self.common_tags, job.run_id
                )
                outboxed = False
            except Exception as error:  # server gone, artifact store full: keep the result on disk
                why = f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"
                saved = self.to_outbox(job, outcome, why)
                self.online = False  # later cells go straight to the outbox; `sync` catches up
        else:
            saved = self.to_outbox(job, outcome, "tracking unreachable")
        if saved and outboxed and job.run_id:
            self.waiting_claims.append(job.run_id)
        if outcome.status == "FINISHED":
            self.report.finished.append(job.cell)
        else:
            self.report.failed.append((job.cell, outcome.error or "unknown error"))
            self.bar.write(f"FAILED {job.cell.label}: {outcome.error}")
        if saved:
            shutil.rmtree(job.folder, ignore_errors=True)
        self.bar.update(1)

    # --- the loop ---------------------------------------------------------------------------

    def past_deadline(self) -> bool:
        return self.start_deadline is not None and time.time() >= self.start_deadline

    def adopt_orphans(self) -> bool:
        """At the end of its own cells: take over the cells another runner held when this one
        started but has since abandoned (killed: its lease is dead). Without this, a runner
        killed mid-grid leaves its cell to nobody while a live runner exits 0."""
        if not self.online or not self.report.held_elsewhere or self.past_deadline():
            return False
        try:
            finished = tracking.finished_cell_keys(self.client, self.experiment_id)
            adopted = []
            for cell, why in list(self.report.held_elsewhere):
                if cell.key in finished:
                    continue
                reaped, live = leases.reap_dead_leases(self.client, self.experiment_id, cell.key)
                if cell.key in live:
                    continue
                for label in reaped:
                    self.bar.write(
                        f"note: {label} was abandoned by a runner that is gone; marked FAILED (killed) and taken over"
                    )
                self.report.held_elsewhere.remove((cell, why))
                adopted.append(cell)
        except Exception:  # noqa: BLE001 — the store stopped answering: nothing to adopt now
            return False
        prepare_methods(adopted)  # done already unless the method came only with these cells
        self.pending.extend(adopted)
        self.bar.total += len(adopted)
        return bool(adopted)

    def start_cells(self) -> None:
        """Start pending cells while a worker is free (none past the start deadline)."""
        if self.queue_index < len(self.pending) and self.past_deadline():
            self.report.not_started.extend(self.pending[self.queue_index :])
            self.bar.update(len(self.pending) - self.queue_index)
            self.queue_index = len(self.pending)
        while self.queue_index < len(self.pending) and len(self.running) < self.jobs:
            cell = self.pending[self.queue_index]
            self.queue_index += 1
            run_id = None
            if self.online:
                try:
                    run_id, why = leases.claim_cell(
                        self.client, self.experiment_id, cell, self.common_tags, self.mine, self.rerun
                    )
                except Exception as error:
                    self.online, why = False, ""
                    self.bar.write(
                        f"warning: the tracking store stopped answering ({tracking.short_reason(error)}); "
                        f"results go to the outbox {outbox.outbox_dir()}"
                    )
                if self.online and run_id is None:
                    self.report.held_elsewhere.append((cell, why))
                    self.bar.update(1)
                    continue
            folder = self.scratch / f"cell-{self.queue_index}"
            folder.mkdir()
            job = Job(cell, folder, time.monotonic(), run_id)
            self.executor.start(job)
            self.running[str(folder)] = job

    def poll(self) -> None:
        """Progress, lent cores, ended and timed-out cells, the leases' heartbeat, the status line."""
        self.executor.progress(self.running)
        if hasattr(self.executor, "lend"):
            self.executor.lend(self.running, max(1, self.cores - self.foreign_load.cores_taken()))
        for key, job in list(self.running.items()):
            outcome = self.executor.poll(job)
            if outcome is not None:
                del self.running[key]
                self.finish(job, outcome)
            elif self.timeout is not None and time.monotonic() - job.started > self.timeout:
                self.executor.kill(job)
                del self.running[key]
                self.finish(job, Outcome(status="FAILED", error=f"timed out after {self.timeout:g} s (--timeout)"))
        if self.online and self.running and time.monotonic() - self.last_beat > leases.HEARTBEAT_S:
            self.last_beat = time.monotonic()
            try:
                leases.heartbeat(self.client, [j.run_id for j in self.running.values() if j.run_id])
            except Exception:
                pass  # the lease goes stale; logging the cell will find out whether the store is gone
        if self.running:
            status = " | ".join(f"{j.cell.label} fit {100 * j.fraction:.0f}%" for j in self.running.values())
            if status != self.shown_status:
                self.bar.set_postfix_str(status, refresh=True)
                self.shown_status = status
            time.sleep(POLL_SECONDS)

    def loop(self) -> None:
        while self.queue_index < len(self.pending) or self.running or self.adopt_orphans():
            self.start_cells()
            self.poll()

    # --- the end ----------------------------------------------------------------------------

    def stop(self, stopped_by: str | None) -> None:
        """Stop the workers still running (an interrupt or an error ended the loop), mark their
        runs FAILED, close the executor and remove the scratch folder (unless it keeps a result)."""
        for job in self.running.values():
            try:
                self.executor.kill(job)
            except Exception:  # noqa: BLE001 (a process pool's or Ray's, whichever ran it)
                pass  # it exited already: its run is marked FAILED below all the same
            self.report.interrupted.append(job.cell)
            if self.online and job.run_id:
                try:
                    leases.mark_failed(
                        self.client,
                        job.run_id,
                        f"interrupted ({stopped_by or 'runner error'}) before the cell finished; rerun to resume",
                    )
                except Exception:
                    pass  # left RUNNING; the next start reaps it (its pid is gone by then)
        self.executor.close()
        self.bar.close()
        if self.waiting_claims:
            outbox.mark_waiting(self.waiting_claims, "the tracking store did not take the result")
        if not any(Path(place).is_relative_to(self.scratch) for _, place in self.report.unsaved):
            shutil.rmtree(self.scratch, ignore_errors=True)

    def run(self) -> GridReport:
        self.prepare()
        in_main_thread = threading.current_thread() is threading.main_thread()
        previous_term = signal.signal(signal.SIGTERM, _raise_stop) if in_main_thread else None
        stopped_by: str | None = None
        try:
            self.loop()
        except KeyboardInterrupt:
            stopped_by = "SIGINT"
        except _Stop:
            stopped_by = "SIGTERM"
        finally:
            # Stop the workers whatever happened; a second Ctrl-C must not cut this short.
            masked = (
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}) if in_main_thread else None
            )
            try:
                self.stop(stopped_by)
            finally:
                if in_main_thread:
                    # signals that arrived during the clean-up are dropped (ignored while
                    # unblocked), then the caller's handlers come back
                    previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                    signal.pthread_sigmask(signal.SIG_SETMASK, masked)
                    signal.signal(signal.SIGINT, previous_int)
                    signal.signal(signal.SIGTERM, previous_term)
        if stopped_by is not None:
            raise GridInterrupted(stopped_by, self.report)
        return self.report


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop("SIGTERM")


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
    return GridRun(
        cells, experiment, jobs, timeout, rerun, show_progress, executor, cores, foreign_load, start_deadline
    ).run()
