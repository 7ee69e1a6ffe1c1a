"""FID speed: Inception feature throughput on MNIST images and the cost of one distance.

    python benchmarks/bench_fid.py [--images 200] [--batch 50] [--device auto] [--threads N] [--no-distance]

Times ``evaluators.fid.activation_statistics`` (resize to 299, InceptionV3 pool3, streamed mean
and covariance) on the first ``--images`` MNIST test images, after one warm-up batch, and one
``calculate_frechet_distance`` (a 2048 × 2048 sqrtm), then projects the time of a seeds-sized
evaluation: 5,000 synthetic images plus, once per dataset, the 10,000-image reference statistics.
Needs ``$DPBENCH_DATA_DIR`` with ``mnist/`` and ``fid-inception/`` (see README, "Image data and FID").
Measured on the 2 shared development cores (torch's 2 threads, 400 images, CPU): 3.3 images/s.
"""

from __future__ import annotations

import argparse
import time

import torch
from pytorch_fid.fid_score import calculate_frechet_distance

from bench.api.registry import DATASETS
from bench.core.images import as_images
from bench.api.contracts import EvalContext
from evaluators.fid import FrechetInceptionDistance, activation_statistics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=200)  # ~1 min on 2 CPU cores
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--device", default="auto", help="auto (CUDA when available), cpu or cuda")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--no-distance", action="store_true", help="skip timing calculate_frechet_distance")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    started = time.perf_counter()
    test = DATASETS.get("mnist").load(None, seed=0).test
    loaded = time.perf_counter() - started
    network, _, device = FrechetInceptionDistance().network(EvalContext(device=args.device))
    images = as_images(test.x[: args.images], test.schema)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {device}, "
        f"batch {args.batch}; MNIST loaded in {loaded:.1f} s"
    )

    activation_statistics(images[: args.batch], network, args.batch, device)  # warm-up
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    mu, sigma = activation_statistics(images, network, args.batch, device)
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    rate = len(images) / seconds
    print(f"features: {len(images)} images in {seconds:.1f} s = {rate:.1f} images/s")

    distance = 0.0
    if not args.no_distance:
        started = time.perf_counter()
        calculate_frechet_distance(mu, sigma, mu, sigma)
        distance = time.perf_counter() - started
        print(f"calculate_frechet_distance (2048 × 2048 sqrtm): {distance:.1f} s")
    print(
        f"projected: 5,000 synthetic images {5_000 / rate / 60:.1f} min + distance; "
        f"10,000-image reference statistics (first run per dataset) {10_000 / rate / 60:.1f} min"
    )


if __name__ == "__main__":
    main()
