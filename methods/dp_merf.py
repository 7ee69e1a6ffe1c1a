"""``dp-merf``: DP mean embeddings with random Fourier features (Harder et al., AISTATS 2021).

Algorithm (DP-MERF (arXiv:2002.11603) Sec. 3–4, Alg. 1):

1. Draw Ω ∈ R^{D/2 × d} with Ω_jk ~ N(0, 1/ℓ_k²) — data-independent.
2. φ(x) = √(2/D) [cos(Ωx); sin(Ωx)], so ‖φ(x)‖₂ = 1 exactly (eq. 4).
3. U = (1/m) Σᵢ onehot(yᵢ) φ(xᵢ)ᵀ ∈ R^{C×D} (eq. 14, stored class-major); L2 sensitivity 2/m under replace-one
   (Sec. 3, eq. 9–10; App. F–G).
4. Ũ = U + N(0, σ²(2/m)² I), σ from the ledger's calibrator; one release.
5. Class proportions: public when the dataset schema says so (recorded as a public fact);
   otherwise released with the Gaussian mechanism (sensitivity √2/m, same σ, so k = 2 — Alg. 1
   and the authors' tabular code) and charged.
6. Train a conditional generator to minimise ‖Ũ·diag(1/w̃) − V·diag(1/w̃)‖²_F where
   V = (1/B) Σⱼ φ(G(zⱼ, yⱼ)) onehot(yⱼ)ᵀ and yⱼ ~ w̃ (the code's reweighting of
   both sides, code_tab/single_generator_priv_all.py).

The length scale is a fixed hyperparameter, never computed from the private rows: the seeds'
median heuristic on training points is not accounted (github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py
and code_tab/util.py (meddistance)).
"""

from __future__ import annotations

import functools

import math
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
import torch

from bench.privacy.private_data import PrivateData
from bench.core.params import HyperParameters, Rule, Setting, batch_rows
from bench.core.data import DataKind, LabelledData
from bench.api.contracts import FitContext
from bench.api.declare import method
from bench.core.threads import one_torch_thread
from bench.privacy.ledger import BudgetShare
from methods.mean_embedding import (
    TrainedConditionalGenerator,
    proportions_released,
    release_proportions,
)
from methods.nets import build_generator
from methods.rff_compiled import CompiledCosSinClassSums, compiled_kernels
from methods.training import Schedule, label_sampler, train_generator
from methods.space import ModelSpace, uniform_median_distance


# the share of the budget the dp-median length scale spends; the rest goes to the embedding and proportions
DP_MEDIAN_SHARE = 0.1
DP_MEDIAN_THRESHOLDS = 20  # public distances diameter·2⁻ᵏ, k < 20: down to a millionth of the diameter


@dataclass(frozen=True)
class DPMerfParams:
    n_features: int
    length_scale: float | None  # None: from the public bounds
    length_scale_rule: str  # "public-range", or the authors' "median-heuristic" (non-private runs only)
    epochs: int
    steps_per_epoch: int | None  # None: ⌈n / batch⌉
    batch_size: int | None  # batch_rows: batch_fraction, when set, wins
    batch_fraction: float | None
    lr: float
    lr_decay: float
    noise_dim: int
    hidden: str
    architecture: str
    conv_channels: str
    conv_kernel: int
    labels: str


def _table4(steps: int, batch_fraction: float, n_features: int) -> dict[str, Setting]:
    """A row of the private columns of DP-MERF's supplementary Table 4 (DP-MERF (arXiv:2002.11603) App. K.1),
    with the tabular code's constants: one Adam step per "epoch", lr 1e-2 without decay, noise
    dimension 10, hidden widths 4d and 2d (github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py)."""
    table = "DP-MERF (arXiv:2002.11603) Table 4 (private)"
    code = "github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py"
    return {
        "epochs": Setting(steps, f"{table}: # epochs = Adam steps"),
        "steps_per_epoch": Setting(1, f"{code}: how_many_iter = 1"),
        "batch_fraction": Setting(batch_fraction, f"{table}: mini-batch size (fraction of n)"),
        "n_features": Setting(n_features, f"{table}: # Fourier features"),
        "lr": Setting(1e-2, f"{code}: Adam lr 1e-2"),
        "lr_decay": Setting(1.0, f"{code}: no schedule"),
        "noise_dim": Setting(10, f"{code}: 10-dim noise"),
        "hidden": Setting("4c-2c", f"{code}: Linear(4d) → BN → ReLU → Linear(2d) → BN → ReLU, d = the table's columns"),
    }


