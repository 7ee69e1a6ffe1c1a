"""``list``, ``table``, ``runs``, ``plot``, ``report``, ``export``, ``import``, ``show``: reading what ran."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

# Only light modules at the top: `list`, `--help` and argument errors must not import torch, jax,
# pandas or matplotlib (each command imports what it needs).
from bench.api.registry import DATASETS, EVALUATORS, METHODS
from bench.harness import tracking
from bench.harness.grid import GridError, settable_fields
from bench.harness.runargs import (  # noqa: F401 (grid_spec_from_args: the Python API of a command line)
    GRID_OPTIONS,
    add_run_options,
    experiment_name,
    grid_spec_from_args,
    parse_deadline,
)
from bench.cli.options import DEFAULT_RECORDS, PLOTS_FOLDER, writable


def _setting_text(value: object) -> str:
    return ",".join(f"{v:g}" for v in value) if isinstance(value, tuple) else str(value)


# The committed results record of this checkout: its runs price the presets' cells in a fresh
# clone, before the user has logged any run of their own.
COMMITTED_RECORDS = Path(__file__).resolve().parents[2] / DEFAULT_RECORDS


def _preset_rows() -> list[tuple[str, str]]:
    from bench.report.presets import PRESETS
    from bench.report.costs import estimate_cost, logged_seconds
    from bench.report.source import RecordSource

    recorded = RecordSource(COMMITTED_RECORDS) if COMMITTED_RECORDS.is_dir() else None
    # the local store's own timings win over the record's for the same setting
    timings = {**(logged_seconds(source=recorded) if recorded else {}), **logged_seconds()}
    gpu_timings = {**(logged_seconds(gpu=True, source=recorded) if recorded else {}), **logged_seconds(gpu=True)}
    return [
        (
            p.name,
            f"{p.reproduces}: {p.description}; experiment {p.experiment}; "
            f"{estimate_cost(p, timings, gpu_timings).text()}",
        )
        for p in PRESETS.values()
    ]


TAG_TEXT = {
    "data-independent": "data-independent (ε spent 0)",  # reads no row, so it spends ε = 0 at every target
    "named-only": "[named only: run when --evaluators names it]",
    # an outside library's synthesizer in its own environment: the run's ε is that library's claim
    "external": "external, claimed ε (the library's own accounting, not verified here)",
}


def _card_row(card) -> tuple[str, str]:
    tags = [TAG_TEXT.get(tag, tag) for tag in card.tags]
    leading = [t for t in tags if not t.startswith("[")]
    trailing = [t for t in tags if t.startswith("[")]
    return card.name, "; ".join([*leading, ",".join(card.kinds), card.description]) + "".join(f" {t}" for t in trailing)


def command_list(args: argparse.Namespace) -> int:
    """Names and descriptions come from the registries' cards, so listing imports no plugin code;
    ``list evaluators`` also loads the evaluators to show their ``--eval-set`` settings;
    ``--write-cards`` writes the packages' cards from their declarations instead."""
    if args.write_cards:
        from bench.api.cards import write_cards

        for package in args.write_cards:
            print(f"wrote {write_cards(package)}")
        return 0
    sections = {
        "methods": [_card_row(card) for card in METHODS.cards()],
        "datasets": [_card_row(card) for card in DATASETS.cards()],
        "evaluators": [_card_row(card) for card in EVALUATORS.cards()],
    }
    if args.what == "evaluators":
        sections["evaluators"] = [
            (
                name,
                text
                + "".join(
                    f"\n      --eval-set {name}.{key}={_setting_text(value)}"
                    for key, value in settable_fields(EVALUATORS.get(name)).items()
                ),
            )
            for name, text in sections["evaluators"]
        ]
    if args.what == "presets":  # costs read the store and the committed record, so only when asked for
        sections = {"presets": _preset_rows()}
    for section, rows in sections.items():
        if args.what and args.what != section:
            continue
        print(f"{section}:")
        width = max((len(name) for name, _ in rows), default=0)
        for name, text in rows:
            print(f"  {name:<{width}}  {text}")
    return 0


