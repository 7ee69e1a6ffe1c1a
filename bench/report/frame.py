"""Finished runs as a table's frame: one row per cell (its latest run), every column from the
run's typed cell, labels that keep apart runs whose settings differ (so no two settings are ever
averaged)."""

from __future__ import annotations

import json
import math


import pandas as pd

from bench.core.errors import UsageError
from bench.harness.cell import Cell
from bench.harness.record import Record
from bench.report.source import MlflowSource, RunSource
from bench.core.params import HyperParameterError
from bench.api.registry import METHODS, RegistryError
from bench.privacy.budget import DEFAULT_DELTA, epsilon_text


class TableError(UsageError, ValueError):
    pass


# Logged params that are not settings of a cell: the seed, which a table aggregates over, and
# facts of the seed's own split (its sizes; δ resolved from n_train under --delta auto).
PER_SEED_PARAMS = frozenset({"seed", "n_train", "n_test", "delta_resolved"})
# Logged params that do not change a metric's value, so runs differing only there are seeds of
# one setting: which evaluators ran beside a metric (the synthetic data are drawn before any
# evaluator runs and each evaluator seeds itself — evaluators/downstream.py), and the profile,
# which acts only through the hp.* values it resolves to (compared below; the cell key leaves
# it out for the same reason).
NOT_RESULT_PARAMS = frozenset({"evaluators", "profile"})
IDENTITY_PARAMS = ("method", "dataset", "epsilon")
# Grid-wide settings that qualify a table row (the dataset label) when they differ from these.
# A non-private run logs δ = "none": it has no δ, so it never qualifies a row.
ROW_SETTING_DEFAULTS = {"protocol": "sound", "calibrator": "tight", "delta": f"{DEFAULT_DELTA:g}"}


def load_runs(experiment: str, source: RunSource | None = None) -> pd.DataFrame:
    """One row per finished cell (the latest run of each cell key), with its setting and
    metrics, from ``source`` (default: the MLflow store)."""
    source = source or MlflowSource()
    runs = source.finished_runs(experiment)
    if runs is None:
        raise TableError(f"no experiment {experiment!r} in {source.describe()}; run `python -m bench run` first")
    runs = [run for run in runs if run.cell is not None]  # not an audit's or an encoder checkpoint's run
    if not runs:
        raise TableError(f"experiment {experiment!r} has no finished runs yet")
    return runs_frame(runs)


def settings_of(cell: Cell) -> dict[str, str]:
    """Everything about a cell that can change its numbers, as text, except method, dataset and ε
    (table coordinates of their own) and the seed (what a table aggregates over)."""
    skip = PER_SEED_PARAMS | NOT_RESULT_PARAMS | set(IDENTITY_PARAMS)
    return {key: value for key, value in cell.mlflow_params().items() if key not in skip}


RUN_COSTS = ("peak_memory_mib",)  # a metric of what the run cost (its timings are the others)


def runs_frame(runs: list[Record]) -> pd.DataFrame:
    """The runs as a frame whose (``dataset``, ``method``, ``epsilon``) cells each hold seeds of
    exactly one setting: ``dataset`` is qualified by non-default grid-wide settings (protocol,
    calibrator, δ, --eval-set values), ``method`` by a non-default profile and hyperparameters
    that differ from the method's resolved defaults (--set); any remaining difference between two
    settings that would share a label is spelled out, so no two settings are ever averaged.
    Every column comes from the run's typed cell. ``method_name`` keeps the registered name,
    ``settings`` the full setting as JSON."""
    latest: dict[str, Record] = {}
    for run in sorted(runs, key=lambda r: r.start_time):
        latest[run.key] = run  # a rerun (--rerun) of a cell replaces it
    # One row per seed of a setting: cells of one setup and seed that differ only in their evaluators
    # (a preset that changed what it scores, and fitted again) are one measurement of that seed, not
    # two; each metric is the newest run's that has it (seed 0 would otherwise count twice in a mean).
    rows: dict[tuple, tuple[dict, set[str]]] = {}
    for run in sorted(latest.values(), key=lambda r: r.start_time):
        cell = run.cell
        row = {
            "run_id": run.run_id,
            "start_time": run.start_time,
            "cell_key": run.key,
            "setup_key": cell.setup_key,
            "method": _method_label(cell),
            "method_name": cell.method,
            "dataset": _row_label(cell),
            "epsilon": cell.epsilon,
            "seed": cell.seed,
            "dirty": run.code.dirty,
            "settings": json.dumps(settings_of(cell), sort_keys=True),
            **run.all_metrics(),
        }
        one_seed = (cell.setup_key or run.key, cell.seed, row["dataset"], row["method"])
        earlier = rows.get(one_seed)
        if earlier is not None:  # what a run cost is that run's: the older one's times are not carried
            earlier_row, earlier_costs = earlier
            kept = {k: v for k, v in earlier_row.items() if k not in earlier_costs}
            row = {**kept, **row, "dirty": earlier_row["dirty"] or row["dirty"]}
        rows[one_seed] = (row, {*run.timings, *RUN_COSTS})
    frame = pd.DataFrame([row for row, _ in rows.values()]).sort_values("start_time").reset_index(drop=True)
    return _separate_remaining_settings(frame)


