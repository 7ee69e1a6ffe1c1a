"""Method-side speed rows of issue 16: one row per method line of the issue's table.

    python benchmarks/method_rows.py [--rows 1,3] [--repeats 3] [--threads 2]

Each row's ``run`` returns the seconds of the thing it measures. Rows whose full run is long time
a prefix of the training steps and extrapolate (their names say so): the seconds until training
starts (loading is excluded; the releases are included) plus the timed steps' mean × all steps.
``before_s`` is the issue's figure (2 threads, before the speed branch); ``authors_s`` the
authors' code where known. ``main`` prints name | before | now | target | authors with the
median of the repeats. Needs ``DPBENCH_DATA_DIR``. Timings on a shared machine vary with its
load: say so when quoting them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import speed_rows  # noqa: E402
from speed_rows import Row  # noqa: E402


class _Enough(Exception):
    """Raised from the progress callback once the timed steps are done."""


def fit_seconds(
    method: str,
    dataset: str,
    protocol: str,
    overrides: dict[str, str] | None = None,
    profile: str = "paper",
    timed_steps: int | None = None,
    per_step: bool = False,
    device: str = "cpu",
) -> float:
    """Seconds of one ``fit`` at ε = 1, seed 0, data already loaded. With ``timed_steps``, only
    that many steps run: the result is the time to the first step plus their mean × all steps
    (or, with ``per_step``, the mean step alone). ``device``: where the fit runs ("cuda" on a
    machine with a GPU)."""
    from bench.api.contracts import FitContext
    from bench.api.registry import DATASETS, METHODS
    from bench.privacy.budget import PrivacyBudget
    from bench.privacy.ledger import PrivacyLedger
    from bench.privacy.private_data import PrivateData

    torch.manual_seed(0)
    data, card = DATASETS.get(dataset), METHODS.get(method)
    train = data.load(None, 0, protocol).train
    params = card.hyperparameters.resolve(dataset, profile, overrides or {}).params
    budget = PrivacyBudget(1.0, 1e-5)
    marks: list[tuple[int, int, float]] = []
    device = torch.device(device)

    def progress(done: int, total: int) -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()  # a step's kernels are queued, not done, when fit reports it
        marks.append((done, total, time.perf_counter()))
        if timed_steps is not None and done >= timed_steps:
            raise _Enough

    ledger = PrivacyLedger(budget)
    context = FitContext(budget, ledger, params, 0, device, protocol, data.kind, progress=progress)
    started = time.perf_counter()
    try:
        card.fit(PrivateData(train, ledger), context)
    except _Enough:
        (first, total, first_at), (last, _, last_at) = marks[0], marks[-1]
        step = (last_at - first_at) / (last - first)
        return step if per_step else (first_at - started) + step * total
    return time.perf_counter() - started


def readme_command() -> float:
    """The README's first command, end to end, in a scratch directory (its own MLflow store)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "bench",
                "run",
                "--methods",
                "real,dp-merf",
                "--datasets",
                "gmm2d",
                "--eps",
                "1",
                "--no-progress",
            ],
            check=True,
            capture_output=True,
            cwd=scratch,
            env=env,
        )
        return time.perf_counter() - started


ROWS = [
    Row(
        "DP-MERF adult fit, Table 4, sound (8,000 steps: 400 timed, extrapolated)",
        25.0,
        620.0,
        164.0,
        lambda: fit_seconds("dp-merf", "adult", "sound", timed_steps=400),
    ),
    Row(
        "DP-MERF adult fit, Table 4, paper protocol (8,000 steps: 400 timed, extrapolated)",
        25.0,
        None,
        164.0,
        lambda: fit_seconds("dp-merf", "adult", "paper", timed_steps=400),
    ),
    Row(
        "DP-MERF census, one Adam step, sound (mean of 3)",
        0.5,
        5.0,
        None,
        lambda: fit_seconds("dp-merf", "census", "sound", timed_steps=4, per_step=True),
    ),
    Row(
        "DP-MERF census, one Adam step, paper protocol (mean of 3)",
        3.0,
        40.0,
        None,
        lambda: fit_seconds("dp-merf", "census", "paper", timed_steps=4, per_step=True),
    ),
    Row(
        "DP-HP census, one Adam step and its share of the per-epoch release, sound (4 steps timed)",
        7.2,
        35.5,
        None,
        lambda: fit_seconds("dp-hp", "census", "sound", timed_steps=4, per_step=True),
    ),
    Row(
        "DP-HP census fit, Table 6, sound (100 steps: 4 timed, extrapolated)",
        720.0,
        3550.0,
        None,
        lambda: fit_seconds("dp-hp", "census", "sound", timed_steps=4),
    ),
    Row("README first command (real, dp-merf × gmm2d, ε 1; incl. evaluation)", 240.0, 600.0, None, readme_command),
    Row("DP-HP adult fit, paper protocol", 3.8, 3.8, None, lambda: fit_seconds("dp-hp", "adult", "paper")),
    Row(
        "DP-HP MNIST fit, Table 9 (3,000 steps: 60 timed, extrapolated)",
        360.0,
        3660.0,
        None,
        lambda: fit_seconds("dp-hp", "mnist", "sound", timed_steps=60),
    ),
    Row(
        "--profile smoke image cell, DP-MERF MNIST (fit)",
        120.0,
        600.0,
        None,
        lambda: fit_seconds("dp-merf", "mnist", "sound", profile="smoke"),
    ),
]


def main() -> None:
    speed_rows.main(ROWS, __doc__, threads=2)


if __name__ == "__main__":
    main()
