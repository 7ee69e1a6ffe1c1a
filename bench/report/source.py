"""Where tables, plots and the report read finished runs from: the MLflow store (the default) or
a results record folder (``--records results/runs``, :mod:`bench.harness.record`). Both give
:class:`~bench.harness.record.Record` values (a cell run's typed cell among them), so every
layout reads either."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from bench.harness.record import Record


class RunSource(Protocol):
    def describe(self) -> str:
        """Where the runs come from, for a report's first paragraph."""

    def experiments(self) -> list[str]: ...

    def finished_runs(self, experiment: str) -> list[Record] | None:
        """The experiment's finished runs (every run, not only the latest of each cell); None
        when there is no such experiment."""

    def artifact(self, run_id: str, name: str) -> bytes | None: ...

    def failed_runs(self, experiment: str) -> list[Record]:
        """The experiment's failed cell runs whose failure is a result (a library's crash, a
        timeout: :func:`bench.harness.record.failure_reason`)."""


class MlflowSource:
    """The store at MLFLOW_TRACKING_URI (else ./mlflow.db)."""

    def describe(self) -> str:
        from bench.harness import tracking

        return f"the MLflow store {tracking.tracking_uri()}"

    def _client(self):
        from bench.harness import tracking

        return tracking.client()

    def experiments(self) -> list[str]:
        from bench.harness import tracking

        uri = tracking.tracking_uri()
        if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///") :]).exists():
            return []  # no store yet: do not create one just to read it
        return [e.name for e in self._client().search_experiments()]

    def finished_runs(self, experiment: str) -> list[Record] | None:
        from bench.harness import tracking

        client = self._client()
        experiment_id = tracking.experiment_id(client, experiment, create=False)
        if experiment_id is None:
            return None
        from bench.harness.record import record_of

        return [
            record_of(experiment, run, tracking.stored_cell(client, run) if "cell_key" in run.data.tags else None, None)
            for run in tracking.iter_runs(client, experiment_id, "attributes.status = 'FINISHED'")
        ]

    def failed_runs(self, experiment: str) -> list[Record]:
        from bench.harness import tracking
        from bench.harness.record import failure_reason, record_of

        client = self._client()
        experiment_id = tracking.experiment_id(client, experiment, create=False)
        if experiment_id is None:
            return []
        return [
            record_of(experiment, run, tracking.stored_cell(client, run), None)
            for run in tracking.iter_runs(client, experiment_id, "attributes.status = 'FAILED'")
            if "cell_key" in run.data.tags and failure_reason(run.data.tags) is not None
        ]

    def artifact(self, run_id: str, name: str) -> bytes | None:
        import tempfile

        try:
            with tempfile.TemporaryDirectory() as tmp:
                return Path(self._client().download_artifacts(run_id, name, tmp)).read_bytes()
        except Exception:  # artifacts stay on the machine that ran the cell
            return None


class RecordSource:
    """A results record folder: one JSON per finished run (``python -m bench export``)."""

    def __init__(self, folder: Path) -> None:
        from bench.harness.record import record_experiments

        self.folder = Path(folder)
        record_experiments(self.folder)  # a missing folder: one line now, not at the first table
        self._cache: dict[str, list[Record]] = {}

    def describe(self) -> str:
        return f"the results record {self.folder}"

    def experiments(self) -> list[str]:
        from bench.harness.record import record_experiments

        return record_experiments(self.folder)

    def finished_runs(self, experiment: str) -> list[Record] | None:
        from bench.harness.record import load_records

        if experiment not in self._cache:
            if not (self.folder / experiment).is_dir():
                return None
            self._cache[experiment] = [r for r in load_records(self.folder, experiment) if r.status == "FINISHED"]
        return self._cache[experiment]

    def failed_runs(self, experiment: str) -> list[Record]:
        from bench.harness.record import load_records

        if not (self.folder / experiment).is_dir():
            return []
        return [r for r in load_records(self.folder, experiment) if r.status == "FAILED"]

    def artifact(self, run_id: str, name: str) -> bytes | None:
        return None  # a record keeps the ledger and cell inline; images stay in report_files/
