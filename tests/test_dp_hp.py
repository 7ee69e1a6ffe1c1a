"""DP-HP: Hermite-polynomial features against closed forms, sensitivity bounds over adversarial
inputs, the product-kernel contraction, and the method's privacy accounting."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from numpy.polynomial.hermite import hermval

from bench.privacy.private_data import PrivateData
from bench.core.params import HyperParameterError
from bench.privacy.budget import PrivacyBudget
from bench.core.data import DataKind, LabelledData
from bench.api.contracts import FitContext
from bench.privacy.ledger import BudgetShare, PrivacyLedger
from datasets.gmm2d import draw_split
from methods.dp_hp import HYPERPARAMETERS, HermiteProductKernel, HermiteSumKernel, dp_hp
from bench.privacy.kronecker import khatri_rao, product_class_sums
from methods.hermite import hermite_features, rho_from_length_scale_sq

F64 = torch.float64


def closed_form(x: np.ndarray, rho: float, c: int) -> np.ndarray:
    """φ_c(x) from H_c directly (DP-HP (arXiv:2106.05042) Sec. 3.1) — only stable for small c."""
    coefficients = np.zeros(c + 1)
    coefficients[c] = 1
    scale = ((1 + rho) * (1 - rho)) ** 0.25 * rho ** (c / 2) / math.sqrt(2.0**c * math.factorial(c))
    return scale * hermval(x, coefficients) * np.exp(-rho / (1 + rho) * x**2)


def gaussian_kernel(x, y, length_scale_sq):
    return torch.exp(-((x - y) ** 2) / (2 * length_scale_sq))


@pytest.mark.parametrize("rho", [0.05, 0.5, 0.9, 0.995])
def test_recursion_equals_the_closed_form(rho):
    x = np.linspace(-4, 4, 41)
    phi = hermite_features(torch.as_tensor(x)[:, None], torch.tensor(rho, dtype=F64), 25)[:, 0].numpy()
    for c in range(26):
        np.testing.assert_allclose(phi[:, c], closed_form(x, rho, c), rtol=1e-9, atol=1e-13)


def test_rho_solves_the_length_scale_relation():
    l2 = torch.tensor([1e-4, 0.005, 0.15, 0.5, 10.0, 1e12], dtype=F64)
    rho = rho_from_length_scale_sq(l2)
    assert ((rho > 0) & (rho < 1)).all()
    torch.testing.assert_close(rho / (1 - rho**2), 1 / (2 * l2), rtol=1e-12, atol=0)
    # the image settings' "kernel length" read as ℓ² (github.com/ParkLabML/DP-HP dp_mehp/all_aux_files.py find_rho)
    assert rho[1].item() == pytest.approx(0.995012, abs=1e-6)
    assert rho[2].item() == pytest.approx(0.861187, abs=1e-6)


@pytest.mark.parametrize("length_scale_sq", [0.15, 1.0, 10.0])
def test_mehler_truncation_converges_to_the_gaussian_kernel(length_scale_sq):
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(200, 1, generator=generator, dtype=F64), torch.randn(200, 1, generator=generator, dtype=F64)
    rho = rho_from_length_scale_sq(length_scale_sq)
    exact = gaussian_kernel(x, y, length_scale_sq)[:, 0]
    errors = []
    for order in (2, 10, 40, 150):
        approx = (hermite_features(x, rho, order) * hermite_features(y, rho, order)).sum(-1)[:, 0]
        errors.append((approx - exact).abs().max().item())
    assert all(later <= earlier + 1e-15 for earlier, later in zip(errors, errors[1:]))
    assert errors[-1] < 1e-10


def test_order_two_matches_500_random_features_on_the_fig1_setup():
    """Fig. 1 (DP-HP (arXiv:2106.05042) Sec. 3.1): 100 points of N(0,1) against 100 of N(1,1), median-heuristic
    length scale, mean absolute kernel error. HP of order 2 (3 features) is at most the mean
    error of 500 random features √(2/A)·cos(ωx + b) (100 draws each), over 20 data sets. With
    eq. 4's paired cos/sin features — lower variance — the same holds from order 3 on."""
    generator = torch.Generator().manual_seed(1)
    hp_errors, rf_errors, paired_rf_errors, order3_errors = [], [], [], []
    for _ in range(20):
        x = torch.randn(100, 1, generator=generator, dtype=F64)
        x_shifted = torch.randn(100, 1, generator=generator, dtype=F64) + 1
        pooled = torch.cat([x, x_shifted])
        gaps = (pooled - pooled.T).abs()
        length = gaps[torch.triu(torch.ones_like(gaps), 1) > 0].median()
        exact = gaussian_kernel(x, x_shifted.T, length**2)
        rho = rho_from_length_scale_sq(length**2)

        for order, errors in ((2, hp_errors), (3, order3_errors)):
            approx = hermite_features(x, rho, order)[:, 0] @ hermite_features(x_shifted, rho, order)[:, 0].T
            errors.append((exact - approx).abs().mean())
        omega = torch.randn(100, 1, 500, generator=generator, dtype=F64) / length  # 100 draws at once
        phase = torch.rand(100, 1, 500, generator=generator, dtype=F64) * 2 * math.pi
        random_phase = [math.sqrt(2 / 500) * torch.cos(t * omega + phase) for t in (x, x_shifted)]
        rf_errors.append((exact - random_phase[0] @ random_phase[1].transpose(1, 2)).abs().mean())
        paired = [
            torch.cat([torch.cos(t * omega[..., :250]), torch.sin(t * omega[..., :250])], -1) / math.sqrt(250)
            for t in (x, x_shifted)
        ]
        paired_rf_errors.append((exact - paired[0] @ paired[1].transpose(1, 2)).abs().mean())
    hp, rf = torch.stack(hp_errors).mean(), torch.stack(rf_errors).mean()
    assert hp <= rf
    assert torch.stack(order3_errors).mean() <= torch.stack(paired_rf_errors).mean()


