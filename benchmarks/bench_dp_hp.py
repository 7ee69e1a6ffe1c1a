"""DP-HP speed and memory: feature throughput, training time per epoch, peak memory.

    python benchmarks/bench_dp_hp.py [--threads 2]             # throughput + adult epoch times
    python benchmarks/bench_dp_hp.py --discretized-memory      # Table 4 ε = 0.3 product release
    python benchmarks/end_to_end.py dp-hp adult --protocol paper  # one seed, train + sample + eval

Throughput is rows per second of the sum features (all coordinates, order C_sum) and of the
product-kernel class sums (D_prod coordinates, order C_prod), forward only, float32, at the image
setting (Table 9: 784 pixels, C_sum 100, D_prod 2, C_prod 20, 10 classes) and the adult setting
(Table 6: C_sum 100, D_prod 5, C_prod 5; 14 integer-coded coordinates under the paper protocol,
the one-hot width under the sound one). An epoch is ⌈n/B⌉ generator steps (B = 0.1·n) plus one
product re-release over the training rows. ``--discretized-memory`` releases the product embedding
of Table 4's discretized adult at ε = 0.3 (C_prod 10, D_prod 5: 161,051 features per class) over
22,561 rows × 15 coordinates and reports this process's peak memory (run it on its own, so the
peak is that of the release alone).
"""

from __future__ import annotations

import argparse
import math
import resource
import time
from pathlib import Path

import numpy as np
import torch

from bench.core.data import DataKind
from methods.dp_hp import HYPERPARAMETERS, HermiteProductKernel, HermiteSumKernel, length_scales_sq
from methods.hermite import rho_from_length_scale_sq
from methods.mean_embedding import bounded_class_sums, embedding_sum
from methods.nets import FullyConnectedConditionalGenerator, parse_widths
from methods.space import ModelSpace


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rows_per_second(function, rows: int, repeats: int = 3) -> float:
    function()  # warm-up
    started = time.perf_counter()
    for _ in range(repeats):
        function()
    return rows * repeats / (time.perf_counter() - started)


def throughput(
    name: str, dimension: int, sum_order: int, prod_dims: int, prod_order: int, classes: int, rows: int
) -> None:
    generator = torch.Generator().manual_seed(0)
    z = torch.rand(rows, dimension, generator=generator)
    labels = torch.randint(0, classes, (rows,), generator=generator)
    rho = torch.full((dimension,), 0.9)
    sum_kernel = HermiteSumKernel(rho, sum_order, clip=False)
    prod_kernel = HermiteProductKernel(rho, prod_order, tuple(range(prod_dims)), clip=False)
    with torch.no_grad():
        sums = rows_per_second(lambda: sum_kernel.class_sums(z, labels, classes), rows)
        prods = rows_per_second(lambda: prod_kernel.class_sums(z, labels, classes), rows)
    print(
        f"{name:<28} sum features {sums:>10,.0f} rows/s ({dimension}×{sum_order + 1} per row)   "
        f"product {prods:>10,.0f} rows/s ({prod_kernel.width:,} per class)"
    )


def adult_epoch(protocol: str, data_dir: str | None) -> None:
    """Seconds per epoch at Table 6's adult setting: the generator steps and the re-release."""
    from bench.api.registry import DATASETS

    split = DATASETS.get("adult").load(Path(data_dir) if data_dir else None, 0, protocol)
    params = HYPERPARAMETERS.resolve("adult").values
    space = ModelSpace.for_data(DataKind.TABULAR, split.train.schema, protocol)
    m, classes, dimension = len(split.train), 2, space.width
    rho = rho_from_length_scale_sq(torch.as_tensor(length_scales_sq(space, None))).float()
    sum_kernel = HermiteSumKernel(rho, params["sum_order"], clip=False)
    prod_kernel = HermiteProductKernel(rho, params["prod_order"], tuple(range(params["prod_dims"])), clip=False)
    z = torch.as_tensor(space.encode(split.train.x))
    y = torch.as_tensor(split.train.y)
    started = time.perf_counter()
    embedding_sum(prod_kernel.class_sums, z, y, classes, prod_kernel.elements_per_row(classes))
    release = time.perf_counter() - started
    started = time.perf_counter()
    embedding_sum(sum_kernel.class_sums, z, y, classes, 2 * sum_kernel.width)
    sum_release = time.perf_counter() - started

    batch = round(params["batch_fraction"] * m)
    steps = math.ceil(m / batch)
    net = FullyConnectedConditionalGenerator(
        10, classes, parse_widths("4d-2d", dimension), dimension, space.output_head()
    )
    optimiser = torch.optim.Adam(net.parameters(), lr=1e-2)
    sum_target = torch.zeros(classes, sum_kernel.width)
    prod_target = torch.zeros(classes, prod_kernel.width)
    started = time.perf_counter()
    for _ in range(steps):
        labels = torch.randint(0, classes, (batch,))
        x = net(labels)
        sums = bounded_class_sums(sum_kernel.class_sums, x, labels, classes, sum_kernel.width)
        prods = bounded_class_sums(prod_kernel.class_sums, x, labels, classes, prod_kernel.elements_per_row(classes))
        loss = ((sum_target - sums / batch) ** 2).sum() + 0.1 * ((prod_target - prods / batch) ** 2).sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    training = time.perf_counter() - started
    epochs = params["epochs"]
    print(f"adult ({protocol}: n = {m}, {dimension} coordinates, batch {batch}, {steps} steps/epoch)")
    print(f"  generator steps      {training:7.2f} s/epoch ({training / steps * 1e3:.0f} ms/step)")
    print(f"  product re-release   {release:7.2f} s/epoch")
    print(f"  sum release (once)   {sum_release:7.2f} s")
    print(f"  → {epochs} epochs        {epochs * (training + release) + sum_release:7.1f} s of training")


def discretized_memory() -> None:
    rows, dimension, order, dims = 22_561, 15, 10, 5  # DP-HP (arXiv:2106.05042) Table 4, adult ε = 0.3
    rng = np.random.default_rng(0)
    z = torch.as_tensor(rng.integers(0, 40, size=(rows, dimension)).astype(np.float64))
    y = torch.zeros(rows, dtype=torch.long)  # unconditional generator: one class
    kernel = HermiteProductKernel(torch.full((dimension,), 0.999), order, tuple(range(dims)))
    before = peak_mib()
    started = time.perf_counter()
    embedding = embedding_sum(kernel.class_sums, z, y, 1, kernel.elements_per_row(1))
    elapsed = time.perf_counter() - started
    print(
        f"discretized adult product release: {embedding.shape[1]:,} features, {rows} rows in {elapsed:.1f} s; "
        f"peak memory {peak_mib():.0f} MiB (before {before:.0f} MiB; a batch × features tensor would be "
        f"{rows * embedding.shape[1] * 8 / 2**30:.1f} GiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--data-dir", help="default: $DPBENCH_DATA_DIR")
    parser.add_argument("--discretized-memory", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    if args.discretized_memory:
        discretized_memory()
        return
    throughput("image (Table 9)", 784, 100, 2, 20, 10, 2_000)
    throughput("adult, paper codes (Table 6)", 14, 100, 5, 5, 2, 20_000)
    throughput("adult, sound one-hot (Table 6)", 108, 100, 5, 5, 2, 5_000)
    for protocol in ("paper", "sound"):
        adult_epoch(protocol, args.data_dir)
    print(f"peak memory {peak_mib():.0f} MiB")


if __name__ == "__main__":
    main()
