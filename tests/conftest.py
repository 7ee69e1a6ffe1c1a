"""Shared fixtures: an isolated working folder with its own MLflow store, and test plugins."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# A plugin module with methods that misbehave on purpose; loaded through DPBENCH_PLUGINS so that
# the grid's worker processes (spawned fresh) see them too.
PLUGIN_SOURCE = textwrap.dedent(
    '''
    import os, time
    from dataclasses import dataclass, field
    from bench.core.params import HyperParameters, Setting
    from bench.core.contracts import DataKind
    from bench.core.registry import METHODS
    from methods.real import Real


    @dataclass(frozen=True)
    class Raising(Real):
        name: str = "test-raising"
        description: str = "raises during fit"

        def fit(self, train, context):
            raise RuntimeError("deliberate failure for the test")


    @dataclass(frozen=True)
    class Sleeping(Real):
        name: str = "test-sleeping"
        description: str = "sleeps during fit"

        def fit(self, train, context):
            time.sleep(600)


    @dataclass(frozen=True)
    class Flaky(Real):
        name: str = "test-flaky"
        description: str = "fails while the file named by FLAKY_MARKER exists"

        def fit(self, train, context):
            if os.path.exists(os.environ.get("FLAKY_MARKER", "/nonexistent")):
                raise RuntimeError("flaky failure")
            return super().fit(train, context)


    @dataclass(frozen=True)
    class Overspending(Real):
        name: str = "test-overspending"
        description: str = "releases more than its budget"
        private: bool = True
        hyperparameters: HyperParameters = field(default_factory=lambda: HyperParameters(defaults={}))

        def fit(self, train, context):
            from bench.privacy.ledger import GaussianRelease
            sigma = context.ledger.calibrate_gaussian(1)
            context.ledger.record(GaussianRelease("first", 1.0, sigma))
            context.ledger.record(GaussianRelease("second", 1.0, sigma))
            return super().fit(train, context)


    for adapter in (Raising(), Sleeping(), Flaky(), Overspending()):
        METHODS.register(adapter)
    '''
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
