"""Reading a run stored before key version 2 (the one-run-record redesign), once.

Version-1 runs kept a cell in ``config.json`` (``{"cell", "key", "param_sources"}``) or, the
earliest, only flat MLflow params; their keys left parameters added later out of the hash at
the value that behaved as the code before them. :func:`cell_from_v1` turns either into a
version-2 :class:`~bench.harness.grid.Cell`, filling in those parameters at that value, so an
old run and a new run of the same setting have the same key. ``benchmarks/rekey_records.py``
applies it to a record folder; ``bench export`` and ``bench evaluate`` apply it to a store's
version-1 runs. Nothing else reads version 1.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Mapping

from bench.core.errors import UsageError
from bench.harness.grid import evaluator_settings
from bench.harness.cell import Cell

# Parameters added after runs were logged, each with the value that behaves as the code did before
# it (what `HyperParameters.added_later` said up to key version 1): a run logged without one ran
# at this value. Facts of the history of these two methods, not settings: they never change.
ADDED_LATER: dict[str, dict[str, Any]] = {
    "dp-hp": {
        "prod_target_scale": 1.0,
        "length_scale_rule": "public-range",
        "prod_target_rule": "per-class",
        "kernel_inputs": "raw",
        "numerical_outputs": "raw",
    },  # issues 19 and 28
    "dp-merf": {"length_scale_rule": "public-range"},  # issue 28
}
NOT_LOGGED = "not logged: the run predates this parameter and behaved as this value (bench.harness.legacy.ADDED_LATER)"
ONLY_VALUES_LOGGED = "not recorded: the run logged its parameter values only (before cell.json was kept)"
# the flat params of a version-1 run that are not the method's (hp.*) or an evaluator's (eval.*)
_CELL_PARAMS = (
    "method",
    "dataset",
    "epsilon",
    "delta",
    "seed",
    "profile",
    "calibrator",
    "protocol",
    "evaluators",
    "threads",
)


class LegacyRunError(UsageError, ValueError):
    """A version-1 run whose cell cannot be rebuilt."""


def cell_from_v1(
    config: Mapping[str, Any] | None,
    params: Mapping[str, str],
    tags: Mapping[str, str],
    ledger: Mapping[str, Any] | None = None,
) -> Cell:
    """The version-2 cell of a version-1 run: from its ``config.json`` when it has one, else from
    its flat params (typed by the method's declared parameter types), with the parameters added
    after it was logged filled in at their earlier values."""
    if config and config.get("cell"):
        stored = dict(config["cell"])
        stored.pop("unkeyed_params", None)
        cell_params = dict(stored["params"])
        sources = dict(stored.get("param_sources") or config.get("param_sources") or {})
    else:
        stored, cell_params, sources = _cell_fields_of_params(params, tags, ledger)
    for name, earlier in ADDED_LATER.get(stored["method"], {}).items():
        if name not in cell_params:
            cell_params[name], sources[name] = earlier, NOT_LOGGED
    return Cell(**{**stored, "params": cell_params, "param_sources": sources})


def _cell_fields_of_params(
    params: Mapping[str, str], tags: Mapping[str, str], ledger: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    from bench.core.params import HyperParameterError, parse_value
    from bench.api.registry import METHODS, RegistryError

    missing = [name for name in _CELL_PARAMS[:5] if name not in params]
    if missing:
        raise LegacyRunError(f"a version-1 run without the params {missing}: its cell cannot be rebuilt")
    method, dataset, epsilon = params["method"], params["dataset"], float(params["epsilon"])
    logged = {key.removeprefix("hp."): text for key, text in params.items() if key.startswith("hp.")}
    profile = params.get("profile", "paper")
    try:  # each logged text typed by its declared type, as the run's own --set values were
        hyper = METHODS.get(method).hyperparameters
        defaults = hyper.resolve(dataset, profile, private=math.isfinite(epsilon))
        values = {name: parse_value(text, hyper.types[name], name) for name, text in logged.items()}
    except (RegistryError, HyperParameterError, KeyError) as error:
        raise LegacyRunError(f"the version-1 run of {method} on {dataset}: {error}") from None
    sources = {
        name: defaults.sources[name] if defaults.values.get(name) == value else ONLY_VALUES_LOGGED
        for name, value in values.items()
    }
    overrides: dict[str, dict[str, str]] = {}
    for key, text in params.items():
        if key.startswith("eval."):
            evaluator, _, setting = key.removeprefix("eval.").partition(".")
            overrides.setdefault(evaluator, {})[setting] = text
    noise = str((ledger or {}).get("noise", ""))
    fields = {
        "method": method,
        "dataset": dataset,
        "epsilon": epsilon,
        "delta": params["delta"],
        "seed": int(params["seed"]),
        "evaluators": tuple(filter(None, params.get("evaluators", "").split(","))),
        "profile": profile,
        "calibrator": params.get("calibrator", "tight"),
        "protocol": params.get("protocol", "sound"),
        "device": "cpu" if tags.get("device", "cpu") == "cpu" else "cuda",
        "evaluator_settings": evaluator_settings(overrides),
        "secure_noise": "secure" in noise,
        "threads": int(params.get("threads", "1")),
    }
    return fields, values, sources


def v1_key(
    config: Mapping[str, Any] | None,
    params: Mapping[str, str],
    tags: Mapping[str, str],
    ledger: Mapping[str, Any] | None = None,
) -> str:
    """The key version 1 gave the run's cell: the migration's check that it read the cell the run
    was keyed by (its key must be the one the run was logged under)."""
    cell = cell_from_v1(config, params, tags, ledger)
    unkeyed = {name for name, earlier in ADDED_LATER.get(cell.method, {}).items() if cell.params.get(name) == earlier}
    identity: dict[str, Any] = {
        "method": cell.method,
        "dataset": cell.dataset,
        "epsilon": json.loads(json.dumps(cell.mlflow_params()["epsilon"])),
        "delta": cell.delta.text,
        "seed": cell.seed,
        "params": {n: v for n, v in cell.params.items() if n not in unkeyed},
        "evaluators": list(cell.evaluators),
        "calibrator": cell.calibrator.value,
        "protocol": cell.protocol.value,
    }
    if cell.evaluator_settings:
        identity["evaluator_settings"] = cell.evaluator_settings
    if cell.secure_noise:
        identity["secure_noise"] = True
    if cell.threads != 1:
        identity["threads"] = cell.threads
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:20]
