"""The ``run`` command's grid options in one place: declared (``add_run_options``), defaulted and
turned into a ``GridSpec`` (``grid_spec_from_args``) — the command line's edge. Presets are typed
``GridSpec`` literals and never pass through here; ``GridSpec.to_argv`` prints the arguments that
build a spec again (tested), and nothing below the command line imports ``bench.cli``.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import re
from pathlib import Path

from bench.core.data import PROTOCOLS
from bench.core.params import PROFILES, parse_overrides
from bench.core.paths import DATA_DIR_VARIABLE
from bench.api.registry import EVALUATORS
from bench.harness import tracking
from bench.harness.grid import NO_EVALUATORS, GridError, GridSpec, parse_seeds, split_names
from bench.privacy.budget import CALIBRATORS, DEFAULT_DELTA, Delta, DeltaKind, parse_epsilons


MAX_EXPERIMENT_NAME = 500  # MLflow's limit on a name


def experiment_name(text: str) -> str:
    """An MLflow experiment name: not empty (MLflow refuses one deep inside a run otherwise)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an experiment name must not be empty")
    if len(text) > MAX_EXPERIMENT_NAME:
        raise argparse.ArgumentTypeError(
            f"an experiment name has at most {MAX_EXPERIMENT_NAME} characters (MLflow's limit)"
        )
    return text


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Every option of ``run`` (grid and execution)."""
    parser.add_argument(
        "--preset",
        help="run a named grid for one of the seeds' tables or figures (see `list presets`); it sets every "
        "grid option (methods … experiment); --methods, --datasets, --eps and --seeds narrow it to the "
        "cells it shares with them",
    )
    parser.add_argument(
        "--methods",
        help="comma-separated method names (see `list methods`); required without --preset, which it narrows",
    )
    parser.add_argument(
        "--datasets",
        help="comma-separated dataset names (see `list datasets`); required without --preset, which it narrows",
    )
    parser.add_argument(
        "--eps",
        help="comma-separated ε targets, e.g. 0.1,0.3,1 (inf = no noise); default 1 (with --preset: narrows it)",
    )
    parser.add_argument(
        "--delta", help=f"δ target, or 'auto' for 1/(10·n_train) per dataset; default {DEFAULT_DELTA:g}"
    )
    parser.add_argument("--seeds", help="seeds, e.g. 0-4 or 0,3; default 0 (a preset's own seeds with --preset)")
    parser.add_argument(
        "--evaluators",
        help="comma-separated evaluators (default: every applicable one, except those marked "
        "'named only' in `list evaluators`); 'none' fits and stores the sample only, for a later "
        "run or `evaluate` to score (one fit per setup)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        metavar="METHOD.PARAM=VALUE",
        help="override a hyperparameter; repeatable, e.g. --set dp-merf.n_features=1000",
    )
    parser.add_argument(
        "--eval-set",
        dest="evaluator_overrides",
        action="append",
        metavar="EVALUATOR.SETTING=VALUE",
        help="change an evaluator's setting; repeatable, e.g. --eval-set fid.n_samples=1000 "
        "(`list evaluators` shows them); recorded with the run as eval.EVALUATOR.SETTING",
    )
    parser.add_argument(
        "--profile",
        choices=PROFILES,
        help="paper settings (default), smoke (seconds), or cpu (methods that declare it: a 2-core CPU cell)",
    )
    parser.add_argument(
        "--calibrator",
        choices=CALIBRATORS,
        help="noise calibration: tight (exact Gaussian, default) or paper (the seeds' RDP calibrator)",
    )
    parser.add_argument(
        "--secure-noise",
        action="store_true",
        help="draw DP noise from the OS's cryptographically secure source instead of the seeded generators "
        "(results are then not reproducible from the seed; use it when releasing synthetic data)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads per cell, the same whatever --jobs is (results must not depend on "
        "how many cells run side by side); a value other than 1 is part of the cell key. Cores no cell "
        "uses are lent to fits whose results do not depend on the thread count (see docs/cli.md)",
    )
    parser.add_argument(
        "--executor",
        default="local",
        choices=("local", "ray"),
        help="where cells run: local worker processes, or Ray tasks (one per cell, asking for --threads "
        "CPUs and, with --device cuda, a GPU); the runner alone writes MLflow either way",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="Ray cluster to use with --executor ray, e.g. 127.0.0.1:6379 (default: $RAY_ADDRESS, else a new local instance)",
    )
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        help="data and evaluation conventions: sound (default) or the seeds' paper conventions",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="cells run in parallel worker processes (default: on the CPU, as many as the cores allow at "
        "--threads each, at most the number of cells; 1 on a GPU)",
    )
    parser.add_argument("--timeout", type=float, help="seconds after which a cell is stopped and logged as failed")
    parser.add_argument(
        "--deadline",
        metavar="WHEN",
        help="start no cell after WHEN: a duration from now (90m, 2h, 1h30m, 45s) or a local clock time "
        "(14:30, the next one to come); running cells finish (bound them with --timeout), the cells not "
        "started are counted, the exit code is 4, and the same command run again resumes with them",
    )
    parser.add_argument(
        "--experiment", type=experiment_name, help=f"MLflow experiment name; default {tracking.DEFAULT_EXPERIMENT}"
    )
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="torch device")
    parser.add_argument(
        "--data-dir",
        default=os.environ.get(DATA_DIR_VARIABLE),
        help=f"folder with the dataset files (default: ${DATA_DIR_VARIABLE})",
    )
    parser.add_argument("--rerun", action="store_true", help="run cells again even if they already finished")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?")
_CLOCK = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")


def parse_deadline(text: str, now: datetime.datetime) -> datetime.datetime:
    """The moment ``--deadline`` names: ``now`` plus a duration (``2h``, ``1h30m``, ``90m``, ``45s``), or
    the next local clock time ``HH:MM`` after ``now`` (tomorrow's when today's has passed: a runner
    started at 23:00 with ``--deadline 01:00`` means the coming night)."""
    text = text.strip().lower()
    clock = _CLOCK.fullmatch(text)
    if clock:
        moment = now.replace(hour=int(clock[1]), minute=int(clock[2]), second=0, microsecond=0)
        return moment if moment > now else moment + datetime.timedelta(days=1)
    duration = _DURATION.fullmatch(text)
    if text and duration:
        hours, minutes, seconds = (float(part or 0) for part in duration.groups())
        total = 3600 * hours + 60 * minutes + seconds
        try:
            if total > 0 and math.isfinite(total):
                return now + datetime.timedelta(seconds=total)
        except OverflowError:  # beyond the calendar: not a moment either
            pass
    raise GridError(
        f"--deadline {text!r} is neither a duration from now (90m, 2h, 1h30m, 45s) nor a clock time "
        "(14:30); e.g. --deadline 2h"
    )


GRID_OPTIONS = (
    "methods",
    "datasets",
    "eps",
    "delta",
    "evaluators",
    "overrides",
    "evaluator_overrides",
    "profile",
    "calibrator",
    "protocol",
    "experiment",
)
RUN_DEFAULTS = {
    "eps": "1",
    "delta": f"{DEFAULT_DELTA:g}",
    "seeds": "0",
    "profile": "paper",
    "calibrator": "tight",
    "protocol": "sound",
    "experiment": tracking.DEFAULT_EXPERIMENT,
    "overrides": [],
    "evaluator_overrides": [],
}


def grid_spec_from_args(args: argparse.Namespace) -> GridSpec:
    """The grid of a ``run`` command line (defaults filled in); raises a usage error if invalid."""
    for name, default in RUN_DEFAULTS.items():
        if getattr(args, name, None) is None:
            setattr(args, name, default)
    if not args.methods or not args.datasets:
        raise GridError("run needs --methods and --datasets, or --preset NAME (see `python -m bench list presets`)")
    if args.evaluators is not None and not args.evaluators.replace(",", "").strip():
        raise GridError(
            f"--evaluators {args.evaluators!r} names no evaluator: drop the option to run every applicable "
            "one, or name some (see `python -m bench list evaluators`)"
        )
    epsilons = parse_epsilons(args.eps)
    delta = Delta.parse(args.delta)
    if delta.kind is DeltaKind.NOT_APPLICABLE:
        raise GridError("--delta none: δ is a number in (0, 1) or auto; for a run without privacy use --eps inf")
    methods = split_names(args.methods, "--methods")
    chosen = None
    if args.evaluators is not None:
        chosen = [] if args.evaluators.strip() == NO_EVALUATORS else split_names(args.evaluators, "--evaluators")
    evaluator_names = chosen if chosen is not None else EVALUATORS.names()
    data_dir = getattr(args, "data_dir", None)
    return GridSpec(
        methods=methods,
        datasets=split_names(args.datasets, "--datasets"),
        epsilons=epsilons,
        seeds=parse_seeds(args.seeds),
        delta=delta,
        evaluators=chosen,
        profile=args.profile,
        calibrator=args.calibrator,
        secure_noise=getattr(args, "secure_noise", False),
        protocol=args.protocol,
        overrides=parse_overrides(args.overrides, methods),
        evaluator_overrides=parse_overrides(args.evaluator_overrides, evaluator_names, "--eval-set", "--evaluators"),
        device=getattr(args, "device", "auto"),
        data_dir=Path(data_dir) if data_dir else None,
        threads=getattr(args, "threads", 1),
    )