def _images(dataset: str) -> dict[str, Setting]:
    """The image settings (github.com/ParkLabML/DP-MERF code_balanced/mnist_sr_gen.py and
    code_balanced/README.md, the same for MNIST and FashionMNIST). The seeds'
    fixed ℓ² (105 MNIST, 127 FashionMNIST) are squared medians of the real images, computed outside
    the privacy accounting (mnist_sr_gen.py's --rff-sigma), so they are not used: ℓ comes from the public pixel range,
    √(784/6) = 11.43 (ℓ² = 130.7); ``--set dp-merf.length_scale=10.25`` gives MNIST's
    for comparison only (that value was read off the private images)."""
    table = f"github.com/ParkLabML/DP-MERF code_balanced/mnist_sr_gen.py ({dataset})"
    return {
        "n_features": Setting(10_000, f"{table}: D = 10,000 (the 2022 'corrected' --d-rff default)"),
        "epochs": Setting(5, f"{table}: 5 epochs of 600 steps"),
        "batch_size": Setting(100, f"{table}: generated batch 100"),
        "lr": Setting(1e-2, f"{table}: Adam lr 0.01"),
        "lr_decay": Setting(0.9, f"{table}: lr × 0.9 per epoch"),
        "noise_dim": Setting(5, f"{table}: d_code 5"),
        "architecture": Setting("conv", f"{table}: ConvCondGen for both datasets"),
        "hidden": Setting("200", f"{table}: fc width 200"),
        "labels": Setting("uniform", f"{table}: uniform labels, not privatized, one release (k = 1)"),
    }


HYPERPARAMETERS = HyperParameters(
    DPMerfParams,
    defaults={
        "n_features": Setting(
            10_000,
            "github.com/ParkLabML/DP-MERF code_balanced/mnist_sr_gen.py: D = 10,000 (image setting, code default)",
            rule=Rule(minimum=2, multiple_of=2, meaning="features come in cos/sin pairs"),
        ),
        "length_scale": Setting(
            None, "None = from public bounds: √(d_num/6) × each coordinate's public range (methods/space.py)"
        ),
        "length_scale_rule": Setting(
            "public-range",
            "public-range = length_scale × each coordinate's public range; median-heuristic = the authors' tabular rule "
            "(github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py with code_tab/util.py meddistance: one "
            "ℓ for every numerical coordinate, the median Euclidean distance between 10 random training rows), which "
            "reads the private rows uncharged: an ablation for --eps inf only; dp-median = that median estimated "
            f"privately (ours, issue 28): Gaussian counts of disjoint row pairs closer than public distances, with "
            f"{DP_MEDIAN_SHARE:g} of the budget (methods/dp_merf.py dp_median_distance)",
            rule=Rule(
                choices=("public-range", "median-heuristic", "dp-median"),
                non_private_only=("median-heuristic",),
                non_private_reason="it reads the private rows without charging them, as the authors' code does",
            ),
        ),
        "epochs": Setting(50, "github.com/ParkLabML/DP-MERF code_balanced/README.md (2-D command: 50 epochs)"),
        "steps_per_epoch": Setting(
            None,
            "None = ⌈n / batch⌉, as the 2-D and image code "
            "(github.com/ParkLabML/DP-MERF code_balanced/gen_balanced.py, mnist_sr_gen.py)",
        ),
        "batch_size": Setting(500, "github.com/ParkLabML/DP-MERF code_balanced/README.md (2-D command: batch 500)"),
        "batch_fraction": Setting(None, "None = use batch_size; tabular code: a fraction of n (Table 4)"),
        "lr": Setting(3e-3, "github.com/ParkLabML/DP-MERF code_balanced/README.md (2-D command: -lr 3e-3)"),
        "lr_decay": Setting(
            0.9, "github.com/ParkLabML/DP-MERF code_balanced/gen_balanced.py (StepLR γ = 0.9 per epoch)"
        ),
        "noise_dim": Setting(5, "github.com/ParkLabML/DP-MERF code_balanced/gen_balanced.py (d_code 5)"),
        "hidden": Setting(
            "200-500-500-200", "github.com/ParkLabML/DP-MERF code_balanced/README.md (2-D command) (FCCondGen widths)"
        ),
        "architecture": Setting(
            "fc",
            "github.com/ParkLabML/DP-MERF code_balanced/models_gen.py: "
            "FCCondGen (2-D, tabular); conv = ConvCondGen (images)",
        ),
        "conv_channels": Setting(
            "16-8",
            "github.com/ParkLabML/DP-MERF code_balanced/models_gen.py ConvCondGen: channels 16 → 8 → image channels",
        ),
        "conv_kernel": Setting(5, "github.com/ParkLabML/DP-MERF code_balanced/models_gen.py ConvCondGen: 5×5 kernels"),
        "labels": Setting(
            "released", "DP-MERF (arXiv:2002.11603) Sec. 4.2, Alg. 1: class proportions released (k = 2) unless public"
        ),
    },
    per_dataset={
        "gmm2d": {
            "n_features": Setting(30_000, "DP-HP (arXiv:2106.05042) Sec. 5.1: DP-MERF used 30,000 features"),
            "length_scale": Setting(
                math.sqrt(0.5),
                "the 2-D command in github.com/ParkLabML/DP-MERF code_balanced/README.md: --rff-sigma 0.5 = ℓ²",
            ),
            "epochs": Setting(50, "the 2-D command in github.com/ParkLabML/DP-MERF code_balanced/README.md: 50 epochs"),
            "batch_size": Setting(
                500, "the 2-D command in github.com/ParkLabML/DP-MERF code_balanced/README.md: batch 500"
            ),
            "lr": Setting(
                3e-3,
                "the 2-D command in github.com/ParkLabML/DP-MERF code_balanced/README.md: lr 3e-3, decay 0.9 per epoch",
            ),
        },
        "adult": _table4(8000, 0.1, 1000),
        "adult-dphp": _table4(8000, 0.1, 1000),  # the same table, as DP-HP's code reads it
        "adult-dphp-sorted": _table4(8000, 0.1, 1000),  # the same table, with sorted codes
        "adult-sdgym": _table4(8000, 0.1, 1000),  # the rows and codes DP-MERF's code reads (SDGym)
        "adult-dphp-logs": _table4(8000, 0.1, 1000),
        "adult-dphp-zscored": _table4(8000, 0.1, 1000),
        "census": _table4(2000, 0.5, 10000),
        "census-sdgym": _table4(2000, 0.5, 10000),  # the same table, with the codes DP-MERF's code reads (SDGym)
        "cervical": _table4(200, 0.5, 2000),
        "cervical-dpmerf": _table4(200, 0.5, 2000),  # the same row, on the rows DP-MERF's code keeps
        "credit": _table4(4000, 0.5, 5000),
        "epileptic": _table4(6000, 0.5, 80000),
        "isolet": _table4(4000, 0.5, 500),
        "covtype": _table4(6000, 0.05, 1000),
        "intrusion": _table4(10000, 0.03, 2000),
        "intrusion-sdgym": _table4(10000, 0.03, 2000),  # the same table, with the codes DP-MERF's code reads
        # The discretized runs (Table 1) use the rebuttal model
        # (github.com/mvinaroz/dp-hp history, code_tab/rebuttal_adult_model.py):
        # unconditional 10 → 4D → 2D MLP, one release; its steps and features are not public, so
        # the tabular rows of the same data are used.
        "adult-discrete": _table4(8000, 0.1, 1000),
        "census-discrete": _table4(2000, 0.5, 10000),
        "mnist": _images("MNIST"),
        "fashion-mnist": _images("FashionMNIST"),
    },
    profiles={"smoke": {"n_features": 500, "epochs": 2, "batch_size": 500}},
)


