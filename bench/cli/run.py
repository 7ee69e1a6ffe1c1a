"""``run``, ``evaluate`` and ``sync``: compute cells, score stored samples, log the outbox."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import math
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Callable

# Only light modules at the top: `list`, `--help` and argument errors must not import torch, jax,
# pandas or matplotlib (each command imports what it needs).
from bench.core.params import parse_overrides
from bench.privacy.budget import parse_epsilons
from bench.api.registry import DATASETS, EVALUATORS, METHODS

MAX_THREADS = 1024  # torch's CPU pool crashes (SIGSEGV) for some huge counts; no machine has more cores per cell
from bench.harness import tracking
from bench.harness.grid import GridError, GridSpec, expand, parse_seeds, split_names
from bench.harness.runargs import (  # noqa: F401 (grid_spec_from_args: the Python API of a command line)
    GRID_OPTIONS,
    add_run_options,
    experiment_name,
    grid_spec_from_args,
    parse_deadline,
)


# Options that define a grid; with --preset the preset defines them. These narrow a preset to the
# cells it shares with them (a campaign runs one setup of several presets at a time), as --seeds does.
PRESET_NARROWING = ("methods", "datasets", "eps")


def preset_cell_filter(args: argparse.Namespace) -> Callable[[Any], bool]:
    """Whether a preset's cell is among ``--methods``/``--datasets``/``--eps`` (each, when given)."""
    methods = set(split_names(args.methods, "--methods")) if args.methods else None
    datasets = set(split_names(args.datasets, "--datasets")) if args.datasets else None
    epsilons = set(parse_epsilons(args.eps)) if args.eps else None
    for registry, names in ((METHODS, methods), (DATASETS, datasets)):
        for name in sorted(names or ()):
            if name not in registry.names():
                registry.get(name)  # raises: unknown <kind> 'x'; valid: …
    return lambda cell: (
        (methods is None or cell.method in methods)
        and (datasets is None or cell.dataset in datasets)
        and (epsilons is None or cell.epsilon in epsilons)
    )


def _preset_specs(args: argparse.Namespace) -> list[tuple[GridSpec, str]]:
    """A preset's typed grids, each with its experiment, narrowed to --seeds and run with this
    command's execution options."""
    from bench.report.presets import get_preset

    option = {"overrides": "--set", "evaluator_overrides": "--eval-set"}
    given = [
        option.get(name, f"--{name}")
        for name in GRID_OPTIONS
        if name not in PRESET_NARROWING and getattr(args, name) not in (None, [])
    ]
    if given:
        raise GridError(
            f"--preset sets the grid itself; drop {', '.join(given)} "
            "(only --methods, --datasets, --eps and --seeds may narrow a preset)"
        )
    preset = get_preset(args.preset)
    seeds = parse_seeds(args.seeds) if args.seeds else None
    execution = {
        "device": args.device,
        "data_dir": Path(args.data_dir) if args.data_dir else None,
        "secure_noise": args.secure_noise,
        "threads": args.threads,
    }
    methods = split_names(args.methods, "--methods") if args.methods else None
    datasets = split_names(args.datasets, "--datasets") if args.datasets else None
    return [
        (
            dataclasses.replace(grid.narrowed(methods=kept_methods, datasets=kept_datasets, seeds=seeds), **execution),
            preset.experiment,
        )
        for grid in preset.grids
        # narrowed before expansion, so that a method left out is never loaded (its packages may be
        # missing where the narrowed cells run); ε is filtered on the cells (a non-private method's are at ∞)
        if (kept_methods := [m for m in grid.methods if methods is None or m in methods])
        and (kept_datasets := [d for d in grid.datasets if datasets is None or d in datasets])
    ]


def without_shared_cells(shares: tuple[str, ...], grids: list[tuple[str, list, list]]) -> list[tuple[str, list, list]]:
    """The grids less the cells finished in an experiment the preset shares cells with
    (``Preset.shares``): a cell is fitted once, whichever preset runs it first."""
    if not shares:
        return grids
    client, done = tracking.client(), {}
    for experiment in shares:
        try:
            found = tracking.experiment_id(client, experiment, create=False)
            keys = tracking.finished_cell_keys(client, found) if found else set()
        except Exception as error:  # noqa: BLE001 — an unreachable server: the outbox takes the results
            print(
                f"note: could not read experiment {experiment!r} ({type(error).__name__}); its cells run",
                file=sys.stderr,
            )
            keys = set()
        done.update({key: experiment for key in keys})
    kept = []
    for experiment, cells, notes in grids:
        shared = [cell for cell in cells if cell.key in done]
        for name in sorted({done[cell.key] for cell in shared}):
            count = sum(done[cell.key] == name for cell in shared)
            print(
                f"{count} cell(s) finished in experiment {name!r}, which this preset shares: not run again",
                file=sys.stderr,
            )
        kept.append((experiment, [cell for cell in cells if cell.key not in done], notes))
    return kept


