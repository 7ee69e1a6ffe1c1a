"""A real ``mlflow server`` on 127.0.0.1: the grid logs to it and tables are read back from it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable, "-m", "mlflow", "server",
            "--backend-store-uri", f"sqlite:///{tmp_path / 'server.db'}",
            "--artifacts-destination", str(tmp_path / "server-artifacts"),
            "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            if server.poll() is not None:
                pytest.fail(f"mlflow server exited: {server.stderr.read().decode()[-2000:]}")
            time.sleep(1)
    else:
        server.kill()
        pytest.fail("mlflow server did not answer within 120 s")
    yield url, tmp_path
    os.killpg(server.pid, 15)
    server.wait(timeout=30)


def test_grid_logs_to_a_remote_tracking_server(workdir, mlflow_server):
    url, server_dir = mlflow_server
    env = {"MLFLOW_TRACKING_URI": url}
    result = run_cli(
        "run", "--methods", "real,dp-merf", "--datasets", "gmm2d", "--eps", "1", "--profile", "smoke",
        "--set", "dp-merf.epochs=1", "--experiment", "remote", "--no-progress", env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 finished" in result.stdout
    assert not (workdir / "mlflow.db").exists()  # nothing went to the local store

    table = run_cli("table", "--experiment", "remote", "--metric", "nll.mean", env=env)
    assert table.returncode == 0 and "dp-merf" in table.stdout and "real" in table.stdout

    again = run_cli(
        "run", "--methods", "real,dp-merf", "--datasets", "gmm2d", "--eps", "1", "--profile", "smoke",
        "--set", "dp-merf.epochs=1", "--experiment", "remote", "--no-progress", env=env,
    )
    assert "0 finished, 0 failed, 2 skipped" in again.stdout  # resume works against the server too
    ledgers = list((server_dir / "server-artifacts").rglob("ledger.json"))
    assert len(ledgers) == 2  # artifacts went through the server's artifact proxy
