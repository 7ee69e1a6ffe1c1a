"""The catalogue of bad inputs (docs/cli.md "Bad inputs"): each row runs the real command line as a
subprocess and checks the exit code, that the answer is ONE line, and that no Python traceback
leaks. Rows that must run cells or wait for a network timeout are marked slow.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli

CERVICAL = "cervical/kag_risk_factors_cervical_cancer.csv"
EPILEPTIC_COLUMNS = ["", *(f"X{i}" for i in range(1, 179)), "y"]
RUN = ["run", "--no-progress"]
GMM = ["--methods", "real", "--datasets", "gmm2d"]
MERF = ["--methods", "dp-merf", "--datasets", "gmm2d"]
HP = ["--methods", "dp-hp", "--datasets", "gmm2d"]
GAN = ["--methods", "dp-gan", "--datasets", "gmm2d"]
BAYES = ["--methods", "privbayes", "--datasets", "adult-discrete"]
AUDIT = ["audit", "--method", "dp-merf", "--dataset", "gmm2d"]
DEAD = {"MLFLOW_TRACKING_URI": "http://127.0.0.1:9"}  # the discard port: nothing listens there


@dataclass
class Row:
    name: str
    argv: list[str]
    expect: str  # a substring of the one line
    code: int = 2
    env: dict[str, str] = field(default_factory=dict)
    slow: bool = False
    cwd: str | None = None  # "readonly": a folder where nothing can be written
    store: bool = False  # create ./mlflow.db (with the default experiment) first
    no_ray: bool = False  # as if Ray were not installed


ROWS = [
    Row(
        "unknown method",
        [*RUN, "--methods", "dp-nope", "--datasets", "gmm2d"],
        "error: unknown method 'dp-nope'; valid: ",
    ),
    Row(
        "unknown dataset",
        [*RUN, "--methods", "real", "--datasets", "mnist2"],
        "error: unknown dataset 'mnist2'; valid: ",
    ),
    Row("unknown evaluator", [*RUN, *GMM, "--evaluators", "fid9"], "error: unknown evaluator 'fid9'; valid: "),
    Row("unknown profile", [*RUN, *GMM, "--profile", "fast"], "argument --profile: invalid choice: 'fast'"),
    Row("unknown calibrator", [*RUN, *GMM, "--calibrator", "loose"], "argument --calibrator: invalid choice"),
    Row("unknown command", ["runn"], "invalid choice: 'runn'"),
    Row("missing --methods", ["run", "--datasets", "gmm2d"], "run needs --methods and --datasets, or --preset NAME"),
    Row("ε = 0", [*RUN, *MERF, "--eps", "0"], "error: ε must be > 0 (got 0)"),
    Row("ε < 0", [*RUN, *MERF, "--eps=-1,1"], "error: ε must be > 0 (got -1)"),
    Row("ε not a number", [*RUN, *MERF, "--eps", "one"], "error: ε value 'one' is not a number"),
    Row("ε = NaN", [*RUN, *MERF, "--eps", "nan"], "error: ε must be > 0 (got nan)"),
    Row(
        "odd DP-MERF feature count",
        [*RUN, *MERF, "--set", "dp-merf.n_features=3"],
        "error: dp-merf: --set n_features=3: n_features must be a multiple of 2 (features come in cos/sin pairs)",
    ),
    Row(
        "negative evaluator timeout",
        [*RUN, "--methods", "real", "--datasets", "cervical", "--eval-set", "downstream.timeout_s=-1"],
        "error: --eval-set downstream: timeout_s must be > 0 seconds (got -1)",
    ),
    Row(
        "unknown downstream scaling",
        [*RUN, "--methods", "real", "--datasets", "cervical", "--eval-set", "downstream.scaling=minmax"],
        "error: --eval-set downstream: downstream.scaling must be one of none, standard (got 'minmax')",
    ),
    Row(
        "--eval-set for an evaluator the grid does not run",
        [*RUN, *GMM, "--eval-set", "downstream.timeout_s=5"],
        "error: --eval-set downstream.…: downstream does not run on any cell of this grid (it runs: nll)",
    ),
    Row(
        "empty experiment name",
        [*RUN, *GMM, "--experiment", ""],
        "argument --experiment: an experiment name must not be empty",
    ),
    Row(
        "report into an unwritable folder",
        ["report", "--out", "/proc/dpbench-nope"],
        "error: cannot write to --out /proc/dpbench-nope: ",
        store=True,
    ),
    Row(
        "table into an unwritable folder",
        ["table", "--out", "/proc/dpbench-nope/t.md"],
        "error: cannot write to --out /proc/dpbench-nope: ",
        store=True,
    ),
    Row("ε overflows to ∞", [*RUN, *MERF, "--eps", "1e400"], "error: ε 1e400 overflows to infinity; write inf"),
    Row("δ = 1", [*RUN, *MERF, "--delta", "1"], "error: δ must lie in (0, 1) (got 1)"),
    Row("δ = 0", [*RUN, *MERF, "--delta", "0"], "error: δ must lie in (0, 1) (got 0)"),
    Row("δ not a number", [*RUN, *MERF, "--delta", "x"], "error: δ 'x' is not a number"),
    Row("δ = NaN", [*RUN, *MERF, "--delta", "nan"], "error: δ must lie in (0, 1) (got nan)"),
    Row(
        "δ ≥ 1/n_train (warning)",
        [*RUN, *MERF, "--delta", "0.01", "--profile", "smoke", "--set", "dp-merf.epochs=1"],
        "warning: gmm2d (n_train = ",
        code=0,
        slow=True,
    ),
    Row("seeds not numbers", [*RUN, *GMM, "--seeds", "a-b"], "error: --seeds 'a-b': expected e.g. 0-4"),
    Row("negative seed", [*RUN, *GMM, "--seeds=-1"], "error: --seeds '-1': expected e.g. 0-4"),
    Row("empty seed range", [*RUN, *GMM, "--seeds", "3-1"], "error: --seeds '3-1': expected non-negative integers"),
    Row("fractional seed", [*RUN, *GMM, "--seeds", "1.5"], "error: --seeds '1.5': expected e.g. 0-4"),
    Row("--set unknown parameter", [*RUN, *MERF, "--set", "dp-merf.n_feat=3"], "unknown parameter 'n_feat'; valid: "),
    Row("--set wrong type", [*RUN, *MERF, "--set", "dp-merf.epochs=ten"], "--set epochs=ten: expected an int like"),
    Row("--set negative count", [*RUN, *MERF, "--set", "dp-merf.epochs=-1"], "--set epochs=-1: epochs must be ≥ 1"),
    Row(
        "--set zero features",
        [*RUN, *MERF, "--set", "dp-merf.n_features=0"],
        "--set n_features=0: n_features must be ≥ 2 (features come in cos/sin pairs)",
    ),
    Row("--set NaN float", [*RUN, *MERF, "--set", "dp-merf.lr=nan"], "--set lr=nan: expected a float like"),
    Row(
        "--set unknown architecture",
        [*RUN, *MERF, "--set", "dp-merf.architecture=resnet"],
        "architecture must be one of fc, conv",
    ),
    Row(
        "--set malformed widths",
        [*RUN, *MERF, "--set", "dp-merf.hidden=big"],
        "hidden must look like 200-500-500-200, 4d-2d or 4c-2c",
    ),
    Row("--set method not in grid", [*RUN, *GMM, "--set", "dp-merf.epochs=1"], "'dp-merf' is not in --methods (real)"),
    Row("--set without =", [*RUN, *MERF, "--set", "dp-merf.epochs"], "expected METHOD.PARAM=VALUE"),
    Row("--eval-set unknown setting", [*RUN, *GMM, "--eval-set", "nll.nope=1"], "--eval-set nll.nope: no such setting"),
    Row("--jobs 0", [*RUN, *GMM, "--jobs", "0"], "error: --jobs must be at least 1"),
    Row("--jobs not a number", [*RUN, *GMM, "--jobs", "two"], "argument --jobs: invalid int value: 'two'"),
    Row("negative timeout", [*RUN, *GMM, "--timeout=-5"], "error: --timeout must be a positive number of seconds"),
    Row("NaN timeout", [*RUN, *GMM, "--timeout", "nan"], "error: --timeout must be a positive number of seconds"),
    Row(
        "--data-dir missing",
        [*RUN, *GMM, "--data-dir", "/no/such/dir"],
        "error: --data-dir /no/such/dir is not a folder",
    ),
    Row(
        "data file missing",
        [*RUN, "--methods", "real", "--datasets", "cervical", "--data-dir", "{data}/empty"],
        "kag_risk_factors_cervical_cancer.csv is missing and DPBENCH_OFFLINE is set",
    ),
    Row(
        "data file corrupt",
        [*RUN, "--methods", "real", "--datasets", "cervical", "--data-dir", "{data}/corrupt"],
        "is corrupt or not the original file",
    ),
    Row(
        "data file truncated",
        [*RUN, "--methods", "real", "--datasets", "cervical", "--data-dir", "{data}/truncated"],
        "is corrupt or not the original file",
    ),
    Row(
        "data file is a FIFO",
        [*RUN, "--methods", "real", "--datasets", "cervical", "--data-dir", "{data}/fifo"],
        "is not a regular file",
    ),
    Row(
        "data file links to an endless device",
        [*RUN, "--methods", "real", "--datasets", "cervical", "--data-dir", "{data}/endless"],
        "is not a regular file",
    ),
    Row(
        "gzip data file truncated",
        [*RUN, "--methods", "real", "--datasets", "mnist", "--data-dir", "{data}/mnist-truncated"],
        "cannot be read",
    ),
    Row(
        "data file with wrong columns",
        [*RUN, "--methods", "real", "--datasets", "epileptic", "--data-dir", "{data}/columns"],
        "has 179 columns, expected 180",
    ),
    Row(
        "data file with NaN",
        [*RUN, "--methods", "real", "--datasets", "epileptic", "--data-dir", "{data}/nan"],
        "column 'X7' has a missing or infinite value in row 3",
    ),
    Row(
        "data file cut mid-row",
        [*RUN, "--methods", "real", "--datasets", "epileptic", "--data-dir", "{data}/cut"],
        "has a missing or infinite value in row",
    ),
    Row(
        "values outside public bounds (warning, clipped)",
        [
            *RUN,
            "--methods",
            "real",
            "--datasets",
            "epileptic",
            "--data-dir",
            "{data}/bounds",
            "--evaluators",
            "downstream",
            "--eval-set",
            "downstream.in_process=true",
        ],
        "warning: ",
        code=0,
        slow=True,
    ),
    Row(
        "--device cuda without CUDA",
        [*RUN, *GMM, "--device", "cuda"],
        "error: --device cuda was asked for, but torch sees no CUDA device",
    ),
    Row(
        "--executor ray without Ray installed",
        [*RUN, *GMM, "--executor", "ray"],
        "--executor ray needs Ray, which is not installed: pip install",
        no_ray=True,
    ),
    Row(
        "dead --ray-address",
        [*RUN, *GMM, "--executor", "ray", "--ray-address", "127.0.0.1:9"],
        "error: --ray-address 127.0.0.1:9: nothing answers there (Connection refused); start the cluster",
    ),
    Row(
        "malformed --ray-address",
        [*RUN, *GMM, "--executor", "ray", "--ray-address", "nowhere"],
        "error: --ray-address 'nowhere': expected host:port or ray://host:port (or local, auto)",
    ),
    Row(
        "--ray-address without --executor ray",
        [*RUN, *GMM, "--ray-address", "127.0.0.1:6379"],
        "error: --ray-address needs --executor ray",
    ),
    Row("table: unknown experiment", ["table", "--experiment", "nothing-here"], "run `python -m bench run` first"),
    Row("table: unknown layout", ["table", "--layout", "wide"], "argument --layout: invalid choice: 'wide'"),
    Row("show: no store here", ["show", "0123456789abcdef"], "no MLflow store at "),
    Row("show: unknown run", ["show", "0123456789abcdef"], "no run '0123456789abcdef'", store=True),
    Row("table: unknown experiment in a store", ["table", "--experiment", "nope"], "no experiment 'nope'", store=True),
    Row("runs: unknown experiment in a store", ["runs", "--experiment", "nope"], "no experiment 'nope'", store=True),
    Row(
        "audit of a method on data it does not fit",
        ["audit", "--method", "mst", "--dataset", "gmm2d", "--runs", "20"],
        "error: mst does not fit gmm2d: it takes discrete data, gmm2d is 2d",
    ),
    Row(
        "store URI of an unknown scheme",
        ["table"],
        "error: MLFLOW_TRACKING_URI=foo://bar: unknown scheme 'foo'",
        env={"MLFLOW_TRACKING_URI": "foo://bar"},
    ),
    Row(
        "store URI naming a file that is not SQLite",
        [*RUN, *GMM],
        "error: MLFLOW_TRACKING_URI=sqlite:////etc/hostname: /etc/hostname is not an SQLite database",
        env={"MLFLOW_TRACKING_URI": "sqlite:////etc/hostname"},
    ),
    Row(
        "store URI naming no store, for reading",
        ["table"],
        "error: no MLflow store at /nonexistent-dpbench/x.db",
        env={"MLFLOW_TRACKING_URI": "sqlite:////nonexistent-dpbench/x.db"},
    ),
    Row(
        "dead tracking server: runs",
        ["runs"],
        "the MLflow tracking server at http://127.0.0.1:9 is unreachable",
        env=DEAD,
    ),
    Row("read-only working folder", [*RUN, *GMM], "set MLFLOW_TRACKING_URI to a writable place", cwd="readonly"),
    Row(
        "dead tracking server: table",
        ["table"],
        "the MLflow tracking server at http://127.0.0.1:9 is unreachable",
        env=DEAD,
    ),
    Row(
        "dead tracking server: show",
        ["show", "0123456789abcdef"],
        "the MLflow tracking server at http://127.0.0.1:9 is unreachable",
        env=DEAD,
    ),
    Row("evaluate: no --evaluators", ["evaluate"], "the following arguments are required: --evaluators"),
    Row(
        "evaluate: unknown evaluator",
        ["evaluate", "--evaluators", "privacy,dcr"],
        "error: unknown evaluator 'dcr'; valid: ",
    ),
    Row(
        "evaluate: unknown experiment",
        ["evaluate", "--evaluators", "privacy", "--experiment", "never-made"],
        "no experiment 'never-made' in ",
        store=True,
    ),
    Row(
        "evaluate: bad setting",
        ["evaluate", "--evaluators", "privacy", "--eval-set", "privacy.max_rows=3"],
        "error: --eval-set privacy: max_rows must be at least 10 (got 3)",
    ),
    Row(
        "evaluate: setting of an evaluator not named",
        ["evaluate", "--evaluators", "privacy", "--eval-set", "fidelity.max_pairs=5"],
        "--eval-set",
    ),
    Row(
        "evaluate: empty experiment name",
        ["evaluate", "--evaluators", "privacy", "--experiment", ""],
        "argument --experiment: an experiment name must not be empty",
    ),
    Row(
        "table: no record folder",
        ["table", "--records", "no-such-folder"],
        "error: no record folder no-such-folder; write one with `python -m bench export --out no-such-folder`",
    ),
    Row(
        "report: no record folder", ["report", "--records", "no-such-folder", "--out", "out"], "error: no record folder"
    ),
    Row("export: no store here", ["export"], "error: no MLflow store at "),
    Row(
        "export: unknown experiment",
        ["export", "--experiment", "never-made"],
        "no finished run of never-made in ",
        store=True,
    ),
    Row("import: no record folder", ["import", "no-such-folder"], "error: no record folder no-such-folder"),
    Row(
        "export: dead tracking server",
        ["export"],
        "the MLflow tracking server at http://127.0.0.1:9 is unreachable",
        env=DEAD,
    ),
    # grid options
    Row("unknown preset", [*RUN, "--preset", "nope"], "error: unknown preset 'nope'; valid: dphp-fig2"),
    Row(
        "--preset with --profile",
        [*RUN, "--preset", "dphp-table2", "--profile", "smoke"],
        "error: --preset sets the grid itself; drop --profile (only --methods, --datasets, --eps and --seeds may",
    ),
    Row(
        "--preset narrowed to no cell",
        [*RUN, "--preset", "dphp-fig2", "--eps", "1", "--methods", "real"],
        "error: preset 'dphp-fig2' has no cell with --methods real --eps 1",
    ),
    Row(
        "--preset with bad seeds",
        [*RUN, "--preset", "dphp-fig2", "--seeds", "x"],
        "error: --seeds 'x': expected e.g. 0-4",
    ),
    Row("empty --methods", [*RUN, "--methods", "", "--datasets", "gmm2d"], "run needs --methods and --datasets"),
    Row("empty --datasets", [*RUN, "--methods", "real", "--datasets", ""], "run needs --methods and --datasets"),
    Row("empty --evaluators", [*RUN, *GMM, "--evaluators", ""], "error: --evaluators '' names no evaluator"),
    Row(
        "evaluator for other data only",
        [*RUN, *GMM, "--evaluators", "fid"],
        "error: --evaluators fid: none applies to any cell of this grid (evaluator fid does not apply to gmm2d)",
    ),
    Row(
        "method for other data only",
        [*RUN, "--methods", "mst", "--datasets", "gmm2d"],
        "error: the grid is empty: skipped mst on gmm2d: it does not support 2d data",
    ),
    Row("empty --eps", [*RUN, *MERF, "--eps", ""], "error: ε value '' is not a number; pass e.g. --eps 0.1,0.3,1"),
    Row("empty ε in a list", [*RUN, *MERF, "--eps", "1,,2"], "error: ε value '' is not a number"),
    Row("a word in the ε list", [*RUN, *MERF, "--eps", "1, two"], "error: ε value 'two' is not a number"),
    Row("δ < 0", [*RUN, *MERF, "--delta=-1"], "error: δ must lie in (0, 1) (got -1)"),
    Row("δ underflows to 0", [*RUN, *MERF, "--delta", "1e-400"], "error: δ must lie in (0, 1) (got 1e-400)"),
    Row("δ = ∞", [*RUN, *MERF, "--delta", "inf"], "error: δ must lie in (0, 1) (got inf)"),
    Row("empty δ", [*RUN, *MERF, "--delta", ""], "error: δ '' is not a number"),
    Row("empty --seeds", [*RUN, *GMM, "--seeds", ""], "error: --seeds '': expected e.g. 0-4"),
    Row(
        "a typo'd seed range",
        [*RUN, *GMM, "--seeds", "0-99999999"],
        "error: --seeds '0-99999999': more than 1000 seeds in one grid; run the seeds in parts",
    ),
    Row("--threads 0", [*RUN, *GMM, "--threads", "0"], "error: --threads must be at least 1"),
    Row("--threads < 0", [*RUN, *GMM, "--threads=-1"], "error: --threads must be at least 1"),
    Row("--threads not a number", [*RUN, *GMM, "--threads", "two"], "argument --threads: invalid int value: 'two'"),
    Row("--jobs < 0", [*RUN, *GMM, "--jobs=-1"], "error: --jobs must be at least 1"),
    Row("--timeout 0", [*RUN, *GMM, "--timeout", "0"], "error: --timeout must be a positive number of seconds"),
    Row("--timeout not a number", [*RUN, *GMM, "--timeout", "abc"], "argument --timeout: invalid float value: 'abc'"),
    Row("unknown protocol", [*RUN, *GMM, "--protocol", "weird"], "argument --protocol: invalid choice: 'weird'"),
    Row("unknown device", [*RUN, *GMM, "--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
    Row("unknown executor", [*RUN, *GMM, "--executor", "dask"], "argument --executor: invalid choice: 'dask'"),
    Row(
        "blank experiment name",
        [*RUN, *GMM, "--experiment", "   "],
        "argument --experiment: an experiment name must not be empty",
    ),
    Row(
        "--data-dir is a file",
        [*RUN, *GMM, "--data-dir", "/etc/hostname"],
        "error: --data-dir /etc/hostname is not a folder",
    ),
    # hyperparameters (--set): each method's rules
    Row(
        "DP-HP: unknown γ placement",
        [*RUN, *HP, "--set", "dp-hp.gamma_on=nowhere"],
        "gamma_on must be one of prod, sum",
    ),
    Row(
        "DP-HP: unknown label mode",
        [*RUN, *HP, "--set", "dp-hp.labels=guess"],
        "labels must be one of released, uniform",
    ),
    Row(
        "DP-HP: budget share > 1",
        [*RUN, *HP, "--set", "dp-hp.sum_share=1.5"],
        "--set sum_share=1.5: sum_share must be < 1",
    ),
    Row("DP-HP: budget share 1", [*RUN, *HP, "--set", "dp-hp.sum_share=1"], "--set sum_share=1: sum_share must be < 1"),
    Row(
        "DP-HP: budget share 0",
        [*RUN, *HP, "--set", "dp-hp.sum_share=0"],
        "--set sum_share=0: sum_share must be > 0 and < 1",
    ),
    Row(
        "DP-HP: no product coordinates",
        [*RUN, *HP, "--set", "dp-hp.prod_dims=0"],
        "--set prod_dims=0: prod_dims must be ≥ 1",
    ),
    Row(
        "DP-HP: unknown kernel inputs",
        [*RUN, *HP, "--set", "dp-hp.kernel_inputs=shifted"],
        "kernel_inputs must be one of raw, centred",
    ),
    Row(
        "DP-HP: unknown numerical outputs",
        [*RUN, *HP, "--set", "dp-hp.numerical_outputs=raw-ish"],
        "numerical_outputs must be one of raw, public-range",
    ),
    Row(
        "DP-HP: the seeds' median heuristic at a finite ε",
        [*RUN, *HP, "--set", "dp-hp.length_scale_rule=median-heuristic"],
        "length_scale_rule = median-heuristic is an ablation for --eps inf only: it reads the private rows",
    ),
    Row(
        "DP-HP: the seeds' unconditional target at a finite ε",
        [*RUN, *HP, "--set", "dp-hp.prod_target_rule=unconditional"],
        "prod_target_rule = unconditional is an ablation for --eps inf only",
    ),
    Row(
        "DP-MERF: the authors' median heuristic at a finite ε",
        [*RUN, *MERF, "--set", "dp-merf.length_scale_rule=median-heuristic"],
        "length_scale_rule = median-heuristic is an ablation for --eps inf only",
    ),
    Row(
        "DP-MERF: unknown length-scale rule",
        [*RUN, *MERF, "--set", "dp-merf.length_scale_rule=guess"],
        "length_scale_rule must be one of public-range, median-heuristic, dp-median",
    ),
    Row(
        "DP-MERF: batch 0", [*RUN, *MERF, "--set", "dp-merf.batch_size=0"], "--set batch_size=0: batch_size must be ≥ 1"
    ),
    Row("DP-MERF: learning rate 0", [*RUN, *MERF, "--set", "dp-merf.lr=0"], "--set lr=0: lr must be > 0"),
    Row("DP-MERF: learning rate ∞", [*RUN, *MERF, "--set", "dp-merf.lr=inf"], "--set lr=inf: expected a float like"),
    Row("DP-MERF: decay 0", [*RUN, *MERF, "--set", "dp-merf.lr_decay=0"], "lr_decay must be > 0 and ≤ 1"),
    Row(
        "DP-MERF: length scale 0",
        [*RUN, *MERF, "--set", "dp-merf.length_scale=0"],
        "--set length_scale=0: length_scale must be > 0",
    ),
    Row(
        "DP-MERF: batch fraction > 1", [*RUN, *MERF, "--set", "dp-merf.batch_fraction=2"], "batch_fraction must be ≤ 1"
    ),
    Row(
        "DP-MERF: no latent dimensions",
        [*RUN, *MERF, "--set", "dp-merf.noise_dim=0"],
        "--set noise_dim=0: noise_dim must be ≥ 1",
    ),
    Row(
        "DP-GAN: clipping norm 0",
        [*RUN, *GAN, "--set", "dp-gan.max_grad_norm=0"],
        "--set max_grad_norm=0: max_grad_norm must be > 0",
    ),
    Row("DP-GAN: no epochs", [*RUN, *GAN, "--set", "dp-gan.epochs=0"], "--set epochs=0: epochs must be ≥ 1"),
    Row(
        "DP-CGAN: the whole budget to the labels",
        [*RUN, "--methods", "dp-cgan", "--datasets", "gmm2d", "--set", "dp-cgan.label_share=1"],
        "--set label_share=1: label_share must be < 1",
    ),
    Row("PrivBayes: θ = 0", [*RUN, *BAYES, "--set", "privbayes.theta=0"], "--set theta=0: theta must be > 0"),
    Row(
        "PrivBayes: the whole budget to the structure",
        [*RUN, *BAYES, "--set", "privbayes.structure_share=1"],
        "--set structure_share=1: structure_share must be < 1",
    ),
    Row(
        "PrivBayes: negative parent count",
        [*RUN, *BAYES, "--set", "privbayes.max_parents=-1"],
        "max_parents must be ≥ 1",
    ),
    Row(
        "MST: unknown parameter",
        [*RUN, "--methods", "mst", "--datasets", "adult-discrete", "--set", "mst.rounds=3"],
        "error: mst: unknown parameter 'rounds'; valid: iterations",
    ),
    Row(
        "a parameter of a method that has none", [*RUN, *GMM, "--set", "real.x=1"], "error: real: unknown parameter 'x'"
    ),
    Row("--set without a method", [*RUN, *MERF, "--set", ".epochs=1"], "'' is not in --methods (dp-merf)"),
    Row("--set without a parameter", [*RUN, *MERF, "--set", "dp-merf.=1"], "expected METHOD.PARAM=VALUE"),
    Row("--set without a value", [*RUN, *MERF, "--set", "dp-merf.epochs="], "--set epochs=: expected an int like"),
    Row(
        "--eval-set without a value",
        [*RUN, "--methods", "real", "--datasets", "cervical", "--eval-set", "downstream.scaling="],
        "downstream.scaling must be one of none, standard (got '')",
    ),
    Row(
        "--eval-set without =",
        [*RUN, "--methods", "real", "--datasets", "cervical", "--eval-set", "downstream"],
        "expected EVALUATOR.SETTING=VALUE",
    ),
    Row("--eval-set of an unknown evaluator", [*RUN, *GMM, "--eval-set", "nope.x=1"], "'nope' is not in --evaluators"),
    # the other commands
    Row("list: unknown kind", ["list", "things"], "argument what: invalid choice: 'things'"),
    Row("table: unknown format", ["table", "--format", "xlsx"], "argument --format: invalid choice: 'xlsx'"),
    Row(
        "table: the record folder is a file",
        ["table", "--records", "/etc/hostname"],
        "error: no record folder /etc/hostname",
    ),
    Row("runs: no record folder", ["runs", "--records", "no-such-folder"], "error: no record folder no-such-folder"),
    Row("plot: unknown layout", ["plot", "--layout", "pie"], "argument --layout: invalid choice: 'pie'"),
    Row("plot: no store here", ["plot"], "error: no MLflow store at "),
    Row("show: no run id", ["show"], "the following arguments are required: RUN"),
    Row(
        "report: an experiment no preset logs to",
        ["report", "--experiment", "nope", "--out", "out"],
        "error: no preset logs to experiment 'nope'",
    ),
    Row("import: a folder of no records", ["import", "/etc"], "error: /etc holds no run records"),
    Row("import: a file", ["import", "/etc/hostname"], "error: no record folder /etc/hostname"),
    Row(
        "evaluate: an empty evaluator list", ["evaluate", "--evaluators", ","], "error: --evaluators ',' names nothing"
    ),
    Row(
        "audit: unknown method",
        ["audit", "--method", "nope", "--dataset", "gmm2d"],
        "error: unknown method 'nope'; valid: ",
    ),
    Row(
        "audit: unknown dataset",
        ["audit", "--method", "dp-merf", "--dataset", "nope"],
        "error: unknown dataset 'nope'; valid: ",
    ),
    Row("audit: no --method", ["audit", "--dataset", "gmm2d"], "the following arguments are required: --method"),
    Row("audit: too few runs", [*AUDIT, "--runs", "0"], "error: --runs must be between 20"),
    Row(
        "audit: a non-private method",
        ["audit", "--method", "real", "--dataset", "gmm2d"],
        "error: real is not a private method; there is no privacy claim to audit",
    ),
    Row("audit: ε = 0", [*AUDIT, "--eps", "0"], "error: ε must be > 0 (got 0)"),
    Row(
        "audit: ε = ∞",
        [*AUDIT, "--eps", "inf"],
        "error: --eps must be finite: a non-private run makes no claim to audit",
    ),
    Row("audit: too few rows", [*AUDIT, "--rows", "0"], "error: --rows must be between 2"),
    Row("audit: step level without DP-SGD", [*AUDIT, "--level", "step"], "error: dp-merf trains no DP-SGD phase"),
    Row("audit: δ = 2", [*AUDIT, "--delta", "2"], "error: δ must lie in (0, 1) (got 2)"),
    Row("audit: unknown parameter", [*AUDIT, "--set", "dp-merf.nope=1"], "error: unknown parameter 'nope'; valid: "),
    Row(
        "audit: a parameter of another method",
        [*AUDIT, "--set", "dp-hp.epochs=1"],
        "'dp-hp' is not in --methods (dp-merf)",
    ),
    Row("pretrain-encoder: no epochs", ["pretrain-encoder", "--epochs", "0"], "error: --epochs must be at least 1"),
    Row("pretrain-encoder: --limit 0", ["pretrain-encoder", "--limit", "0"], "error: --limit must be at least 1"),
    Row(
        "pretrain-encoder: unknown public dataset",
        ["pretrain-encoder", "--public", "nope"],
        "error: unknown dataset 'nope'",
    ),
    Row(
        "pretrain-encoder: unknown architecture",
        ["pretrain-encoder", "--arch", "nope"],
        "error: unknown encoder architecture 'nope'; valid: resnet18-cifar",
    ),
    Row(
        "deadline not a time",
        [*RUN, *GMM, "--deadline", "soon"],
        "error: --deadline 'soon' is neither a duration from now (90m, 2h, 1h30m, 45s) nor a clock time (14:30)",
    ),
    Row("deadline of no length", [*RUN, *GMM, "--deadline", "0m"], "error: --deadline '0m' is neither a duration"),
    # issue 61: silently accepted conflicts and out-of-range numbers
    Row("ε given twice", [*RUN, *GMM, "--eps", "1,1.0"], "error: ε 1.0 is given twice in --eps '1,1.0'"),
    Row("a method given twice", [*RUN, "--methods", "real,real", "--datasets", "gmm2d"], "names real twice"),
    Row(
        "a --set key given twice",
        [*RUN, *MERF, "--set", "dp-merf.epochs=1", "--set", "dp-merf.epochs=2"],
        "error: --set dp-merf.epochs given twice ('1' and '2'); keep the one you mean",
    ),
    Row("a tiny ε", [*RUN, *MERF, "--eps", "1e-300"], "error: ε = 1e-300 is below 0.0001"),
    Row("a seed beyond 2³²", [*RUN, *GMM, "--seeds", "4294967296"], "a seed must be at most 4294967295"),
    Row("an absurd --threads", [*RUN, *GMM, "--threads", "100000"], "error: --threads 100000: at most 1024"),
    Row("audit: runs without a cap", [*AUDIT, "--runs", "100000000"], "error: --runs must be between 20"),
    Row("audit: rows without a cap", [*AUDIT, "--rows", "100000000"], "error: --rows must be between 2 and 100,000"),
    Row(
        "an experiment name over MLflow's limit",
        [*RUN, *GMM, "--experiment", "x" * 501],
        "an experiment name has at most 500 characters",
    ),
    Row(
        "a file-store tracking URI",
        [*RUN, *GMM],
        "a file store (a bare path or file://), which this MLflow no longer writes",
        env={"MLFLOW_TRACKING_URI": "file:///tmp/dpbench-no-file-store"},
    ),
    Row(
        "a bare-path tracking URI",
        [*RUN, *GMM],
        "a file store (a bare path or file://), which this MLflow no longer writes",
        env={"MLFLOW_TRACKING_URI": "/tmp/dpbench-no-file-store"},
    ),
    Row(
        "a database store without its driver",
        [*RUN, *GMM],
        "a mysql store needs the Python driver 'no_such_driver', which is not installed",
        env={"MLFLOW_TRACKING_URI": "mysql+no_such_driver://user@127.0.0.1/db"},
    ),
    Row(
        "report: an empty record folder",
        ["report", "--records", "{data}/empty", "--out", "out"],
        "holds no run record (experiment folders of *.json)",
    ),
    Row(
        "table --out a folder",
        ["table", "--records", "{records}", "--experiment", "table2", "--out", "{data}"],
        "is a folder; name the file to write",
    ),
    Row(
        "table --out a full device",
        ["table", "--records", "{records}", "--experiment", "table2", "--out", "/dev/full"],
        "cannot write",  # root: the write fails (No space left on device); else /dev is not writable
    ),
    Row(
        "audit of a method that reads no row",
        ["audit", "--method", "uniform", "--dataset", "cervical", "--eps", "1"],
        "reads no row (data-independent, ε spent 0): it makes no release to audit",
    ),
]


def epileptic_frame(rows: int = 60, seed: int = 0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    values = rng.integers(-300, 300, size=(rows, 178))
    frame = pd.DataFrame(values, columns=EPILEPTIC_COLUMNS[1:-1])
    frame.insert(0, "", [f"X{i}.V1.{i}" for i in range(rows)])
    frame["y"] = np.tile([1, 2, 3, 4, 5], rows // 5 + 1)[:rows]
    return frame


@pytest.fixture(scope="module")
def bad_data(tmp_path_factory, data_dir) -> Path:
    """Data folders, each broken in one way (the originals are copied, never touched)."""
    root = tmp_path_factory.mktemp("bad-data")
    (root / "empty").mkdir()
    original = (data_dir / CERVICAL).read_bytes()
    for name, content in {"corrupt": b"\x00garbage\xff" * 100, "truncated": original[: len(original) // 2]}.items():
        (root / name / "cervical").mkdir(parents=True)
        (root / name / CERVICAL).write_bytes(content)
    for name in ("fifo", "endless"):  # reading either never ends: refused before any read
        (root / name / "cervical").mkdir(parents=True)
    os.mkfifo(root / "fifo" / CERVICAL)
    (root / "endless" / CERVICAL).symlink_to("/dev/zero")
    mnist = root / "mnist-truncated" / "mnist"
    shutil.copytree(data_dir / "mnist", mnist)
    for path in mnist.glob("train-images*"):
        path.write_bytes(path.read_bytes()[:5000])  # a download cut short: the gzip stream ends early

    def epileptic(name: str, frame, text_edit=None) -> None:
        folder = root / name / "epileptic"
        folder.mkdir(parents=True)
        text = frame.to_csv(index=False)
        (folder / "data.csv").write_text(text_edit(text) if text_edit else text)

    epileptic("columns", epileptic_frame().drop(columns=["X178"]))
    with_nan = epileptic_frame().astype({"X7": float})
    with_nan.loc[3, "X7"] = np.nan
    epileptic("nan", with_nan)
    epileptic("cut", epileptic_frame(), lambda text: text[: text.rindex(",", 0, len(text) - 400)])
    out_of_bounds = epileptic_frame(200)
    out_of_bounds.loc[[0, 5, 9], "X1"] = 5000  # the ADC range is [-2048, 2047]
    epileptic("bounds", out_of_bounds)
    return root


def readonly_folder(tmp_path: Path) -> Path:
    """A folder where creating a file fails. As root, permissions do not stop writes, so use a
    read-only mount such as /sys when there is one."""
    if os.geteuid() != 0:
        folder = tmp_path / "readonly"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    for candidate in (Path("/sys"), Path("/proc/self")):
        try:
            (candidate / ".dpbench-probe").write_text("x")
        except OSError:
            return candidate
    pytest.skip("running as root without a read-only folder to try")


def check_answer(row: Row, code: int, stdout: str, stderr: str) -> None:
    output = stdout + stderr
    assert "Traceback" not in output, output
    assert code == row.code, output
    lines = [line for line in stderr.splitlines() if line.strip()]
    if row.code == 2:
        # one error line; a file used unverified may add its warning line, nothing else
        errors = [line for line in lines if not line.startswith("warning: ")]
        assert len(errors) == 1, output
        assert errors[0].startswith("error: ") and row.expect in errors[0], output
    else:
        assert any(line.startswith("warning: ") and row.expect in line for line in lines), output


def prepare(row: Row, bad_data: Path, tmp_path: Path, monkeypatch) -> list[str]:
    if row.cwd == "readonly":
        monkeypatch.chdir(readonly_folder(tmp_path))
    if row.store:
        from bench.harness import tracking

        tracking.experiment_id(tracking.client(), tracking.DEFAULT_EXPERIMENT)
    records = str(Path(__file__).resolve().parents[1] / "results" / "runs")
    return [part.replace("{data}", str(bad_data)).replace("{records}", records) for part in row.argv]


# The real command line, as a user types it. Each row starts a Python process that imports torch
# (5-10 s on the 2 shared development cores), so the full catalogue is in the slow suite; the
# in-process test below runs the same rows in the default suite.
@pytest.mark.slow
@pytest.mark.parametrize("row", [pytest.param(r, id=r.name) for r in ROWS])
def test_bad_input_command_line(row: Row, workdir, bad_data, tmp_path, monkeypatch):
    argv = prepare(row, bad_data, tmp_path, monkeypatch)
    env = {"DPBENCH_OFFLINE": "1", **row.env}
    if row.no_ray:  # a package named ray that fails to import, first on the path
        blocker = tmp_path / "no-ray" / "ray"
        blocker.mkdir(parents=True)
        (blocker / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
        env["PYTHONPATH"] = os.pathsep.join([str(blocker.parent), os.environ.get("PYTHONPATH", "")])
    result = run_cli(*argv, env=env, timeout=300)
    check_answer(row, result.returncode, result.stdout, result.stderr)


@pytest.mark.parametrize("row", [pytest.param(r, id=r.name) for r in ROWS if not r.slow])
def test_bad_input_in_process(row: Row, workdir, bad_data, tmp_path, monkeypatch, capsys):
    import warnings

    from bench.cli import main

    argv = prepare(row, bad_data, tmp_path, monkeypatch)
    monkeypatch.setenv("DPBENCH_OFFLINE", "1")
    for name, value in row.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # main() replaces it
    if row.no_ray:
        import sys

        monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's errors
        code = exit_.code
    captured = capsys.readouterr()
    check_answer(row, code, captured.out, captured.err)
    if os.environ.get("DPBENCH_CATALOGUE_OUT"):  # regenerates the README table's answers
        line = next(x for x in captured.err.splitlines() if x.startswith("error: "))
        shown = " ".join(a if "{data}" not in a else a.replace("{data}/", "") for a in row.argv)
        with open(os.environ["DPBENCH_CATALOGUE_OUT"], "a") as out:
            out.write(f"{row.name}\t{shown}\t{line}\t{code}\n")


def test_clipped_values_are_counted_and_clipped(tmp_path):
    """A user's file with values outside the public bounds is clipped to them, with a count."""
    import warnings

    from datasets import epileptic

    frame = epileptic_frame(200)
    frame.loc[[0, 5, 9], "X1"] = 5000
    frame.loc[2, "X2"] = -9000
    (tmp_path / "epileptic").mkdir()
    frame.to_csv(tmp_path / "epileptic" / "data.csv", index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = epileptic.read(tmp_path)
    texts = [str(w.message) for w in caught if "clipped to them" in str(w.message)]
    assert len(texts) == 1 and "4 value(s)" in texts[0] and "X1 (3)" in texts[0] and "X2 (1)" in texts[0]
    assert table.x[:, 0].max() == 2047 and table.x[:, 1].min() == -2048
    assert table.x[1, 0] == frame.loc[1, "X1"]  # values inside the bounds are untouched


def test_every_declared_hyperparameter_passes_its_rule():
    """The rules refuse bad --set values; they must accept every value the methods declare."""
    from bench.core.params import NAMED_RULES, PROFILES
    from bench.api.registry import DATASETS, METHODS
    from methods.dp_hp import GAMMA_PLACEMENTS
    from methods.mean_embedding import LABEL_MODES
    from methods.nets import ARCHITECTURES

    assert set(NAMED_RULES["architecture"].choices) == set(ARCHITECTURES)
    assert set(NAMED_RULES["gamma_on"].choices) == set(GAMMA_PLACEMENTS)
    assert set(NAMED_RULES["labels"].choices) == set(LABEL_MODES)
    for method in METHODS:
        for dataset in DATASETS:
            if dataset.kind in method.data_kinds:
                for profile in PROFILES:
                    for private in (True, False):
                        method.hyperparameters.resolve(dataset.name, profile, None, private)


def test_a_plugin_module_that_fails_while_importing_is_one_line_even_for_list(tmp_path):
    """Issue 61: a DPBENCH_PLUGINS module raising while it is imported was an 'unexpected' exit."""
    (tmp_path / "failing_plugin.py").write_text("raise RuntimeError('boom')\n")
    env = {
        "DPBENCH_PLUGINS": "failing_plugin",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }
    result = run_cli("list", env=env, timeout=120)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "DPBENCH_PLUGINS module 'failing_plugin' failed while importing (RuntimeError: boom)" in result.stderr


def test_a_ray_address_that_accepts_and_never_answers_is_one_line_in_seconds(workdir, silent_address, capsys):
    """Issue 61: `ray.init` on an address that accepts connections and never answers waits for
    ever; the pre-flight check now asks for the gRPC server's first frame, for 5 s. (A real
    cluster's head passes the same check: tests/test_ray_executor.py, slow.)"""
    import time

    from bench.cli import main

    started = time.monotonic()
    code = main([*RUN, *GMM, "--executor", "ray", "--ray-address", silent_address])
    err = capsys.readouterr().err
    assert code == 2 and time.monotonic() - started < 30, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"error: --ray-address {silent_address}: it accepts connections but does not answer as a Ray cluster" in err