EXTREMES = [0.0, 1e-300, -1e-300, 0.7, -3.0, 37.0, 1e5, -1e5, 1e300, -1e300, math.inf, -math.inf]


@pytest.mark.parametrize("order", [0, 1, 7, 20, 100, 150])
@pytest.mark.parametrize("rho", [1e-8, 0.05, 0.6, 0.99, 0.999999])
def test_feature_norm_at_most_one_and_finite_for_extreme_inputs(order, rho):
    x = torch.tensor(EXTREMES, dtype=F64)[:, None]
    phi = hermite_features(x, torch.tensor(rho, dtype=F64), order)
    assert torch.isfinite(phi).all()
    assert (phi.norm(dim=-1) <= 1 + 1e-12).all()
    x32 = x.float().requires_grad_(True)
    phi32 = hermite_features(x32, torch.tensor(rho), order)
    phi32.sum().backward()
    assert torch.isfinite(phi32).all() and torch.isfinite(x32.grad).all()


def test_closed_form_gradient():
    x = torch.randn(6, 3, dtype=F64, requires_grad=True)
    rho = torch.tensor([0.2, 0.9, 0.995], dtype=F64)
    assert torch.autograd.gradcheck(lambda t: hermite_features(t, rho, 40), (x,))


def test_product_class_sums_equal_explicit_kronecker_products():
    generator = torch.Generator().manual_seed(0)
    phi = torch.rand(9, 4, 3, generator=generator, dtype=F64)
    labels = torch.tensor([0, 1, 2, 0, 1, 2, 0, 0, 1])
    expected = torch.zeros(3, 3**4, dtype=F64)
    for i in range(9):
        row = torch.einsum("a,b,c,d->abcd", *phi[i]).reshape(-1)
        expected[labels[i]] += row
    torch.testing.assert_close(product_class_sums(phi, labels, 3), expected)
    torch.testing.assert_close(khatri_rao(phi[:, :0]), torch.ones(9, 1, dtype=F64))
    for k in (1, 2, 3):  # every split of the factors gives the same layout
        torch.testing.assert_close(
            product_class_sums(phi[:, :k], labels, 3)[0], khatri_rao(phi[:, :k])[labels == 0].sum(0)
        )


def _adversarial_rows(dimension: int) -> torch.Tensor:
    """Rows made of extreme values and the values where single features peak."""
    values = [0.0, 0.5, 1.0, -1.0, 2.5, -2.5, 8.0, 1e6, math.inf]
    rng = np.random.default_rng(0)
    rows = [np.full(dimension, v) for v in values] + [rng.choice(values, dimension) for _ in range(40)]
    return torch.tensor(np.array(rows), dtype=F64)


