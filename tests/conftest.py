"""Shared fixtures: an isolated working folder with its own MLflow store, and test plugins."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# A plugin module with methods that misbehave on purpose; loaded through DPBENCH_PLUGINS so that
# the grid's worker processes (spawned fresh) see them too.
PLUGIN_SOURCE = textwrap.dedent(
    """
    import os, time
    from dataclasses import dataclass, field
    from bench.api import DataKind, MetricSpec, method
    from methods.real import real


    def like_real(name, description, private=False):  # real's kinds, privacy and (no) hyperparameters
        return method(name, description, kinds=frozenset(DataKind), private=private)


    @like_real("test-raising", "raises during fit")
    def raising(data, context):
        raise RuntimeError("deliberate failure for the test")


    @like_real("test-sleeping", "sleeps during fit")
    def sleeping(data, context):
        time.sleep(600)


    @like_real("test-flaky", "fails while the file named by FLAKY_MARKER exists")
    def flaky(data, context):
        if os.path.exists(os.environ.get("FLAKY_MARKER", "/nonexistent")):
            raise RuntimeError("flaky failure")
        return real.fit(data, context)


    @like_real("test-overspending", "releases more than its budget", private=True)
    def overspending(data, context):
        from bench.privacy.ledger import GaussianRelease
        sigma = context.ledger.calibrate_gaussian(1)
        context.ledger.record(GaussianRelease("first", 1.0, sigma))
        context.ledger.record(GaussianRelease("second", 1.0, sigma))
        return real.fit(data, context)


    @like_real("test-slow-while-marked", "sleeps 600 s while the file named by SLOW_MARKER exists, else real")
    def slow_while_marked(data, context):
        if os.path.exists(os.environ.get("SLOW_MARKER", "/nonexistent")):
            time.sleep(600)
        return real.fit(data, context)


    @like_real("test-pausing", "sleeps PAUSE_S seconds (default 15), then real")
    def pausing(data, context):
        time.sleep(float(os.environ.get("PAUSE_S", "15")))
        return real.fit(data, context)


    class _NaNSampler:
        def __init__(self, train):
            self.train = train

        def sample(self, n, labels=None):
            import numpy as np
            from bench.core.data import LabelledData
            x = np.full((n, self.train.x.shape[1]), np.nan, dtype=np.float32)
            return LabelledData(x, self.train.y[:n], self.train.schema)


    @like_real("test-nan-samples", "a diverged generator: samples are NaN")
    def nan_samples(data, context):
        return _NaNSampler(data.rows(trusted="a test plugin that returns NaN rows"))


    class _OtherSchema:
        def __init__(self, train):
            self.train = train

        def sample(self, n, labels=None):
            import dataclasses
            from bench.core.data import LabelledData
            schema = dataclasses.replace(self.train.schema, label="something else")
            return LabelledData(self.train.x[:n], self.train.y[:n], schema)


    @like_real("test-wrong-schema", "samples in another schema")
    def wrong_schema(data, context):
        return _OtherSchema(data.rows(trusted="a test plugin that returns another schema"))


    @like_real("test-full-disk", "its process may write at most FULL_DISK_BYTES (RLIMIT_FSIZE): a full disk")
    def full_disk(data, context):
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
        limit = int(os.environ.get("FULL_DISK_BYTES", "2000"))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        return real.fit(data, context)


    @dataclass(frozen=True)
    class CrashingEvaluator:
        name: str = "test-crashing"
        description: str = "an evaluator that raises"
        data_kinds: frozenset = frozenset({DataKind.TWO_D})
        metrics: dict = field(default_factory=dict)
        run_by_default: bool = False

        def applies_to(self, schema):
            return True

        def evaluate(self, synthetic, real_train, real_test, context):
            raise ZeroDivisionError("deliberate evaluator crash")


    @dataclass(frozen=True)
    class PoolThreads(CrashingEvaluator):
        name: str = "test-pool-threads"
        description: str = "fails unless every BLAS/OpenMP pool is held to one thread (the cell's --threads 1)"

        def evaluate(self, synthetic, real_train, real_test, context):
            from threadpoolctl import threadpool_info
            from bench.api.contracts import Evaluation
            wide = [(pool["internal_api"], pool["num_threads"]) for pool in threadpool_info() if pool["num_threads"] > 1]
            if wide:
                raise RuntimeError(f"pools not held to the cell's threads: {wide}")
            return Evaluation({})


    class SleepingClassifier:  # fitted in a fitpool worker: sleeps as a slow classifier would
        def fit(self, x, y):
            time.sleep(600)
            return self


    @dataclass(frozen=True)
    class PooledSleep(CrashingEvaluator):
        name: str = "test-pooled-sleep"
        description: str = "two 600-s fits in the evaluators' worker pool (the 12 classifiers' way of running)"

        def evaluate(self, synthetic, real_train, real_test, context):
            from evaluators import fitpool
            tasks = [fitpool.Task(i, SleepingClassifier(), False) for i in range(2)]
            fitpool.run_tasks(tasks, real_train.x, real_train.y, real_test.x, n_jobs=2, timeout_s=None)
            raise AssertionError("the fits sleep until the runner is stopped")


    @dataclass(frozen=True)
    class FlakyPart(CrashingEvaluator):
        name: str = "test-flaky-part"
        description: str = "scores 1.0; one part fails (as a timed-out classifier) while $FLAKY_PART_FAILS is set"
        data_kinds: frozenset = frozenset(DataKind)

        metrics: dict = field(default_factory=lambda: {"score": MetricSpec.diagnostic("always 1.0")})

        def evaluate(self, synthetic, real_train, real_test, context):
            from bench.api.contracts import Evaluation
            fails = {"slow-part": "TimeoutError: no result within 1800 s"} if os.environ.get("FLAKY_PART_FAILS") else {}
            return Evaluation({"score": 1.0}, errors=fails)


    from bench.api.registry import EVALUATORS
    EVALUATORS.register(CrashingEvaluator())
    EVALUATORS.register(FlakyPart())
    EVALUATORS.register(PoolThreads())
    EVALUATORS.register(PooledSleep())
    """
)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A fresh working folder (MLflow store inside it) with the test plugins importable."""
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir()
    (plugin_dir / "dpbench_test_plugins.py").write_text(PLUGIN_SOURCE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugin_dir), str(REPO), os.environ.get("PYTHONPATH", "")]))
    # the registries read DPBENCH_PLUGINS once per process: let this process read it before it names
    # the test plugins, so that they reach the CLI's processes only and never the other tests here
    from bench.api.registry import METHODS

    METHODS.names()
    monkeypatch.setenv("DPBENCH_PLUGINS", "dpbench_test_plugins")
    monkeypatch.syspath_prepend(str(plugin_dir))
    return tmp_path


