"""The command line's parser: every command and its options, with ``--help`` that explains."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Only light modules at the top: `list`, `--help` and argument errors must not import torch, jax,
# pandas or matplotlib (each command imports what it needs).
from bench.core.params import PROFILES
from bench.harness import tracking
from bench.harness.grid import GridError
from bench.privacy.budget import CALIBRATORS, DEFAULT_DELTA
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
EXPORT_FOLDER = Path("exported-runs")  # export's default: the user's own runs stay out of the committed record
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
    def _get_help_string(self, action: argparse.Action) -> str | None:
        # an option whose default is "decided later" (None) says so in its own help, not "(default: None)"
        return action.help if action.default is None else super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """argparse prints the whole usage block before its error; the catalogue of bad inputs
    promises one line (exit code 2), with where to look for the options."""

    def error(self, message: str):  # type: ignore[override]
        print(f"error: {message}; see `{self.prog} --help`", file=sys.stderr)
        raise SystemExit(2)


def add_records_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", type=Path, metavar="DIR", help=RECORDS_HELP)


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """Where a command reads its runs: one experiment of the MLflow store, or of a records folder."""
    parser.add_argument(
        "--experiment", type=experiment_name, default=tracking.DEFAULT_EXPERIMENT, help="MLflow experiment name"
    )
    add_records_argument(parser)


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
    listing.add_argument(
        "--write-cards",
        metavar="PACKAGE[,PACKAGE]",
        type=lambda text: [name.strip() for name in text.split(",") if name.strip()],
        help="write each plugin package's cards.json (what listing reads without importing the plugins) from "
        "the entries its modules declare, e.g. --write-cards methods,datasets,evaluators after changing a "
        "built-in's name, description or kinds",
    )

    table = commands.add_parser(
        "table",
        help="print results tables (mean ± std over seeds) regenerated from MLflow",
        formatter_class=_Formatter,
    )
    add_source_arguments(table)
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
    add_source_arguments(runs)
    runs.add_argument("--method", help="only this method (registered name)")
    runs.add_argument("--dataset", help="only this dataset (registered name)")

    plot = commands.add_parser(
        "plot",
        help="draw privacy–utility curves (metric vs ε) or effective-size curves as PNG files",
        formatter_class=_Formatter,
    )
    add_source_arguments(plot)
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

    add_records_argument(report)

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
    export.add_argument(
        "--out",
        type=Path,
        default=EXPORT_FOLDER,
        help="the record folder; the default is not the committed results/runs, which takes runs from clean "
        "commits only by a deliberate --out results/runs",
    )
    export.add_argument(
        "--allow-dirty", action="store_true", help="also export runs logged from uncommitted code, marked dirty"
    )

    importing = commands.add_parser(
        "import",
        formatter_class=_Formatter,
        help="log a results record's runs into the MLflow store, to browse them in the MLflow UI",
        description="Each record becomes a finished run of its experiment in the store at MLFLOW_TRACKING_URI "
        "(else ./mlflow.db), with its parameters, metrics, tags, and its ledger and typed cell (cell.json) as artifacts. "
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
        "Runs that already have an evaluator's metrics, with none of its parts failed (a classifier that timed "
        "out leaves the tag errors.<evaluator>), are skipped unless --rerun: run it again to finish an "
        "interrupted or incomplete pass.",
        epilog="example:\n  python -m bench evaluate --experiment privacy-utility --evaluators privacy,fidelity",
    )
    evaluate.add_argument(
        "--experiment", type=experiment_name, default=tracking.DEFAULT_EXPERIMENT, help="MLflow experiment name"
    )
    evaluate.add_argument("--evaluators", required=True, help="comma-separated evaluator names (`list evaluators`)")
    evaluate.add_argument("--methods", help="only runs of these methods (comma-separated)")
    evaluate.add_argument("--datasets", help="only runs on these datasets (comma-separated)")
    evaluate.add_argument("--runs", help="only these runs (comma-separated full MLflow run ids, as `runs` lists them)")
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
        "statistic; report the Clopper–Pearson 95% lower bound on ε beside the claimed ε of the audited releases. "
        "--level step audits one DP-SGD step with a gradient canary (methods with a DP-SGD phase); --black-box "
        "(--level black-box) audits from the synthetic output alone: whole fits on D and D′ with a canary row, each "
        "sample scored by how much of it looks like the canary — the default for an outside library's synthesizer, "
        "which records no releases. A lower bound below the claim proves nothing.",
    )
    audit.add_argument("--method", required=True, help="a private method (`list methods`)")
    audit.add_argument("--dataset", required=True, help="a dataset (`list datasets`)")
    audit.add_argument("--eps", default="1", help="the claimed ε of the audited run")
    audit.add_argument("--delta", default=str(DEFAULT_DELTA), help="δ of the audited run")
    audit.add_argument("--runs", type=int, default=1000, help="runs per side (D and D′); half choose the threshold")
    audit.add_argument("--rows", type=int, default=500, help="D = the first ROWS training rows of seed 0's split")
    audit.add_argument(
        "--level",
        choices=("release", "step", "black-box"),
        default=None,
        help="release: the method's releases (default); step: one DP-SGD step; black-box: the output only "
        "(the default for an outside library's synthesizer)",
    )
    audit.add_argument(
        "--black-box", dest="level", action="store_const", const="black-box", help="the same as --level black-box"
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
    audit.add_argument("--no-progress", action="store_true", help="hide the progress bar over the runs")
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
