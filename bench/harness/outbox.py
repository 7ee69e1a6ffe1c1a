"""The outbox: cell results kept on disk while the tracking server cannot take them.

When MLflow is unreachable (at the start of a run, or when logging a cell fails), each cell's
outcome goes to ``./.dpbench-outbox/<entry>/`` (``$DPBENCH_OUTBOX`` overrides the folder):
``entry.json`` (experiment, the cell, its outcome: metrics, params, tags, error, and the claimed
run id if there was one) and ``artifacts/`` (the files the cell wrote). ``python -m bench sync``,
and the next ``run`` that reaches the server, log every entry and delete it.

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
from bench.harness.grid import Cell
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

    @staticmethod
    def read(folder: Path) -> "Entry":
        data = json.loads((folder / ENTRY_FILE).read_text())
        return Entry(
            folder,
            data["experiment"],
            Cell.from_dict(data["cell"]),
            Outcome(**data["outcome"]),
            data["common_tags"],
            data.get("claim_run_id"),
            data.get("logged_run_id"),
        )

    def write(self) -> None:
        data: dict[str, Any] = {
            "experiment": self.experiment,
            "cell": self.cell.to_dict(),
            "outcome": self.outcome.__dict__,
            "common_tags": self.common_tags,
            "claim_run_id": self.claim_run_id,
            "logged_run_id": self.logged_run_id,
        }
        temporary = self.folder / f".{ENTRY_FILE}.part"
        temporary.write_text(json.dumps(data, default=str, allow_nan=True, indent=1))
        temporary.replace(self.folder / ENTRY_FILE)  # atomic: an entry is whole or absent


def put(
    experiment: str, cell: Cell, outcome: Outcome, artifacts: Path, common_tags: dict[str, str],
    claim_run_id: str | None = None,
) -> Path:
    """Store one cell's result; the artifacts folder is copied (it lives in the runner's scratch)."""
    root = outbox_dir()
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=root, prefix=f"{time.strftime('%Y%m%d-%H%M%S')}-{cell.key}-"))
    shutil.copytree(artifacts, folder / "artifacts")
    Entry(folder, experiment, cell, outcome, common_tags, claim_run_id, None).write()
    return folder


def entries() -> Iterator[Entry]:
    root = outbox_dir()
    if not root.is_dir():
        return
    for folder in sorted(root.iterdir()):
        if (folder / ENTRY_FILE).is_file():
            yield Entry.read(folder)


def finished_keys(experiment: str) -> set[str]:
    """Cells whose FINISHED result waits in the outbox: a run without the server skips them."""
    return {e.cell.key for e in entries() if e.experiment == experiment and e.outcome.status == "FINISHED"}


def sync(mlflow_client) -> tuple[int, list[str]]:
    """Log every entry to the tracking store and delete it; returns (logged, errors). Stops at
    the first connection problem (the rest stays for the next sync)."""
    logged, errors = 0, []
    experiments: dict[str, str] = {}
    for entry in entries():
        try:
            if entry.experiment not in experiments:
                experiments[entry.experiment] = tracking.experiment_id(mlflow_client, entry.experiment)
            experiment = experiments[entry.experiment]
            run_id = entry.logged_run_id
            if run_id is not None and mlflow_client.get_run(run_id).info.status != "RUNNING":
                shutil.rmtree(entry.folder)  # logged before; the deletion was what was missing
                logged += 1
                continue
            if run_id is None:
                claim = entry.claim_run_id
                if claim is not None and _is_running(mlflow_client, claim):
                    run_id = claim
                else:
                    tags = tracking.cell_tags(entry.cell, entry.common_tags)
                    run_id = tracking.create_cell_run(mlflow_client, experiment, entry.cell, tags)
                entry.logged_run_id = run_id
                entry.write()
            tracking.fill_cell_run(mlflow_client, run_id, entry.cell, entry.outcome, entry.folder / "artifacts")
            shutil.rmtree(entry.folder)
            logged += 1
        except Exception as error:  # the server went away again: keep this and the rest
            errors.append(f"{entry.cell.label}: {type(error).__name__}: {' '.join(str(error).split())[:200]}")
            break
    return logged, errors


def _is_running(mlflow_client, run_id: str) -> bool:
    try:
        return mlflow_client.get_run(run_id).info.status == "RUNNING"
    except Exception:
        return False


def pending_count() -> int:
    return sum(1 for _ in entries())
