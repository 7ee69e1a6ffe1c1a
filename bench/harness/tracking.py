"""MLflow: where every cell is logged and from where tables are regenerated.

The store defaults to an embedded SQLite database ``mlflow.db`` (artifacts in ``mlartifacts/``)
in the working directory; ``MLFLOW_TRACKING_URI`` points it at a tracking server instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import importlib.util
import os
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from bench.core.errors import UsageError
from bench.harness.cell import CELL_FILE, Cell
from bench.harness.worker import Outcome

DEFAULT_EXPERIMENT = "dpbench"


# MLflow's own HTTP defaults (7 retries with exponential backoff, 120 s per request) turn a dead
# tracking server into minutes of silence; a benchmark run should notice within seconds and fall
# back to the outbox. Users can still raise both through the same variables.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}
PROBE_SETTINGS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}


class TrackingError(UsageError, RuntimeError):
    """The tracking store cannot be used (server unreachable, folder read-only); one line that
    says how to fix it."""


def tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlflow.db'}"


def is_default_store() -> bool:
    return not os.environ.get("MLFLOW_TRACKING_URI")


def is_remote() -> bool:
    return tracking_uri().startswith(("http://", "https://"))


def check_writable_folder(folder: Path, what: str) -> None:
    """Refuse a folder that cannot take files, by creating one (``os.access`` says yes to root
    even on a read-only mount)."""
    import tempfile

    try:
        handle, name = tempfile.mkstemp(dir=folder, prefix=".dpbench-write-check-")
        os.close(handle)
        os.unlink(name)
    except OSError as error:
        raise TrackingError(
            f"cannot write {what} in {folder} ({error.strerror or error}); run from a writable folder or set "
            "MLFLOW_TRACKING_URI to a writable place, e.g. MLFLOW_TRACKING_URI=sqlite:////tmp/dpbench/mlflow.db"
        ) from None


def check_writable_store(path: Path, what: str) -> None:
    """Refuse an SQLite store file that cannot be written (a read-only mount, an immutable file):
    opening it to append writes nothing, and fails where a run's first write would."""
    try:
        open(path, "ab").close()
    except OSError as error:
        raise TrackingError(
            f"{what} cannot be written ({error.strerror or error}); point MLFLOW_TRACKING_URI at a writable store, "
            "or read this one with table/report/export"
        ) from None


def short_reason(error: BaseException) -> str:
    text = " ".join(str(error).split())
    for marker in ("Connection refused", "timed out", "Name or service not known", "No route to host"):
        if marker in text:
            return marker.lower()
    return (text[:160] + "…") if len(text) > 160 else text


def check_tracking(for_writing: bool) -> None:
    """Fail fast with one line when the store cannot be used: a tracking server that does not
    answer within seconds, or (default store) a working folder where ``mlflow.db`` cannot be
    written or, for reading, does not exist. Call it before ``client()``: MLflow opens the
    SQLite store when the client is made, and retries a failing open for minutes."""
    if is_default_store():
        database = Path.cwd() / "mlflow.db"
        if for_writing:
            check_writable_folder(Path.cwd(), "the MLflow store mlflow.db")
            if database.exists():
                check_writable_store(database, f"the MLflow store {database}")
        elif not database.exists():
            raise TrackingError(
                f"no MLflow store at {database}; run `python -m bench run` first here, or set MLFLOW_TRACKING_URI"
            )
        return
    check_store_uri(tracking_uri(), for_writing)
    if not is_remote():
        return
    saved = {name: os.environ.get(name) for name in PROBE_SETTINGS}
    os.environ.update(PROBE_SETTINGS)
    try:
        client().search_experiments(max_results=1)
    except Exception as error:  # requests' and MLflow's errors alike: the server did not answer
        raise TrackingError(
            f"the MLflow tracking server at {tracking_uri()} is unreachable ({short_reason(error)}); "
            "start it, or unset MLFLOW_TRACKING_URI to use ./mlflow.db"
        ) from None
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


STORE_SCHEMES = ("sqlite", "http", "https", "postgresql", "mysql", "mssql", "databricks")
# SQLAlchemy's default driver module per database, and module names of drivers named in a URI (db+driver://)
DATABASE_DRIVERS = {"postgresql": "psycopg2", "mysql": "MySQLdb", "mssql": "pyodbc"}
DRIVER_MODULES = {"mysqldb": "MySQLdb", "mysqlconnector": "mysql.connector"}
SQLITE_HEADER = b"SQLite format 3\x00"


