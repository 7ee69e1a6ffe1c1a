"""Leases: which runner is computing a cell.

A runner claims a cell by creating its run (status RUNNING) with lease tags: host, pid and a
heartbeat timestamp it refreshes while the cell runs. Another runner skips a cell whose lease is
alive, and takes over (marks FAILED, then reruns) one whose runner is gone: on the same host, its
pid no longer exists; elsewhere, its heartbeat is older than ``LEASE_STALE_S``.
"""

from __future__ import annotations

import os
import socket
import time

from bench.harness.grid import Cell
from bench.harness.tracking import cell_tags, create_cell_run, iter_runs

HEARTBEAT_S = 15.0
LEASE_STALE_S = 120.0
REAPED = "killed: its runner"  # the error a reaped run carries: the runner died, not the method


def lease_tags() -> dict[str, str]:
    return {"lease.host": socket.gethostname(), "lease.pid": str(os.getpid()), "lease.heartbeat": f"{time.time():.3f}"}


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def lease_alive(tags: dict[str, str], now: float | None = None, mine: set[str] = frozenset(), run_id: str = "") -> bool:
    host, pid = tags.get("lease.host"), tags.get("lease.pid")
    if not host or not pid:
        return False  # a run left RUNNING by a runner that took no lease
    if host == socket.gethostname():
        if int(pid) == os.getpid():
            return run_id in mine  # our pid, but not our claim: a dead runner's pid came back as ours
        return pid_alive(int(pid))
    try:
        beat = float(tags.get("lease.heartbeat", "0"))
    except ValueError:
        return False
    return (now or time.time()) - beat < LEASE_STALE_S


def running_cell_runs(mlflow_client, experiment: str, key: str | None = None) -> list:
    query = "attributes.status = 'RUNNING'" + (f" and tags.cell_key = '{key}'" if key else "")
    return [run for run in iter_runs(mlflow_client, experiment, query) if "cell_key" in run.data.tags]


def reap_dead_leases(mlflow_client, experiment: str, key: str | None = None) -> tuple[list[str], set[str]]:
    """Mark runs left RUNNING by a runner that is gone as FAILED (killed); returns their labels,
    and the cell keys claimed by live runners. ``key``: only that cell's runs."""
    from mlflow.entities import RunTag

    reaped, live = [], set()
    for run in running_cell_runs(mlflow_client, experiment, key):
        tags = run.data.tags
        if lease_alive(tags):
            live.add(tags["cell_key"])
            continue
        who = f"{tags.get('lease.host', '?')}:{tags.get('lease.pid', '?')}"
        mlflow_client.log_batch(
            run.info.run_id,
            tags=[
                RunTag(
                    "error",
                    f"{REAPED} ({who}) stopped without finishing the cell (kill -9, crash or power loss)",
                )
            ],
        )
        mlflow_client.set_terminated(run.info.run_id, status="FAILED")
        reaped.append(tags.get("cell", tags["cell_key"]))
    return reaped, live


def claim_cell(
    mlflow_client, experiment: str, cell: Cell, common_tags: dict[str, str], mine: set[str], rerun: bool
) -> tuple[str | None, str]:
    """Create the cell's RUNNING run with this runner's lease, then look again: if a live runner
    claimed it first (earlier start, ties by run id) or it finished meanwhile, withdraw (delete
    the new run) and return (None, why). Two runners that claim at the same moment both see
    both claims, and exactly one backs off."""
    run_id = create_cell_run(mlflow_client, experiment, cell, {**cell_tags(cell, common_tags), **lease_tags()})
    mine.add(run_id)
    me = mlflow_client.get_run(run_id).info
    for run in iter_runs(mlflow_client, experiment, f"tags.cell_key = '{cell.key}'"):
        if run.info.run_id == run_id:
            continue
        if run.info.status == "FINISHED" and not rerun:
            why = "finished by another runner meanwhile"
        elif (
            run.info.status == "RUNNING"
            and lease_alive(run.data.tags, mine=mine, run_id=run.info.run_id)
            and ((run.info.start_time, run.info.run_id) < (me.start_time, me.run_id))
        ):
            why = f"claimed by a live runner ({run.data.tags.get('lease.host')}:{run.data.tags.get('lease.pid')})"
        else:
            continue
        mine.discard(run_id)
        mlflow_client.delete_run(run_id)
        return None, why
    return run_id, ""


def heartbeat(mlflow_client, run_ids: list[str]) -> None:
    now = f"{time.time():.3f}"
    for run_id in run_ids:
        mlflow_client.set_tag(run_id, "lease.heartbeat", now)


def mark_failed(mlflow_client, run_id: str, error: str) -> None:
    mlflow_client.set_tag(run_id, "error", error[:4000])
    mlflow_client.set_terminated(run_id, status="FAILED")
