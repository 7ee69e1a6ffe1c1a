"""A real ``mlflow server`` on 127.0.0.1: the grid logs to it and tables are read back from it."""

from __future__ import annotations


import pytest

from tests.conftest import MlflowServer, run_cli

pytestmark = pytest.mark.slow


@pytest.fixture
def mlflow_server(tmp_path):
    server = MlflowServer(tmp_path)
    server.start()
    yield server.url, tmp_path
    server.stop()


REMOTE_GRID = (
    *("run", "--methods", "real,dp-merf", "--datasets", "gmm2d", "--eps", "1", "--profile", "smoke"),
    *("--set", "dp-merf.epochs=1", "--experiment", "remote", "--no-progress"),
)


def test_grid_logs_to_a_remote_tracking_server(workdir, mlflow_server):
    url, server_dir = mlflow_server
    env = {"MLFLOW_TRACKING_URI": url}
    result = run_cli(*REMOTE_GRID, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 finished" in result.stdout
    assert not (workdir / "mlflow.db").exists()  # nothing went to the local store

    table = run_cli("table", "--experiment", "remote", "--metric", "nll.mean", env=env)
    assert table.returncode == 0 and "dp-merf" in table.stdout and "real" in table.stdout

    again = run_cli(*REMOTE_GRID, env=env)
    assert "0 finished, 0 failed, 2 skipped" in again.stdout  # resume works against the server too
    ledgers = list((server_dir / "server-artifacts").rglob("ledger.json"))
    assert len(ledgers) == 2  # artifacts went through the server's artifact proxy
