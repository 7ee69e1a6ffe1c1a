"""Command line: ``python -m bench {run,list,table,plot,show,pretrain-encoder}``.

Exit codes: 0 success, 1 some grid cells failed, 2 usage error (bad names, ε, δ, options).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from pathlib import Path

from bench.harness import tracking
from bench.privacy.budget import DEFAULT_DELTA, BudgetError, DeltaChoice, parse_epsilons
from bench.harness.grid import GridError, GridSpec, expand, parse_seeds, settable_fields, split_names
from bench.core.params import PROFILES, HyperParameterError, parse_overrides
from bench.privacy.ledger import CALIBRATORS, format_ledger
from bench.core.registry import DATASETS, EVALUATORS, METHODS, RegistryError
from bench.core.contracts import PROTOCOLS
from bench.report.plots import LAYOUTS as PLOT_LAYOUTS
from bench.report.tables import FORMATS, LAYOUTS as TABLE_LAYOUTS, TableError

DATA_DIR_VARIABLE = "DPBENCH_DATA_DIR"

USAGE_ERRORS = (BudgetError, RegistryError, GridError, HyperParameterError, TableError)

EPILOG = """examples:
  python -m bench run --methods real,dp-merf --datasets gmm2d --eps 1 --seeds 0-4
  python -m bench run --methods dp-merf --datasets gmm2d --eps 0.3,1,3 --profile smoke --jobs 2
  python -m bench table --experiment dpbench --format md --out results/gmm2d_nll.md
  python -m bench plot --experiment dpbench --metric nll.mean --out results/plots
  python -m bench table --experiment images --layout fig6
  python -m bench plot --experiment images --layout effective-size
  python -m bench show <RUN_ID>

