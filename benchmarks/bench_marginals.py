"""Wall time of the ``marginals`` evaluator's two exact paths on the discretized tables.

    python benchmarks/bench_marginals.py [--dataset adult-discrete|census-discrete] [--alphas 2,3]

The synthetic table is the real one shuffled with one column redrawn uniformly, so the distances
are non-trivial. Prints seconds per path and α and the cost model's estimates
(``evaluators/marginals.py``: COUNT_SECONDS, FLOP_SECONDS, PRODUCT_SECONDS come from here).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from bench.api.registry import DATASETS
from datasets.discrete import domain_sizes
from evaluators.marginals import _estimated_seconds, counted_l1_distance, gram_l1_distance


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="adult-discrete")
    parser.add_argument("--alphas", default="2,3,4")
    parser.add_argument("--skip-slower-than", type=float, default=300.0, help="skip a path estimated above this (s)")
    args = parser.parse_args()
    dataset = DATASETS.get(args.dataset)
    real = dataset.load(None, seed=0).train.x.astype(np.int64)
    sizes = domain_sizes(dataset.schema)
    rng = np.random.default_rng(0)
    synthetic = real[rng.permutation(len(real))]
    synthetic[:, 0] = rng.integers(0, sizes[0], len(real))
    print(f"{args.dataset}: {real.shape[0]:,} rows × {real.shape[1]} columns")
    for alpha in (int(a) for a in args.alphas.split(",")):
        estimates = _estimated_seconds(sizes, alpha, 2 * len(real))
        for name, path, estimate in (
            ("count", counted_l1_distance, estimates[0]),
            ("gram", gram_l1_distance, estimates[1]),
        ):
            if estimate > args.skip_slower_than:
                print(f"α = {alpha}  {name:5s} skipped (estimated {estimate:.0f} s)")
                continue
            started = time.perf_counter()
            value = 0.5 * path(real, synthetic, sizes, alpha) / math.comb(len(sizes), alpha)
            print(
                f"α = {alpha}  {name:5s} {time.perf_counter() - started:7.1f} s (estimated {estimate:6.1f} s)  TV = {value:.5f}"
            )


if __name__ == "__main__":
    main()
