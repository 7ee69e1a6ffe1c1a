"""Fitting scikit-learn-style classifiers and predicting, in-process or in a pool of workers.

Used by ``evaluators.downstream``, ``evaluators.image_downstream`` and
``evaluators.effective_size``. It imports only the standard library and numpy, and worker
processes import only this module (the ``evaluators`` package's ``__init__`` holds cards only), so
they do not import torch (≈ 700 MiB RSS and seconds less per worker); the estimators arrive pickled and
bring their own imports. A task may name a subset of the training rows (``Task.rows``), so fits
on several subsets of one matrix share its single copy on disk. Tasks run costliest first
(``Task.cost``), so that the slowest fit, not the queue order, bounds the wall time.

The pool (:func:`run_tasks`) exists for three reasons:

* parallelism over classifiers (``n_jobs`` processes, each single-threaded, so ``n_jobs`` cores
  are used, not ``n_jobs`` × BLAS/OpenMP threads);
* a per-task timeout: a task past its deadline has its process killed (a replacement is started
  for the remaining tasks), which a thread or a ``ProcessPoolExecutor`` cannot do;
* isolation: an estimator that segfaults or is killed for memory fails its own task only.

Workers are plain ``subprocess`` children running a fresh interpreter (``python -c`` importing
this module), talking over a socket pair with ``multiprocessing.connection`` framing. Not
``multiprocessing.Process``: the grid runs each cell in a *daemonic* process, and those may not
start ``multiprocessing`` children; and a fresh interpreter is safe where forking a process with
torch/OpenMP threads is not. A worker exits when its socket closes or, while busy, within a
second of the evaluating process disappearing.

Memory: the training and test matrices are written once to ``.npy`` files in a temporary
folder and every worker maps them read-only (``np.load(mmap_mode="r")``), so they are not copied
per worker (estimators that convert dtypes still make their own copy).
"""

from __future__ import annotations

import importlib
import os
import pickle
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import numpy as np

STARTUP_TIMEOUT_S = 300.0  # a worker interpreter must be ready (imports done) within this
# Imported by each worker before it reports ready.
PRELOAD = (
    "threadpoolctl",
    "sklearn.discriminant_analysis",
    "sklearn.ensemble",
    "sklearn.linear_model",
    "sklearn.multiclass",
    "sklearn.naive_bayes",
    "sklearn.neural_network",
    "sklearn.svm",
    "sklearn.tree",
    "xgboost",
)


@dataclass
class TaskResult:
    """What one fit produced: predictions in the original label space (``pred``), the positive
    class's scores (binary tasks with ``want_scores``; else None), the fit time, the distinct
    warning messages raised while fitting, or ``error`` (then everything else is empty)."""

    pred: np.ndarray | None = None
    scores: np.ndarray | None = None
    fit_seconds: float = float("nan")
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    worker_peak_mib: float = float("nan")  # peak RSS of the process that ran it (pool only)


def _predict(
    estimator: Any, present: np.ndarray, x_test: np.ndarray, want_scores: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    pred = present[np.asarray(estimator.predict(x_test)).astype(np.int64)]
    if not want_scores:
        return pred, None
    if len(present) == 2 and hasattr(estimator, "predict_proba"):
        return pred, np.asarray(estimator.predict_proba(x_test), dtype=np.float64)[:, 1]
    if len(present) == 2:
        scores = np.asarray(estimator.decision_function(x_test), dtype=np.float64)
        return pred, scores[:, 1] if scores.ndim == 2 else scores
    return pred, (pred == 1).astype(np.float64)  # one class seen: the classifier is a constant predictor


def fit_stages(
    estimator: Any, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, stages: tuple[Stage, ...]
) -> dict[Hashable, TaskResult]:
    """Fit on (x_train, y_train), predict x_test, once per stage. Labels are re-indexed to 0..m-1
    over the classes present in y_train before fitting (xgboost demands contiguous labels, and
    synthetic data may lack a class) and mapped back afterwards. Single-threaded (BLAS/OpenMP
    limited to one thread) so results do not depend on how many workers run. A stage with
    ``n_estimators`` > 0 grows the ensemble (warm start) to that many members before predicting:
    its ``fit_seconds`` is the time spent growing those members, and its predictions are those of
    an ensemble fitted with that many members, for the ensembles where a warm start draws the same
    members (:data:`GROWABLE`)."""
    from threadpoolctl import threadpool_limits

    present = np.unique(y_train)
    y_fit = np.searchsorted(present, y_train)
    results: dict[Hashable, TaskResult] = {}
    seconds = 0.0
    with threadpool_limits(limits=1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for stage in sorted(stages, key=lambda s: s.n_estimators):
            if stage.n_estimators:
                _grow_to(estimator, stage.n_estimators)
            started = time.perf_counter()
            estimator.fit(x_train, y_fit)
            seconds += time.perf_counter() - started
            pred, scores = _predict(estimator, present, x_test, stage.want_scores)
            results[stage.id] = TaskResult(pred=pred, scores=scores, fit_seconds=seconds)
    messages = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))[:5]
    for result in results.values():
        result.warnings = messages
    return results


