"""Command line: ``python -m bench {run,list,table,plot,report,show,audit,sync,pretrain-encoder}``.

Exit codes: 0 success, 1 some grid cells failed, 2 usage error (bad names, ε, δ, options, data
files, an unusable tracking store), 3 an unexpected error (``DPBENCH_DEBUG=1`` shows its traceback),
4 ``run --deadline`` passed with cells not started (none failed), 130/143 interrupted by SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import math
import os
import shlex
import sys
import warnings
from pathlib import Path
from typing import Any

# Only light modules at the top: `list`, `--help` and argument errors must not import torch, jax,
# pandas or matplotlib (each command imports what it needs).
from bench.core.errors import UsageError
from bench.core.params import PROFILES, parse_overrides
from bench.api.registry import DATASETS, EVALUATORS, METHODS, PRETRAINERS
from bench.harness import tracking
from bench.harness.grid import GridError, GridSpec, expand, parse_seeds, settable_fields, split_names
from bench.privacy.budget import CALIBRATORS, DEFAULT_DELTA, BudgetError, Delta, parse_epsilons
from bench.core.paths import DATA_DIR_VARIABLE
from bench.harness.runargs import (  # noqa: F401 (grid_spec_from_args: the Python API of a command line)
    GRID_OPTIONS,
    add_run_options,
    experiment_name,
    grid_spec_from_args,
    parse_deadline,
)
from bench.report.layouts import PLOT_LAYOUTS, TABLE_FORMATS, TABLE_LAYOUTS


DEBUG_VARIABLE = "DPBENCH_DEBUG"  # set to show the traceback of an unexpected error
DEFAULT_RECORDS = Path("results") / "runs"
RECORDS_HELP = "read the runs from a results record folder (e.g. results/runs, written by `export`) instead of MLflow"
PLOTS_FOLDER = Path("plots")  # not results/: that folder is the report regenerated from the committed record

EPILOG = """examples:
  python -m bench run --methods real,dp-merf --datasets gmm2d --eps 1 --seeds 0-4
  python -m bench run --methods dp-merf --datasets gmm2d --eps 0.3,1,3 --profile smoke --jobs 2
  python -m bench table --experiment dpbench --format md --out gmm2d_nll.md
  python -m bench plot --experiment dpbench --metric nll.mean --out plots
  python -m bench table --experiment images --layout fig6
  python -m bench plot --experiment images --layout effective-size
  python -m bench run --preset dphp-table2 --jobs 2
  python -m bench report --out results
  python -m bench show <RUN_ID>
  python -m bench audit --method dp-merf --dataset gmm2d --eps 1 --runs 2000
  python -m bench audit --method dp-gan --dataset cervical --eps 2 --delta 0.05 --level step --set dp-gan.batch_size=1000

