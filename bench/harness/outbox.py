"""The outbox: cell results kept on disk while the tracking server cannot take them.

When MLflow is unreachable (at the start of a run, or when logging a cell fails), each cell's
outcome goes to ``./.dpbench-outbox/<entry>/`` (``$DPBENCH_OUTBOX`` overrides the folder):
``entry.json`` (experiment, the cell, its outcome: metrics, params, tags, error, and the claimed
run id if there was one) and ``artifacts/`` (the files the cell wrote). ``python -m bench sync``,
and the next ``run`` that reaches the server, log every entry and delete it.

Each entry names the store it was meant for (the tracking URI of the run that saved it): ``sync``
logs an entry only into that store, so a result kept while server X was down never lands in
another store that a later ``run`` or ``sync`` points at; such entries wait, and ``sync`` says
which store they are for. (Entries saved before the URI was recorded go to the current store.)

Logging an entry exactly once: the id of the run created for it is written into ``entry.json``
before anything is logged into that run, so a sync that dies half-way resumes into the same run
instead of creating a second one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from bench.harness import tracking
from bench.harness.cell import Cell
from bench.harness.worker import Outcome

OUTBOX_VARIABLE = "DPBENCH_OUTBOX"
ENTRY_FILE = "entry.json"


def outbox_dir() -> Path:
    return Path(os.environ.get(OUTBOX_VARIABLE) or Path.cwd() / ".dpbench-outbox")


@dataclass
class Entry:
    folder: Path
    experiment: str
    cell: Cell
    outcome: Outcome
    common_tags: dict[str, str]
    claim_run_id: str | None
    logged_run_id: str | None
    tracking_uri: str | None = None  # the store it is for; None: saved before this was recorded

    def is_for(self, uri: str) -> bool:
        return self.tracking_uri is None or self.tracking_uri == uri

    @staticmethod
    def read(folder: Path) -> "Entry":
        data = json.loads((folder / ENTRY_FILE).read_text())
        return Entry(
            folder,
            data["experiment"],
            Cell.from_json(data["cell"]),
            Outcome(**data["outcome"]),
            data["common_tags"],
            data.get("claim_run_id"),
            data.get("logged_run_id"),
            data.get("tracking_uri"),
        )

    def write(self) -> None:
        data: dict[str, Any] = {
            "experiment": self.experiment,
            "cell": self.cell.to_json(),
            "outcome": self.outcome.__dict__,
            "common_tags": self.common_tags,
            "claim_run_id": self.claim_run_id,
            "logged_run_id": self.logged_run_id,
            "tracking_uri": self.tracking_uri,
        }
        temporary = self.folder / f".{ENTRY_FILE}.part"
        temporary.write_text(json.dumps(data, default=str, allow_nan=True, indent=1))
        temporary.replace(self.folder / ENTRY_FILE)  # atomic: an entry is whole or absent


def put(
    experiment: str,
    cell: Cell,
    outcome: Outcome,
    artifacts: Path,
    common_tags: dict[str, str],
    claim_run_id: str | None = None,
) -> Path:
    """Store one cell's result, moving the artifacts folder (from the runner's scratch) into it.
    A failure (a full or read-only disk) leaves no partial entry behind and the artifacts where
    they were, and raises."""
    root = outbox_dir()
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=root, prefix=f"{time.strftime('%Y%m%d-%H%M%S')}-{cell.key}-"))
    try:
        shutil.copytree(artifacts, folder / "artifacts")
        Entry(folder, experiment, cell, outcome, common_tags, claim_run_id, None, tracking.tracking_uri()).write()
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # an entry is whole or absent
        raise
    return folder


def entries() -> Iterator[Entry]:
    root = outbox_dir()
    if not root.is_dir():
        return
    for folder in sorted(root.iterdir()):
        if (folder / ENTRY_FILE).is_file():
            yield Entry.read(folder)


def finished_keys(experiment: str) -> set[str]:
    """Cells whose FINISHED result waits in the outbox for the current store: a run without the
    server skips them."""
    uri = tracking.tracking_uri()
    return {
        e.cell.key for e in entries() if e.experiment == experiment and e.outcome.status == "FINISHED" and e.is_for(uri)
    }


def sync(mlflow_client) -> tuple[int, list[str]]:
    """Log every entry meant for the current store and delete it; returns (logged, errors).
    Stops at the first connection problem (the rest stays for the next sync). Entries for other
    stores stay (:func:`elsewhere` counts them)."""
    logged, errors = 0, []
    experiments: dict[str, str] = {}
    uri = tracking.tracking_uri()
    for entry in entries():
        if not entry.is_for(uri):
            continue
        try:
            if entry.experiment not in experiments:
                experiments[entry.experiment] = tracking.experiment_id(mlflow_client, entry.experiment)
            experiment = experiments[entry.experiment]
            run_id = entry.logged_run_id
            if run_id is not None and not _open_for_sync(mlflow_client, run_id):
                shutil.rmtree(entry.folder)  # logged before; the deletion was what was missing
                logged += 1
                continue
            if run_id is None:
                claim = entry.claim_run_id
                if claim is not None and _claim_open_for_sync(mlflow_client, claim):
                    run_id = claim
                else:
                    tags = tracking.cell_tags(entry.cell, entry.common_tags)
                    run_id = tracking.create_cell_run(mlflow_client, experiment, entry.cell, tags)
                entry.logged_run_id = run_id
                entry.write()
            tracking.fill_cell_run(mlflow_client, run_id, entry.cell, entry.outcome, entry.folder / "artifacts")
            _unmark_waiting(mlflow_client, run_id, entry.outcome.error)
            shutil.rmtree(entry.folder)
            logged += 1
        except Exception as error:  # the server went away again: keep this and the rest
            errors.append(f"{entry.cell.label}: {type(error).__name__}: {' '.join(str(error).split())[:200]}")
            break
    return logged, errors


WAITING_TAG = "outbox.waiting"


def mark_waiting(run_ids: list[str], why: str) -> None:
    """End the claimed runs whose results went to the outbox (an artifact folder full, the store
    gone) as FAILED, saying that each result waits there; ``sync`` fills these same runs, so a
    cell never ends with a second run. Only if the store answers a 5-s probe: a store that is
    gone leaves them RUNNING, and sync fills them all the same."""
    try:
        tracking.check_tracking(for_writing=False)
        mlflow_client = tracking.client()
        for run_id in run_ids:
            mlflow_client.set_tag(run_id, WAITING_TAG, "1")
            mlflow_client.set_tag(
                run_id, "error", f"{why}; it waits in the outbox: `python -m bench sync` logs it into this run"
            )
            mlflow_client.set_terminated(run_id, status="FAILED")
    except Exception:  # noqa: BLE001 — the store does not answer: the runs stay RUNNING, sync still finds them
        pass


def _unmark_waiting(mlflow_client, run_id: str, own_error: str | None) -> None:
    tags = mlflow_client.get_run(run_id).data.tags
    if WAITING_TAG in tags:
        mlflow_client.delete_tag(run_id, WAITING_TAG)
        if not own_error:  # the 'not logged' note is the run's error no more
            mlflow_client.delete_tag(run_id, "error")


def _open_for_sync(mlflow_client, run_id: str) -> bool:
    """The run is still this entry's to fill: RUNNING (its runner lost the store), or ended as
    waiting for this entry (:func:`mark_waiting`). Raises when the store does not answer."""
    run = mlflow_client.get_run(run_id)
    return run.info.status == "RUNNING" or run.data.tags.get(WAITING_TAG) == "1"


def _claim_open_for_sync(mlflow_client, run_id: str) -> bool:
    try:
        return _open_for_sync(mlflow_client, run_id)
    except Exception:  # noqa: BLE001 — deleted, or unreadable: the entry gets a run of its own
        return False


def pending_count() -> int:
    """Entries waiting for the current store."""
    uri = tracking.tracking_uri()
    return sum(1 for e in entries() if e.is_for(uri))


def elsewhere() -> dict[str, int]:
    """{store: entries} of the entries meant for a store other than the current one."""
    uri, found = tracking.tracking_uri(), {}
    for entry in entries():
        if not entry.is_for(uri):
            found[entry.tracking_uri] = found.get(entry.tracking_uri, 0) + 1
    return found
