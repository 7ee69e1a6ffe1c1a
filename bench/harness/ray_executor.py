"""``--executor ray``: each cell a Ray task on a cluster; the driver (the runner) stays the only
MLflow writer.

A task runs ``worker.execute`` in a temporary folder on its node and returns the outcome and the
files the cell wrote (a few hundred kB: samples, plots, the ledger); the driver writes them into
the cell's local folder and logs them exactly as for the local executor. Each task asks for
``cpus`` CPUs (the cell's ``--threads``) and, with ``--device cuda``, one GPU; ``max_calls=1``
gives every cell a fresh worker process, as the local executor does, so no state (threads, CUDA
context, leaked memory) carries over from one cell to the next.

The cluster's nodes need the same code and data paths as the driver (an installed ``dpbench``
and ``--data-dir`` on a shared folder).
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path
from typing import Any

from bench.harness.grid import GridError
from bench.harness.worker import HASH_SEED, Outcome

INSTALL_HINT = "pip install 'dpbench[ray]' (or pip install 'ray[default]')"


def _run_cell(cell_json: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The task: run one cell in a temporary folder, return its outcome and files."""
    import torch

    from bench.harness.worker import execute

    torch.set_num_threads(int(cell_json.get("threads", 1)))  # as the local executor: fixed per cell
    with tempfile.TemporaryDirectory(prefix="dpbench-ray-") as folder:
        outcome = execute(cell_json, folder, lambda fraction: None)
        files = {str(path.relative_to(folder)): path.read_bytes() for path in Path(folder).rglob("*") if path.is_file()}
    return outcome.__dict__, files


REACH_TIMEOUT_S = 5.0
# A Ray cluster's address (its GCS, or the Ray Client server for ray://) is a gRPC server, which
# answers an HTTP/2 client preface with a SETTINGS frame (RFC 9113 §3.4); sending one and waiting
# for that frame tells an address that accepts connections and never answers from a cluster.
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # + an empty SETTINGS
HTTP2_SETTINGS = 4


def check_reachable(address: str | None) -> None:
    """A cluster address (``host:port`` or ``ray://host:port``) must accept a TCP connection and
    answer as a gRPC server within seconds: ``ray.init`` on a dead address retries for many
    minutes (827 s measured), and on one that accepts and never answers it waits for ever.
    ``local``, ``auto`` and no address are Ray's to resolve."""
    if not address or address in ("local", "auto"):
        return
    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise GridError(f"--ray-address {address!r}: expected host:port or ray://host:port (or local, auto)")
    try:
        connection = socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT_S)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise GridError(
            f"--ray-address {address}: nothing answers there ({reason}); start the cluster "
            "(`ray start --head`) or drop --ray-address for a local instance"
        ) from None
    with connection:
        try:
            connection.sendall(HTTP2_PREFACE)
            first_frame = connection.recv(9)
        except OSError:  # a timeout, or reset: no gRPC server there
            first_frame = b""
    if len(first_frame) < 4 or first_frame[3] != HTTP2_SETTINGS:
        raise GridError(
            f"--ray-address {address}: it accepts connections but does not answer as a Ray cluster "
            f"within {REACH_TIMEOUT_S:.0f} s (no gRPC server there); check the host and port "
            "(`ray status` on the head node prints the address)"
        )


class RayExecutor:
    name = "ray"

    def __init__(self, address: str | None, device: str, cpus: float = 1.0) -> None:
        check_reachable(address or os.environ.get("RAY_ADDRESS"))
        try:
            import ray
        except ImportError:
            raise GridError(f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}") from None
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        self.ray = ray
        self.started_here = not ray.is_initialized()
        # Without an address, ray.init() joins whatever cluster /tmp/ray/ray_current_cluster names
        # (and waits for it even when that cluster is dead); "local" always starts a new instance.
        address = address or os.environ.get("RAY_ADDRESS") or "local"
        try:
            ray.init(
                address=address,
                ignore_reinit_error=True,
                include_dashboard=False,
                log_to_driver=False,
                logging_level="ERROR",
                configure_logging=True,
            )
        except Exception as error:  # ConnectionError and Ray's own errors: no cluster at that address
            text = " ".join(str(error).split())[:200]
            raise GridError(
                f"--executor ray: cannot connect to the Ray cluster at {'a new local instance' if address == 'local' else address} ({text})"
            ) from None
        resources = ray.cluster_resources()
        gpus = 1 if device == "cuda" else 0
        if gpus and resources.get("GPU", 0) < 1:
            self.close()
            raise GridError(
                f"--device cuda: the Ray cluster at {'the local instance' if address == 'local' else address} has no GPU "
                f"({resources.get('CPU', 0):g} CPUs); use --device cpu or add a GPU node"
            )
        if resources.get("CPU", 0) < cpus:
            self.close()
            raise GridError(
                f"--threads {cpus:g}: no node of the Ray cluster has {cpus:g} CPUs ({resources.get('CPU', 0):g} in all)"
            )
        self.task = ray.remote(
            num_cpus=cpus,
            num_gpus=gpus,
            max_calls=1,
            max_retries=0,
            runtime_env={"env_vars": {"PYTHONHASHSEED": HASH_SEED}},  # as the local executor (worker.HASH_SEED)
        )(_run_cell)

    def start(self, job) -> None:
        job.handle = self.task.remote(job.cell.to_json())

    def poll(self, job) -> Outcome | None:
        ready, _ = self.ray.wait([job.handle], timeout=0)
        if not ready:
            return None
        try:
            outcome, files = self.ray.get(job.handle)
        except Exception as error:  # the task's process died (OOM, node lost): one line
            first = next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)
            return Outcome(status="FAILED", error=f"Ray task failed: {type(error).__name__}: {first[:300]}")
        for name, content in files.items():
            path = job.folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        return Outcome(**outcome)

    def progress(self, jobs) -> None:
        pass  # tasks report no progress; the bar counts finished cells

    def kill(self, job) -> None:
        try:
            self.ray.cancel(job.handle, force=True)
        except Exception:  # noqa: BLE001 (Ray's errors have no common base)
            pass  # the task ended already, or its cluster went down with it: nothing left to stop

    def close(self) -> None:
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()