Runs are logged to MLflow: ./mlflow.db unless MLFLOW_TRACKING_URI is set.
"""


class _Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse prints the whole usage block before its error; the catalogue of bad inputs
    promises one line (exit code 2), with where to look for the options."""

    def error(self, message: str):  # type: ignore[override]
        print(f"error: {message}; see `{self.prog} --help`", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m bench",
        description="Benchmark differentially private data generators: run grids, print tables and plots.",
        epilog=EPILOG,
        formatter_class=_Formatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run a grid of method × dataset × ε × seed and log each cell to MLflow",
        description="Expand method × dataset × ε × seed into cells; run each (fit, sample, evaluate) "
        "and log it as one MLflow run. Cells that already finished are skipped (resume).",
        formatter_class=_Formatter,
    )
    add_run_options(run)

    listing = commands.add_parser("list", help="list registered methods, datasets and evaluators")
    listing.add_argument(
        "what", nargs="?", choices=("methods", "datasets", "evaluators", "presets"), help="only this kind"
    )

    table = commands.add_parser(
        "table",
        help="print results tables (mean ± std over seeds) regenerated from MLflow",
        formatter_class=_Formatter,
    )
    table.add_argument(
        "--experiment", type=experiment_name, default=tracking.DEFAULT_EXPERIMENT, help="MLflow experiment name"
    )
    table.add_argument("--records", type=Path, metavar="DIR", help=RECORDS_HELP)
    table.add_argument(
        "--metric",
        action="append",
        help="metric to tabulate, repeatable (default: every evaluator metric); with --layout fig6, "
        "the evaluator instead (default image-downstream; e.g. image-downstream-10pct)",
    )
    table.add_argument(
        "--combine",
        action="store_true",
        help="one table joining the metrics with ' / ' per cell (Table 2's ROC / PRC or F1 shape)",
    )
    table.add_argument(
        "--layout",
        default="default",
        choices=TABLE_LAYOUTS,
        help="table1: the seeds' Table 1 shape (α-way marginals, both conventions, the seeds' values beside ours); "
        "fig6: the seeds' Fig. 6 (image-downstream accuracy per classifier, each setup followed by the seeds' row); "
        "fig3: the seeds' Fig. 3 (effective-size mean accuracy per training-set size, ours vs the seeds'); "
        "privacy: per dataset, ε and method, the ledger's ε, `bench audit`'s lower bound, the membership attack's AUC, "
        "DCR share, detection AUC and utility side by side (needs --evaluators privacy, or `bench evaluate`)",
    )
    table.add_argument("--format", default="md", choices=TABLE_FORMATS, help="output format")
    table.add_argument("--out", type=Path, help="also write the table to this file")

    runs = commands.add_parser(
        "runs",
        help="list the run ids behind a table's cells (for `show`)",
        description="One line per run that `table` averages (finished, the latest of each cell): its id, "
        "then the table's row (dataset and non-default settings), column (method and --set values), ε and seed.",
        formatter_class=_Formatter,
    )
    runs.add_argument(
        "--experiment", type=experiment_name, default=tracking.DEFAULT_EXPERIMENT, help="MLflow experiment name"
    )
    runs.add_argument("--records", type=Path, metavar="DIR", help=RECORDS_HELP)
    runs.add_argument("--method", help="only this method (registered name)")
    runs.add_argument("--dataset", help="only this dataset (registered name)")

    plot = commands.add_parser(
        "plot",
        help="draw privacy–utility curves (metric vs ε) or effective-size curves as PNG files",
        formatter_class=_Formatter,
    )
    plot.add_argument(
        "--experiment", type=experiment_name, default=tracking.DEFAULT_EXPERIMENT, help="MLflow experiment name"
    )
    plot.add_argument("--records", type=Path, metavar="DIR", help=RECORDS_HELP)
    plot.add_argument(
        "--layout",
        default="default",
        choices=PLOT_LAYOUTS,
        help="default: --metric against ε per method; effective-size: mean accuracy vs training images "
        "(effective-size evaluator), one line per method × ε with the seeds' Fig. 3 dashed, "
        "written as OUT/effective_size_<dataset>.png",
    )
    plot.add_argument("--metric", help="metric to plot, e.g. nll.mean (required by the default layout)")
    plot.add_argument(
        "--out",
        type=Path,
        help="output folder (default: plots; results/ holds only the report regenerated from the committed record)",
    )

    report = commands.add_parser(
        "report",
        help="regenerate REPORT.md and a self-contained REPORT.html: ours beside the papers, plots, what is not run",
        formatter_class=_Formatter,
    )
    report.add_argument(
        "--experiment",
        action="append",
        help="only the presets logging to this experiment; repeatable (default: every preset)",
    )
    report.add_argument(
        "--out",
        type=Path,
        default=Path("report"),
        help="output folder; the committed results/ is rewritten only when named (--out results --records "
        "results/runs), so a report of your own runs never replaces it",
    )

    report.add_argument("--records", type=Path, metavar="DIR", help=RECORDS_HELP)

    export = commands.add_parser(
        "export",
        formatter_class=_Formatter,
        help="write the store's finished runs as a results record: one JSON per run, with its ledger",
        description="Write one JSON file per finished cell (the latest run of each) and per audit under "
        "OUT/<experiment>/: the resolved spec, metrics, the full privacy ledger with the independent accountant's ε, "
        "the code commit (and a dirty flag with the diff's hash) and the machine. A cell already in OUT is replaced "
        "only by a later run of it, so exports from several stores merge. Runs logged from uncommitted code are "
        "refused unless --allow-dirty (they are then marked in every table that shows them).",
        epilog="example:\n  MLFLOW_TRACKING_URI=sqlite:///mlflow.db python -m bench export --experiment table2 --out results/runs",
    )
    export.add_argument(
        "--experiment",
        type=experiment_name,
        action="append",
        help="only this experiment; repeatable (default: every experiment in the store)",
    )
    export.add_argument("--out", type=Path, default=DEFAULT_RECORDS, help="the record folder")
    export.add_argument(
        "--allow-dirty", action="store_true", help="also export runs logged from uncommitted code, marked dirty"
    )

    importing = commands.add_parser(
        "import",
        formatter_class=_Formatter,
        help="log a results record's runs into the MLflow store, to browse them in the MLflow UI",
        description="Each record becomes a finished run of its experiment in the store at MLFLOW_TRACKING_URI "
        "(else ./mlflow.db), with its parameters, metrics, tags, and its ledger and config as artifacts. "
        "Records imported before (tag record.run_id) are skipped.",
        epilog="example:\n  python -m bench import results/runs && mlflow ui --backend-store-uri sqlite:///mlflow.db",
    )
    importing.add_argument("folder", type=Path, nargs="?", default=DEFAULT_RECORDS, help="the record folder")
    importing.add_argument("--experiment", type=experiment_name, help="only this experiment")

    commands.add_parser(
        "sync",
        help="log the results kept in the outbox (./.dpbench-outbox) while the tracking server was unreachable",
    )

    evaluate = commands.add_parser(
        "evaluate",
        formatter_class=_Formatter,
        help="score the synthetic samples stored with finished runs by more evaluators, without refitting",
        description="For every finished run of the experiment (narrowed by --methods/--datasets), load the "
        "synthetic sample stored with it (synthetic.npz) and the real splits it was scored against, run the "
        "evaluators on them in a fresh process, and log the metrics into the same run (tag evaluated_later). "
        "Runs that already have an evaluator's metrics are skipped unless --rerun: run it again to finish an "
        "interrupted pass.",
        epilog="example:\n  python -m bench evaluate --experiment privacy-utility --evaluators privacy,fidelity",
    )
    evaluate.add_argument(
        "--experiment", type=experiment_name, default=tracking.DEFAULT_EXPERIMENT, help="MLflow experiment name"
    )
    evaluate.add_argument("--evaluators", required=True, help="comma-separated evaluator names (`list evaluators`)")
    evaluate.add_argument("--methods", help="only runs of these methods (comma-separated)")
    evaluate.add_argument("--datasets", help="only runs on these datasets (comma-separated)")
    evaluate.add_argument(
        "--eval-set",
        dest="evaluator_overrides",
        action="append",
        metavar="EVALUATOR.SETTING=VALUE",
        help="change an evaluator's setting, as for run",
    )
    evaluate.add_argument(
        "--data-dir",
        default=os.environ.get(DATA_DIR_VARIABLE),
        help=f"dataset files (default ${DATA_DIR_VARIABLE}, else the folder each run recorded)",
    )
    evaluate.add_argument("--rerun", action="store_true", help="score again evaluators whose metrics a run already has")

    show = commands.add_parser("show", help="print a run's privacy ledger, parameters and metrics")
    show.add_argument("run_id", metavar="RUN", help="MLflow run id (`python -m bench runs` lists them)")
    show.add_argument(
        "--records",
        type=Path,
        metavar="DIR",
        help="read the run from a results record folder (e.g. results/runs): its ledger travels with it",
    )

    audit = commands.add_parser(
        "audit",
        formatter_class=_Formatter,
        help="empirical lower bound on ε: a canary attack on a method's real releases",
        description="Run the method's private releases (its real fit, stopped after them) on D and on D′ = D with "
        "row 0 replaced by a canary, many times with fresh noise; score each output with the likelihood-ratio "
        "statistic; report the Clopper–Pearson 95%% lower bound on ε beside the claimed ε of the audited releases. "
        "--level step audits one DP-SGD step with a gradient canary (methods with a DP-SGD phase).",
    )
    audit.add_argument("--method", required=True, help="a private method (`list methods`)")
    audit.add_argument("--dataset", required=True, help="a dataset (`list datasets`)")
    audit.add_argument("--eps", default="1", help="the claimed ε of the audited run")
    audit.add_argument("--delta", default=str(DEFAULT_DELTA), help="δ of the audited run")
    audit.add_argument("--runs", type=int, default=1000, help="runs per side (D and D′); half choose the threshold")
    audit.add_argument("--rows", type=int, default=500, help="D = the first ROWS training rows of seed 0's split")
    audit.add_argument(
        "--level",
        default="release",
        choices=("release", "step"),
        help="release: the method's releases; step: one DP-SGD step",
    )
    audit.add_argument("--profile", default="smoke", choices=PROFILES, help="hyperparameter profile of the audited fit")
    audit.add_argument("--calibrator", default="tight", choices=CALIBRATORS)
    audit.add_argument("--set", dest="overrides", action="append", default=[], metavar="METHOD.PARAM=VALUE")
    audit.add_argument(
        "--data-dir", default=os.environ.get(DATA_DIR_VARIABLE), help=f"dataset files (default ${DATA_DIR_VARIABLE})"
    )
    audit.add_argument(
        "--experiment", type=experiment_name, default="audit", help="MLflow experiment the result is logged to"
    )
    pretrain = commands.add_parser(
        "pretrain-encoder",
        help="train a CIFAR-style ResNet18 on public images for dp-mepf's resnet18-cifar encoder",
        description="Train the paper's MNIST/FashionMNIST encoder shape on a PUBLIC image dataset (never the "
        "private one) and save a checkpoint that records it; see methods/pretrain.py for the recipe. A checkpoint "
        "with the same content key (architecture, public data, --grey, --epochs, --limit, recipe) is reused, not "
        "retrained; each checkpoint is logged as an artifact of the MLflow experiment 'encoders'.",
        formatter_class=_Formatter,
    )
    pretrain.add_argument(
        "--arch", default="resnet18-cifar", help="network (registered encoder pretrainers: resnet18-cifar)"
    )
    pretrain.add_argument(
        "--public",
        default="cifar10",
        help="registered image dataset used as public data (greyscale ones are replicated to 3 channels)",
    )
    pretrain.add_argument(
        "--grey",
        action="store_true",
        help="train on the luma of colour public images (for a "
        "greyscale private task such as MNIST: --public cifar10-jpeg --grey)",
    )
    pretrain.add_argument("--epochs", type=int, default=30, help="training epochs")
    pretrain.add_argument("--limit", type=int, help="use only the first N train and test images (quick checks)")
    pretrain.add_argument(
        "--out", type=Path, help="checkpoint path (default: encoders/<arch>-<public>[-grey]-<key>.pt)"
    )
    pretrain.add_argument(
        "--experiment", type=experiment_name, default="encoders", help="MLflow experiment the checkpoint is logged to"
    )
    pretrain.add_argument("--data-dir", help="dataset folder (default: $%s)" % DATA_DIR_VARIABLE)
    pretrain.add_argument("--device", default="cpu", help="torch device")
    return parser