def run_source(args: argparse.Namespace):
    """The record folder given by --records, else the MLflow store (checked now: one line if it
    cannot be read)."""
    from bench.report.source import MlflowSource, RecordSource

    if getattr(args, "records", None) is not None:
        source = RecordSource(args.records)
        if not source.experiments():  # an empty folder: one line, not a blank report
            from bench.harness.record import RecordError

            raise RecordError(
                f"the record folder {args.records} holds no run record (experiment folders of *.json); "
                f"write one with `python -m bench export --out {args.records}`"
            )
        return source
    tracking.check_tracking(for_writing=False)
    return MlflowSource()


def command_table(args: argparse.Namespace) -> int:
    from bench.report.render import render_all

    source = run_source(args)
    if args.out:
        if args.out.is_dir():
            raise GridError(f"--out {args.out} is a folder; name the file to write, e.g. --out {args.out / 'table.md'}")
        writable(args.out.parent)
    text = render_all(args.experiment, args.metric, args.format, args.combine, args.layout, source)
    print(text)
    if args.out:
        try:
            args.out.write_text(text)
        except OSError as error:  # a full device, a file that turned read-only meanwhile
            raise GridError(
                f"cannot write --out {args.out}: {error.strerror or error}; the table is printed above"
            ) from None
        print(f"written to {args.out}", file=sys.stderr)
    return 0


def command_runs(args: argparse.Namespace) -> int:
    from bench.report.frame import load_runs, render_run_list

    print(render_run_list(load_runs(args.experiment, run_source(args)), method=args.method, dataset=args.dataset))
    return 0


def command_plot(args: argparse.Namespace) -> int:
    from bench.report.plots import plot_effective_size, plot_experiment
    from bench.report.frame import TableError

    source = run_source(args)
    if args.layout == "effective-size":
        if args.metric:
            raise TableError("--layout effective-size plots the effective-size.acc_n<size> metrics; drop --metric")
        paths = plot_effective_size(args.experiment, writable(args.out or PLOTS_FOLDER), source=source)
    else:
        if not args.metric:
            raise TableError("plot needs --metric M (e.g. --metric nll.mean), or --layout effective-size")
        paths = plot_experiment(args.experiment, args.metric, writable(args.out or PLOTS_FOLDER), source)
    for path in paths:
        print(path)
    return 0


def command_report(args: argparse.Namespace) -> int:
    from bench.report.presets import PRESETS
    from bench.report.report import write_report
    from bench.report.frame import TableError

    unknown = sorted(set(args.experiment or ()) - {preset.experiment for preset in PRESETS.values()})
    if unknown:  # a name error first: it needs no store
        raise TableError(
            f"no preset logs to experiment {unknown[0]!r}; presets use "
            f"{', '.join(sorted({preset.experiment for preset in PRESETS.values()}))}"
        )
    source = run_source(args)
    writable(args.out)
    for path in write_report(args.out, args.experiment, source):
        print(path)
    if not args.experiment:  # the narratives' marks (bench/report/narrative.py), refreshed from the whole record
        from bench.report.narrative import refresh

        report = (args.out / "REPORT.md").read_text(encoding="utf-8")
        for narrative in narratives_of(args.out):
            for change in refresh(narrative, source, report):
                print(f"{narrative}: {change}")
    return 0


def narratives_of(out: Path) -> list[Path]:
    """The texts whose marks a whole report refreshes: ``<out>/README.md`` (the results narrative),
    and the checkout's front page when ``out`` is the checkout's committed ``results`` folder (its
    opening line quotes the coverage totals)."""
    found = [out / "README.md"]
    checkout = Path(__file__).resolve().parents[2]
    if out.resolve() == checkout / "results":
        found.append(checkout / "README.md")
    return [path for path in found if path.is_file()]


def command_export(args: argparse.Namespace) -> int:
    from bench.harness.record import export_store

    tracking.check_tracking(for_writing=False)
    writable(args.out)
    summary = export_store(tracking.client(), args.experiment, args.out, args.allow_dirty)
    if args.experiment and not summary.experiments:
        raise tracking.TrackingError(f"no finished run of {', '.join(args.experiment)} in {tracking.tracking_uri()}")
    for line in summary.unreadable:
        print(f"warning: not exported, its cell cannot be rebuilt: {line}", file=sys.stderr)
    print(summary.text(args.out, args.allow_dirty))
    if summary.dirty and not args.allow_dirty:
        print(
            f"warning: {len(summary.dirty)} run(s) were logged from uncommitted code (e.g. {summary.dirty[0]}) and "
            "were not exported: rerun them from a clean tree, or pass --allow-dirty to export them marked dirty",
            file=sys.stderr,
        )
    return 0


