"""MLflow: where every cell is logged and from where tables are regenerated.

The store defaults to an embedded SQLite database ``mlflow.db`` (artifacts in ``mlartifacts/``)
in the working directory; ``MLFLOW_TRACKING_URI`` points it at a tracking server instead.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterable, Iterator

from bench.core.errors import UsageError
from bench.harness.grid import CELL_FILE, Cell
from bench.harness.worker import Outcome

DEFAULT_EXPERIMENT = "dpbench"
PACKAGES = ("torch", "numpy", "autodp", "opacus", "scikit-learn", "xgboost", "pandas", "mlflow", "pytorch-fid")


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


def _short(error: BaseException) -> str:
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
            f"the MLflow tracking server at {tracking_uri()} is unreachable ({_short(error)}); "
            "start it, or unset MLFLOW_TRACKING_URI to use ./mlflow.db"
        ) from None
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


STORE_SCHEMES = ("sqlite", "file", "http", "https", "postgresql", "mysql", "mssql", "databricks")
SQLITE_HEADER = b"SQLite format 3\x00"


def check_store_uri(uri: str, for_writing: bool) -> None:
    """A store URI MLflow can open: a known scheme, and for SQLite a file that is a database (or
    can become one). MLflow's own errors for these come late, as tracebacks or after retries."""
    scheme = uri.split("://", 1)[0] if "://" in uri else "file"
    if scheme.split("+", 1)[0] not in STORE_SCHEMES:
        raise TrackingError(
            f"MLFLOW_TRACKING_URI={uri}: unknown scheme {scheme!r}; use e.g. sqlite:///PATH/mlflow.db "
            "or http://HOST:PORT"
        )
    if scheme != "sqlite":
        return
    path = Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else None
    if path is None:
        raise TrackingError(f"MLFLOW_TRACKING_URI={uri}: write an SQLite store as sqlite:///PATH (three slashes)")
    if path.is_dir():
        raise TrackingError(f"MLFLOW_TRACKING_URI={uri}: {path} is a folder, not an SQLite file")
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


def has_evaluator_metrics(logged: Iterable[str], evaluator: str) -> bool:
    """Whether the metric names ``logged`` hold one the evaluator declares (``privacy.epsilon_spent``,
    the ledger's, is not the ``privacy`` evaluator's)."""
    from bench.api.registry import EVALUATORS

    declared = EVALUATORS.get(evaluator).metrics
    return any(key.startswith(f"{evaluator}.") and key.rsplit(".", 1)[-1] in declared for key in logged)


def fitted_setups(mlflow_client, experiment: str) -> dict[str, tuple[str, set[str]]]:
    """setup key → (run id, its metric names) of the finished runs that name their setup (runs
    logged before the setup key was kept are found by their cell key only); the latest wins."""
    found: dict[str, tuple[int, str, set[str]]] = {}
    for run in iter_runs(mlflow_client, experiment, "attributes.status = 'FINISHED'"):
        setup = run.data.tags.get("setup_key")
        if setup and (setup not in found or run.info.start_time > found[setup][0]):
            found[setup] = (run.info.start_time, run.info.run_id, set(run.data.metrics))
    return {setup: (run_id, metrics) for setup, (_, run_id, metrics) in found.items()}


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
        # results/ is the record the runs write (results/runs), not code: a change there
        # does not make the code that produced a number unnamed
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ":/", ":(top,exclude)results"],
            cwd=source,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def git_diff_sha256() -> str | None:
    """SHA-256 of the uncommitted change to the code (``git diff HEAD`` outside results/), so two
    dirty runs can at least be told apart; None on a clean tree or without git."""
    import hashlib

    try:
        diff = subprocess.run(
            ["git", "diff", "HEAD", "--", ":/", ":(top,exclude)results"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return hashlib.sha256(diff).hexdigest() if diff else None


def compiled_kernels_state() -> str:
    """Whether torch.compile's C++ kernels can run here (a method may use them for long fits, e.g.
    DP-MERF's class sums: the same numbers to float rounding as its eager kernels): the compiler
    found, or why none is used."""
    if os.environ.get("DPBENCH_COMPILE", "1") == "0":
        return "off (DPBENCH_COMPILE=0)"
    import shutil

    compiler = next(
        filter(None, (shutil.which(name) for name in (os.environ.get("CXX") or "", "g++", "c++", "clang++") if name)),
        None,
    )
    return compiler or "none (no C++ compiler)"


def run_context_tags() -> dict[str, str]:
    """What every run of a grid records about the code and the machine it ran on: the commit
    (``-dirty`` when the code had uncommitted changes, with the diff's hash), the platform and the
    package versions (the worker adds the CPU: ``cpu``)."""
    import platform

    commit = git_commit()
    tags = {
        "git_commit": commit,
        **package_versions(),
        "machine.cores": str(os.cpu_count()),
        "machine.platform": platform.platform(),
        "machine.python": platform.python_version(),
        "machine.compiled_kernels": compiled_kernels_state(),
    }
    if commit.endswith("-dirty"):
        tags["git_diff_sha256"] = git_diff_sha256() or "unknown"
    return tags


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


# --- leases: which runner is computing a cell ---------------------------------------------------
#
# A runner claims a cell by creating its run (status RUNNING) with lease tags: host, pid and a
# heartbeat timestamp it refreshes while the cell runs. Another runner skips a cell whose lease
# is alive, and takes over (marks FAILED, then reruns) one whose runner is gone: on the same host,
# its pid no longer exists; elsewhere, its heartbeat is older than LEASE_STALE_S.

HEARTBEAT_S = 15.0
LEASE_STALE_S = 120.0


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
                    f"killed: its runner ({who}) stopped without finishing the cell (kill -9, crash or power loss)",
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


def load_ledger(mlflow_client, run_id: str) -> dict[str, Any]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = mlflow_client.download_artifacts(run_id, "ledger.json", tmp)
        return json.loads(Path(path).read_text())
