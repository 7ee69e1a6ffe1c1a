"""Hermite-polynomial (HP) features of the Gaussian kernel (DP-HP, DP-HP (arXiv:2106.05042) Sec. 3).

Mehler's formula writes the 1-D Gaussian kernel exp(−(x−y)²/(2ℓ²)) with 1/(2ℓ²) = ρ/(1−ρ²) as
Σ_c φ_c(x) φ_c(y), where

    φ_c(x) = ((1−ρ)(1+ρ))^¼ · ρ^{c/2} / √(2^c c!) · H_c(x) · exp(−ρ x²/(1+ρ))

(H_c the physicists' Hermite polynomials). Order C keeps c = 0..C, i.e. C+1 features. Since
Σ_{c≥0} φ_c(x)² = 1, every truncation has ‖φ(x)‖₂ ≤ 1 for every x — the fact both of DP-HP's
sensitivities rest on (DP-HP (arXiv:2106.05042) App. F).

The features are computed by the stable three-term recursion (DP-HP (arXiv:2106.05042) App. E, eq. 91)

    φ_{k+1} = √(2ρ/(k+1)) · x · φ_k − ρ · √(k/(k+1)) · φ_{k−1},

never through H_c, c! or 2^c, which overflow long before the seeds' order 150.
"""

from __future__ import annotations

import math

import torch


def rho_from_length_scale_sq(length_scale_sq: float | torch.Tensor) -> torch.Tensor:
    """ρ ∈ (0, 1) with ρ/(1−ρ²) = 1/(2ℓ²) (DP-HP (arXiv:2106.05042) footnote 4), the positive root written as
    2a/(1+√(1+4a²)), a = 1/(2ℓ²), which has no cancellation for large ℓ."""
    l2 = torch.as_tensor(length_scale_sq, dtype=torch.float64)
    if (l2 <= 0).any() or not torch.isfinite(l2).all():
        raise ValueError("squared length scales must be finite and > 0")
    a = 1.0 / (2.0 * l2)
    return 2.0 * a / (1.0 + torch.sqrt(1.0 + 4.0 * a * a))


# rows per block of the recursion: blocks of ~2M entries stay in cache and reuse their buffers,
# 3× faster than one pass over a large batch (benchmarks/bench_dp_hp.py)
_BLOCK_ENTRIES = 1 << 21


def _rows_per_block(entries_per_row: int) -> int:
    return max(1, _BLOCK_ENTRIES // max(entries_per_row, 1))


def _recursion(x: torch.Tensor, rho: torch.Tensor, order: int, out: torch.Tensor) -> None:
    """Write φ_0..φ_order of every entry of finite x (rows × D) into ``out`` (rows × D × C+1),
    ρ broadcast over D. Each order goes into a contiguous slab of an order-major buffer with
    in-place multiply-adds, so the loop allocates nothing."""
    slabs = x.new_empty((order + 1, *x.shape))
    torch.exp(-rho / (1 + rho) * x * x, out=slabs[0]).mul_(((1 - rho) * (1 + rho)) ** 0.25)
    if order >= 1:
        scaled_x = torch.sqrt(2 * rho) * x  # √(2ρ)·x, shared by every step
        torch.mul(scaled_x, slabs[0], out=slabs[1])
    for k in range(1, order):
        torch.mul(slabs[k - 1], -rho * math.sqrt(k / (k + 1)), out=slabs[k + 1])
        slabs[k + 1].addcmul_(scaled_x, slabs[k], value=1 / math.sqrt(k + 1))
    out.copy_(slabs.movedim(0, -1))


class _HermiteFeatures(torch.autograd.Function):
    """φ(x) with a closed-form backward pass: from H_c' = 2c H_{c−1},

        dφ_c/dx = −(2ρ/(1+ρ)) · x · φ_c + √(2cρ) · φ_{c−1},

    so the backward needs only the saved features — autograd through the recursion would keep
    C intermediate tensors and replay C small steps."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, rho: torch.Tensor, order: int) -> torch.Tensor:
        rho = rho.to(x.dtype)
        # ±inf → ±max/1e4: then φ_0 = exp(−∞) = 0 and x·φ_0 = 0, where inf·0 would be NaN
        largest = torch.finfo(x.dtype).max / 1e4  # so that x times a coefficient ≤ √2 stays finite
        x = x.clamp(-largest, largest)
        rows = x.reshape(-1, x.shape[-1])
        phi = x.new_empty((*rows.shape, order + 1))
        step = _rows_per_block(phi[0].numel())
        for start in range(0, len(rows), step):
            _recursion(rows[start : start + step], rho, order, phi[start : start + step])
        phi = phi.reshape(*x.shape, order + 1)
        ctx.save_for_backward(x, rho, phi)
        return phi

    @staticmethod
    def backward(ctx, grad_phi: torch.Tensor):
        x, rho, phi = ctx.saved_tensors
        order = phi.shape[-1] - 1
        root_c = torch.arange(1, order + 1, dtype=phi.dtype, device=phi.device).sqrt()
        grads, phis = grad_phi.reshape(-1, *phi.shape[-2:]), phi.reshape(-1, *phi.shape[-2:])
        rows = x.reshape(-1, x.shape[-1])
        grad_x = torch.empty_like(rows)
        step = _rows_per_block(phis[0].numel())
        for start in range(0, len(phis), step):
            block = slice(start, start + step)
            g, f = grads[block], phis[block]
            grad_x[block] = torch.linalg.vecdot(g, f) * (-2 * rho / (1 + rho)) * rows[block]
            if order:
                grad_x[block] += (g[..., 1:] * f[..., :-1]) @ root_c * torch.sqrt(2 * rho)
        return grad_x.reshape(x.shape), None, None


def hermite_features(x: torch.Tensor, rho: torch.Tensor, order: int) -> torch.Tensor:
    """φ^{(C)}(x) for every entry of ``x`` (… × D) with per-coordinate ``rho`` (D,) or a scalar:
    a (… × D × C+1) tensor, differentiable in x."""
    if order < 0:
        raise ValueError(f"Hermite order must be >= 0 (got {order})")
    rho = torch.as_tensor(rho, device=x.device)
    if ((rho <= 0) | (rho >= 1)).any():
        raise ValueError("ρ must lie in (0, 1)")
    return _HermiteFeatures.apply(x, rho, order)


def clip_feature_norm(phi: torch.Tensor) -> torch.Tensor:
    """Scale φ(x) (last axis) down to norm ≤ 1 where round-off took it a hair over: the
    sensitivity bound then holds by construction, not only up to floating-point error."""
    norm = phi.norm(dim=-1, keepdim=True)
    return phi / norm.clamp(min=1.0)