def check_store_uri(uri: str, for_writing: bool) -> None:
    """A store URI MLflow can open: a known scheme, and for SQLite a file that is a database (or
    can become one). MLflow's own errors for these come late, as tracebacks or after retries."""
    scheme = uri.split("://", 1)[0] if "://" in uri else "file"
    if scheme == "file":
        raise TrackingError(
            f"MLFLOW_TRACKING_URI={uri}: a file store (a bare path or file://), which this MLflow no longer "
            "writes; use sqlite:///PATH/mlflow.db (a new file is made)"
        )
    base, _, driver = scheme.partition("+")
    if base not in STORE_SCHEMES:
        raise TrackingError(
            f"MLFLOW_TRACKING_URI={uri}: unknown scheme {scheme!r}; use e.g. sqlite:///PATH/mlflow.db "
            "or http://HOST:PORT"
        )
    if base in DATABASE_DRIVERS:
        module = DRIVER_MODULES.get(driver, driver) or DATABASE_DRIVERS[base]
        if importlib.util.find_spec(module) is None:
            raise TrackingError(
                f"MLFLOW_TRACKING_URI={uri}: a {base} store needs the Python driver {module!r}, which is not "
                f"installed; pip install it, or use sqlite:///PATH/mlflow.db"
            )
    if scheme != "sqlite":
        return
    path = Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else None
    if path is None:
        raise TrackingError(f"MLFLOW_TRACKING_URI={uri}: write an SQLite store as sqlite:///PATH (three slashes)")
    if path.is_dir():
        raise TrackingError(f"MLFLOW_TRACKING_URI={uri}: {path} is a folder, not an SQLite file")
    if path.exists() and for_writing:
        check_writable_store(path, f"MLFLOW_TRACKING_URI={uri}: {path}")
    if path.exists():
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
        if header and header != SQLITE_HEADER:
            raise TrackingError(
                f"MLFLOW_TRACKING_URI={uri}: {path} is not an SQLite database (corrupt or another "
                "file); point it at an MLflow store or a new file"
            )
    elif not for_writing:
        raise TrackingError(f"no MLflow store at {path}; run `python -m bench run` with this MLFLOW_TRACKING_URI first")
    elif for_writing:
        check_writable_folder(path.parent if path.parent.exists() else Path.cwd(), f"the MLflow store {path}")


def client():
    import logging

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    for name, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(name, value)
    from mlflow.tracking import MlflowClient

    logging.getLogger("alembic").setLevel(logging.WARNING)  # schema migrations of a new store
    # it logs every database error with its traceback before raising; the runner reports it in one line
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
    with _sqlite_store_lock():  # the client opens the store, and migrates a new one, as it is made
        return MlflowClient(tracking_uri=tracking_uri())


