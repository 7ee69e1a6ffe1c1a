"""Sums of row-wise Kronecker products in factorised form: the private-data handle's
``kronecker_sum`` forms a product kernel's per-class sums itself from the per-row factors a method
gives (DP-HP's product kernel), so the per-row norm bound holds by construction (‖a ⊗ b‖ = ‖a‖·‖b‖).
Torch tensors (torch is imported on first use: importing this module does not)."""

from __future__ import annotations

from typing import Any


def khatri_rao(phi: Any) -> Any:
    """Row-wise Kronecker products: (B × k × F) → (B × F^k), row-major over the k factors in
    order (the layout of the seeds' iterated outer product); k = 0 gives ones (B × 1)."""
    out = phi.new_ones(phi.shape[0], 1)
    for j in range(phi.shape[1]):
        out = (out[:, :, None] * phi[:, j, None, :]).reshape(phi.shape[0], -1)
    return out


def product_class_sums(phi: Any, labels: Any, n_classes: int) -> Any:
    """Σ_{i: yᵢ = c} φ(x_{i,1}) ⊗ … ⊗ φ(x_{i,k}) for every class c: a (K × F^k) matrix.

    ``phi`` holds the selected coordinates' features (B × k × F). The k factors are split into two
    groups whose row-wise Kronecker products L (B × F^⌊k/2⌋) and R (B × F^⌈k/2⌉) meet in one
    matrix product over the rows, (onehot ⊙ L)ᵀ R, so no B × F^k tensor is ever formed: the
    largest intermediate has B·(K·F^⌊k/2⌋ + F^⌈k/2⌉) entries."""
    import torch

    half = phi.shape[1] // 2
    left, right = khatri_rao(phi[:, :half]), khatri_rao(phi[:, half:])
    one_hot = torch.nn.functional.one_hot(labels, n_classes).to(phi.dtype)
    weighted = (one_hot[:, :, None] * left[:, None, :]).reshape(len(phi), -1)
    return (weighted.T @ right).reshape(n_classes, -1)