@pytest.mark.parametrize("kind", ["sum", "product"])
def test_embedding_sensitivity_holds_for_adversarial_neighbours(kind):
    """Replacing one row (features and label) moves Σᵢ onehot(yᵢ) h(xᵢ)ᵀ by g(r, l) − g(r', l'),
    so the mean embedding moves by at most 2/m iff ‖g(r, l) − g(r', l')‖_F ≤ 2 for every pair
    of rows and labels (DP-HP (arXiv:2106.05042) App. F); checked over extreme and feature-peaking rows."""
    dimension, classes = 5, 3
    rho = torch.tensor([1e-6, 0.3, 0.6, 0.8, 0.999], dtype=F64)
    kernel = HermiteSumKernel(rho, 60) if kind == "sum" else HermiteProductKernel(rho, 30, (3, 0, 2))
    rows = _adversarial_rows(dimension)
    single = torch.stack(
        [
            kernel.class_sums(row[None], torch.tensor([label]), classes).reshape(-1)
            for row in rows
            for label in range(classes)
        ]
    )
    assert torch.isfinite(single).all()
    worst = torch.cdist(single, single).max().item()
    assert worst <= 2 * (1 + 1e-12)
    # rows of norm ≈ 1 under different labels are √2 apart: the check is not vacuous
    assert worst > 1.3
    # and through a whole data set, as the release computes it
    m = 40
    z = torch.randn(m, dimension, generator=torch.Generator().manual_seed(0), dtype=F64)
    y = torch.arange(m) % classes
    z2, y2 = z.clone(), y.clone()
    z2[0], y2[0] = rows[3], (y[0] + 1) % classes
    moved = (kernel.class_sums(z2, y2, classes) - kernel.class_sums(z, y, classes)) / m
    assert moved.norm().item() <= 2 / m * (1 + 1e-12)


def _fit(epsilon=1.0, calibrator="tight", **overrides):
    split = draw_split(seed=0)
    train = LabelledData(split.train.x[::90], split.train.y[::90], split.train.schema)
    params = HYPERPARAMETERS.resolve("gmm2d", "smoke", {k: str(v) for k, v in overrides.items()}).params
    budget = PrivacyBudget(epsilon, 1e-5) if math.isfinite(epsilon) else PrivacyBudget.non_private()
    ledger = PrivacyLedger(budget, calibrator)
    context = FitContext(budget, ledger, params, 0, torch.device("cpu"), data_kind=DataKind.TWO_D)
    return dp_hp.fit(PrivateData(train, context.ledger), context), ledger


def test_product_embedding_is_rereleased_once_per_epoch_and_the_budget_is_met():
    model, ledger = _fit(epochs=3, prod_dims=1)  # 1 of 2 coordinates: re-drawn every epoch
    product = [r for r in ledger.releases if r.what.startswith("product")]
    # recorded as each epoch's release is made, one entry per epoch
    assert [r.compositions for r in product] == [1, 1, 1]
    assert [r.what.split(", ")[-1] for r in product] == ["epoch 1 of 3)", "epoch 2 of 3)", "epoch 3 of 3)"]
    assert ledger.epsilon_spent == pytest.approx(1.0, rel=1e-6)
    assert ledger.epsilon_spent <= 1.0 * (1 + 1e-9)
    assert len(model.sample(20)) == 20
    _, once = _fit(epochs=3, prod_dims=2)  # all coordinates: one release serves every epoch
    assert [r.compositions for r in once.releases if r.what.startswith("product")] == [1]


def test_paper_calibrator_spends_at_most_the_target():
    _, ledger = _fit(epochs=4, prod_dims=1, calibrator="paper")
    assert ledger.epsilon_spent <= 1.0
    json.loads(ledger.to_json())


def test_non_private_variant_adds_no_noise():
    _, ledger = _fit(epsilon=math.inf, epochs=1)
    assert all(r.noise_multiplier == 0 for r in ledger.releases)


# DP-HP (arXiv:2106.05042) Sec. 3.4 (autodp's gaussian_mech, as
# github.com/ParkLabML/DP-HP dp_mehp/run_sum_prod_kernel_tabular_data.py calls it): (ε part, δ part, k) → σ of the seeds' calibrator
TABULATED = [(0.8, 1, 6.28), (0.2, 10, 78.4), (0.5, 1, 9.98), (0.5, 100, 99.8), (0.6, 2, 11.8)]