# Ensembles whose warm start grows exactly the members a single fit of the larger size would
# (member seeds are drawn in order from one RandomState; tests/test_downstream.py checks bits).
GROWABLE = ("RandomForestClassifier", "ExtraTreesClassifier", "BaggingClassifier")


def ensemble_of(estimator: Any) -> Any:
    """The estimator itself, or a pipeline's final step."""
    steps = getattr(estimator, "steps", None)
    return steps[-1][1] if steps else estimator


def _grow_to(estimator: Any, n_estimators: int) -> None:
    ensemble = ensemble_of(estimator)
    if type(ensemble).__name__ not in GROWABLE:
        raise TypeError(f"{type(ensemble).__name__} cannot be grown by warm start (only {', '.join(GROWABLE)})")
    ensemble.set_params(warm_start=True, n_estimators=n_estimators)


def _peak_rss_mib() -> float:
    """Peak RSS of this process since its exec: VmHWM. (getrusage's ru_maxrss also counts the
    forking parent's pages that a child had before exec, so a worker would report ≥ its parent.)"""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _exit_with_parent(parent_pid: int) -> None:
    """Leave when the evaluating process (our parent) is gone, e.g. killed by the grid on a cell
    timeout: a busy worker would otherwise finish its fit (up to the task timeout) as an orphan.
    The parent's death re-parents us at once, even before anyone reaps it."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(1)


def worker_main(conn: Any, paths: tuple[str, str, str], parent_pid: int) -> None:
    """Loop of a worker process: announce ("ready", pid), then receive (pickled estimator, the
    task's stages, training row indices or None) and answer {stage id: TaskResult}; ``None`` or a
    closed socket ends it."""
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()
    for module in PRELOAD:  # before "ready", so that imports do not count against a fit's timeout
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    x_train, y_train, x_test = (np.load(path, mmap_mode="r") for path in paths)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        payload, stages, rows = message
        try:
            x_fit, y_fit = _training_rows(x_train, y_train, rows)
            answers = fit_stages(pickle.loads(payload), x_fit, y_fit, x_test, stages)
        except BaseException as error:  # noqa: BLE001 - every failure is the task's result
            answers = {stage.id: TaskResult(error=_describe(error)) for stage in stages}
        for result in answers.values():
            result.worker_peak_mib = _peak_rss_mib()
        try:
            conn.send(answers)
        except (BrokenPipeError, OSError):
            return


@dataclass(frozen=True)
class Stage:
    """One answer of a task: the result for ``id``, with the positive class's scores if
    ``want_scores``; ``n_estimators`` > 0 grows the task's ensemble to that size first."""

    id: Hashable
    n_estimators: int = 0
    want_scores: bool = False


@dataclass
class Task:
    """One fit. ``rows``: indices of the training rows this fit uses (e.g. a balanced subset),
    taken in the worker from the shared training matrix; None uses all of them. ``grown``: stages
    of one growing ensemble (:data:`GROWABLE`) answered by this single fit instead of ``id``: the
    paper protocol's 10-, 30-, 70-, 100- and 200-tree forests are the prefixes of one forest."""

    id: Hashable
    estimator: Any
    want_scores: bool
    rows: np.ndarray | None = None
    cost: float = 0.0  # estimated seconds (relative is enough): the pool starts the costliest first
    grown: tuple[Stage, ...] = ()

    @property
    def stages(self) -> tuple[Stage, ...]:
        return self.grown or (Stage(self.id, 0, self.want_scores),)

    def failed(self, error: str) -> dict[Hashable, TaskResult]:
        return {stage.id: TaskResult(error=error) for stage in self.stages}


def _training_rows(x_train: np.ndarray, y_train: np.ndarray, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    if rows is None:
        return x_train, y_train
    return x_train[rows], y_train[rows]


def run_tasks_in_process(
    tasks: list[Task], x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray
) -> dict[Hashable, TaskResult]:
    """Serial, in this process, without timeouts (tests and debugging)."""
    results = {}
    for task in tasks:
        try:
            x_fit, y_fit = _training_rows(x_train, y_train, task.rows)
            results.update(fit_stages(task.estimator, x_fit, y_fit, x_test, task.stages))
        except Exception as error:  # noqa: BLE001
            results.update(task.failed(_describe(error)))
    return results


REPO_ROOT = str(Path(__file__).resolve().parents[1])  # the folder that holds the evaluators package
# A worker interpreter imports only this module: ``evaluators/__init__`` holds the registry's cards
# and imports no evaluator (so no torch: ≈ 700 MiB RSS and seconds of start-up saved per worker).
_BOOT = "import sys; from evaluators.fitpool import _subprocess_main; _subprocess_main(sys.argv[1:])"


def _subprocess_main(argv: list[str]) -> None:
    """Entry point of a worker interpreter: ``FD PARENT_PID X_TRAIN Y_TRAIN X_TEST``."""
    fd, parent_pid, *paths = argv
    worker_main(Connection(int(fd)), tuple(paths), int(parent_pid))


class _Worker:
    def __init__(self, paths: tuple[str, str, str]) -> None:
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (REPO_ROOT, env.get("PYTHONPATH"))))
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(theirs.fileno()), str(os.getpid()), *paths],
                pass_fds=(theirs.fileno(),),
                env=env,
                stdin=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.done = 0

    @property
    def exitcode(self) -> int | None:
        try:
            return self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, kill: bool) -> None:
        if not kill:
            try:
                self.conn.send(None)
                self.process.wait(timeout=5)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                pass
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.conn.close()


