"""The results record: one JSON file per finished run under ``results/runs/<experiment>/``, the
committed, reviewable text form of an MLflow store.

A record holds everything needed to check a number without the machine that produced it: the
typed cell (``Cell``, its one codec; the source of every setting a table reads), the split's
sizes, the params as MLflow shows them (text for the UI: nothing reads a setting from them), its metrics,
its privacy ledger (releases, public facts, caveats and the independent accountant's ε), the code
that ran (commit, whether the tree was dirty and the diff's hash) and the machine (CPU, platform,
package versions, device). ``python -m bench export`` writes records from a store;
``python -m bench import`` puts them back into a local store for the MLflow UI; ``table``,
``runs``, ``plot`` and ``report`` read them with ``--records``.

A record's file is named by its cell (or, for an audit, its run), so exporting a rerun of a cell
replaces the earlier record: the folder holds the latest finished run of each cell, as tables do.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterator

from bench.core.errors import UsageError
from bench.harness.cell import CELL_FILE, Cell
from bench.harness.legacy import LegacyRunError
from bench.harness.record_json import loose, shape_problems, strict

SCHEMA = "dpbench.run-record/2"  # /1: before key version 2 (benchmarks/rekey_records.py reads it)
# tags that belong to a run's bookkeeping on one machine, not to its result
_TRANSIENT_TAGS = ("lease.", "mlflow.")
LEGACY_LEDGER = (
    "not recorded: the run was logged before records kept ledgers, and its artifacts stayed on the "
    "machine that ran it; rerun the cell to record one"
)
FAILED_LEDGER = "none: the cell failed (its record holds the reason, no numbers)"


class RecordError(UsageError, ValueError):
    """A record folder or file that cannot be read or written as asked."""


@dataclass(frozen=True)
class Code:
    commit: str
    dirty: bool
    diff_sha256: str | None = None  # of `git diff HEAD` outside results/, when dirty

    @staticmethod
    def from_tags(tags: dict[str, str]) -> "Code":
        logged = tags.get("git_commit", "unknown")
        return Code(logged.removesuffix("-dirty"), logged.endswith("-dirty"), tags.get("git_diff_sha256"))


@dataclass(frozen=True)
class SplitFacts:
    """What the worker learned of the cell's split: its sizes and the δ it resolved against them
    (0 for a non-private run; None when not logged)."""

    n_train: int
    n_test: int
    delta: float | None

    @staticmethod
    def from_logged(params: dict[str, str]) -> "SplitFacts | None":
        """From the outcome's params as MLflow stores them (text); None for a run that failed
        before its split was loaded."""
        if "n_train" not in params:
            return None
        delta = params.get("delta_resolved")
        return SplitFacts(int(params["n_train"]), int(params["n_test"]), None if delta is None else float(delta))


@dataclass(frozen=True)
class Record:
    experiment: str
    run_id: str
    key: str  # the cell key; an audit's run id
    kind: str  # "cell" or "audit"
    label: str
    status: str
    start_time: int  # ms since the epoch, as MLflow keeps it
    end_time: int | None
    cell: Cell | None  # None for an audit
    split: SplitFacts | None
    params: dict[str, str]  # as MLflow shows them (text for the UI and `import`)
    metrics: dict[str, float]
    timings: dict[str, float]  # time.* seconds and peak memory: diagnostics of this machine
    tags: dict[str, str]
    code: Code
    machine: dict[str, Any]
    ledger: dict[str, Any] | None
    ledger_missing: str | None = None
    schema: str = SCHEMA

    def file_name(self) -> str:
        # an audit's label is its run's name, "audit M/D (…)"; a run named otherwise still says it is one
        stem = self.label if self.kind == "cell" or self.label.startswith("audit ") else f"audit {self.label}"
        readable = re.sub(r"[^A-Za-z0-9.=+-]+", "_", stem.replace("ε", "eps")).strip("_")
        return f"{readable}__{self.key}.json"

    def to_json(self) -> str:
        plain = {
            **{f.name: getattr(self, f.name) for f in fields(self)},
            "code": asdict(self.code),
            "cell": self.cell.to_json() if self.cell else None,
            "split": asdict(self.split) if self.split else None,
        }
        return (
            json.dumps(strict(plain), indent=1, sort_keys=True, ensure_ascii=False, default=str, allow_nan=False) + "\n"
        )

    @staticmethod
    def from_json(text: str, where: str = "a record") -> "Record":
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("schema") != SCHEMA:
                schema = data.get("schema") if isinstance(data, dict) else f"a JSON {type(data).__name__}"
                raise RecordError(f"{where} is not a {SCHEMA} record (schema {schema!r})")
            problems = shape_problems(data)
            if problems:
                raise RecordError(f"{where} is not a readable run record: {'; '.join(problems)}")
            data = loose(data)
            data["code"] = Code(**data["code"])
            data["cell"] = Cell.from_json(data["cell"]) if data["cell"] is not None else None
            data["split"] = SplitFacts(**data["split"]) if data["split"] is not None else None
            data["metrics"] = {k: float(v) for k, v in data["metrics"].items()}
            data["timings"] = {k: float(v) for k, v in data["timings"].items()}
            return Record(**data)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:  # CellCodecError is a ValueError
            raise RecordError(f"{where} is not a readable run record ({error})") from None

    def all_metrics(self) -> dict[str, float]:
        return {**self.metrics, **self.timings}


def _is_timing(name: str) -> bool:
    return name.startswith("time.") or name.endswith(("peak_mib", "_wall_s", "fit_seconds"))


def machine_of(tags: dict[str, str]) -> dict[str, Any]:
    return {
        "cpu": tags.get("cpu", "not recorded"),
        "cores": tags.get("machine.cores", "not recorded"),
        "platform": tags.get("machine.platform", "not recorded"),
        "python": tags.get("machine.python", "not recorded"),
        "device": tags.get("device", "cpu"),
        "versions": {k.removeprefix("version."): v for k, v in sorted(tags.items()) if k.startswith("version.")},
    }


def record_of(experiment: str, run: Any, cell: Cell | None, ledger: dict | None) -> Record:
    """The record of an MLflow run (``mlflow.entities.Run``), its typed cell (None: an audit) and
    its ledger. A run logged before key version 2 gets its cell's version-2 key (its logged
    ``cell_key``/``setup_key`` tags kept as ``….v1``)."""
    tags = {k: v for k, v in run.data.tags.items() if not k.startswith(_TRANSIENT_TAGS)}
    if cell is not None:
        tags = rekeyed_tags(tags, cell)
    metrics = dict(run.data.metrics)
    return Record(
        experiment=experiment,
        run_id=run.info.run_id,
        key=cell.key if cell is not None else run.info.run_id,
        kind="cell" if cell is not None else "audit",
        label=tags.get("cell") or run.data.tags.get("mlflow.runName", run.info.run_id),
        status=run.info.status,
        start_time=int(run.info.start_time),
        end_time=int(run.info.end_time) if run.info.end_time else None,
        cell=cell,
        split=SplitFacts.from_logged(dict(run.data.params)) if cell is not None else None,
        params=dict(run.data.params),
        metrics={k: v for k, v in metrics.items() if not _is_timing(k)},
        timings={k: v for k, v in metrics.items() if _is_timing(k)},
        tags=tags,
        code=Code.from_tags(tags),
        machine=machine_of(tags),
        ledger=ledger,
        ledger_missing=None
        if ledger is not None or cell is None
        else (FAILED_LEDGER if run.info.status == "FAILED" else LEGACY_LEDGER),
    )


def rekeyed_tags(tags: dict[str, str], cell: Cell) -> dict[str, str]:
    """The run's tags with its cell's keys; keys logged under key version 1 are kept as ``….v1``."""
    tags = dict(tags)
    for name, key in (("cell_key", cell.key), ("setup_key", cell.setup_key)):
        if name in tags and tags[name] != key:
            tags[f"{name}.v1"] = tags[name]
        tags[name] = key
    return tags


# --- the folder ---------------------------------------------------------------------------------


def iter_record_files(folder: Path, experiment: str | None = None) -> Iterator[Path]:
    if not folder.is_dir():
        raise RecordError(f"no record folder {folder}; write one with `python -m bench export --out {folder}`")
    folders = [folder / experiment] if experiment else sorted(p for p in folder.iterdir() if p.is_dir())
    for sub in folders:
        if sub.is_dir():
            yield from sorted(sub.glob("*.json"))


def load_records(folder: Path, experiment: str | None = None) -> list[Record]:
    return [Record.from_json(path.read_text(), str(path)) for path in iter_record_files(folder, experiment)]


def record_experiments(folder: Path) -> list[str]:
    if not folder.is_dir():
        raise RecordError(f"no record folder {folder}; write one with `python -m bench export --out {folder}`")
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and any(p.glob("*.json")))


def write_record(folder: Path, record: Record) -> Path | None:
    """Write ``record`` unless the folder holds a later run of the same key, or a finished one
    where ``record`` failed; returns the path written (None: kept the other). Written through a temporary file, so a kill never leaves
    half a record."""
    target_dir = folder / record.experiment
    target_dir.mkdir(parents=True, exist_ok=True)
    existing = list(target_dir.glob(f"*__{record.key}.json"))
    for path in existing:
        earlier = Record.from_json(path.read_text(), str(path))
        finished = (earlier.status == "FINISHED", record.status == "FINISHED")
        if finished == (True, False) or (finished[0] == finished[1] and earlier.start_time > record.start_time):
            return None  # a finished run is never replaced by a failed one, else the later run wins
    path = target_dir / record.file_name()
    with tempfile.NamedTemporaryFile("w", dir=target_dir, delete=False, suffix=".tmp", encoding="utf-8") as handle:
        handle.write(record.to_json())
    Path(handle.name).replace(path)
    for old in existing:
        if old != path:
            old.unlink()
    return path


# --- export and import ----------------------------------------------------------------------------


@dataclass
class ExportSummary:
    written: int = 0
    kept_later: int = 0
    dirty: list[str] = field(default_factory=list)  # labels refused (or, with allow_dirty, exported marked)
    without_ledger: int = 0
    experiments: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # "label: why", runs whose cell cannot be rebuilt

    def text(self, folder: Path, allow_dirty: bool) -> str:
        parts = [f"exported {self.written} run record(s) of {len(self.experiments)} experiment(s) to {folder}"]
        if self.kept_later:
            parts.append(f"{self.kept_later} kept: the folder holds a later run of the cell")
        if self.dirty:
            parts.append(
                f"{len(self.dirty)} from uncommitted code " + ("exported, marked dirty" if allow_dirty else "skipped")
            )
        if self.without_ledger:
            parts.append(f"{self.without_ledger} without a ledger (artifacts not in this store)")
        if self.unreadable:
            parts.append(f"{len(self.unreadable)} skipped: their cell cannot be rebuilt (listed above)")
        return "; ".join(parts)


def failure_reason(tags: dict[str, str]) -> str | None:
    """A failed cell's one-line reason when the failure is a result (a library that raised, a fit
    past its --timeout), None when it is not: stopped by a signal or a deadline, or its runner
    gone (reaped by the next runner): rerun to resume; or results waiting in the outbox (``sync``)."""
    from bench.harness.leases import REAPED

    error = tags.get("error", "")
    if not error or error.startswith(("interrupted", REAPED)) or "outbox.waiting" in tags:
        return None
    return " ".join(error.split())[:300]


def exportable_runs(mlflow_client: Any, experiment: str) -> list[Any]:
    """The finished cell runs (the latest of each cell) and the audits of an experiment, and the
    latest failed run of each cell that has no finished one, where the failure is a result
    (:func:`failure_reason`): a library that crashed is a recorded cell, not a lost one."""
    from bench.harness import tracking

    experiment_id = tracking.experiment_id(mlflow_client, experiment, create=False)
    if experiment_id is None:
        return []
    latest: dict[str, Any] = {}
    failed: dict[str, Any] = {}
    for run in tracking.iter_runs(mlflow_client, experiment_id, "attributes.status = 'FINISHED'"):
        tags = run.data.tags
        if "cell_key" not in tags and tags.get("kind") != "audit":
            continue  # e.g. an encoder checkpoint: its artifact is the result, not a table cell
        key = tags.get("cell_key", run.info.run_id)
        if key not in latest or latest[key].info.start_time <= run.info.start_time:
            latest[key] = run
    for run in tracking.iter_runs(mlflow_client, experiment_id, "attributes.status = 'FAILED'"):
        key = run.data.tags.get("cell_key")
        if key is None or key in latest or failure_reason(run.data.tags) is None:
            continue
        if key not in failed or failed[key].info.start_time <= run.info.start_time:
            failed[key] = run
    return sorted([*latest.values(), *failed.values()], key=lambda run: run.info.start_time)


def export_store(
    mlflow_client: Any, experiments: list[str] | None, folder: Path, allow_dirty: bool, progress: Any = None
) -> ExportSummary:
    names = experiments or sorted(e.name for e in mlflow_client.search_experiments() if e.name != "Default")
    summary = ExportSummary()
    for experiment in names:
        runs = exportable_runs(mlflow_client, experiment)
        if runs:
            summary.experiments.append(experiment)
        for run in runs:
            if run.data.tags.get("git_commit", "").endswith("-dirty"):
                summary.dirty.append(run.data.tags.get("cell", run.info.run_id))
                if not allow_dirty:
                    continue
            from bench.harness import tracking

            try:
                cell = tracking.stored_cell(mlflow_client, run) if "cell_key" in run.data.tags else None
            except LegacyRunError as error:  # one unreadable run must not keep the others from the record
                summary.unreadable.append(f"{run.data.tags.get('cell', run.info.run_id)} ({run.info.run_id}): {error}")
                continue
            record = record_of(
                experiment, run, cell, tracking.json_artifact(mlflow_client, run.info.run_id, "ledger.json")
            )
            summary.without_ledger += record.ledger_missing == LEGACY_LEDGER
            if write_record(folder, record) is None:
                summary.kept_later += 1
            else:
                summary.written += 1
            if progress is not None:
                progress(record)
    return summary


IMPORTED_TAG = "record.run_id"


def import_records(mlflow_client: Any, folder: Path, experiment: str | None = None) -> tuple[int, int]:
    """Log each record as a finished run of its experiment in the store (tags, params, metrics,
    its ledger and cell as artifacts); a record already imported (tag ``record.run_id``), or
    whose run is in this store already (exported from it), is skipped. Returns (imported, skipped)."""
    from mlflow.entities import Metric, Param

    from bench.harness import tracking

    imported = skipped = 0
    for record in load_records(folder, experiment):
        experiment_id = tracking.experiment_id(mlflow_client, record.experiment)
        done = tracking.iter_runs(mlflow_client, experiment_id, f"tags.`{IMPORTED_TAG}` = '{record.run_id}'")
        if next(iter(done), None) is not None or _is_the_original_run(mlflow_client, record.run_id, experiment_id):
            skipped += 1  # imported before, or exported from this very store: the run is here already
            continue
        tags = {**record.tags, IMPORTED_TAG: record.run_id, "mlflow.runName": record.label}
        run_id = mlflow_client.create_run(experiment_id, start_time=record.start_time, tags=tags).info.run_id
        metrics = [Metric(k, v, record.start_time, 0) for k, v in record.all_metrics().items() if not math.isnan(v)]
        params = [Param(k, v) for k, v in record.params.items()]
        for start in range(0, len(params), 100):
            mlflow_client.log_batch(run_id, params=params[start : start + 100])
        for start in range(0, len(metrics), 1000):
            mlflow_client.log_batch(run_id, metrics=metrics[start : start + 1000])
        with tempfile.TemporaryDirectory() as tmp:
            for name, content in (("ledger.json", record.ledger), (CELL_FILE, record.cell and record.cell.to_json())):
                if content is not None:
                    (Path(tmp) / name).write_text(json.dumps(content, indent=2))
            if any(Path(tmp).iterdir()):
                mlflow_client.log_artifacts(run_id, tmp)
        mlflow_client.set_terminated(run_id, status=record.status, end_time=record.end_time)
        imported += 1
    return imported, skipped


def _is_the_original_run(mlflow_client: Any, run_id: str, experiment_id: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        run = mlflow_client.get_run(run_id)
    except MlflowException:
        return False
    return run.info.experiment_id == experiment_id and run.info.lifecycle_stage == "active"


def ledger_problem(record: Record) -> str | None:
    """Why the record's privacy claim does not stand, judged from the record alone: the ledger's
    target is not the run's (ε, δ), it spends more than its target, or the independent accountant
    (dp-accounting, :mod:`bench.privacy.independent`) recomputed from the recorded releases finds
    more than the claim or another value than the one recorded. None when it stands (or there is
    no ledger: see ``ledger_missing``)."""
    from bench.privacy.independent import TOLERANCE, independent_epsilon, loss_signature
    from bench.privacy.releases import release_from_dict

    ledger = record.ledger
    if ledger is None or record.cell is None:
        return None
    target, spent = ledger["target"], ledger["spent"]
    epsilon = record.cell.epsilon
    if float(target["epsilon"]) != epsilon and not (math.isinf(epsilon) and math.isinf(float(target["epsilon"]))):
        return f"the ledger's target ε = {target['epsilon']} is not the run's ε = {epsilon}"
    delta = record.split.delta if record.split is not None else None
    if delta is not None and not math.isclose(float(target["delta"]), delta, rel_tol=1e-9):
        return f"the ledger's target δ = {target['delta']} is not the run's δ = {delta}"
    if math.isinf(float(target["epsilon"])):
        return None  # a non-private run claims nothing
    claimed = float(spent["epsilon"])
    if not claimed <= float(target["epsilon"]) * (1 + TOLERANCE) + 1e-9:
        return f"the ledger spends ε = {claimed:.6g}, more than its target {target['epsilon']}"
    # at the δ the claim is made at, as the run-time check (a pure ledger spends δ = 0)
    delta_spent = float(spent.get("delta", target["delta"]))
    # the seeds of a setup record the same mechanisms: each distinct set is recomputed once per process
    releases = [release_from_dict(r) for r in ledger["releases"]]
    key = loss_signature(releases)
    if (key, delta_spent) not in _RECOMPUTED:
        _RECOMPUTED[(key, delta_spent)] = independent_epsilon(releases, delta_spent).epsilon
    found = _RECOMPUTED[(key, delta_spent)]
    if found > claimed * (1 + TOLERANCE) + 1e-9:
        return f"the independent accountant finds ε = {found:.6g} for the recorded releases; the ledger claims {claimed:.6g}"
    recorded = (ledger.get("independent") or {}).get("epsilon")
    if recorded is not None and not math.isclose(float(recorded), found, rel_tol=1e-6, abs_tol=1e-9):
        return f"the record says the independent accountant found ε = {recorded}, it now finds {found:.6g}"
    return None


_RECOMPUTED: dict[tuple[str, float], float] = {}  # (releases, δ) → the independent accountant's ε