@contextlib.contextmanager
def _sqlite_store_lock() -> Iterator[None]:
    """Held while an SQLite store is opened: MLflow migrates a new store's schema when it is first
    opened, and two runners started together on a new file raced there (one died with "duplicate
    column name" or an alembic error). An exclusive ``flock`` on the store's folder lets one
    process create and migrate the file; the other then opens a finished store."""
    uri = tracking_uri()
    if not uri.startswith("sqlite:///"):
        yield
        return
    folder = Path(uri[len("sqlite:///") :]).parent
    descriptor = os.open(folder if folder.is_dir() else Path.cwd(), os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def experiment_id(mlflow_client, name: str, create: bool = True) -> str | None:
    experiment = mlflow_client.get_experiment_by_name(name)
    if experiment is not None:
        return experiment.experiment_id
    if not create:
        return None
    artifact_location = None
    if tracking_uri().startswith("sqlite:"):
        artifact_location = (Path.cwd() / "mlartifacts").as_uri()
    from mlflow.exceptions import MlflowException

    try:
        return mlflow_client.create_experiment(name, artifact_location=artifact_location)
    except MlflowException:  # another runner created it meanwhile: use theirs
        experiment = mlflow_client.get_experiment_by_name(name)
        if experiment is None:
            raise
        return experiment.experiment_id


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


def has_evaluator_metrics(logged: Iterable[str], evaluator: str) -> bool:
    """Whether the metric names ``logged`` hold one the evaluator declares (``privacy.epsilon_spent``,
    the ledger's, is not the ``privacy`` evaluator's)."""
    from bench.api.registry import EVALUATORS

    declared = EVALUATORS.get(evaluator).metrics
    return any(key.startswith(f"{evaluator}.") and key.rsplit(".", 1)[-1] in declared for key in logged)


def evaluator_complete(run_data: Any, evaluator: str) -> bool:
    """Whether a run holds the evaluator's metrics with none of its parts failed (a part that failed
    — one classifier of twelve timed out — leaves the tag ``errors.<evaluator>``): an incomplete
    one is scored again by ``evaluate`` without ``--rerun``."""
    return has_evaluator_metrics(run_data.metrics, evaluator) and f"errors.{evaluator}" not in run_data.tags


def fitted_setups(mlflow_client, experiment: str) -> dict[str, tuple[str, set[str]]]:
    """setup key → (run id, its metric names) of the finished runs that name their setup (runs
    logged before the setup key was kept are found by their cell key only); the latest wins."""
    found: dict[str, tuple[int, str, set[str]]] = {}
    for run in iter_runs(mlflow_client, experiment, "attributes.status = 'FINISHED'"):
        setup = run.data.tags.get("setup_key")
        if setup and (setup not in found or run.info.start_time > found[setup][0]):
            found[setup] = (run.info.start_time, run.info.run_id, set(run.data.metrics))
    return {setup: (run_id, metrics) for setup, (_, run_id, metrics) in found.items()}


def json_artifact(mlflow_client, run_id: str, name: str) -> Any:
    """A run's JSON artifact, or None when it has none (or its artifacts stay on another machine)."""
    import tempfile

    try:
        with tempfile.TemporaryDirectory() as tmp:
            return json.loads(Path(mlflow_client.download_artifacts(run_id, name, tmp)).read_text())
    except Exception:  # noqa: BLE001 - MLflow raises several types for a missing artifact
        return None


def stored_cell(mlflow_client, run: Any) -> Cell:
    """A cell run's typed cell: its ``cell.json``; a run logged before key version 2 is read once
    by ``bench.harness.legacy`` (from its ``config.json``, else its params)."""
    stored = json_artifact(mlflow_client, run.info.run_id, CELL_FILE)
    if stored is not None:
        return Cell.from_json(stored)
    from bench.harness.legacy import cell_from_v1

    config = json_artifact(mlflow_client, run.info.run_id, "config.json")
    ledger = None if config else json_artifact(mlflow_client, run.info.run_id, "ledger.json")  # its noise source
    return cell_from_v1(config, run.data.params, run.data.tags, ledger)


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def cell_tags(cell: Cell, common_tags: dict[str, str]) -> dict[str, str]:
    return {
        **common_tags,
        "cell_key": cell.key,
        "setup_key": cell.setup_key,
        "cell": cell.label,
        "method": cell.method,
        "dataset": cell.dataset,
    }


def create_cell_run(mlflow_client, experiment: str, cell: Cell, tags: dict[str, str]) -> str:
    """An MLflow run (status RUNNING) for the cell; returns its id."""
    return mlflow_client.create_run(experiment, tags=tags, run_name=cell.label).info.run_id


def fill_cell_run(mlflow_client, run_id: str, cell: Cell, outcome: Outcome, folder: Path) -> None:
    """Log the outcome's params, metrics, tags and the folder's files into ``run_id`` and end it
    with the outcome's status."""
    from mlflow.entities import Metric, Param, RunTag

    tags = dict(outcome.tags)
    if outcome.error:
        tags["error"] = outcome.error[:4000]
    now = int(time.time() * 1000)
    params = {**cell.mlflow_params(), **{k: str(v) for k, v in outcome.params.items()}}
    metrics = [Metric(k, float(v), now, 0) for k, v in outcome.metrics.items() if not math.isnan(float(v))]
    if tags:
        mlflow_client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])
    for chunk in _chunks([Param(k, v) for k, v in params.items()], 100):
        mlflow_client.log_batch(run_id, params=chunk)
    for chunk in _chunks(metrics, 1000):
        mlflow_client.log_batch(run_id, metrics=chunk)
    # the run's stored form: what the record, the report and `bench evaluate` read (not the params)
    (folder / CELL_FILE).write_text(json.dumps(cell.to_json(), indent=2, ensure_ascii=False))
    mlflow_client.log_artifacts(run_id, str(folder))
    mlflow_client.set_terminated(run_id, status=outcome.status)


def log_checkpoint(experiment: str, arch: str, checkpoint: Any) -> str:
    """Log a pretrained encoder checkpoint (``path``, ``key``, ``public``, ``test_accuracy``,
    ``epochs``) as an artifact of ``experiment``, once per content key: a key already logged
    returns that run's id."""
    mlflow_client = client()
    experiment_id_ = experiment_id(mlflow_client, experiment)
    for run in iter_runs(mlflow_client, experiment_id_, f"tags.checkpoint_key = '{checkpoint.key}'"):
        return run.info.run_id
    run = mlflow_client.create_run(
        experiment_id_,
        tags={
            "mlflow.runName": f"{arch} on {checkpoint.public}",
            "kind": "encoder",
            "checkpoint_key": checkpoint.key,
        },
    )
    for key, value in {"arch": arch, "public_data": checkpoint.public, "epochs": checkpoint.epochs}.items():
        mlflow_client.log_param(run.info.run_id, key, str(value))
    mlflow_client.log_metric(run.info.run_id, "test_accuracy", float(checkpoint.test_accuracy))
    mlflow_client.log_artifact(run.info.run_id, str(checkpoint.path))
    mlflow_client.set_terminated(run.info.run_id)
    return run.info.run_id


def log_cell(
    mlflow_client,
    experiment: str,
    cell: Cell,
    outcome: Outcome,
    folder: Path,
    common_tags: dict[str, str],
    run_id: str | None = None,
) -> str:
    """Log one cell with everything it produced, into its claimed run ``run_id`` or a new run;
    returns the run id."""
    if run_id is None:
        run_id = create_cell_run(mlflow_client, experiment, cell, cell_tags(cell, common_tags))
    fill_cell_run(mlflow_client, run_id, cell, outcome, folder)
    return run_id


def load_ledger(mlflow_client, run_id: str) -> dict[str, Any]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = mlflow_client.download_artifacts(run_id, "ledger.json", tmp)
        return json.loads(Path(path).read_text())