def draw_frequencies(n_features: int, length_scales: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Ω (D/2 × d), rows ~ N(0, diag(1/ℓ²)): the spectral measure of exp(−Σ_k (x_k−x'_k)²/(2ℓ_k²))."""
    if n_features < 2 or n_features % 2:
        raise ValueError(f"n_features must be an even number ≥ 2 (got {n_features})")
    d = len(length_scales)
    return torch.randn(n_features // 2, d, generator=generator, dtype=torch.float64) / length_scales.double()


def rff_features(x: torch.Tensor, frequencies: torch.Tensor) -> torch.Tensor:
    """φ(x) = √(2/D) [cos(Ωx); sin(Ωx)] for each row of x; ‖φ(x)‖₂ = 1."""
    projection = x @ frequencies.T.to(x.dtype)
    scale = 1.0 / math.sqrt(frequencies.shape[0])  # √(2/D) with D = 2 · D/2
    return torch.cat([torch.cos(projection), torch.sin(projection)], dim=1) * scale


# entries of one tile of the projection (rows × D/2): 2^18 float32 = 1 MiB keeps a tile's
# projection, cos and sin in cache (benchmarks/method_rows.py)
TILE_ENTRIES = 1 << 18

# On a GPU the CPU's cache-sized tiles leave it idle between launches: DP-MERF census (sound
# protocol, paper profile: 10,000 features) took 242 ms a training step in 2^18-entry tiles on an
# H100, 21.3 ms in 2^22-entry ones and 18.3 ms in 2^25-entry ones (alone on the GPU, mean of 10
# steps after the first; `benchmarks/dp_merf_gpu_tiles.py`, 2026-11-27, docs/performance.md).
# 2^22 float32 entries are 16 MiB a buffer: 16% slower than the largest tiles at an eighth of
# their memory.
CUDA_TILE_ENTRIES = 1 << 22


def tile_entries(device: torch.device) -> int:
    """Entries (rows × D/2) of one tile of the projection on ``device``."""
    return TILE_ENTRIES if device.type == "cpu" else CUDA_TILE_ENTRIES


# Up to this many input coordinates, a tile's projection xΩᵀ is summed coordinate by coordinate
# (one fused multiply-add pass over the in-cache tile each): BLAS's small-K products take another
# kernel, rounded differently, for some row counts at 2 threads than at 1, and that made a cell's
# numbers depend on its thread count. Wider inputs (images) use the BLAS product.
EXPLICIT_PROJECTION_COORDINATES = 16


# torch splits an elementwise operation of at least this many entries between its threads, and a
# binary one with a transcendental function (atan2) rounds a thread's last few entries in scalar
# code: the same inputs give other bits at 2 threads than at 1.
PARALLEL_GRAIN = 1 << 15


def _below_grain(function, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``function(a, b)`` in pieces too small for torch to split between threads."""
    out = torch.empty_like(a)
    for pieces in zip(
        a.reshape(-1).split(PARALLEL_GRAIN), b.reshape(-1).split(PARALLEL_GRAIN), out.view(-1).split(PARALLEL_GRAIN)
    ):
        function(pieces[0], pieces[1], out=pieces[2])
    return out


# The batch's [cos | sin] are kept for the backward pass up to this many entries (16 MiB of
# float32, within the last-level cache); above it, writing and re-reading them costs more than
# the one cosine a tile's backward pass recomputes. Measured on 2 cores (AVX-512 EPYC): at
# 500 × 30,000 (gmm2d) keeping took 56 ms a step against 38, at 1,100 × 2,000 (adult) 5.5 against
# 6.8 (benchmarks/bench_dp_merf.py --keep-sweep).
KEEP_ENTRIES = 1 << 22

# Rows × frequencies of one block of the real-data features (SumKernelFeatures.rows), 4 MiB of
# float64: on gmm2d's 90,000 × 30,000 release 21 s against 36 s for whole 1,118-row chunks
# (2 cores; 8, 32 and 128 rows a block within 1.4 s of each other).
ROW_BLOCK_ENTRIES = 1 << 19

# Features per chunk of rows the real-data release hands the data handle (1 Mi entries, 8 MiB of
# float64): the handle's passes over a chunk — the features, each row's norm and clip, the class
# sums — then run in cache instead of streaming 256 MiB chunks through memory four times. gmm2d's
# 90,000 × 30,000 release, 2 idle cores: 22.7 s in 1,118-row chunks, 11.2 s in 34-row ones (the
# features 11.7 → 6.0 s, the clip 6.9 → 1.5 s). The released sums add the chunks in another order:
# the same to float64 rounding, which the float32 target does not see.
RELEASE_CHUNK_ENTRIES = 1 << 20


def _project(rows: torch.Tensor, frequencies_t: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """rows @ frequencies_t into ``out`` (frequencies_t: Ωᵀ, d × half, contiguous), the same bits
    at every thread count for narrow rows."""
    if rows.shape[1] > EXPLICIT_PROJECTION_COORDINATES:
        return torch.mm(rows, frequencies_t, out=out)
    torch.mul(rows[:, :1], frequencies_t[0], out=out)
    for k in range(1, rows.shape[1]):
        out.addcmul_(rows[:, k : k + 1], frequencies_t[k])
    return out


def _class_tiles(labels: torch.Tensor, n_classes: int, rows_per_tile: int) -> list[tuple[int, int, int]]:
    """(class, start, stop) over the rows sorted by class, at most ``rows_per_tile`` rows each."""
    counts = torch.bincount(labels, minlength=n_classes).tolist()
    tiles, start = [], 0
    for label, count in enumerate(counts):
        for first in range(start, start + count, rows_per_tile):
            tiles.append((label, first, min(first + rows_per_tile, start + count)))
        start += count
    return tiles


def _class_blocks(tiles: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """(class, start, stop) of each class's rows: its tiles joined."""
    blocks: list[tuple[int, int, int]] = []
    for label, start, stop in tiles:
        if blocks and blocks[-1][0] == label:
            blocks[-1] = (label, blocks[-1][1], stop)
        else:
            blocks.append((label, start, stop))
    return blocks


class _CosSinClassSums(torch.autograd.Function):
    """Per-class sums of [cos(xΩᵀ); sin(xΩᵀ)] (C × D), in tiles of rows of one class.

    Autograd's own graph keeps several B × D temporaries (projection, cos, sin, concatenation)
    and, at census's batch (0.5·n rows × 5,000 frequencies), needs gigabytes. Here rows are
    sorted by class and processed a tile at a time, so a class's sum is a column sum and its
    gradient one product per tile (no one-hot product, no B × D gather). The sine and cosine
    are the cost (benchmarks/method_rows.py), so the backward pass evaluates as few as it can:
    with the class's upstream gradients g = (g_cos, g_sin), the projection's gradient is
    g_sin·cos(p) − g_cos·sin(p) = R·cos(p + φ) with R = |g|, φ = atan2(g_cos, g_sin); the phase
    goes into the projection's product and R into the frequencies, so a tile needs one cosine.
    When the whole batch's [cos; sin] fit in ``keep_entries`` the forward pass's are kept and
    reused instead (no trigonometry at all in the backward pass)."""

    @staticmethod
    def forward(ctx, x, labels, n_classes: int, frequencies, keep_entries: int, row_gradient: bool = False):
        half = frequencies.shape[0]
        order = torch.argsort(labels, stable=True)
        rows = x[order]
        tiles = _class_tiles(labels, n_classes, max(1, tile_entries(x.device) // half))
        keep = ctx.needs_input_grad[0] and len(x) * 2 * half <= keep_entries
        # Buffers are allocated once, not per tile: a fresh tile-sized tensor costs its page
        # faults again and again. [cos | sin] of every row when kept, else one tile's.
        tile_rows = max(stop - start for _, start, stop in tiles)
        frequencies_t = frequencies.T.contiguous()
        projections = x.new_empty(tile_rows, half)
        features = x.new_empty(len(x) if keep else tile_rows, 2 * half)
        sums = x.new_zeros(n_classes, 2 * half)
        ones = x.new_ones(tile_rows)  # a column sum as a product: one read of the tile, no temporary
        for label, start, stop in tiles:
            projection = _project(rows[start:stop], frequencies_t, projections[: stop - start])
            tile = features[start:stop] if keep else features[: stop - start]
            torch.cos(projection, out=tile[:, :half])
            torch.sin(projection, out=tile[:, half:])
            with one_torch_thread():  # MKL's gemv splits the row sum between threads on Intel AVX-512
                sums[label].addmv_(tile.T, ones[: stop - start])
        ctx.tiles, ctx.keep, ctx.row_gradient = tiles, keep, row_gradient
        # saved tensors (not ctx attributes) are freed as soon as the backward pass is done
        ctx.save_for_backward(rows, order, frequencies, features)
        return sums

    @staticmethod
    def backward(ctx, grad_sums):
        rows, order, frequencies, features = ctx.saved_tensors
        half = frequencies.shape[0]
        grad_cos, grad_sin = grad_sums[:, :half], grad_sums[:, half:]
        grad_rows = torch.empty_like(rows)
        if ctx.keep and ctx.row_gradient:
            # wide rows (images: d = 784): the projection's gradient per row, g_sin·cos(p) −
            # g_cos·sin(p) (rows × half), times Ω — one product per class block, instead of the
            # C × 2·half × d class weights below (314 MB a step at MNIST's D = 10,000), whose
            # making and transposing cost ≈ 10× the products (issue 55). Another summation order:
            # the same gradient to float rounding.
            for label, start, stop in _class_blocks(ctx.tiles):
                block = features[start:stop]
                projected = block[:, :half] * grad_sin[label] - block[:, half:] * grad_cos[label]
                grad_rows[start:stop] = projected @ frequencies
        elif ctx.keep:
            # [cos | sin] @ [g_sin·Ω; −g_cos·Ω]: the projection's gradient times Ω, one product per
            # class, computed transposed (d × 2·half times the class's 2·half × rows): with the
            # long dimension inside, the product streams the features once (the row-major
            # orientation was 3× slower), and it sums each entry in one order whatever the
            # thread count
            weights = torch.cat([grad_sin[:, :, None], -grad_cos[:, :, None]], dim=1) * frequencies.repeat(2, 1)
            weights_t = weights.transpose(1, 2).contiguous()
            for label, start, stop in _class_blocks(ctx.tiles):
                grad_rows[start:stop] = (weights_t[label] @ features[start:stop].T).T
        else:
            # [x, 1] @ [Ω, φ]ᵀ = p + φ: the phase rides in the product (no extra pass over the tile)
            phase = _below_grain(torch.atan2, grad_cos, grad_sin)
            # [Ω, φ]ᵀ per class, d + 1 × half
            shifted_frequencies = torch.cat(
                [frequencies.T.expand(len(phase), -1, -1), phase[:, None, :]], dim=1
            ).contiguous()
            # R·Ω per class, transposed: d × half times the tile's half × rows streams the tile once
            weights_t = (
                (_below_grain(torch.hypot, grad_cos, grad_sin)[:, :, None] * frequencies).transpose(1, 2).contiguous()
            )
            rows = torch.cat([rows, rows.new_ones(len(rows), 1)], dim=1)
            tile_rows = max(stop - start for _, start, stop in ctx.tiles)
            scratch = features.view(-1)[: tile_rows * half].view(
                tile_rows, half
            )  # the forward's tile buffer, contiguous
            for label, start, stop in ctx.tiles:
                shifted = _project(rows[start:stop], shifted_frequencies[label], scratch[: stop - start]).cos_()
                grad_rows[start:stop] = (weights_t[label] @ shifted.T).T
        grad_x = torch.empty_like(grad_rows)
        grad_x[order] = grad_rows
        return grad_x, None, None, None, None, None


def rff_class_sums(
    x: torch.Tensor,
    labels: torch.Tensor,
    n_classes: int,
    frequencies: torch.Tensor,
    compiled: bool = False,
    row_gradient: bool = False,
) -> torch.Tensor:
    """Σ_{j: yⱼ = c} φ(xⱼ) for every class c, as a C × D matrix (differentiable in x). The
    per-row features are never all held: memory is one tile plus, when they fit in
    ``KEEP_ENTRIES``, the batch's cos and sin for the backward pass. ``compiled``: the fused
    kernel of ``methods.rff_compiled`` where it can be used (CPU, narrow x, a working compiler)."""
    scale = 1.0 / math.sqrt(frequencies.shape[0])  # √(2/D)
    kernels = (
        compiled_kernels(x.shape[1], frequencies.shape[0], x.dtype)
        if compiled and uses_compiled_kernel(x.shape[1], x.device)
        else None
    )
    if kernels is not None:
        sums = CompiledCosSinClassSums.apply(x, labels, n_classes, frequencies.to(x.dtype), kernels)
    else:
        sums = _CosSinClassSums.apply(
            x,
            labels,
            n_classes,
            frequencies.to(x.dtype),
            KEEP_ENTRIES,  # read at call time
            row_gradient,
        )
    return sums * scale


def uses_compiled_kernel(coordinates: int, device: torch.device) -> bool:
    """Whether the compiled kernel applies: CPU, and inputs projected coordinate by coordinate."""
    return device.type == "cpu" and 0 < coordinates <= EXPLICIT_PROJECTION_COORDINATES


# Generated rows × frequencies of a training step from which its class sums are compiled. Compiling
# costs ≈ 1–3 s a process with inductor's disk cache warm and ≈ 11 s cold; a step this size saves
# ≈ 0.5 ms (1.7–3.4 ns a row-frequency pair, benchmarks/bench_dp_merf.py --compiled-sweep), so
# the seeds' 2-D and tabular settings (gmm2d 7.5·10⁶ a step, adult 5.5·10⁵ and 1.2·10⁶) repay it
# within a few thousand steps, and the smoke profile and most tests stay on the eager kernel.
COMPILE_MIN_STEP_ENTRIES = 1 << 18


def worth_compiling(batch: int, features: "SumKernelFeatures") -> bool:
    """Whether a training step of ``batch`` generated rows is large enough to compile its class sums."""
    return features.frequencies is not None and batch * features.frequencies.shape[0] >= COMPILE_MIN_STEP_ENTRIES


@dataclass(frozen=True)
class SumKernelFeatures:
    """h(x) = [φ(x_num); x_cat / √d_cat] (DP-MERF (arXiv:2002.11603) Sec. 4.3); only φ when there is no
    categorical block. ``sensitivity_factor`` bounds ‖h(x)‖₂ over every valid row."""

    frequencies: torch.Tensor | None  # Ω over the numerical coordinates, or None if there are none
    numerical: torch.Tensor
    categorical: torch.Tensor
    categorical_scale: float  # 1/√d_cat
    norm_bound: float
    compiled: bool = False  # the training step's class sums through methods.rff_compiled
    # the training step's backward pass through each row's projection gradient (images: wide rows);
    # tabular data keeps the class-weights product its committed records were fitted with
    row_gradient: bool = False

    @property
    def width(self) -> int:
        rff = 0 if self.frequencies is None else 2 * self.frequencies.shape[0]
        return rff + len(self.categorical)

    def to(self, device: torch.device, dtype: torch.dtype) -> "SumKernelFeatures":
        return SumKernelFeatures(
            None if self.frequencies is None else self.frequencies.to(device, dtype),
            self.numerical.to(device),
            self.categorical.to(device),
            self.categorical_scale,
            self.norm_bound,
            self.compiled,
            self.row_gradient,
        )

    @functools.cached_property
    def frequencies_t(self) -> torch.Tensor:
        """Ωᵀ (d × D/2), contiguous: made once, not for every chunk of the release (a 15 MB
        transposing copy at MNIST's 784 × 5,000)."""
        return self.frequencies.T.contiguous()

    def rows(self, z: torch.Tensor) -> torch.Tensor:
        """h(zᵢ) for each row (n × width), the vectors the real-data release sums: [√(2/D) cos,
        √(2/D) sin] of the numerical coordinates' projection (summed coordinate by coordinate
        for narrow inputs, the same bits at any thread count), then the scaled categoricals."""
        out = z.new_empty(len(z), self.width)
        if self.frequencies is not None:
            half = self.frequencies.shape[0]
            numerical = z[:, self.numerical].contiguous()
            frequencies_t = self.frequencies_t
            scale = 1.0 / math.sqrt(half)
            # A cache-sized block of rows at a time, written in place: the same bits as whole-chunk
            # cos/sin/scale/concatenate (element-wise ops), in about half the time (one pass over
            # the output instead of five); a wide projection stays one product (BLAS blocking).
            whole = torch.mm(numerical, frequencies_t) if numerical.shape[1] > EXPLICIT_PROJECTION_COORDINATES else None
            block = max(1, ROW_BLOCK_ENTRIES // half)
            for start in range(0, len(z), block):
                stop = min(start + block, len(z))
                projection = (
                    whole[start:stop]
                    if whole is not None
                    else _project(numerical[start:stop], frequencies_t, z.new_empty(stop - start, half))
                )
                torch.cos(projection, out=out[start:stop, :half]).mul_(scale)
                torch.sin(projection, out=out[start:stop, half : 2 * half]).mul_(scale)
        if len(self.categorical):
            out[:, out.shape[1] - len(self.categorical) :] = z[:, self.categorical] * self.categorical_scale
        return out

    def class_sums(self, z: torch.Tensor, labels: torch.Tensor, n_classes: int) -> torch.Tensor:
        """Σ_{j: yⱼ = c} h(zⱼ) for every class (C × width), differentiable in z, in bounded memory."""
        # Both parts read z's columns (zᵀ, a view of the generators' column-major outputs), so
        # their gradients are column-major too and add up without a strided B × width pass.
        columns = z.T
        parts = []
        if self.frequencies is not None:
            parts.append(
                rff_class_sums(
                    columns[self.numerical].T, labels, n_classes, self.frequencies, self.compiled, self.row_gradient
                )
            )
        if len(self.categorical):
            # one product over every column, then the categorical ones: cheaper than gathering
            # the B × d_cat block and scattering its gradient back
            one_hot = torch.nn.functional.one_hot(labels, n_classes).to(z.dtype)
            parts.append((columns @ one_hot)[self.categorical].T * self.categorical_scale)
        return torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]


def median_distance(z: np.ndarray, rng: np.random.Generator, rows: int = 10) -> float:
    """The authors' tabular length scale (meddistance in github.com/ParkLabML/DP-MERF code_tab/util.py, on
    10 random training rows in code_tab/single_generator_priv_all.py): the median Euclidean distance
    between the pairs of ``rows`` random rows of z, their mean where the median is 0. Reads rows:
    never for a private run."""
    sample = np.asarray(z, dtype=float)[rng.choice(len(z), size=min(rows, len(z)), replace=False)]
    first, second = np.triu_indices(len(sample), k=1)
    distances = np.linalg.norm(sample[first] - sample[second], axis=1)
    median = float(np.median(distances))
    return median if median > 0 else float(distances.mean()) or 1.0


def dp_median_distance(
    data: PrivateData, encode: Callable[[LabelledData], np.ndarray], diameter: float, noise_multiplier: float, rng: Any
) -> float:
    """A private estimate of the median Euclidean distance between the rows' ``encode``d vectors
    (the authors' heuristic). The rows are paired at random (a public permutation) into ⌊m/2⌋
    disjoint pairs; for each of ``DP_MEDIAN_THRESHOLDS`` public distances diameter·2⁻ᵏ the handle
    releases the count of pairs closer than it with Gaussian noise (L2 sensitivity √thresholds,
    derived by the handle), and the median is read off the noisy counts (log-interpolated between
    the two thresholds that straddle half the pairs)."""
    order = np.random.default_rng(rng.integers(2**63)).permutation(data.n_rows)  # public: drawn from the seed alone
    thresholds = diameter * 2.0 ** -np.arange(DP_MEDIAN_THRESHOLDS - 1, -1, -1)  # ascending, the last = diameter
    pairs = data.n_rows // 2
    noisy = data.pair_distance_counts(
        f"pairs closer than {len(thresholds)} public distances, of {pairs} disjoint row pairs (median pair "
        "distance: the length scale)",
        encode,
        thresholds=thresholds,
        order=order,
        noise_multiplier=noise_multiplier,
        rng=rng,
    )
    half = pairs / 2
    above = np.flatnonzero(noisy >= half)
    j = int(above[0]) if len(above) else len(thresholds) - 1
    if j == 0:
        return float(thresholds[0])
    fraction = np.clip((half - noisy[j - 1]) / max(noisy[j] - noisy[j - 1], 1e-9), 0.0, 1.0)
    return float(thresholds[j - 1] * 2.0**fraction)


def sum_kernel_features(
    space: ModelSpace,
    n_features: int,
    length_scale: float | None,
    generator: torch.Generator,
    length_scales: np.ndarray | None = None,
) -> SumKernelFeatures:
    """``length_scales``: one per numerical coordinate; else ``length_scale`` × each coordinate's
    public range (None: √(d_num/6) × the range)."""
    numerical, categorical = space.numerical, space.categorical
    frequencies = None
    if len(numerical):
        if length_scales is None:
            scale = length_scale if length_scale is not None else uniform_median_distance(len(numerical))
            length_scales = space.coordinate_ranges() * scale
        frequencies = draw_frequencies(n_features, torch.as_tensor(length_scales), generator)
    cat_bound = space.categorical_norm_bound()  # ‖x_cat‖²/d_cat ≤ cat_bound
    norm_bound = math.sqrt((1.0 if len(numerical) else 0.0) + cat_bound)
    return SumKernelFeatures(
        frequencies,
        torch.as_tensor(numerical, dtype=torch.long),
        torch.as_tensor(categorical, dtype=torch.long),
        1.0 / math.sqrt(max(space.n_categorical_columns, 1)),
        norm_bound,
    )


@method(
    "dp-merf",
    "DP-MERF: random Fourier feature mean embedding released once, generator trained to match",
    kinds=frozenset(DataKind),
    hyperparameters=HYPERPARAMETERS,
    # On 2-D data the fully connected generator's fit gives the same bits at any thread count
    # (explicit projections, thread-invariant batch norm; gmm2d at the paper's settings). Not on
    # tabular or discretized data: there the batch (adult: 1,108 rows) is large enough for the
    # linear layers' weight gradients, a product over the batch, to be split by the thread count
    # (adult, paper protocol: different samples at 1 and 2 threads). The image generator's
    # convolutions do not either.
    thread_invariant_kinds={DataKind.TWO_D},
)
def dp_merf(data: PrivateData, context: FitContext[DPMerfParams]) -> TrainedConditionalGenerator:
    p = context.params
    device = context.device
    m, n_classes = data.n_rows, data.schema.n_classes
    space = ModelSpace.for_data(context.data_kind, data.schema, context.protocol)

    compositions = 2 if proportions_released(data.schema, context) else 1
    if p.length_scale_rule == "dp-median":
        sigma_length, sigma = context.ledger.calibrate_shares(
            [BudgetShare(DP_MEDIAN_SHARE, 1), BudgetShare(1 - DP_MEDIAN_SHARE, compositions)]
        )
    else:
        sigma = context.ledger.calibrate_gaussian(compositions=compositions)
    proportions = release_proportions(data, context, sigma).to(device)

    length_scales = None
    if p.length_scale_rule == "median-heuristic":
        if context.budget.is_private:
            raise ValueError(
                "dp-merf.length_scale_rule=median-heuristic reads the private rows without charging "
                "them (the authors' code does); it is an ablation for --eps inf only"
            )
        median = data.uncharged(
            "the authors' median-heuristic length scale",
            lambda rows: median_distance(space.encode(rows.x)[:, space.numerical], context.rng("length scale")),
        )
        length_scales = np.full(len(space.numerical), median)
    elif p.length_scale_rule == "dp-median" and len(space.numerical):
        diameter = float(np.linalg.norm(space.coordinate_ranges()))
        length_scales = np.full(
            len(space.numerical),
            dp_median_distance(
                data,
                lambda rows: space.encode(rows.x)[:, space.numerical],
                diameter,
                sigma_length,
                context.rng("length scale"),
            ),
        )
    else:
        context.ledger.use_public_fact(
            "length_scale",
            p.length_scale if p.length_scale is not None else "√(d_num/6) × public ranges",
            "a hyperparameter or a function of the schema's public bounds, never of the rows",
        )
    features = sum_kernel_features(
        space, p.n_features, p.length_scale, context.torch_rng("rff-frequencies"), length_scales
    )
    features = features.to(device, torch.float64)
    # ‖h(x) onehot(y)ᵀ‖_F = ‖h(x)‖ ≤ B, so replacing one row moves the mean by at most 2B/m:
    # 2/m with RFF only, 2√2/m with one-hot categoricals (DP-MERF (arXiv:2002.11603) App. F and G).
    # The handle clips each h(x) to B itself and derives that sensitivity.
    noisy_embedding = data.sum(
        "labelled mean embedding (RFF sum kernel)",
        lambda rows: features.rows(torch.as_tensor(space.encode(rows.x), device=device, dtype=torch.float64)),
        norm_bound=features.norm_bound,
        noise_multiplier=sigma,
        rng=context.torch_rng("embedding-noise"),
        mean=True,
        by_label=True,
        chunk_rows=max(1, RELEASE_CHUNK_ENTRIES // features.width),
    )
    target = (noisy_embedding / proportions[:, None]).float()
    features = features.to(device, torch.float32)

    torch.manual_seed(context.stream_seed("torch-global"))  # network init and latents use the global generator
    columns = data.schema.n_features  # the unit of 'c' widths
    net = build_generator(p, n_classes, space.width, space.output_head(), space.image_shape, columns).to(device)
    batch = batch_rows(m, p.batch_size, p.batch_fraction, real_rows=False)
    schedule = Schedule.passes(p.epochs, m, batch, p.lr, p.lr_decay, p.steps_per_epoch)
    features = replace(
        features, compiled=worth_compiling(batch, features), row_gradient=context.data_kind is DataKind.IMAGE
    )
    label_rng = context.torch_rng("generated-labels")
    weights = proportions.float()
    draw_labels = label_sampler(weights, batch, label_rng, device)
    scale = batch * weights[:, None]

    def loss(epoch: int, step: int) -> torch.Tensor:
        labels = draw_labels()
        return ((target - features.class_sums(net(labels), labels, n_classes) / scale) ** 2).sum()

    train_generator(net, loss, schedule, context)
    return TrainedConditionalGenerator(net, weights, space, device, label_rng)
