"""DP-HP's sum-kernel class sums on the CPU in one fused pass (issue 16's hot path).

For every class c, coordinate d and order k the sum kernel needs S[c, d, k] = Σ_{i: yᵢ = c}
φ_k(x_{i,d}) (methods/hermite.py). Built from torch operations this materialises a
rows × D × (C+1) tensor and reads it several times; at census' setting (100,000 generated rows ×
510 one-hot coordinates × order 100, DP-HP (arXiv:2106.05042) Table 6) that is 5·10⁹ entries a
step. Here the three-term recursion runs over a block of rows of one coordinate and one class at a
time, in L1, and only the (K × D × C+1) sums leave the kernel. The backward pass reruns the
recursion and folds the incoming gradient G into

    ∂L/∂x = −(2ρ/(1+ρ)) · x · Σ_k G_k φ_k + √(2ρ) · Σ_k √(k+1) · G_{k+1} φ_k

(dφ_k/dx, the closed form in methods/hermite.py), so no per-row feature is ever stored.

``clip`` scales each φ(x_{i,d}) to norm ≤ 1 first (``clip_feature_norm``, used for the real rows'
release), which costs a second pass of the recursion.

methods/hermite.py's torch implementation stays the reference and the path for other devices;
tests/test_hermite_fused.py checks that both agree, values and gradients, on adversarial inputs.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch

# Numba's OpenMP layer shares libgomp with torch, and starting it sets the process's OpenMP
# thread count back to all cores, so torch's own ops then oversubscribe a `--jobs 2` grid (seen:
# 4 busy threads on 2 cores). The work-queue layer keeps its own threads and touches nothing else.
numba.config.THREADING_LAYER = "workqueue"

_BLOCK = 512  # rows per block: the recursion's few block buffers stay in L1


@numba.njit(cache=True, parallel=True, fastmath=True)
def _forward(xt, bounds, first, a, b, clip, out):
    """xt: D × rows, rows sorted by class (class c: rows bounds[c]:bounds[c+1]); first: D × 3
    (φ_0's factor, its exponent's factor −ρ/(1+ρ), √(2ρ)); a, b: D × order, the recursion's
    φ_{k+1} = a[d,k]·x·φ_k − b[d,k]·φ_{k−1}; out: K × D × (order+1), accumulated into."""
    dims, n_classes, order = xt.shape[0], len(bounds) - 1, out.shape[2] - 1
    for d in numba.prange(dims):
        p0 = np.empty(_BLOCK, dtype=xt.dtype)
        p1 = np.empty(_BLOCK, dtype=xt.dtype)
        scale = np.empty(_BLOCK, dtype=xt.dtype)
        for c in range(n_classes):
            for start in range(bounds[c], bounds[c + 1], _BLOCK):
                rows = min(_BLOCK, bounds[c + 1] - start)
                xs = xt[d, start : start + rows]
                for i in range(rows):
                    scale[i] = 1
                if clip:  # a first pass for ‖φ(x)‖²
                    for i in range(rows):
                        p0[i] = first[d, 0] * math.exp(first[d, 1] * xs[i] * xs[i])
                        p1[i] = first[d, 2] * xs[i] * p0[i]
                        scale[i] = p0[i] * p0[i] + (p1[i] * p1[i] if order >= 1 else 0)
                    for k in range(1, order):
                        ak, bk = a[d, k], b[d, k]
                        for i in range(rows):
                            nxt = ak * xs[i] * p1[i] - bk * p0[i]
                            p0[i] = p1[i]
                            p1[i] = nxt
                            scale[i] += nxt * nxt
                    for i in range(rows):
                        scale[i] = 1 / max(math.sqrt(scale[i]), 1)
                total0 = out[c, d, 0] * 0
                total1 = total0
                for i in range(rows):
                    p0[i] = first[d, 0] * math.exp(first[d, 1] * xs[i] * xs[i])
                    p1[i] = first[d, 2] * xs[i] * p0[i]
                    total0 += p0[i] * scale[i]
                    total1 += p1[i] * scale[i]
                out[c, d, 0] += total0
                if order >= 1:
                    out[c, d, 1] += total1
                for k in range(1, order):
                    ak, bk = a[d, k], b[d, k]
                    total = total0 * 0
                    if clip:
                        for i in range(rows):
                            nxt = ak * xs[i] * p1[i] - bk * p0[i]
                            p0[i] = p1[i]
                            p1[i] = nxt
                            total += nxt * scale[i]
                    else:  # the generated rows' hot loop: no scale to apply
                        for i in range(rows):
                            nxt = ak * xs[i] * p1[i] - bk * p0[i]
                            p0[i] = p1[i]
                            p1[i] = nxt
                            total += nxt
                    out[c, d, k + 1] += total


@numba.njit(cache=True, parallel=True, fastmath=True)
def _backward(xt, bounds, first, a, b, grad, lower_weight, x_factor, grad_xt):
    """grad: K × D × (order+1), ∂L/∂S; lower_weight: (order+1) of √k (0 at k = 0);
    x_factor: D of −2ρ/(1+ρ); grad_xt: D × rows, written."""
    dims, n_classes, order = xt.shape[0], len(bounds) - 1, grad.shape[2] - 1
    for d in numba.prange(dims):
        p0 = np.empty(_BLOCK, dtype=xt.dtype)
        p1 = np.empty(_BLOCK, dtype=xt.dtype)
        same = np.empty(_BLOCK, dtype=xt.dtype)  # Σ_k G_k φ_k
        lower = np.empty(_BLOCK, dtype=xt.dtype)  # Σ_k √(k+1) G_{k+1} φ_k
        for c in range(n_classes):
            g = grad[c, d]
            g_up = np.zeros(order + 2, dtype=xt.dtype)  # √(k+1)·G_{k+1}, 0 past the order
            for k in range(order):
                g_up[k] = lower_weight[k + 1] * g[k + 1]
            g1 = g[1] if order >= 1 else g[0] * 0
            for start in range(bounds[c], bounds[c + 1], _BLOCK):
                rows = min(_BLOCK, bounds[c + 1] - start)
                xs = xt[d, start : start + rows]
                for i in range(rows):
                    p0[i] = first[d, 0] * math.exp(first[d, 1] * xs[i] * xs[i])
                    p1[i] = first[d, 2] * xs[i] * p0[i]
                    same[i] = g[0] * p0[i] + g1 * p1[i]
                    lower[i] = g_up[0] * p0[i] + g_up[1] * p1[i]
                for k in range(1, order):
                    ak, bk, gk, gl = a[d, k], b[d, k], g[k + 1], g_up[k + 1]
                    for i in range(rows):
                        nxt = ak * xs[i] * p1[i] - bk * p0[i]
                        p0[i] = p1[i]
                        p1[i] = nxt
                        same[i] += gk * nxt
                        lower[i] += gl * nxt
                for i in range(rows):
                    grad_xt[d, start + i] = x_factor[d] * xs[i] * same[i] + first[d, 2] * lower[i]


_TILE = 64  # the transposes' square tiles: a tile's source and target stay in L1


@numba.njit(cache=True, parallel=True)
def _transpose_rows(rowwise, rows, columnwise, gather):
    """gather: columnwise[d, j] = rowwise[rows[j], d]; else the inverse, rowwise[rows[j], d] =
    columnwise[d, j]. By tiles (rowwise: n × D; columnwise: D × len(rows))."""
    n, dims = len(rows), columnwise.shape[0]
    for tile in numba.prange((n + _TILE - 1) // _TILE):
        j0 = tile * _TILE
        for d0 in range(0, dims, _TILE):
            for j in range(j0, min(j0 + _TILE, n)):
                row = rows[j]
                for d in range(d0, min(d0 + _TILE, dims)):
                    if gather:
                        columnwise[d, j] = rowwise[row, d]
                    else:
                        rowwise[row, d] = columnwise[d, j]


def _constants(rho: torch.Tensor, order: int, dtype: np.dtype):
    rho = rho.detach().double().cpu().numpy()
    first = np.stack([((1 - rho) * (1 + rho)) ** 0.25, -rho / (1 + rho), np.sqrt(2 * rho)], axis=1)
    k = np.arange(max(order, 1), dtype=np.float64)
    a = np.sqrt(2 * rho[:, None] / (k + 1))
    b = rho[:, None] * np.sqrt(k / (k + 1))
    lower_weight = np.sqrt(np.arange(order + 1, dtype=np.float64))
    x_factor = -2 * rho / (1 + rho)
    return tuple(np.ascontiguousarray(v, dtype=dtype) for v in (first, a, b, lower_weight, x_factor))


class _SumClassSums(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, labels, rho, order: int, n_classes: int, clip: bool):
        dtype = np.dtype(str(x.dtype).removeprefix("torch."))
        largest = torch.finfo(x.dtype).max / 1e4  # as the reference: ±inf → finite, φ = 0 there
        rows_by_class = torch.argsort(labels, stable=True)
        x_np = x.detach().clamp(-largest, largest).contiguous().numpy()
        xt = np.empty(x_np.shape[::-1], dtype=dtype)
        _transpose_rows(x_np, rows_by_class.numpy(), xt, True)
        bounds = np.concatenate([[0], np.cumsum(np.bincount(labels.numpy(), minlength=n_classes))]).astype(np.int64)
        constants = _constants(rho, order, dtype)
        first, a, b, _, _ = constants
        out = np.zeros((n_classes, x.shape[1], order + 1), dtype=dtype)
        _forward(xt, bounds, first, a, b, clip, out)
        ctx.saved = (xt, bounds, constants, rows_by_class)
        ctx.clip = clip
        return torch.from_numpy(out)

    @staticmethod
    def backward(ctx, grad_sums):
        if ctx.clip:
            raise RuntimeError("the clipped sum kernel is for the real rows' release and has no gradient")
        xt, bounds, (first, a, b, lower_weight, x_factor), rows_by_class = ctx.saved
        grad_xt = np.empty_like(xt)
        grad = np.ascontiguousarray(grad_sums.numpy(), dtype=xt.dtype)
        _backward(xt, bounds, first, a, b, grad, lower_weight, x_factor, grad_xt)
        grad_x = np.empty(grad_xt.shape[::-1], dtype=xt.dtype)
        _transpose_rows(grad_x, rows_by_class.numpy(), grad_xt, False)
        return torch.from_numpy(grad_x), None, None, None, None, None


def sum_class_sums(
    x: torch.Tensor, labels: torch.Tensor, rho: torch.Tensor, order: int, n_classes: int, clip: bool
) -> torch.Tensor:
    """Σ_{i: yᵢ = c} φ(x_{i,d}) for every class c and coordinate d: a (K × D × order+1) tensor,
    differentiable in x (unclipped only); x on the CPU, float32 or float64."""
    numba.set_num_threads(min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS))  # as torch: no oversubscription
    return _SumClassSums.apply(x, labels, rho, order, n_classes, clip)