def command_import(args: argparse.Namespace) -> int:
    from bench.harness.record import import_records, record_experiments

    experiments = record_experiments(args.folder)
    if not experiments:
        raise tracking.TrackingError(
            f"{args.folder} holds no run records (<experiment>/<cell>.json, as `python -m bench export` writes them)"
        )
    if args.experiment and args.experiment not in experiments:
        raise tracking.TrackingError(f"no experiment {args.experiment!r} in the record {args.folder}")
    tracking.check_tracking(for_writing=True)
    imported, skipped = import_records(tracking.client(), args.folder, args.experiment)
    print(
        f"imported {imported} run(s) from {args.folder} into {tracking.tracking_uri()}"
        + (f"; {skipped} already there" if skipped else "")
    )
    return 0


def command_show(args: argparse.Namespace) -> int:
    from mlflow.exceptions import MlflowException

    from bench.privacy.ledger_text import format_ledger
    from bench.report.frame import TableError

    if args.records is not None:
        return _show_record(args.records, args.run_id)
    tracking.check_tracking(for_writing=False)  # "unreachable", not "no run"
    mlflow_client = tracking.client()
    try:
        run = mlflow_client.get_run(args.run_id)
    except MlflowException:
        raise TableError(f"no run {args.run_id!r} in {tracking.tracking_uri()}") from None
    print(f"run {run.info.run_id}: {run.data.tags.get('cell', '')}  [{run.info.status}]")
    if "error" in run.data.tags:
        print(f"error: {run.data.tags['error']}")
    print("\nprivacy ledger:")
    try:
        print(format_ledger(tracking.load_ledger(mlflow_client, args.run_id)))
    except (MlflowException, OSError):
        print(f"  ({_why_no_ledger(run)})")
    print("\nparameters:")
    for key in sorted(run.data.params):
        print(f"  {key} = {run.data.params[key]}")
    print("\nmetrics:")
    for key in sorted(run.data.metrics):
        value = run.data.metrics[key]
        print(f"  {key} = {value:.6g}" if math.isfinite(value) else f"  {key} = {value}")
    return 0


def _show_record(folder: Path, run_id: str) -> int:
    from bench.harness.record import ledger_problem, load_records
    from bench.privacy.ledger_text import format_ledger
    from bench.report.frame import TableError

    record = next((r for r in load_records(folder) if run_id in (r.run_id, r.key)), None)
    if record is None:
        raise TableError(
            f"no run {run_id!r} in the record {folder}; `python -m bench runs --records {folder}` lists them"
        )
    dirty = f" (uncommitted changes, diff {record.code.diff_sha256 or 'not recorded'})" if record.code.dirty else ""
    print(f"run {record.run_id}: {record.label}  [{record.status}]  experiment {record.experiment}")
    print(f"code {record.code.commit}{dirty}; machine {record.machine['cpu']}, {record.machine['platform']}")
    print("\nprivacy ledger:")
    if record.ledger is None:
        print(f"  ({record.ledger_missing})")
    else:
        print(format_ledger(record.ledger))
        problem = ledger_problem(record)
        print(f"  recomputed from this record by the independent accountant: {problem or 'the claim stands'}")
    for title, values in (("parameters", record.params), ("metrics", record.metrics), ("timings", record.timings)):
        print(f"\n{title}:")
        for key in sorted(values):
            value = values[key]
            print(
                f"  {key} = {value:.6g}" if isinstance(value, float) and math.isfinite(value) else f"  {key} = {value}"
            )
    return 0


def _why_no_ledger(run: Any) -> str:
    """A run's ledger.json is an artifact: it stays with the machine (or server) that ran the
    cell, while parameters and metrics travel with the store (a committed store has none)."""
    uri = run.info.artifact_uri or ""
    local = Path(uri[len("file://") :]) if uri.startswith("file://") else None
    if local is not None and not local.exists():
        return (
            f"no ledger here: its artifacts stay where the run ran ({uri}); this store holds its parameters and "
            "metrics only"
        )
    if run.info.status == "FINISHED":
        return f"no ledger among its artifacts at {uri}"
    return "no ledger: the cell failed before its method started"