def run_tasks(
    tasks: list[Task],
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    n_jobs: int,
    timeout_s: float | None,
) -> dict[Hashable, TaskResult]:
    """Run the tasks on ``n_jobs`` worker processes; each task may take ``timeout_s`` seconds
    (from being handed to a started worker) before its worker is killed and the task recorded
    as timed out. Never raises for a task's failure: failures are results."""
    if not tasks:
        return {}
    results: dict[Hashable, TaskResult] = {}
    # longest-processing-time first: with n_jobs workers the wall time is then close to
    # max(slowest fit, total / n_jobs) instead of depending on where the slow fits sit in the list
    queue = deque(sorted(tasks, key=lambda task: -task.cost))
    with tempfile.TemporaryDirectory(prefix="dpbench-fitpool-") as folder:
        paths = tuple(str(Path(folder) / f"{name}.npy") for name in ("x_train", "y_train", "x_test"))
        for path, array in zip(paths, (x_train, y_train, x_test)):
            np.save(path, np.ascontiguousarray(array))
        starting: dict[_Worker, float] = {}  # worker → deadline of its start
        idle: list[_Worker] = []
        busy: dict[_Worker, tuple[Task, float]] = {}  # worker → (task, deadline)
        failed_starts = 0  # consecutive workers that died before they were ready

        def give_up(reason: str) -> None:
            while queue:
                results.update(queue.popleft().failed(reason))

        try:
            while queue or busy:
                wanted = min(n_jobs, len(queue) + len(busy)) - len(starting) - len(idle) - len(busy)
                for _ in range(max(0, wanted)):
                    starting[_Worker(paths)] = time.monotonic() + STARTUP_TIMEOUT_S
                while queue and idle:
                    worker, task = idle.pop(), queue.popleft()
                    try:
                        worker.conn.send((pickle.dumps(task.estimator), task.stages, task.rows))
                    except (BrokenPipeError, OSError):  # died while idle: replace it, retry the task
                        worker.stop(kill=True)
                        queue.appendleft(task)
                        continue
                    except Exception as error:  # noqa: BLE001 - e.g. an estimator that cannot be pickled
                        results.update(task.failed(f"cannot send the estimator: {_describe(error)}"))
                        idle.append(worker)
                        continue
                    busy[worker] = (task, time.monotonic() + timeout_s if timeout_s else float("inf"))
                if not busy and not starting:
                    continue
                deadlines = [deadline for _, deadline in busy.values()] + list(starting.values())
                wait_s = None if min(deadlines) == float("inf") else max(0.0, min(deadlines) - time.monotonic())
                ready = set(wait([worker.conn for worker in (*starting, *busy)], timeout=wait_s))
                for worker in [w for w in starting if w.conn in ready]:
                    del starting[worker]
                    try:
                        worker.conn.recv()  # ("ready", pid)
                    except (EOFError, OSError):
                        code = worker.exitcode
                        worker.stop(kill=True)
                        failed_starts += 1
                        if failed_starts >= 3:
                            give_up(f"worker processes die while starting (exit code {code}); see their error output")
                        continue
                    failed_starts = 0
                    idle.append(worker)
                for worker in [w for w in busy if w.conn in ready]:
                    task, _ = busy.pop(worker)
                    try:
                        answers = worker.conn.recv()
                    except (EOFError, OSError):
                        code = worker.exitcode
                        hint = " (killed by SIGKILL: out of memory?)" if code == -9 else ""
                        results.update(task.failed(f"worker process died with exit code {code}{hint}"))
                        worker.stop(kill=True)
                        continue
                    results.update(answers)
                    idle.append(worker)
                now = time.monotonic()
                for worker, (task, deadline) in list(busy.items()):
                    if now >= deadline:
                        del busy[worker]
                        worker.stop(kill=True)
                        results.update(task.failed(f"TimeoutError: no result within {timeout_s:g} s; killed"))
                for worker, deadline in list(starting.items()):
                    if now >= deadline:
                        del starting[worker]
                        worker.stop(kill=True)
                        failed_starts += 1
                        if failed_starts >= 3:
                            give_up(f"worker processes did not start within {STARTUP_TIMEOUT_S:g} s")
        finally:
            for worker in idle:
                worker.stop(kill=False)
            for worker in (*busy, *starting):
                worker.stop(kill=True)
    return results
