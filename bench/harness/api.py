"""The Python API: run one cell in this process, the same way the grid's worker does, without
MLflow. ``bench.run_cell`` re-exports :func:`run_cell`."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from bench.core.data import RunProtocol
from bench.harness.grid import GridSpec, expand
from bench.harness.preparation import prepare_methods


@dataclass(frozen=True)
class CellResult:
    """What a cell produced: ``status`` FINISHED or FAILED (then ``error`` says why), its metrics
    and logged parameters, the privacy ledger as a dict, and the folder holding its artifacts
    (``synthetic_sample.csv``, ``ledger.json``, plots) when ``run_cell`` was given one (None:
    they were not kept)."""

    status: str
    error: str | None
    metrics: dict[str, float]
    params: dict[str, Any]
    ledger: dict[str, Any] | None
    folder: Path | None
    tags: dict[str, str] = dataclasses.field(default_factory=dict)  # e.g. warning.training_copies

    @property
    def ok(self) -> bool:
        return self.status == "FINISHED"


def run_cell(
    method: str,
    dataset: str,
    *,
    epsilon: float = 1.0,
    seed: int = 0,
    delta: str | float = "1e-05",
    evaluators: Sequence[str] | None = None,
    profile: str = "paper",
    protocol: RunProtocol = RunProtocol.SOUND,
    overrides: Mapping[str, str] | None = None,
    eval_settings: Mapping[str, Mapping[str, str]] | None = None,
    device: str = "cpu",
    data_dir: str | Path | None = None,
    out: str | Path | None = None,
) -> CellResult:
    """Fit ``method`` on ``dataset`` at (ε, δ) for one seed, sample and evaluate, in this process.

    ``evaluators``: None runs every applicable default evaluator, ``()`` none. ``overrides`` are
    the method's ``--set`` values (``{"epochs": "1"}``), ``eval_settings`` the ``--eval-set`` ones
    (``{"downstream": {"scaling": "standard"}}``). Artifacts go to ``out``; without it they are
    written to a temporary folder that is removed before returning — a synthetic sample (for
    ``real``, the training rows themselves) is never left behind in ``$TMPDIR``. Bad names and
    values raise the same errors as the command line."""
    spec = GridSpec(
        methods=[method],
        datasets=[dataset],
        epsilons=[float(epsilon)],
        seeds=[seed],
        delta=delta,
        evaluators=list(evaluators) if evaluators else None,
        profile=profile,
        protocol=protocol,
        overrides={method: dict(overrides)} if overrides else {},
        device=device,
        evaluator_overrides={
            name: {k: str(v) for k, v in fields.items()} for name, fields in (eval_settings or {}).items()
        },
        data_dir=Path(data_dir) if data_dir else None,
    )
    (cell,), _ = expand(spec)
    prepare_methods([cell])  # what a fit behind its walls cannot do (an outside library's environment)
    if evaluators is not None and not evaluators:
        cell = dataclasses.replace(cell, evaluators=(), evaluator_settings={})
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        return _execute(cell, Path(out), keep=True)
    with tempfile.TemporaryDirectory(prefix="dpbench-cell-") as scratch:
        return _execute(cell, Path(scratch), keep=False)


def _execute(cell: Any, folder: Path, keep: bool) -> CellResult:
    from bench.harness.worker import execute  # imports torch

    outcome = execute(cell.to_json(), str(folder), lambda fraction: None)
    ledger_file = folder / "ledger.json"
    return CellResult(
        status=outcome.status,
        error=outcome.error,
        metrics=dict(outcome.metrics),
        params=dict(outcome.params),
        ledger=json.loads(ledger_file.read_text()) if ledger_file.exists() else None,
        folder=folder if keep else None,
        tags=dict(outcome.tags),
    )
