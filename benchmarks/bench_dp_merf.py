"""DP-MERF speed: the gmm2d training step and embedding, and one seed end to end on a dataset.

    python benchmarks/bench_dp_merf.py [--features 30000] [--batch 500] [--steps 30] [--threads 2]
    python benchmarks/bench_dp_merf.py --keep-sweep [--threads 2]
    python benchmarks/bench_dp_merf.py --compiled-sweep [--threads 1]

Reports seconds per generator step with the compiled class sums (methods.rff_compiled), the
eager fused cos/sin class-sum kernel and plain autograd (features, concatenation, one-hot product), the projected time of the paper's
50 × 180 gmm2d steps, the throughput of the chunked real-data embedding, and peak memory. One seed on a dataset end to end:
``python benchmarks/end_to_end.py dp-merf adult --protocol paper``.
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from datasets.gmm2d import draw_split
from methods.dp_merf import draw_frequencies, rff_class_sums, rff_features
from methods.mean_embedding import embedding_sum
from methods.nets import FullyConnectedConditionalGenerator


def autograd_class_sums(x, labels, n_classes, frequencies):
    return torch.nn.functional.one_hot(labels, n_classes).to(x.dtype).T @ rff_features(x, frequencies)


def time_steps(class_sums, n_features: int, batch: int, steps: int) -> float:
    torch.manual_seed(0)
    frequencies = draw_frequencies(n_features, torch.full((2,), 0.5**0.5), torch.Generator().manual_seed(0)).float()
    net = FullyConnectedConditionalGenerator(5, 5, (200, 500, 500, 200), 2)
    optimiser = torch.optim.Adam(net.parameters(), lr=3e-3)
    target = torch.randn(5, n_features) * 1e-3
    for step in range(steps + 3):
        if step == 3:
            started = time.perf_counter()
        labels = torch.randint(0, 5, (batch,))
        loss = ((target - class_sums(net(labels), labels, 5, frequencies) / batch) ** 2).sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return (time.perf_counter() - started) / steps


def keep_sweep() -> None:
    """A class-sum step (forward and backward) with the batch's [cos | sin] kept for the backward
    pass against recomputing one cosine a tile, at the shapes of gmm2d, adult, census-like rows:
    where ``methods.dp_merf.KEEP_ENTRIES`` should lie on this machine."""
    import methods.dp_merf as dm

    for rows, dim, half in [
        (500, 2, 15_000),
        (1_100, 6, 1_000),
        (2_200, 6, 2_500),
        (11_000, 6, 500),
        (4_000, 14, 2_500),
    ]:
        x = torch.randn(rows, dim, requires_grad=True)
        labels = torch.randint(0, 2, (rows,))
        frequencies = torch.randn(half, dim)
        times = {}
        for name, keep_entries in (("keep", 1 << 40), ("recompute", 0)):

            def step():
                dm._CosSinClassSums.apply(x, labels, 2, frequencies, keep_entries).pow(2).sum().backward()

            step()
            started = time.perf_counter()
            for _ in range(10):
                step()
            times[name] = (time.perf_counter() - started) / 10 * 1e3
        print(
            f"{rows:>6} rows × {dim:>2} coordinates × {2 * half:>6} features ({rows * 2 * half / 1e6:5.1f} M entries): "
            f"keep {times['keep']:6.1f} ms, recompute {times['recompute']:6.1f} ms"
        )


def compiled_sweep() -> None:
    """The class sums' forward and backward pass, eager kernel against the compiled one
    (methods.rff_compiled), at the shapes of gmm2d and adult (paper and sound protocol), median of 10."""
    import statistics

    from methods.rff_compiled import compiled_kernels

    if compiled_kernels(2, 4) is None:
        raise SystemExit("the compiled kernel is unavailable here")
    for rows, dim, half, classes in [(500, 2, 15_000, 5), (1_100, 6, 500, 2), (2_400, 6, 500, 2)]:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(rows, dim, generator=generator, requires_grad=True)
        frequencies = torch.randn(half, dim, generator=generator)
        times = {}
        for name, compiled in (("eager", False), ("compiled", True)):
            samples = []
            for repetition in range(13):
                labels = torch.randint(0, classes, (rows,), generator=generator)
                started = time.perf_counter()
                rff_class_sums(x, labels, classes, frequencies, compiled=compiled).pow(2).sum().backward()
                if repetition >= 3:  # the first calls compile
                    samples.append(time.perf_counter() - started)
            times[name] = statistics.median(samples) * 1e3
        print(
            f"{rows:>6} rows × {dim:>2} coordinates × {half:>6} frequencies: eager {times['eager']:6.2f} ms, "
            f"compiled {times['compiled']:6.2f} ms ({times['eager'] / times['compiled']:.1f}×)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=int, default=30_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--keep-sweep", action="store_true", help="only the keep-or-recompute sweep (KEEP_ENTRIES)")
    parser.add_argument("--compiled-sweep", action="store_true", help="only eager against compiled class sums")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.keep_sweep:
        keep_sweep()
        return
    if args.compiled_sweep:
        compiled_sweep()
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, D = {args.features}, batch = {args.batch}")

    compiled = time_steps(lambda *a: rff_class_sums(*a, compiled=True), args.features, args.batch, args.steps)
    fused = time_steps(rff_class_sums, args.features, args.batch, args.steps)
    plain = time_steps(autograd_class_sums, args.features, args.batch, args.steps)
    paper_steps = 50 * 180  # gmm2d: 50 epochs of 90,000 / 500 steps (the 2-D
    # command in github.com/ParkLabML/DP-MERF code_balanced/README.md)
    print(f"step, compiled kernel  {compiled * 1e3:8.1f} ms   → paper training {compiled * paper_steps / 60:5.1f} min")
    print(f"step, fused kernel     {fused * 1e3:8.1f} ms   → paper training {fused * paper_steps / 60:5.1f} min")
    print(f"step, plain autograd   {plain * 1e3:8.1f} ms   → paper training {plain * paper_steps / 60:5.1f} min")
    print(f"speed-up               {plain / fused:8.2f}×")

    split = draw_split(seed=0)
    frequencies = draw_frequencies(args.features, torch.full((2,), 0.5**0.5), torch.Generator().manual_seed(0))
    x, y = torch.as_tensor(split.train.x), torch.as_tensor(split.train.y)
    started = time.perf_counter()
    embedding_sum(lambda z, labels, c: rff_class_sums(z, labels, c, frequencies), x, y, 5, x.shape[1])
    elapsed = time.perf_counter() - started
    print(f"real embedding         {len(x) / elapsed:8.0f} rows/s ({len(x)} rows in {elapsed:.2f} s, float64)")
    print(f"peak memory            {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:8.0f} MiB")


if __name__ == "__main__":
    main()