Runs are logged to MLflow: ./mlflow.db unless MLFLOW_TRACKING_URI is set.
"""


class _Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    run.add_argument("--methods", required=True, help="comma-separated method names (see `list methods`)")
    run.add_argument("--datasets", required=True, help="comma-separated dataset names (see `list datasets`)")
    run.add_argument("--eps", default="1", help="comma-separated ε targets, e.g. 0.1,0.3,1 (inf = no noise)")
    run.add_argument(
        "--delta", default=f"{DEFAULT_DELTA:g}", help="δ target, or 'auto' for 1/(10·n_train) per dataset"
    )
    run.add_argument("--seeds", default="0", help="seeds, e.g. 0-4 or 0,3")
    run.add_argument(
        "--evaluators",
        help="comma-separated evaluators (default: every applicable one, except those marked "
        "'named only' in `list evaluators`)",
    )
    run.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="METHOD.PARAM=VALUE",
        help="override a hyperparameter; repeatable, e.g. --set dp-merf.n_features=1000",
    )
    run.add_argument(
        "--eval-set", dest="evaluator_overrides", action="append", default=[], metavar="EVALUATOR.SETTING=VALUE",
        help="change an evaluator's setting; repeatable, e.g. --eval-set fid.n_samples=1000 "
        "(`list evaluators` shows them); recorded with the run as eval.EVALUATOR.SETTING",
    )
    run.add_argument("--profile", default="paper", choices=PROFILES, help="paper settings, smoke (seconds), or cpu (methods that declare it: a 2-core CPU cell)")
    run.add_argument(
        "--calibrator", default="tight", choices=CALIBRATORS,
        help="noise calibration: tight (exact Gaussian) or paper (the seeds' RDP calibrator)",
    )
    run.add_argument(
        "--protocol", default="sound", choices=PROTOCOLS,
        help="data and evaluation conventions: sound (default) or the seeds' paper conventions",
    )
    run.add_argument("--jobs", type=int, default=1, help="cells run in parallel worker processes")
    run.add_argument("--timeout", type=float, help="seconds after which a cell is stopped and logged as failed")
    run.add_argument("--experiment", default=tracking.DEFAULT_EXPERIMENT, help="MLflow experiment name")
    run.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="torch device")
    run.add_argument(
        "--data-dir", default=os.environ.get(DATA_DIR_VARIABLE),
        help=f"folder with the dataset files (default: ${DATA_DIR_VARIABLE})",
    )
    run.add_argument("--rerun", action="store_true", help="run cells again even if they already finished")
    run.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    listing = commands.add_parser("list", help="list registered methods, datasets and evaluators")
    listing.add_argument("what", nargs="?", choices=("methods", "datasets", "evaluators"), help="only this kind")

    table = commands.add_parser(
        "table", help="print results tables (mean ± std over seeds) regenerated from MLflow",
        formatter_class=_Formatter,
    )
    table.add_argument("--experiment", default=tracking.DEFAULT_EXPERIMENT, help="MLflow experiment name")
    table.add_argument(
        "--metric", action="append",
        help="metric to tabulate, repeatable (default: every evaluator metric); with --layout fig6, "
        "the evaluator instead (default image-downstream; e.g. image-downstream-10pct)",
    )
    table.add_argument(
        "--combine", action="store_true",
        help="one table joining the metrics with ' / ' per cell (Table 2's ROC / PRC or F1 shape)",
    )
    table.add_argument(
        "--layout", default="default", choices=TABLE_LAYOUTS,
        help="table1: the seeds' Table 1 shape (α-way marginals, both conventions, the seeds' values beside ours); "
        "fig6: the seeds' Fig. 6 (image-downstream accuracy per classifier, each setup followed by the seeds' row); "
        "fig3: the seeds' Fig. 3 (effective-size mean accuracy per training-set size, ours vs the seeds')",
    )
    table.add_argument("--format", default="md", choices=FORMATS, help="output format")
    table.add_argument("--out", type=Path, help="also write the table to this file")

    plot = commands.add_parser(
        "plot", help="draw privacy–utility curves (metric vs ε) or effective-size curves as PNG files",
        formatter_class=_Formatter,
    )
    plot.add_argument("--experiment", default=tracking.DEFAULT_EXPERIMENT, help="MLflow experiment name")
    plot.add_argument(
        "--layout", default="default", choices=PLOT_LAYOUTS,
        help="default: --metric against ε per method; effective-size: mean accuracy vs training images "
        "(effective-size evaluator), one line per method × ε with the seeds' Fig. 3 dashed, "
        "written as OUT/effective_size_<dataset>.png",
    )
    plot.add_argument("--metric", help="metric to plot, e.g. nll.mean (required by the default layout)")
    plot.add_argument(
        "--out", type=Path,
        help="output folder (default: results/plots; results for --layout effective-size)",
    )

    show = commands.add_parser("show", help="print a run's privacy ledger, parameters and metrics")
    show.add_argument("run_id", metavar="RUN", help="MLflow run id (see the MLflow UI or `table`)")

    pretrain = commands.add_parser(
        "pretrain-encoder",
        help="train a CIFAR-style ResNet18 on public images for dp-mepf's resnet18-cifar encoder",
        description="Train the paper's MNIST/FashionMNIST encoder shape on a PUBLIC image dataset (never the "
        "private one) and save a checkpoint that records it; see methods/pretrain.py for the recipe.",
        formatter_class=_Formatter,
    )
    pretrain.add_argument("--arch", default="resnet18-cifar", choices=["resnet18-cifar"], help="network")
    pretrain.add_argument("--public", default="cifar10", help="registered colour image dataset used as public data")
    pretrain.add_argument("--epochs", type=int, default=30, help="training epochs")
    pretrain.add_argument("--limit", type=int, help="use only the first N train and test images (quick checks)")
    pretrain.add_argument("--out", type=Path, default=Path("encoders/resnet18-cifar.pt"), help="checkpoint path")
    pretrain.add_argument("--data-dir", help="dataset folder (default: $%s)" % DATA_DIR_VARIABLE)
    pretrain.add_argument("--device", default="cpu", help="torch device")
    return parser


def command_run(args: argparse.Namespace) -> int:
    from bench.harness.runner import run_grid

    epsilons = parse_epsilons(args.eps)
    delta = DeltaChoice.parse(args.delta)
    if args.jobs < 1:
        raise GridError("--jobs must be at least 1")
    if args.timeout is not None and args.timeout <= 0:
        raise GridError("--timeout must be a positive number of seconds")
    if args.data_dir and not Path(args.data_dir).is_dir():
        raise GridError(f"--data-dir {args.data_dir} is not a folder; point it at the dataset files")
    methods = split_names(args.methods)
    evaluator_names = split_names(args.evaluators) if args.evaluators else EVALUATORS.names()
    spec = GridSpec(
        methods=methods,
        datasets=split_names(args.datasets),
        epsilons=epsilons,
        seeds=parse_seeds(args.seeds),
        delta=str(delta),
        evaluators=split_names(args.evaluators) if args.evaluators else None,
        profile=args.profile,
        calibrator=args.calibrator,
        protocol=args.protocol,
        overrides=parse_overrides(args.overrides, methods),
        evaluator_overrides=parse_overrides(args.evaluator_overrides, evaluator_names, "--eval-set", "--evaluators"),
        device=args.device,
        data_dir=str(Path(args.data_dir).resolve()) if args.data_dir else None,
    )
    cells, notes = expand(spec)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"{len(cells)} cells → experiment {args.experiment!r} at {tracking.tracking_uri()}", file=sys.stderr)
    report = run_grid(cells, args.experiment, args.jobs, args.timeout, args.rerun, not args.no_progress)
    print(report.summary())
    return 0 if report.ok else 1


def _setting_text(value: object) -> str:
    return ",".join(f"{v:g}" for v in value) if isinstance(value, tuple) else str(value)


def command_list(args: argparse.Namespace) -> int:
    sections = {
        "methods": [(m.name, f"{'private' if m.private else 'non-private'}; "
                     f"{','.join(sorted(k.value for k in m.data_kinds))}; {m.description}") for m in METHODS],
        "datasets": [(d.name, f"{d.kind.value}; {d.description}") for d in DATASETS],
        "evaluators": [
            (e.name, f"{','.join(sorted(k.value for k in e.data_kinds))}; {e.description}"
             + ("" if getattr(e, "run_by_default", True) else " [named only: run when --evaluators names it]")
             + "".join(f"\n      --eval-set {e.name}.{k}={_setting_text(v)}" for k, v in settable_fields(e).items()))
            for e in EVALUATORS
        ],
    }
    for section, rows in sections.items():
        if args.what and args.what != section:
            continue
        print(f"{section}:")
        width = max((len(name) for name, _ in rows), default=0)
        for name, text in rows:
            print(f"  {name:<{width}}  {text}")
    return 0


def command_table(args: argparse.Namespace) -> int:
    from bench.report.tables import render_all

    text = render_all(args.experiment, args.metric, args.format, args.combine, args.layout)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"written to {args.out}", file=sys.stderr)
    return 0


def command_plot(args: argparse.Namespace) -> int:
    from bench.report.plots import plot_effective_size, plot_experiment

    if args.layout == "effective-size":
        if args.metric:
            raise TableError("--layout effective-size plots the effective-size.acc_n<size> metrics; drop --metric")
        paths = plot_effective_size(args.experiment, args.out or Path("results"))
    else:
        if not args.metric:
            raise TableError("plot needs --metric M (e.g. --metric nll.mean), or --layout effective-size")
        paths = plot_experiment(args.experiment, args.metric, args.out or Path("results/plots"))
    for path in paths:
        print(path)
    return 0


def command_show(args: argparse.Namespace) -> int:
    from mlflow.exceptions import MlflowException

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
        print("  (no ledger: the cell failed before its method started)")
    print("\nparameters:")
    for key in sorted(run.data.params):
        print(f"  {key} = {run.data.params[key]}")
    print("\nmetrics:")
    for key in sorted(run.data.metrics):
        value = run.data.metrics[key]
        print(f"  {key} = {value:.6g}" if math.isfinite(value) else f"  {key} = {value}")
    return 0


def command_pretrain_encoder(args: argparse.Namespace) -> int:
    from methods.pretrain import run_pretraining

    if args.epochs < 1:
        raise GridError("--epochs must be at least 1")
    dataset = DATASETS.get(args.public)  # RegistryError (exit 2) for an unknown name
    if dataset.kind.value != "image":
        raise GridError(f"--public {args.public} is not an image dataset")
    from datasets.files import DataFileError
    from datasets.tabular_io import DataFormatError

    try:
        run_pretraining(args.public, Path(args.data_dir) if args.data_dir else None, args.out, args.epochs, args.limit, args.device)
    except (DataFileError, DataFormatError, ValueError) as error:  # missing files, non-colour data: one line
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


COMMANDS = {"run": command_run, "list": command_list, "table": command_table, "plot": command_plot, "show": command_show,
            "pretrain-encoder": command_pretrain_encoder}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warnings.filterwarnings("ignore", module="mlflow")
    try:
        return COMMANDS[args.command](args)
    except USAGE_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
