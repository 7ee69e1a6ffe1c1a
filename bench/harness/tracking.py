"""MLflow: where every cell is logged and from where tables are regenerated.

The store defaults to an embedded SQLite database ``mlflow.db`` (artifacts in ``mlartifacts/``)
in the working directory; ``MLFLOW_TRACKING_URI`` points it at a tracking server instead.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterator

from bench.harness.grid import Cell
from bench.harness.worker import Outcome

DEFAULT_EXPERIMENT = "dpbench"
PACKAGES = ("torch", "numpy", "autodp", "opacus", "scikit-learn", "xgboost", "pandas", "mlflow", "pytorch-fid")


def tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlflow.db'}"


def client():
    import logging

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    from mlflow.tracking import MlflowClient

    for noisy in ("alembic", "mlflow.store.db.utils"):  # schema migrations of a new store
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return MlflowClient(tracking_uri=tracking_uri())


def experiment_id(mlflow_client, name: str, create: bool = True) -> str | None:
    experiment = mlflow_client.get_experiment_by_name(name)
    if experiment is not None:
        return experiment.experiment_id
    if not create:
        return None
    artifact_location = None
    if tracking_uri().startswith("sqlite:"):
        artifact_location = (Path.cwd() / "mlartifacts").as_uri()
    return mlflow_client.create_experiment(name, artifact_location=artifact_location)


def iter_runs(mlflow_client, experiment: str, filter_string: str = "") -> Iterator[Any]:
    page_token = None
    while True:
        page = mlflow_client.search_runs(
            [experiment], filter_string=filter_string, max_results=1000, page_token=page_token
        )
        yield from page
        page_token = page.token
        if not page_token:
            return


def finished_cell_keys(mlflow_client, experiment: str) -> set[str]:
    return {
        run.data.tags["cell_key"]
        for run in iter_runs(mlflow_client, experiment, "attributes.status = 'FINISHED'")
        if "cell_key" in run.data.tags
    }


def package_versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        try:
            found[f"version.{name}"] = version(name)
        except PackageNotFoundError:
            found[f"version.{name}"] = "not installed"
    return found


def git_commit() -> str:
    source = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=source, capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def cell_params(cell: Cell) -> dict[str, str]:
    params = {
        "method": cell.method,
        "dataset": cell.dataset,
        "epsilon": "inf" if math.isinf(cell.epsilon) else repr(float(cell.epsilon)),
        "delta": cell.delta,
        "seed": str(cell.seed),
        "profile": cell.profile,
        "calibrator": cell.calibrator,
        "protocol": cell.protocol,
        "evaluators": ",".join(cell.evaluators),
    }
    params.update({f"hp.{name}": str(value) for name, value in cell.params.items()})
    for evaluator, settings in cell.evaluator_settings.items():
        params.update({f"eval.{evaluator}.{name}": str(value) for name, value in settings.items()})
    return params


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def log_cell(mlflow_client, experiment: str, cell: Cell, outcome: Outcome, folder: Path, common_tags: dict[str, str]) -> str:
    """Create one MLflow run for the cell with everything it produced; returns the run id."""
    from mlflow.entities import Metric, Param

    tags = {
        **common_tags,
        **outcome.tags,
        "cell_key": cell.key,
        "cell": cell.label,
        "method": cell.method,
        "dataset": cell.dataset,
    }
    if outcome.error:
        tags["error"] = outcome.error[:4000]
    run = mlflow_client.create_run(experiment, tags=tags, run_name=cell.label)
    run_id = run.info.run_id
    now = int(time.time() * 1000)
    params = {**cell_params(cell), **{k: str(v) for k, v in outcome.params.items()}}
    metrics = [Metric(k, float(v), now, 0) for k, v in outcome.metrics.items() if not math.isnan(float(v))]
    for chunk in _chunks([Param(k, v) for k, v in params.items()], 100):
        mlflow_client.log_batch(run_id, params=chunk)
    for chunk in _chunks(metrics, 1000):
        mlflow_client.log_batch(run_id, metrics=chunk)
    (folder / "config.json").write_text(
        json.dumps(
            {"cell": cell.to_dict(), "key": cell.key, "param_sources": cell.param_sources},
            indent=2, default=str,
        )
    )
    mlflow_client.log_artifacts(run_id, str(folder))
    mlflow_client.set_terminated(run_id, status=outcome.status)
    return run_id


def load_ledger(mlflow_client, run_id: str) -> dict[str, Any]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = mlflow_client.download_artifacts(run_id, "ledger.json", tmp)
        return json.loads(Path(path).read_text())