def render_run_list(frame: pd.DataFrame, method: str | None = None, dataset: str | None = None) -> str:
    """The run ids behind a table's cells, one line each, under the labels the table gives them."""
    chosen = frame
    if method is not None:
        chosen = chosen[chosen["method_name"] == method]
    if dataset is not None:
        chosen = chosen[chosen["dataset"].map(base_dataset) == dataset]
    if chosen.empty:
        raise TableError(
            f"no finished run of method {method or 'any'} on dataset {dataset or 'any'} in this experiment; "
            "`python -m bench runs` without --method/--dataset lists them all"
        )
    chosen = chosen.sort_values(["dataset", "method", "epsilon", "seed"], key=lambda column: column.astype(str))
    header = f"{'run id':<32}  dataset | method | ε | seed"
    lines = [
        f"{row.run_id:<32}  {row.dataset} | {row.method} | {epsilon_text(row.epsilon)} | {row.seed}"
        for row in chosen.itertuples()
    ]
    return "\n".join([header, *lines])


def _row_label(cell: Cell) -> str:
    """The dataset, qualified by non-default grid-wide settings so that they are never averaged
    together: protocol, calibrator, δ, and every --eval-set value (``<evaluator>.<name>``)."""
    grid_wide = {"protocol": cell.protocol.value, "calibrator": cell.calibrator.value, "delta": cell.delta.text}
    qualifiers = [
        f"{key} {grid_wide[key]}"
        for key, default in ROW_SETTING_DEFAULTS.items()
        if grid_wide[key] not in (default, "none")
    ]
    qualifiers += sorted(
        f"{evaluator}.{name}={value}"
        for evaluator, settings in cell.evaluator_settings.items()
        for name, value in settings.items()
    )
    return f"{cell.dataset} [{', '.join(qualifiers)}]" if qualifiers else cell.dataset


def _method_label(cell: Cell) -> str:
    """The method, qualified by its profile where the profile changes its hyperparameters and by
    each hyperparameter whose value differs from what the method resolves today for this
    dataset and profile (a --set value, or a default changed since the run)."""
    logged = {name: str(value) for name, value in cell.params.items()}
    try:
        adapter = METHODS.get(cell.method)
        hyper = adapter.hyperparameters
        private = not math.isinf(cell.epsilon)
        as_run_profile = {
            k: str(v) for k, v in hyper.resolve(cell.dataset, cell.profile, private=private).values.items()
        }
        as_paper = {k: str(v) for k, v in hyper.resolve(cell.dataset, "paper", private=private).values.items()}
    except (RegistryError, HyperParameterError):
        # not registered now (a plugin that is not loaded): name the profile; any hyperparameter
        # difference is spelled out by _separate_remaining_settings
        adapter, as_run_profile, as_paper = None, None, None
    qualifiers = []
    if cell.profile != "paper" and (as_run_profile is None or as_run_profile != as_paper):
        qualifiers.append(f"profile {cell.profile}")
    # what a method asks to be shown always (dp-mepf: its encoder, the public data it depends on)
    always = adapter.label_params if adapter is not None else ()
    qualifiers += [f"{key}={logged[key]}" for key in always if key in logged]
    if as_run_profile is not None:
        qualifiers += [
            f"{key}={value}"
            for key, value in sorted(logged.items())
            if as_run_profile.get(key) != value and key not in always
        ]
    return f"{cell.method} [{', '.join(qualifiers)}]" if qualifiers else cell.method


def _separate_remaining_settings(frame: pd.DataFrame) -> pd.DataFrame:
    """Where runs sharing a (dataset, method, ε) label still differ in some setting, append the
    settings that differ to the method label, so that each label holds one setting."""
    for _, group in frame.groupby(["dataset", "method", "epsilon"], dropna=False):
        if group["settings"].nunique() < 2:
            continue
        settings = {index: json.loads(text) for index, text in group["settings"].items()}
        keys = sorted({k for s in settings.values() for k in s})
        differing = [k for k in keys if len({s.get(k) for s in settings.values()}) > 1]
        for index, setting in settings.items():
            extra = ", ".join(f"{k.removeprefix('hp.')}={setting.get(k, '(not logged)')}" for k in differing)
            label = frame.at[index, "method"]
            frame.at[index, "method"] = f"{label[:-1]}, {extra}]" if label.endswith("]") else f"{label} [{extra}]"
    # each label must now hold one setting; anything else is a bug here, not a result to print
    mixed = frame.groupby(["dataset", "method", "epsilon"], dropna=False)["settings"].nunique()
    if (mixed > 1).any():
        raise TableError(f"runs with different settings share the row {mixed[mixed > 1].index[0]}")
    return frame


def base_dataset(dataset_label: str) -> str:
    """``adult-discrete [protocol paper]`` → ``adult-discrete``."""
    return dataset_label.split(" [", 1)[0]