# what a CUDA (or ROCm, or WSL's) GPU driver exposes; without any of them torch sees no GPU
GPU_DRIVER_PATHS = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/dev/kfd")


def gpu_driver_present() -> bool:
    return any(os.path.exists(path) for path in GPU_DRIVER_PATHS)


def default_jobs(cells: list, threads: int) -> int:
    """Worker processes when --jobs is not given: the cores this process may use, divided by the
    threads of a cell, so that a grid uses the machine without oversubscribing it; one when a cell
    runs on a GPU (cells would share it)."""
    if any(cell.device == "cuda" for cell in cells):
        return 1
    if any(cell.device == "auto" for cell in cells) and gpu_driver_present():
        import torch  # only where a GPU driver is: importing torch costs this process seconds

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
    if args.threads > MAX_THREADS:
        raise GridError(
            f"--threads {args.threads}: at most {MAX_THREADS} torch threads per cell (more crash torch's pool)"
        )
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise GridError("--timeout must be a positive number of seconds")
    deadline = parse_deadline(args.deadline, datetime.datetime.now()) if args.deadline else None
    if args.data_dir and not Path(args.data_dir).is_dir():
        raise GridError(f"--data-dir {args.data_dir} is not a folder; point it at the dataset files")
    if args.ray_address and args.executor != "ray":
        raise GridError("--ray-address needs --executor ray")
    runs = _preset_specs(args) if args.preset else [(grid_spec_from_args(args), args.experiment)]
    grids = []
    wanted = preset_cell_filter(args) if args.preset else lambda cell: True
    for spec, experiment in runs:  # expand every grid first: a bad name fails before anything runs
        cells, notes = expand(spec)
        cells = [cell for cell in cells if wanted(cell)]
        if cells:
            grids.append((experiment, cells, notes))
    every_cell = [cell for _, cells, _ in grids for cell in cells]
    if not every_cell:
        narrowing = " ".join(f"--{name} {getattr(args, name)}" for name in PRESET_NARROWING if getattr(args, name))
        raise GridError(
            f"preset {args.preset!r} has no cell with {narrowing}; `python -m bench list presets` shows its grid"
        )
    if args.executor == "local":
        check_device(every_cell)  # a Ray cluster's GPUs are checked by the Ray executor
    # every dataset's files once, before the store is opened or any cell starts (a bad file would
    # fail each of its cells the same way)
    check_data(every_cell)
    if not tracking.is_remote():
        tracking.check_tracking(for_writing=True)  # a server that is down is the outbox's case
    if args.preset and not args.rerun:
        from bench.report.presets import get_preset

        grids = without_shared_cells(get_preset(args.preset).shares, grids)
    executor = None
    if args.executor == "ray":
        from bench.harness.ray_executor import RayExecutor

        executor = RayExecutor(args.ray_address, args.device, cpus=args.threads)
    jobs = args.jobs or default_jobs(every_cell, args.threads)
    if deadline is not None:
        print(f"--deadline: no cell starts after {deadline:%Y-%m-%d %H:%M:%S}", file=sys.stderr)
    worst, left = 0, 0  # the grids' worst exit code (1 before 5 before 0) and the cells left at --deadline
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
        worst, left = max(worst, report.exit_code, key=(0, 5, 1).index), left + len(report.not_started)
    if left:
        print(f"--deadline passed: {left} cell(s) not started; run the same command again to run them", file=sys.stderr)
    return 4 if worst == 0 and left else worst


def command_evaluate(args: argparse.Namespace) -> int:
    from bench.harness.grid import evaluator_settings
    from bench.harness.rescoring import rescore, summary_line

    names = split_names(args.evaluators, "--evaluators")
    for name in names:
        EVALUATORS.get(name)  # an unknown name is a one-line usage error, before any run is read
    settings = evaluator_settings(parse_overrides(args.evaluator_overrides or [], names, "--eval-set", "--evaluators"))
    methods = split_names(args.methods, "--methods") if args.methods else None
    datasets = split_names(args.datasets, "--datasets") if args.datasets else None
    for name in methods or []:
        METHODS.get(name)  # a typo must not select nothing in silence
    for name in datasets or []:
        DATASETS.get(name)
    tracking.check_tracking(for_writing=True)
    results = rescore(
        args.experiment,
        names,
        methods=methods,
        datasets=datasets,
        settings=settings,
        data_dir=str(Path(args.data_dir).resolve()) if args.data_dir else None,
        rerun=args.rerun,
        report=lambda result: print(summary_line(result), flush=True),
        run_ids=set(split_names(args.runs, "--runs")) if args.runs else None,
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