def run_cli(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``python -m bench ARGS`` as a user would, in the current folder."""
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared data mirror: ``$DPBENCH_DATA_DIR``, else ``../shared/data`` beside the repo."""
    path = Path(os.environ.get("DPBENCH_DATA_DIR") or REPO.parent / "shared" / "data")
    if not path.is_dir():
        pytest.skip(f"no data mirror at {path} (set DPBENCH_DATA_DIR to the shared data folder)")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class MlflowServer:
    """A real ``mlflow server`` on 127.0.0.1 over a store in ``folder``: started, stopped and
    started again on the same port and store (slow tests only)."""

    def __init__(self, folder):
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mlflow",
                "server",
                "--backend-store-uri",
                f"sqlite:///{self.folder / 'server.db'}",
                "--artifacts-destination",
                str(self.folder / "server-artifacts"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                "1",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                if self.process.poll() is not None:
                    pytest.fail("mlflow server exited before answering")
                time.sleep(1)
        self.stop()
        pytest.fail("mlflow server did not answer within 120 s")

    def stop(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=60)
            self.process = None

    def runs(self, experiment="ob"):
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=self.url)
        found = client.get_experiment_by_name(experiment)
        return [] if found is None else client.search_runs([found.experiment_id])


def cell_record(cell, metrics: dict, run_id: str | None = None, start_time: int = 0, n_train: int = 1000):
    """A finished run's record of ``cell`` with ``metrics``, as `bench export` writes one (for tables'
    tests that need no store)."""
    from bench.harness.record import Code, Record, SplitFacts

    return Record(
        experiment="test",
        run_id=run_id or cell.key,
        key=cell.key,
        kind="cell",
        label=cell.label,
        status="FINISHED",
        start_time=start_time,
        end_time=start_time + 1,
        cell=cell,
        split=SplitFacts(n_train, n_train // 4, cell.delta.resolve(n_train)),
        params=cell.mlflow_params(),
        metrics=dict(metrics),
        timings={},
        tags={},
        code=Code("0" * 40, False),
        machine={},
        ledger=None,
    )


def plain_cell(
    method: str = "real",
    dataset: str = "cervical",
    epsilon: float = float("inf"),
    seed: int = 0,
    params: dict | None = None,
    **fields,
):
    """A cell of ``method`` on ``dataset`` with the given parameters (none: a method without any)."""
    import math

    from bench.harness.cell import Cell

    fields.setdefault("delta", "1e-05" if math.isfinite(epsilon) else "none")
    fields.setdefault("evaluators", ())
    fields.setdefault("profile", "paper")
    fields.setdefault("calibrator", "tight")
    return Cell(
        method=method,
        dataset=dataset,
        epsilon=epsilon,
        seed=seed,
        params=dict(params or {}),
        param_sources={},
        **fields,
    )


@pytest.fixture
def silent_address():
    """``host:port`` that accepts connections and never answers (a hung proxy, a wrong port)."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"127.0.0.1:{listener.getsockname()[1]}"
    listener.close()
    for connection in held:
        connection.close()
