"""``--executor ray`` on a real local Ray cluster: a head node and one worker node on 127.0.0.1,
1 CPU each, started with ``ray start --block`` (so the test stops exactly the processes it
started, by their process group)."""

from __future__ import annotations

import os
import signal
import shutil
import subprocess
import time

import pytest

from bench.harness import tracking
from tests.conftest import run_cli
from tests.conftest import free_port

pytestmark = pytest.mark.slow

SMOKE = ["--datasets", "gmm2d", "--eps", "1", "--profile", "smoke", "--no-progress", "--seeds", "0-1"]
GRID = ["run", "--methods", "real,dp-merf", *SMOKE, "--set", "dp-merf.epochs=1", "--jobs", "2"]


@pytest.fixture
def ray_cluster(workdir):
    ray = shutil.which("ray")
    if ray is None:
        pytest.skip("Ray is not installed (pip install 'dpbench[ray]')")
    port = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}  # workdir's PYTHONPATH/DPBENCH_PLUGINS included
    common = ["--num-cpus", "1", "--num-gpus", "0", "--block", "--disable-usage-stats"]
    head = subprocess.Popen(
        [
            ray,
            "start",
            "--head",
            "--node-ip-address",
            "127.0.0.1",
            "--port",
            str(port),
            "--include-dashboard",
            "false",
            *common,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    nodes = [head]
    try:
        wait_for_cpus(address, 1, env)
        nodes.append(
            subprocess.Popen(
                [ray, "start", "--address", address, "--node-ip-address", "127.0.0.1", *common],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        wait_for_cpus(address, 2, env)
        yield address
    finally:
        for node in reversed(nodes):
            os.killpg(node.pid, signal.SIGTERM)  # `ray start --block` stops its node's processes
            try:
                node.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(node.pid, signal.SIGKILL)


def wait_for_cpus(address: str, cpus: int, env: dict, timeout: float = 180) -> None:
    probe = (
        "import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
        "print(int(ray.cluster_resources().get('CPU', 0)))"
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = subprocess.run(["python", "-c", probe, address], capture_output=True, text=True, env=env, timeout=120)
        if result.returncode == 0 and result.stdout.strip() and int(result.stdout.strip().splitlines()[-1]) >= cpus:
            return
        time.sleep(2)
    pytest.fail(f"the Ray cluster at {address} did not reach {cpus} CPUs")


def metrics(experiment: str) -> dict[tuple[str, str], dict[str, float]]:
    client = tracking.client()
    experiment_id = tracking.experiment_id(client, experiment, create=False)
    return {
        (run.data.params["method"], run.data.params["seed"]): {
            k: v for k, v in run.data.metrics.items() if not k.startswith("time.") and k != "peak_memory_mib"
        }
        for run in tracking.iter_runs(client, experiment_id)
    }


def test_a_ray_cluster_gives_the_local_executor_s_metrics(ray_cluster):
    on_ray = run_cli(*GRID, "--experiment", "ray", "--executor", "ray", "--ray-address", ray_cluster)
    assert on_ray.returncode == 0, on_ray.stdout + on_ray.stderr
    assert "4 finished, 0 failed" in on_ray.stdout
    local = run_cli(*GRID, "--experiment", "local")
    assert local.returncode == 0, local.stdout + local.stderr
    ray_metrics, local_metrics = metrics("ray"), metrics("local")
    assert len(ray_metrics) == 4 and "nll.mean" in ray_metrics[("dp-merf", "0")]
    assert ray_metrics == local_metrics
    client = tracking.client()
    run = next(tracking.iter_runs(client, tracking.experiment_id(client, "ray", create=False)))
    assert "ledger.json" in {a.path for a in client.list_artifacts(run.info.run_id)}  # files came back to the driver


def test_a_gpu_request_on_a_gpu_less_cluster_fails_fast(ray_cluster):
    started = time.monotonic()
    result = run_cli(*GRID, "--executor", "ray", "--ray-address", ray_cluster, "--device", "cuda")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "has no GPU" in lines[0] and "Traceback" not in result.stderr, result.stderr
    assert time.monotonic() - started < 120