# Options that define a grid; with --preset the preset defines them (--seeds may narrow it).
def _preset_specs(args: argparse.Namespace) -> list[tuple[GridSpec, str]]:
    """A preset's typed grids, each with its experiment, narrowed to --seeds and run with this
    command's execution options."""
    from bench.report.presets import get_preset

    option = {"overrides": "--set", "evaluator_overrides": "--eval-set"}
    given = [option.get(name, f"--{name}") for name in GRID_OPTIONS if getattr(args, name) not in (None, [])]
    if given:
        raise GridError(f"--preset sets the grid itself; drop {', '.join(given)} (only --seeds may narrow a preset)")
    preset = get_preset(args.preset)
    seeds = parse_seeds(args.seeds) if args.seeds else None
    execution = {
        "device": args.device,
        "data_dir": Path(args.data_dir) if args.data_dir else None,
        "secure_noise": args.secure_noise,
        "threads": args.threads,
    }
    return [(dataclasses.replace(grid.narrowed(seeds=seeds), **execution), preset.experiment) for grid in preset.grids]


def default_jobs(cells: list, threads: int) -> int:
    """Worker processes when --jobs is not given: the cores this process may use, divided by the
    threads of a cell, so that a grid uses the machine without oversubscribing it; one when a cell
    runs on a GPU (cells would share it)."""
    if any(cell.device == "cuda" for cell in cells):
        return 1
    if any(cell.device == "auto" for cell in cells):
        import torch

        if torch.cuda.is_available():
            return 1
    from bench.harness.runner import available_cores

    return max(1, min(available_cores() // threads, len(cells)))


def _print_scored(result) -> None:
    from bench.harness.rescoring import summary_line

    print(summary_line(result), file=sys.stderr)


def command_run(args: argparse.Namespace) -> int:
    from bench.harness.preflight import check_data, check_device
    from bench.harness.rescoring import score_fitted_setups
    from bench.harness.runner import GridInterrupted, run_grid

    if args.jobs is not None and args.jobs < 1:
        raise GridError("--jobs must be at least 1")
    if args.threads < 1:
        raise GridError("--threads must be at least 1")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise GridError("--timeout must be a positive number of seconds")
    deadline = parse_deadline(args.deadline, datetime.datetime.now()) if args.deadline else None
    if args.data_dir and not Path(args.data_dir).is_dir():
        raise GridError(f"--data-dir {args.data_dir} is not a folder; point it at the dataset files")
    if args.ray_address and args.executor != "ray":
        raise GridError("--ray-address needs --executor ray")
    runs = _preset_specs(args) if args.preset else [(grid_spec_from_args(args), args.experiment)]
    grids = []
    for spec, experiment in runs:  # expand every grid first: a bad name fails before anything runs
        cells, notes = expand(spec)
        grids.append((experiment, cells, notes))
    every_cell = [cell for _, cells, _ in grids for cell in cells]
    if args.executor == "local":
        check_device(every_cell)  # a Ray cluster's GPUs are checked by the Ray executor
    # every dataset's files once, before the store is opened or any cell starts (a bad file would
    # fail each of its cells the same way)
    check_data(every_cell)
    if not tracking.is_remote():
        tracking.check_tracking(for_writing=True)  # a server that is down is the outbox's case
    executor = None
    if args.executor == "ray":
        from bench.harness.ray_executor import RayExecutor

        executor = RayExecutor(args.ray_address, args.device, cpus=args.threads)
    jobs = args.jobs or default_jobs(every_cell, args.threads)
    if deadline is not None:
        print(f"--deadline: no cell starts after {deadline:%Y-%m-%d %H:%M:%S}", file=sys.stderr)
    ok, left = True, 0
    for experiment, cells, notes in grids:
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        print(f"{len(cells)} cells → experiment {experiment!r} at {tracking.tracking_uri()}", file=sys.stderr)
        if not args.rerun:
            cells, scored = score_fitted_setups(cells, experiment, report=_print_scored)
            if scored:
                print(
                    f"{len(scored)} setup(s) already fitted in this experiment: scored from their stored "
                    "samples, not fitted again",
                    file=sys.stderr,
                )
            if not cells:
                continue
        try:
            report = run_grid(
                cells,
                experiment,
                min(jobs, len(cells)),
                args.timeout,
                args.rerun,
                not args.no_progress,
                executor=executor,
                start_deadline=deadline.timestamp() if deadline else None,
            )
        except GridInterrupted as stop:
            print(stop.report.summary())
            again = [a for a in (args.argv or []) if a != "--rerun"]  # --rerun would redo the finished cells
            resume = shlex.join([Path(sys.executable).name, "-m", "bench", *again])
            print(
                f"interrupted by {stop.signal_name}: {len(stop.report.interrupted)} running cell(s) stopped and marked "
                f"FAILED, finished cells are logged; resume with: {resume}",
                file=sys.stderr,
            )
            return stop.exit_code
        print(report.summary())
        ok, left = ok and report.ok, left + len(report.not_started)
    if not ok:
        return 1
    if left:
        print(f"--deadline passed: {left} cell(s) not started; run the same command again to run them", file=sys.stderr)
        return 4
    return 0


def command_evaluate(args: argparse.Namespace) -> int:
    from bench.api.registry import EVALUATORS
    from bench.harness.grid import evaluator_settings
    from bench.harness.rescoring import rescore, summary_line

    names = split_names(args.evaluators, "--evaluators")
    for name in names:
        EVALUATORS.get(name)  # an unknown name is a one-line usage error, before any run is read
    settings = evaluator_settings(parse_overrides(args.evaluator_overrides or [], names, "--eval-set", "--evaluators"))
    tracking.check_tracking(for_writing=True)
    results = rescore(
        args.experiment,
        names,
        methods=split_names(args.methods, "--methods") if args.methods else None,
        datasets=split_names(args.datasets, "--datasets") if args.datasets else None,
        settings=settings,
        data_dir=str(Path(args.data_dir).resolve()) if args.data_dir else None,
        rerun=args.rerun,
        report=lambda result: print(summary_line(result), flush=True),
    )
    counts = {
        status: sum(r.status.startswith(status) for r in results)
        for status in ("scored", "up to date", "no stored", "failed")
    }
    print(
        f"{len(results)} run(s) of {args.experiment}: {counts['scored']} scored, {counts['up to date']} up to date, "
        f"{counts['no stored']} without a stored sample, {counts['failed']} failed"
    )
    return 1 if counts["failed"] else 0


def command_sync(args: argparse.Namespace) -> int:
    from bench.harness import outbox

    waiting = outbox.pending_count()
    for store, count in outbox.elsewhere().items():
        print(
            f"note: {count} result(s) in the outbox are for another store, {store}: they stay until "
            f"MLFLOW_TRACKING_URI names it and `python -m bench sync` runs",
            file=sys.stderr,
        )
    if not waiting:
        print(f"the outbox {outbox.outbox_dir()} holds nothing for {tracking.tracking_uri()}")
        return 0
    tracking.check_tracking(for_writing=True)
    logged, errors = outbox.sync(tracking.client())
    print(f"logged {logged} of {waiting} result(s) from {outbox.outbox_dir()} to {tracking.tracking_uri()}")
    if errors:
        raise tracking.TrackingError(f"{waiting - logged} result(s) stay in the outbox: {errors[0]}")
    return 0


def _setting_text(value: object) -> str:
    return ",".join(f"{v:g}" for v in value) if isinstance(value, tuple) else str(value)


# The committed results record of this checkout: its runs price the presets' cells in a fresh
# clone, before the user has logged any run of their own.
COMMITTED_RECORDS = Path(__file__).resolve().parents[1] / DEFAULT_RECORDS


def _preset_rows() -> list[tuple[str, str]]:
    from bench.report.presets import PRESETS, estimate_cost, logged_seconds
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
}


def _card_row(card) -> tuple[str, str]:
    tags = [TAG_TEXT.get(tag, tag) for tag in card.tags]
    leading = [t for t in tags if not t.startswith("[")]
    trailing = [t for t in tags if t.startswith("[")]
    return card.name, "; ".join([*leading, ",".join(card.kinds), card.description]) + "".join(f" {t}" for t in trailing)


def command_list(args: argparse.Namespace) -> int:
    """Names and descriptions come from the registries' cards, so listing imports no plugin code;
    ``list evaluators`` also loads the evaluators to show their ``--eval-set`` settings."""
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
        return RecordSource(args.records)
    tracking.check_tracking(for_writing=False)
    return MlflowSource()


def command_table(args: argparse.Namespace) -> int:
    from bench.report.render import render_all

    source = run_source(args)
    if args.out:
        writable(args.out.parent)
    text = render_all(args.experiment, args.metric, args.format, args.combine, args.layout, source)
    print(text)
    if args.out:
        args.out.write_text(text)
        print(f"written to {args.out}", file=sys.stderr)
    return 0


def command_runs(args: argparse.Namespace) -> int:
    from bench.report.tables import load_runs, render_run_list

    print(render_run_list(load_runs(args.experiment, run_source(args)), method=args.method, dataset=args.dataset))
    return 0


def command_plot(args: argparse.Namespace) -> int:
    from bench.report.plots import plot_effective_size, plot_experiment
    from bench.report.tables import TableError

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
    from bench.report.tables import TableError

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
    return 0


def command_export(args: argparse.Namespace) -> int:
    from bench.harness.record import export_store

    tracking.check_tracking(for_writing=False)
    writable(args.out)
    summary = export_store(tracking.client(), args.experiment, args.out, args.allow_dirty)
    if args.experiment and not summary.experiments:
        raise tracking.TrackingError(f"no finished run of {', '.join(args.experiment)} in {tracking.tracking_uri()}")
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

    from bench.privacy.ledger import format_ledger
    from bench.report.tables import TableError

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
    from bench.privacy.ledger import format_ledger
    from bench.report.tables import TableError

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


def command_pretrain_encoder(args: argparse.Namespace) -> int:
    if args.epochs < 1:
        raise GridError("--epochs must be at least 1")
    if args.limit is not None and args.limit < 1:
        raise GridError("--limit must be at least 1 (images of the public dataset to train on)")
    pretrainer = PRETRAINERS.get(args.arch)  # RegistryError (exit 2) for an unknown name
    if DATASETS.card(args.public).kinds != ("image",):  # RegistryError for an unknown name
        raise GridError(f"--public {args.public} is not an image dataset")
    try:
        checkpoint = pretrainer.pretrain(
            args.public,
            Path(args.data_dir) if args.data_dir else None,
            args.out,
            args.epochs,
            args.limit,
            args.device,
            args.grey,
        )
    except ValueError as error:  # e.g. too small images: one line (missing files are DataErrors)
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        run_id = tracking.log_checkpoint(args.experiment, args.arch, checkpoint)
        print(f"logged to MLflow experiment '{args.experiment}', run {run_id}")
    except Exception as error:  # the checkpoint is on disk whatever the store does
        print(
            f"warning: the checkpoint {checkpoint.path} is saved but was not logged to MLflow: "
            f"{type(error).__name__}: {error}",
            file=sys.stderr,
        )
    return 0


def command_audit(args: argparse.Namespace) -> int:
    from bench.harness.auditing import audit_dp_sgd, audit_method

    (epsilon,) = parse_epsilons(args.eps) if "," not in args.eps else (None,)
    if epsilon is None:
        raise BudgetError("audit takes one ε, e.g. --eps 1")
    delta = Delta.parse(args.delta).value
    if delta is None:
        raise BudgetError("audit needs a numeric δ, e.g. --delta 1e-5")
    if args.runs < 20:
        raise GridError("--runs must be at least 20 (half of them choose the threshold)")
    if args.rows < 2:
        raise GridError("--rows must be at least 2")
    method, dataset = METHODS.get(args.method), DATASETS.get(args.dataset)  # RegistryError (exit 2) for unknown names
    if dataset.kind not in method.data_kinds:
        raise GridError(
            f"{method.name} does not fit {dataset.name}: it takes {', '.join(sorted(k.value for k in method.data_kinds))} "
            f"data, {dataset.name} is {dataset.kind.value}"
        )
    overrides = parse_overrides(args.overrides, [args.method]).get(args.method, {})
    settings = dict(
        method=args.method,
        dataset=args.dataset,
        epsilon=epsilon,
        delta=delta,
        runs=args.runs,
        rows=args.rows,
        data_dir=Path(args.data_dir) if args.data_dir else None,
        overrides=overrides,
        profile=args.profile,
        calibrator=args.calibrator,
    )
    if args.level == "step":
        result = audit_dp_sgd(
            args.method,
            args.dataset,
            epsilon,
            delta,
            args.runs,
            args.rows,
            data_dir=settings["data_dir"],
            overrides=overrides,
            profile=args.profile,
            calibrator=args.calibrator,
        )
    else:
        result = audit_method(
            args.method,
            args.dataset,
            epsilon,
            delta,
            args.runs,
            args.rows,
            data_dir=settings["data_dir"],
            overrides=overrides,
            profile=args.profile,
            calibrator=args.calibrator,
        )
    print(result.summary())
    run_id = log_audit_result(result, args, settings)
    print(f"logged as run {run_id} in experiment {args.experiment!r} at {tracking.tracking_uri()}", file=sys.stderr)
    return 0


def log_audit_result(result, args: argparse.Namespace, settings: dict) -> str:
    from bench.harness.auditing import log_audit

    logged = {k: v for k, v in settings.items() if k not in ("method", "dataset", "overrides")}
    logged.update({f"set.{k}": v for k, v in settings["overrides"].items()}, level=args.level)
    return log_audit(result, args.experiment, logged)


COMMANDS = {
    "run": command_run,
    "list": command_list,
    "table": command_table,
    "plot": command_plot,
    "report": command_report,
    "runs": command_runs,
    "show": command_show,
    "audit": command_audit,
    "sync": command_sync,
    "evaluate": command_evaluate,
    "export": command_export,
    "import": command_import,
    "pretrain-encoder": command_pretrain_encoder,
}


def writable(path: Path, what: str = "--out") -> Path:
    """``path`` (a folder) can be created and written, else a one-line usage error now, before
    anything is computed."""
    import tempfile

    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path):
            pass
    except OSError as error:
        raise GridError(f"cannot write to {what} {path}: {error.strerror or error}; choose a writable folder") from None
    return path


def one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as ``warning: <message>`` on one line, without the source line Python adds."""
    print(f"warning: {' '.join(str(message).split())}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # the resume command repeats it
    warnings.filterwarnings("ignore", module="mlflow")
    warnings.showwarning = one_line_warning
    try:
        return COMMANDS[args.command](args)
    except UsageError as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left (`| head`): stop quietly, as a Unix filter does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as error:  # one line instead of a traceback; DPBENCH_DEBUG=1 shows it
        if os.environ.get(DEBUG_VARIABLE):
            raise
        text = " ".join(str(error).split())[:300]
        print(
            f"error: unexpected {type(error).__name__}: {text} (set {DEBUG_VARIABLE}=1 for the traceback)",
            file=sys.stderr,
        )
        return 3
