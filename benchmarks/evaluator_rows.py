"""Evaluator speed rows (issue 16): each row times one evaluator workload; ``main`` prints

    name | before | now | target | authors

    python benchmarks/evaluator_rows.py [--rows adult-dphp-paper,fid-5000] [--repeats 3]

``before``: the reviewer's measurements before this work (2 shared cores); ``authors``: the
seeds' own numbers where they published one (none did for evaluation time). Each row runs
``--repeats`` times (median) with 2 torch/BLAS threads. Long rows time a prefix and extrapolate
linearly; their names say so ("×10"). Needs ``$DPBENCH_DATA_DIR`` with adult, census, mnist and
fid-inception. The classifier pool uses ``$DPBENCH_EVAL_JOBS`` (default 2) worker processes.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import speed_rows  # noqa: E402
from speed_rows import Row  # noqa: E402


def _split(dataset: str, protocol: str):
    from bench.api.registry import DATASETS

    return DATASETS.get(dataset).load(None, seed=0, protocol=protocol)


def _context(protocol: str = "sound", cache_dir: Path | None = None):
    from bench.api.contracts import EvalContext

    return EvalContext(seed=0, device="cpu", protocol=protocol, cache_dir=cache_dir)


def dphp_adult_paper() -> float:
    """DP-HP on adult (paper protocol, ε = 1, paper hyperparameters): fit + sample + downstream."""
    import torch

    from bench.api.contracts import FitContext
    from bench.api.registry import EVALUATORS, METHODS
    from bench.privacy.budget import PrivacyBudget
    from bench.privacy.ledger import PrivacyLedger
    from bench.privacy.private_data import PrivateData

    split = _split("adult", "paper")
    method = METHODS.get("dp-hp")
    budget = PrivacyBudget(1.0, 1e-5)
    params = method.hyperparameters.resolve("adult", overrides={}).params
    torch.manual_seed(0)
    started = time.perf_counter()
    ledger = PrivacyLedger(budget)
    fitted = method.fit(
        PrivateData(split.train, ledger), FitContext(budget, ledger, params, 0, torch.device("cpu"), "paper")
    )
    synthetic = fitted.sample(len(split.train))
    EVALUATORS.get("downstream").evaluate(synthetic, split.train, split.test, _context("paper"))
    return time.perf_counter() - started


def census_downstream() -> float:
    """downstream (sound protocol) trained on census's real training rows, tested on its test split."""
    from bench.api.registry import EVALUATORS

    split = _split("census", "sound")
    started = time.perf_counter()
    EVALUATORS.get("downstream").evaluate(split.train, split.train, split.test, _context())
    return time.perf_counter() - started


def image_downstream_prefix(fraction: float = 0.1) -> float:
    """image-downstream on a class-balanced ``fraction`` of MNIST's 60,000 training images,
    scaled by 1 / fraction (the classifiers' cost is about linear in the rows)."""
    from bench.core.data import LabelledData
    from bench.api.registry import EVALUATORS
    from evaluators.image_downstream import subset_rows

    split = _split("mnist", "sound")
    rows = subset_rows(split.train.y, int(fraction * len(split.train)), 10, seed=0)
    data = LabelledData(split.train.x[rows], split.train.y[rows], split.train.schema)
    started = time.perf_counter()
    EVALUATORS.get("image-downstream").evaluate(data, data, split.test, _context())
    return (time.perf_counter() - started) / fraction


def fid_prefix(images: int = 500) -> float:
    """FID of ``images`` synthetic (here: real test) images against cached real statistics,
    scaled to 5,000 images (feature extraction is linear in the images; the distance is not,
    so it is added once)."""
    from dataclasses import replace

    from bench.core.data import LabelledData
    from bench.api.registry import EVALUATORS

    split = _split("mnist", "sound")
    reference = LabelledData(split.test.x[:100], split.test.y[:100], split.test.schema)  # cached: size is irrelevant
    sample = LabelledData(split.train.x[:images], split.train.y[:images], split.train.schema)
    evaluator = replace(EVALUATORS.get("fid"), n_samples=images)
    with tempfile.TemporaryDirectory() as cache:
        context = _context(cache_dir=Path(cache))
        evaluator.evaluate(sample, split.train, reference, context)  # fills the real-statistics cache
        started = time.perf_counter()
        values = evaluator.evaluate(sample, split.train, reference, context).metrics
        total = time.perf_counter() - started
    features = values["seconds_per_image"] * images
    return total - features + values["seconds_per_image"] * 5_000


def smoke_image_cell_evaluators() -> float:
    """The evaluator part of a --profile smoke image cell (default evaluators: fid on 5,000
    samples + image-downstream on 60,000 images), from the two rows above."""
    return fid_prefix() + image_downstream_prefix()


ROWS: list[Row] = [
    Row("DP-HP adult paper: fit + sample + downstream", 12.0, 25.6, None, dphp_adult_paper),
    Row("census downstream (sound, real rows), per cell", 450.0, 221.0, None, census_downstream),
    Row("image-downstream MNIST 60,000 (6,000 ×10)", 900.0, 3600.0, None, image_downstream_prefix),
    Row("FID 5,000 samples, real statistics cached (500 ×10)", 360.0, 1500.0, None, fid_prefix),
    Row("smoke image cell, evaluator part (sum of the two above)", 120.0, 600.0, None, smoke_image_cell_evaluators),
]


def main(argv: list[str] | None = None) -> None:
    speed_rows.main(ROWS, __doc__, threads=2, argv=argv)


if __name__ == "__main__":
    main()
