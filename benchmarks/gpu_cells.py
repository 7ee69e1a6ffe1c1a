"""Paper-scale image cells on a GPU: the fit on CUDA, timed, then scored by the fast classifiers.

    PYTHONPATH=. python benchmarks/gpu_cells.py --out DIR [--only dp-merf:mnist,...] [--fit-cap 150]
        [--deadline 400] [--classifiers LR,MLP,GNB,BNB,LDA,DT,XGB] [--jobs 7]

For a machine lent with a GPU (none is on the 2-core development machines). Each setup of
``SETUPS`` (the image cells the presets run at the paper profile, DP-MEPF at its ``cpu`` profile
since the paper's VGG/ResNet weights are not obtainable offline) runs through the grid's worker on
``--device`` (default ``cuda``), seed 0, in a process of its own. Its fit is timed (``time.fit_s``);
a fit still running ``--fit-cap`` seconds after its first progress report is stopped and its
seconds extrapolated from the measured rate (``finished: false``), as in
``benchmarks/image_cell_costs.py``. A finished fit's 60,000 generated images are then scored by
``--classifiers`` of ``image-downstream`` (the seeds' settings; the fast ones, since the machine is
held minutes) on the real test images, in parallel worker processes, while the next setup's fit
already runs on the GPU. No MLflow run is written: a row of the output JSON names the commit, the
GPU, its fit and evaluation seconds, the ledger's ε and the accuracies. ``--deadline`` seconds
after the start no new setup begins; every row is written as soon as it exists.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from image_cell_costs import FitRate, _Enough  # this folder: the same stop-and-extrapolate rule

REPO = Path(__file__).resolve().parents[1]
INF = float("inf")
# (method, dataset, ε, profile): ε as the presets run them (DP-MERF Table 3, DP-HP Table 4, DP-GAN 9.6)
SETUPS = (
    ("dp-merf", "mnist", 1.0, "paper"),
    ("dp-hp", "mnist", 1.0, "paper"),
    ("dp-mepf", "mnist", 1.0, "cpu"),
    ("full-mmd", "mnist", INF, "paper"),
    ("dp-cgan", "mnist", 9.6, "paper"),
    ("dp-gan", "mnist", 9.6, "paper"),
    ("dp-merf", "fashion-mnist", 1.0, "paper"),
    ("dp-hp", "fashion-mnist", 1.0, "paper"),
)
CLASSIFIERS = "LR,MLP,GNB,BNB,LDA,DT,XGB"
FAST_EVALUATOR = "image-downstream-gpu-cells"


def commit() -> str:
    """``$GPU_CELLS_COMMIT`` where the caller sent it (the commit the copied tree was, clean): a lent
    machine's copy of ``.git`` can be older than the tree it runs (seen: it named the session's
    first commit); else what git says here."""
    return (
        os.environ.get("GPU_CELLS_COMMIT")
        or subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=40"], capture_output=True, text=True, cwd=REPO
        ).stdout.strip()
    )


def fit_done_marker(work: Path, key: str) -> Path:
    return work / f"fit-done-{key.replace(':', '-')}"


def one_setup(key: str, args: argparse.Namespace) -> dict:
    """Run one setup in this process; returns its row (also when its fit was stopped)."""
    import tempfile

    import torch

    from bench.api.registry import EVALUATORS
    from bench.harness.grid import GridSpec, expand
    from bench.harness.worker import execute
    from evaluators.image_downstream import IMAGE_CLASSIFIERS

    method, dataset, epsilon, profile = next(s for s in SETUPS if f"{s[0]}:{s[1]}" == key)
    names = args.classifiers.split(",")
    fast = dataclasses.replace(
        EVALUATORS.get("image-downstream"),
        name=FAST_EVALUATOR,
        n_jobs=args.jobs,
        classifiers=tuple(spec for spec in IMAGE_CLASSIFIERS if spec.name in names),
        timeout_s=args.classifier_timeout,
    )
    EVALUATORS.register(fast)
    spec = GridSpec(
        methods=[method],
        datasets=[dataset],
        epsilons=[epsilon],
        seeds=[0],
        profile=profile,
        device=args.device,
        evaluators=[],
        threads=1,
    )
    (cell,), _ = expand(spec)
    cell = dataclasses.replace(cell, evaluators=(FAST_EVALUATOR,), evaluator_settings={})
    reports: list[tuple[float, float]] = []
    started = time.perf_counter()
    marker = fit_done_marker(args.work, key)

    def report(fraction: float) -> None:
        now = time.perf_counter() - started
        if not reports or fraction > reports[-1][1]:
            reports.append((now, fraction))
        if fraction >= 1.0:
            marker.touch()
        elif len(reports) >= 2 and now - reports[0][0] >= args.fit_cap:
            raise _Enough

    with tempfile.TemporaryDirectory() as folder:
        outcome = execute(cell.to_json(), folder, report)
        ledger = (
            json.loads((Path(folder) / "ledger.json").read_text()) if (Path(folder) / "ledger.json").exists() else {}
        )
        grid = Path(folder) / "samples.png"
        if grid.exists() and args.grids:
            (Path(args.out) / f"samples_{method}_{dataset}.png").write_bytes(grid.read_bytes())
    marker.touch()
    row = {
        "method": method,
        "dataset": dataset,
        "epsilon": str(epsilon),
        "profile": profile,
        "seed": 0,
        "device": outcome.tags.get("device"),
        "torch": torch.__version__,
        "status": outcome.status,
        "epsilon_spent": ledger.get("spent", {}).get("epsilon"),
        "epsilon_independent": outcome.metrics.get("privacy.epsilon_independent"),
    }
    if outcome.status == "FINISHED":
        row.update(
            finished=True,
            fit_seconds=round(outcome.metrics["time.fit_s"], 1),
            sample_seconds=round(outcome.metrics["time.sample_s"], 1),
            evaluation_seconds=round(outcome.metrics[f"time.eval_{FAST_EVALUATOR}_s"], 1),
            classifiers=names,
            jobs=args.jobs,
            accuracy={
                name: round(outcome.metrics[f"{FAST_EVALUATOR}.{name}.accuracy"], 4)
                for name in names
                if f"{FAST_EVALUATOR}.{name}.accuracy" in outcome.metrics
            },
            classifier_errors=outcome.tags.get(f"errors.{FAST_EVALUATOR}"),
        )
    elif "_Enough" in (outcome.error or "") and len(reports) >= 2:
        (t0, f0), (t1, f1) = reports[0], reports[-1]
        rate = FitRate(t0, f0, f1, t1 - t0)
        row.update(
            finished=False,
            first_report_s=round(t0, 1),
            measured_fraction=round(f1 - f0, 5),
            measured_s=round(t1 - t0, 1),
            fit_seconds=round(rate.fit_seconds),
        )
    else:
        row.update(finished=False, error=outcome.error)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for cells.json and the sample grids")
    parser.add_argument("--only", help="comma-separated method:dataset keys of SETUPS, in the order to run")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--fit-cap", type=float, default=150.0, help="seconds of fit after its first report")
    parser.add_argument("--deadline", type=float, default=math.inf, help="seconds after which no setup starts")
    parser.add_argument("--classifiers", default=CLASSIFIERS)
    parser.add_argument("--classifier-timeout", type=float, default=300.0, help="seconds a classifier's fit may take")
    parser.add_argument("--jobs", type=int, default=7, help="classifier worker processes per setup")
    parser.add_argument("--grids", action="store_true", help="copy each finished cell's sample grid to --out")
    parser.add_argument("--work", type=Path, default=Path("/tmp/gpu_cells"), help="the setups' logs and markers")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run this setup in this process
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.one:
        row = one_setup(args.one, args)
        (args.work / f"row-{args.one.replace(':', '-')}.json").write_text(json.dumps(row))
        return

    keys = args.only.split(",") if args.only else [f"{s[0]}:{s[1]}" for s in SETUPS]
    unknown = [k for k in keys if k not in {f"{s[0]}:{s[1]}" for s in SETUPS}]
    if unknown:
        print(f"error: unknown setup(s) {', '.join(unknown)}; choose from SETUPS in {__file__}", file=sys.stderr)
        sys.exit(2)
    started = time.monotonic()
    results = {"commit": commit(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": []}
    path = args.out / "cells.json"
    running: list[tuple[str, subprocess.Popen]] = []

    def collect_finished() -> None:
        for key, child in [(k, c) for k, c in running if c.poll() is not None]:
            running.remove((key, child))
            stem = key.replace(":", "-")
            row_file = args.work / f"row-{stem}.json"
            if row_file.exists():
                row = json.loads(row_file.read_text())
            else:
                log = (args.work / f"log-{stem}.txt").read_text()
                row = {"setup": key, "finished": False, "error": f"exit {child.returncode}: {log[-3000:]}"}
            results["rows"].append(row)
            path.write_text(json.dumps(results, indent=1) + "\n")
            print(json.dumps(row), flush=True)

    passed = [
        "--out",
        str(args.out),
        "--work",
        str(args.work),
        "--device",
        args.device,
        "--fit-cap",
        str(args.fit_cap),
        "--classifiers",
        args.classifiers,
        "--classifier-timeout",
        str(args.classifier_timeout),
        "--jobs",
        str(args.jobs),
        *(["--grids"] if args.grids else []),
    ]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}
    for key in keys:
        if time.monotonic() - started > args.deadline:
            print(f"deadline: {key} not started", flush=True)
            continue
        print(f"{time.monotonic() - started:6.0f} s  start {key}", flush=True)
        stem = key.replace(":", "-")
        for stale in (fit_done_marker(args.work, key), args.work / f"row-{stem}.json"):
            stale.unlink(missing_ok=True)
        with open(args.work / f"log-{stem}.txt", "w") as log:
            child = subprocess.Popen(
                [sys.executable, __file__, *passed, "--one", key],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=environment,
            )
        running.append((key, child))
        while child.poll() is None and not fit_done_marker(args.work, key).exists():  # one fit at a time on the GPU
            collect_finished()
            time.sleep(1)
    while running:
        collect_finished()
        time.sleep(1)


if __name__ == "__main__":
    main()
