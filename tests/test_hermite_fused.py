"""The fused CPU sum-kernel pass (methods/hermite_fused.py) against the torch reference
(methods/hermite.py): values, gradients and the clipped release, on inputs chosen to break it."""

from __future__ import annotations

import math

import pytest
import torch

from methods.dp_hp import HermiteSumKernel
from methods.hermite import clip_feature_norm, hermite_features
from methods.hermite_fused import sum_class_sums


def reference_class_sums(x, labels, rho, order, n_classes, clip):
    phi = hermite_features(x, rho, order)
    phi = clip_feature_norm(phi) if clip else phi
    one_hot = torch.nn.functional.one_hot(labels, n_classes).to(phi.dtype)
    return (one_hot.T @ phi.reshape(len(x), -1)).reshape(n_classes, x.shape[1], order + 1)


def adversarial_rows(dtype, rows=300, dims=7, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, dims, generator=generator, dtype=dtype) * 3
    x[0, 0], x[1, 1], x[2, 2], x[3, 3] = math.inf, -math.inf, 1e30, 0.0
    x[4] = 0.0
    x[5, :] = torch.linspace(-40, 40, dims, dtype=dtype)  # far in the tails: φ ≈ 0, no overflow
    return x


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("order", [0, 1, 2, 3, 25, 100])
@pytest.mark.parametrize("clip", [False, True])
def test_fused_class_sums_equal_the_reference(dtype, order, clip):
    x = adversarial_rows(dtype)
    labels = torch.arange(len(x)) % 4
    labels[labels == 2] = 3  # class 2 empty: its sums must be exactly zero
    rho = torch.linspace(0.02, 0.98, x.shape[1], dtype=torch.float64)
    got = sum_class_sums(x, labels, rho, order, 4, clip)
    expected = reference_class_sums(x, labels, rho, order, 4, clip)
    assert got.shape == expected.shape and got.dtype == dtype
    assert torch.isfinite(got).all()
    tolerance = 1e-10 if dtype == torch.float64 else 2e-4
    torch.testing.assert_close(got, expected, rtol=tolerance, atol=tolerance)
    assert (got[2] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("order", [0, 1, 2, 7, 100])
def test_fused_gradient_equals_the_reference(dtype, order):
    x = adversarial_rows(dtype)[6:]  # finite rows: the reference's gradient at ±inf is NaN
    labels = torch.randint(0, 3, (len(x),), generator=torch.Generator().manual_seed(1))
    rho = torch.linspace(0.05, 0.95, x.shape[1], dtype=torch.float64)
    weights = torch.randn(3, x.shape[1], order + 1, dtype=dtype, generator=torch.Generator().manual_seed(2))
    fused_x, reference_x = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    (sum_class_sums(fused_x, labels, rho, order, 3, False) * weights).sum().backward()
    (reference_class_sums(reference_x, labels, rho, order, 3, False) * weights).sum().backward()
    tolerance = 1e-10 if dtype == torch.float64 else 2e-4
    torch.testing.assert_close(fused_x.grad, reference_x.grad, rtol=tolerance, atol=tolerance)


def test_fused_gradient_matches_finite_differences():
    x = (torch.rand(40, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) - 0.5) * 4
    labels = torch.arange(40) % 2
    rho = torch.tensor([0.3, 0.6, 0.9], dtype=torch.float64)
    weights = torch.randn(2, 3, 31, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    assert torch.autograd.gradcheck(
        lambda v: (sum_class_sums(v, labels, rho, 30, 2, False) * weights).sum(), (x.requires_grad_(True),)
    )


def test_clipped_row_has_at_most_unit_norm_per_coordinate():
    """The release's sensitivity rests on ‖φ(x_d)‖ ≤ 1 for every row (DP-HP App. F): a single-row
    class sum is that row's features, so its norm per coordinate must not exceed 1, whatever x."""
    x = adversarial_rows(torch.float64, rows=64)
    rho = torch.linspace(0.01, 0.99, x.shape[1], dtype=torch.float64)
    for row in range(len(x)):
        sums = sum_class_sums(x[row : row + 1], torch.zeros(1, dtype=torch.long), rho, 150, 1, True)
        assert (sums[0].norm(dim=-1) <= 1 + 1e-12).all()


def test_the_sum_kernel_takes_the_fused_path_on_the_cpu(monkeypatch):
    """HermiteSumKernel on the CPU goes through the fused pass; with it broken, the kernel's
    class sums change (so the equality tests above cover what DP-HP runs)."""
    import methods.dp_hp as dp_hp

    x = adversarial_rows(torch.float32, rows=50)[6:]
    labels = torch.arange(len(x)) % 2
    kernel = HermiteSumKernel(torch.linspace(0.1, 0.9, x.shape[1], dtype=torch.float64), 10, clip=False)
    honest = kernel.class_sums(x, labels, 2)
    monkeypatch.setattr(dp_hp, "sum_class_sums", lambda *args: torch.zeros(2, x.shape[1], 11))
    assert not torch.equal(kernel.class_sums(x, labels, 2), honest)


def test_the_fused_pass_leaves_torch_thread_count_alone():
    """Numba's OpenMP layer would reset the process's OpenMP threads: a one-thread cell's torch
    ops then ran on every core (oversubscribing `--jobs 2` grids)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        x = torch.rand(600, 5, requires_grad=True)
        sum_class_sums(
            x, torch.arange(600) % 2, torch.full((5,), 0.5, dtype=torch.float64), 10, 2, False
        ).sum().backward()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
