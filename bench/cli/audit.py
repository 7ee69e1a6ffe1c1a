"""``audit`` and ``pretrain-encoder``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Only light modules at the top: `list`, `--help` and argument errors must not import torch, jax,
# pandas or matplotlib (each command imports what it needs).
from bench.core.params import parse_overrides
from bench.api.registry import DATASETS, METHODS, PRETRAINERS
from bench.harness import tracking
from bench.harness.grid import GridError
from bench.privacy.budget import BudgetError, Delta, parse_epsilons
from bench.harness.runargs import (  # noqa: F401 (grid_spec_from_args: the Python API of a command line)
    GRID_OPTIONS,
    add_run_options,
    experiment_name,
    grid_spec_from_args,
    parse_deadline,
)


MAX_AUDIT_RUNS = 100_000  # fits per side: beyond it an audit runs for days; its bound gains little
MAX_AUDIT_ROWS = 100_000


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
    from bench.harness.auditing import AuditTarget, audit_black_box, audit_dp_sgd, audit_method, log_audit
    from bench.harness.provenance import run_context_tags

    context = run_context_tags()  # the code as the audit starts (a long audit outlives a checkout)

    (epsilon,) = parse_epsilons(args.eps) if "," not in args.eps else (None,)
    if epsilon is None:
        raise BudgetError("audit takes one ε, e.g. --eps 1")
    delta = Delta.parse(args.delta).value
    if delta is None:
        raise BudgetError("audit needs a numeric δ, e.g. --delta 1e-5")
    if not 20 <= args.runs <= MAX_AUDIT_RUNS:
        raise GridError(
            f"--runs must be between 20 (half of them choose the threshold) and {MAX_AUDIT_RUNS:,} (got {args.runs})"
        )
    if not 2 <= args.rows <= MAX_AUDIT_ROWS:
        raise GridError(f"--rows must be between 2 and {MAX_AUDIT_ROWS:,} (got {args.rows}): each run fits on them")
    method, dataset = METHODS.get(args.method), DATASETS.get(args.dataset)  # RegistryError (exit 2) for unknown names
    if dataset.kind not in method.data_kinds:
        raise GridError(
            f"{method.name} does not fit {dataset.name}: it takes {', '.join(sorted(k.value for k in method.data_kinds))} "
            f"data, {dataset.name} is {dataset.kind.value}"
        )
    if args.level is None:  # an outside library records no releases: only its output can be audited
        args.level = "black-box" if method.external else "release"
    target = AuditTarget(
        args.method,
        args.dataset,
        epsilon,
        delta,
        args.runs,
        args.rows,
        data_dir=Path(args.data_dir) if args.data_dir else None,
        overrides=parse_overrides(args.overrides, [args.method]).get(args.method, {}),
        profile=args.profile,
        calibrator=args.calibrator,
    )
    audit = {"black-box": audit_black_box, "step": audit_dp_sgd, "release": audit_method}[args.level]
    options = {}
    if args.level != "step":  # one DP-SGD step's audit takes seconds; the others fit the method 2 × runs times
        options["progress"] = audit_progress(args.runs, args.level, disabled=args.no_progress)
    if args.level == "black-box":  # whole fits, minutes each for an outside library: a killed audit resumes
        options["checkpoint"] = resumable(method, target)
    result = audit(target, **options)
    print(result.summary())
    run_id = log_audit(result, args.experiment, target.params() | {"level": args.level}, context)
    print(f"logged as run {run_id} in experiment {args.experiment!r} at {tracking.tracking_uri()}", file=sys.stderr)
    return 0


def resumable(method, target) -> Path | None:
    """The black-box audit's checkpoint in the cache folder, and a line on stderr when it resumes.
    The method is prepared first (an outside library's environment built): the checkpoint's name
    holds what that environment holds (``code_identity``), and only that one, so neither its first
    build nor another library's makes the next session's same command miss the runs done."""
    from bench.core.paths import cache_dir
    from bench.harness.auditing import black_box_checkpoint, finished_runs

    prepared = method.prepare() if method.prepare is not None else None
    environments = [prepared] if isinstance(prepared, Path) else []
    checkpoint = black_box_checkpoint(cache_dir() / "audits", target, environments)
    done = min(len(finished_runs(checkpoint)), target.runs)
    if done:
        print(f"resuming: {done} of {target.runs} run(s) of this audit are in {checkpoint}", file=sys.stderr)
    return checkpoint


def audit_progress(runs: int, level: str, disabled: bool):
    """A progress callback over the audit's runs, each a fit on D and one on D′ (or the releases
    of both): a bar on stderr, also in a log file, updated at most every 10 s. The bar starts at
    the first run's end, so that an audit refused before any run prints its one-line error alone."""
    from tqdm import tqdm

    bars = []

    def report(done: int, total: int) -> None:
        if not bars:
            bars.append(tqdm(total=total, desc=f"audit ({level})", unit="run", disable=disabled, mininterval=10))
        bar = bars[0]
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return report