@pytest.mark.parametrize("fraction,compositions,sigma", TABULATED)
def test_paper_split_reproduces_the_tabulated_sigmas_and_tight_is_smaller(fraction, compositions, sigma):
    shares = [BudgetShare(fraction, compositions), BudgetShare(1 - fraction, 1)]
    paper = PrivacyLedger(PrivacyBudget(1.0, 1e-5), "paper").calibrate_shares(shares)
    tight = PrivacyLedger(PrivacyBudget(1.0, 1e-5), "tight").calibrate_shares(shares)
    assert paper[0] == pytest.approx(sigma, rel=0.01)
    assert tight[0] < paper[0] and tight[1] < paper[1]


def test_the_seeds_median_heuristic_is_an_ablation_for_non_private_runs_only():
    """length_scale_rule=median-heuristic: the seeds' per-coordinate median gap (its mean where the
    median is 0), squared; refused for a private run, since it reads rows uncharged."""
    from methods.dp_hp import median_heuristic_sq

    z = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [3.0, 0.0, 0.0], [6.0, 0.0, 0.0], [10.0, 2.0, 0.0]])
    # coordinate 0: gaps 1, 3, 6, 10, 2, 5, 9, 3, 7, 4 → median 4.5; coordinate 1: 4 gaps of 2 among 10,
    # median 0 → mean 0.8; coordinate 2: all 0 → ℓ² = 1
    assert median_heuristic_sq(z, np.random.default_rng(0)) == pytest.approx([20.25, 0.64, 1.0])
    assert median_heuristic_sq(np.tile(z, (200, 1)), np.random.default_rng(0), rows=500).shape == (3,)
    hp = HYPERPARAMETERS
    with pytest.raises(HyperParameterError):
        hp.resolve("adult", "smoke", {"length_scale_rule": "median"})
    with pytest.raises(HyperParameterError, match="--eps inf only"):  # refused when the grid is expanded
        hp.resolve("gmm2d", "smoke", {"length_scale_rule": "median-heuristic", "epochs": "1"})
    private = hp.resolve(
        "gmm2d", "smoke", {"length_scale_rule": "median-heuristic", "epochs": "1"}, private=False
    ).params
    budget = PrivacyBudget(1.0, 1e-5)  # and by fit itself, for a caller that skips the grid
    with pytest.raises(ValueError, match="--eps inf only"):
        dp_hp.fit(
            PrivateData(draw_split(seed=0).train, PrivacyLedger(budget)),
            FitContext(budget, PrivacyLedger(budget), private, 0, torch.device("cpu"), data_kind=DataKind.TWO_D),
        )


def test_the_seeds_unconditional_product_target_is_an_ablation_for_non_private_runs_only():
    """prod_target_rule=unconditional: every class's product target holds the mean over all rows
    (÷ its proportion), as the seeds' tabular code's per-class loop does; refused when private."""
    data = draw_split(seed=0).train
    data = LabelledData(data.x[::90], data.y[::90], data.schema)
    targets = {}
    for rule in ("per-class", "unconditional"):
        params = HYPERPARAMETERS.resolve(
            "gmm2d", "smoke", {"prod_target_rule": rule, "epochs": "1"}, private=False
        ).params
        budget = PrivacyBudget.non_private()
        ledger = PrivacyLedger(budget)
        seen = []
        ledger.observe(lambda event: seen.append(event))
        dp_hp.fit(
            PrivateData(data, ledger),
            FitContext(budget, ledger, params, 0, torch.device("cpu"), data_kind=DataKind.TWO_D),
        )
        clean = [e for e in seen if "product" in e.release.what][0].clean
        targets[rule] = torch.as_tensor(clean[0] if isinstance(clean, list) else clean)
    per_class, unconditional = targets["per-class"], targets["unconditional"]
    assert torch.allclose(unconditional, unconditional[:1].expand_as(unconditional))  # the same row for every class
    assert torch.allclose(unconditional[0], per_class.sum(0))  # the sum over the classes' rows
    assert not torch.allclose(per_class[0], per_class[1])
    with pytest.raises(HyperParameterError, match="--eps inf only"):
        HYPERPARAMETERS.resolve("gmm2d", "smoke", {"prod_target_rule": "unconditional", "epochs": "1"})
    private = HYPERPARAMETERS.resolve(
        "gmm2d", "smoke", {"prod_target_rule": "unconditional", "epochs": "1"}, private=False
    ).params
    budget = PrivacyBudget(1.0, 1e-5)
    with pytest.raises(ValueError, match="--eps inf only"):
        dp_hp.fit(
            PrivateData(data, PrivacyLedger(budget)),
            FitContext(budget, PrivacyLedger(budget), private, 0, torch.device("cpu"), data_kind=DataKind.TWO_D),
        )
