"""DP-MERF's feature map, sensitivity and privacy accounting."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from bench.privacy.private_data import PrivateData
from bench.privacy.budget import PrivacyBudget
from bench.core.data import DataKind, LabelledData
from bench.api.contracts import FitContext
from bench.privacy.ledger import PrivacyLedger
from datasets.gmm2d import SCHEMA, draw_split
from methods.dp_merf import (
    COMPILE_MIN_STEP_ENTRIES,
    HYPERPARAMETERS,
    dp_merf,
    draw_frequencies,
    SumKernelFeatures,
    rff_class_sums,
    rff_features,
    worth_compiling,
)


def gaussian_kernel(x, y, length_scale):
    return torch.exp(-((x - y) ** 2).sum(-1) / (2 * length_scale**2))


def frequencies(n_features, dim, length_scale=1.0, seed=0):
    return draw_frequencies(n_features, torch.full((dim,), length_scale), torch.Generator().manual_seed(seed))


def rff_only(w):
    dim = w.shape[1]
    return SumKernelFeatures(w, torch.arange(dim), torch.zeros(0, dtype=torch.long), 1.0, 1.0)


def test_rff_inner_products_approximate_the_gaussian_kernel():
    torch.manual_seed(0)
    x, y = torch.randn(300, 3, dtype=torch.float64), torch.randn(300, 3, dtype=torch.float64)
    exact = gaussian_kernel(x, y, 1.3)
    errors = []
    for n_features in (100, 40_000):
        w = frequencies(n_features, 3, 1.3)
        approx = (rff_features(x, w) * rff_features(y, w)).sum(1)
        errors.append((approx - exact).abs().mean().item())
    assert errors[1] < 0.01  # Monte-Carlo error ~ 1/√D
    assert errors[1] < errors[0] / 5


@pytest.mark.parametrize("value", [0.0, 1e-30, 1e30, -1e30, 3.4e38, np.pi * 1e12])
def test_feature_norm_is_one_for_extreme_inputs(value):
    w = frequencies(2000, 4)
    x = torch.full((1, 4), value, dtype=torch.float64)
    assert rff_features(x, w).norm().item() == pytest.approx(1.0, abs=1e-9)


def labelled_embedding(x, y, n_classes, features):
    """Σᵢ onehot(yᵢ) h(xᵢ)ᵀ: what DP-MERF's handle sum releases (``by_label``), before the
    handle's clipping, a no-op when ‖h(x)‖ ≤ B as here."""
    return torch.nn.functional.one_hot(y, n_classes).double().T @ features.rows(x)


def test_embedding_sensitivity_bound_holds_for_adversarial_neighbours():
    """Replace one row by the candidate that moves the labelled embedding most; ≤ 2/m."""
    rng = np.random.default_rng(0)
    m, n_classes = 50, 3
    w = frequencies(512, 2, 0.1)
    x = torch.as_tensor(rng.normal(size=(m, 2)))
    y = torch.as_tensor(rng.integers(0, n_classes, m))
    base = labelled_embedding(x, y, n_classes, rff_only(w)) / m
    candidates = torch.cat([torch.as_tensor(rng.normal(scale=s, size=(400, 2))) for s in (0.01, 1, 100, 1e6)])
    worst = 0.0
    for index in (0, 17):
        for label in range(n_classes):
            xs = x.repeat(len(candidates), 1, 1)
            xs[:, index] = candidates
            for candidate in range(0, len(candidates), 100):
                x2, y2 = xs[candidate].clone(), y.clone()
                y2[index] = label
                moved = labelled_embedding(x2, y2, n_classes, rff_only(w)) / m
                worst = max(worst, (moved - base).norm().item())
    assert worst <= 2 / m + 1e-12
    assert worst > 1.2 / m  # the adversarial search does get near the bound


def test_class_sums_equal_the_one_hot_definition_and_have_correct_gradients():
    w = frequencies(64, 3, seed=1)
    x = torch.randn(20, 3, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 4, (20,))
    reference = torch.nn.functional.one_hot(y, 4).double().T @ rff_features(x, w)
    assert torch.allclose(rff_class_sums(x, y, 4, w), reference)
    assert torch.autograd.gradcheck(lambda inputs: rff_class_sums(inputs, y, 4, w), (x,))


def test_the_wide_rows_backward_pass_gives_the_class_weights_gradient_to_rounding():
    """Images' backward pass (``row_gradient``: each row's projection gradient times Ω) against
    the tabular one (class weights) and autograd's own, on 784-wide rows as MNIST's."""
    w = frequencies(96, 784, seed=2)
    x = torch.rand(30, 784, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 10, (30,), generator=torch.Generator().manual_seed(0))
    upstream = torch.randn(10, 2 * w.shape[0], dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    gradients = []
    for row_gradient in (True, False):
        sums = rff_class_sums(x, y, 10, w, row_gradient=row_gradient)
        (gradient,) = torch.autograd.grad((sums * upstream).sum(), x)
        gradients.append(gradient)
    (reference,) = torch.autograd.grad(
        ((torch.nn.functional.one_hot(y, 10).double().T @ rff_features(x, w)) * upstream).sum(), x
    )
    torch.testing.assert_close(gradients[0], reference, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(gradients[0], gradients[1], rtol=1e-10, atol=1e-12)


def compiled_or_skip():
    from methods.rff_compiled import compiled_kernels

    if compiled_kernels(2, 4) is None:
        pytest.skip("torch.compile cannot build kernels here (no C++ compiler?)")


def test_the_compiled_kernels_are_built_once_for_every_block_size():
    """compiled_kernels(d, frequencies) compiles the graphs training uses: blocks of other row
    counts, forward and backward, reuse them (a recompilation costs seconds; past dynamo's limit
    it silently falls back to eager Python)."""
    from torch._dynamo.utils import counters

    from methods.rff_compiled import compiled_kernels

    if compiled_kernels(3, 96) is None:
        pytest.skip("torch.compile cannot build kernels here (no C++ compiler?)")
    w = frequencies(192, 3, seed=4).float()
    before = counters["stats"]["unique_graphs"]
    for step in range(4):
        x = torch.randn(40 + 7 * step, 3, requires_grad=True)
        y = torch.randint(0, 3, (len(x),), generator=torch.Generator().manual_seed(step))
        rff_class_sums(x, y, 3, w, compiled=True).square().sum().backward()
    assert counters["stats"]["unique_graphs"] == before


def test_the_compiled_class_sums_equal_the_one_hot_definition_and_have_correct_gradients():
    compiled_or_skip()
    w = frequencies(64, 3, seed=1)
    x = torch.randn(20, 3, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 2, 2, 3] * 5)  # class 1 has no row: its sums are 0
    reference = torch.nn.functional.one_hot(y, 4).double().T @ rff_features(x, w)
    assert torch.allclose(rff_class_sums(x, y, 4, w, compiled=True), reference)
    assert torch.autograd.gradcheck(lambda inputs: rff_class_sums(inputs, y, 4, w, compiled=True), (x,))


@pytest.mark.parametrize("rows, coordinates, half", [(500, 2, 3_000), (1_100, 6, 500), (7, 14, 40)])
def test_compiled_class_sums_match_the_eager_kernel_and_give_the_same_bits_at_one_and_two_threads(
    rows, coordinates, half
):
    """float32 as in training: within rounding of the eager kernel; identical at 1 and 2 threads
    (the runner lends a core to DP-MERF's 2-D fits on that promise)."""
    compiled_or_skip()
    generator = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, coordinates, generator=generator)
    labels = torch.randint(0, 3, (rows,), generator=generator)
    w = torch.randn(half, coordinates, generator=generator)
    weights = torch.randn(3, 2 * half, generator=generator)
    results = {}
    previous = torch.get_num_threads()
    try:
        for kernel, threads in (("eager", 1), ("compiled", 1), ("compiled", 2)):
            torch.set_num_threads(threads)
            inputs = x.clone().requires_grad_(True)
            sums = rff_class_sums(inputs, labels, 3, w, compiled=kernel == "compiled")
            (sums * weights).sum().backward()
            results[kernel, threads] = (sums.detach(), inputs.grad)
    finally:
        torch.set_num_threads(previous)
    for eager, compiled in zip(results["eager", 1], results["compiled", 1]):
        assert torch.allclose(compiled, eager, rtol=1e-4, atol=1e-4 * eager.abs().max().item())
    for one, two in zip(results["compiled", 1], results["compiled", 2]):
        assert torch.equal(one, two)


def test_only_steps_large_enough_to_repay_compiling_use_the_compiled_kernel():
    features = rff_only(frequencies(1_000, 2))  # 500 frequencies
    assert worth_compiling(500, replace(features, frequencies=torch.zeros(15_000, 2)))  # gmm2d, the seeds' setting
    assert worth_compiling(1_108, features)  # adult, paper protocol
    assert not worth_compiling(500, replace(features, frequencies=torch.zeros(250, 2)))  # gmm2d, smoke profile
    assert not worth_compiling(10**9, replace(features, frequencies=None))  # no numerical coordinate
    smallest = -(-COMPILE_MIN_STEP_ENTRIES // 500)
    assert worth_compiling(smallest, features) and not worth_compiling(smallest - 1, features)


def test_the_released_per_row_features_are_the_trained_on_ones_and_the_handle_chunks_them_exactly():
    """features.rows (what the release sums) agrees with rff_features and, summed by label, with
    the training loss's class sums; the handle's sum over chunks of 7 rows equals the whole."""
    from bench.privacy.budget import PrivacyBudget

    w = frequencies(100, 2)
    x, y = torch.randn(1000, 2, dtype=torch.float64), torch.randint(0, 5, (1000,))
    features = rff_only(w)
    assert torch.allclose(features.rows(x), rff_features(x, w), atol=1e-12)
    assert torch.allclose(labelled_embedding(x, y, 5, features), features.class_sums(x, y, 5), atol=1e-10)
    assert SCHEMA.n_classes == 5 and SCHEMA.n_features == 2
    data = PrivateData(LabelledData(x.float().numpy(), y.numpy(), SCHEMA), PrivacyLedger(PrivacyBudget.non_private()))

    def release(chunk_rows):
        return data.sum(
            "embedding",
            lambda rows: features.rows(torch.as_tensor(rows.x, dtype=torch.float64)),
            norm_bound=1.0,
            noise_multiplier=0.0,
            rng=torch.Generator(),
            mean=True,
            by_label=True,
            chunk_rows=chunk_rows,
        )

    assert torch.allclose(release(7), release(None), atol=1e-14)
    assert torch.allclose(release(None), labelled_embedding(x.float().double(), y, 5, features) / 1000, atol=1e-14)


def test_real_rows_features_are_the_same_bits_whatever_the_row_block(monkeypatch):
    """SumKernelFeatures.rows writes cos/sin block by block in place (for speed); the bits must be
    those of the plain formula — [cos(xΩᵀ)·s, sin(xΩᵀ)·s, x_cat·c] — so the release is unchanged."""
    import methods.dp_merf as dp_merf_module
    from methods.dp_merf import SumKernelFeatures

    w = frequencies(50, 3)
    x = torch.cat([torch.randn(37, 3, dtype=torch.float64), torch.randint(0, 2, (37, 2)).double()], dim=1)
    features = SumKernelFeatures(w, torch.tensor([0, 1, 2]), torch.tensor([3, 4]), 0.5, 1.5)
    projection = x[:, :1] * w.T[0]
    for k in (1, 2):
        projection = projection.addcmul(x[:, k : k + 1], w.T[k])
    scale = 1.0 / math.sqrt(w.shape[0])
    expected = torch.cat([torch.cos(projection) * scale, torch.sin(projection) * scale, x[:, 3:] * 0.5], dim=1)
    for entries in (1, 25 * 4, 1 << 19):  # one row a block, four rows, the whole input
        monkeypatch.setattr(dp_merf_module, "ROW_BLOCK_ENTRIES", entries)
        assert torch.equal(features.rows(x), expected)


def fit(train, epsilon, params=None, calibrator="tight"):
    budget = PrivacyBudget(epsilon, 1e-5) if math.isfinite(epsilon) else PrivacyBudget.non_private()
    ledger = PrivacyLedger(budget, calibrator)
    resolved = replace(HYPERPARAMETERS.resolve("gmm2d", "smoke").params, **{"epochs": 1, **(params or {})})
    context = FitContext(budget, ledger, resolved, seed=0, device=torch.device("cpu"), data_kind=DataKind.TWO_D)
    return dp_merf.fit(PrivateData(train, context.ledger), context), ledger


def small_split():
    return draw_split(seed=3, per_gaussian=40)


def test_dp_merf_with_public_proportions_makes_one_charged_release():
    split = small_split()
    model, ledger = fit(split.train, 1.0)
    assert [r.what for r in ledger.releases] == ["labelled mean embedding (RFF sum kernel)"]
    assert ledger.releases[0].sensitivity == pytest.approx(2 / len(split.train))
    assert ledger.releases[0].noise_multiplier == pytest.approx(3.73, abs=0.01)
    assert {f.name for f in ledger.public_facts} == {"class_proportions", "length_scale"}
    assert ledger.epsilon_spent == pytest.approx(1.0, rel=1e-6)
    sample = model.sample(250)
    assert sample.x.shape == (250, 2) and sample.schema == SCHEMA
    assert np.bincount(sample.y, minlength=5).tolist() == [50] * 5


def test_dp_merf_charges_class_proportions_when_they_are_not_public():
    split = small_split()
    private_schema = replace(SCHEMA, public_facts=())
    train = LabelledData(split.train.x, split.train.y, private_schema)
    _, ledger = fit(train, 0.5, calibrator="paper")
    assert sorted(r.what for r in ledger.releases) == ["class counts", "labelled mean embedding (RFF sum kernel)"]
    assert ledger.releases[0].noise_multiplier == ledger.releases[1].noise_multiplier
    assert ledger.epsilon_spent <= 0.5 * (1 + 1e-9)
    assert not any(f.name == "class_proportions" for f in ledger.public_facts)


def test_non_private_dp_merf_adds_no_noise():
    _, ledger = fit(small_split().train, math.inf)
    assert ledger.releases[0].noise_multiplier == 0
    assert ledger.epsilon_spent == math.inf


def test_generated_labels_follow_requested_labels():
    model, _ = fit(small_split().train, 1.0)
    labels = np.array([4, 4, 0, 2])
    assert model.sample(4, labels).y.tolist() == labels.tolist()


def test_class_sums_in_bounded_memory_match_in_value_and_gradient(monkeypatch):
    """Tiles of one class (several per class) with cos/sin recomputed in the backward pass give
    the values and gradients of the one-hot definition and of the kept-cos/sin path."""
    w = frequencies(64, 2, seed=2)
    features = rff_only(w)
    z = torch.randn(50, 2, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 3, (50,))
    target = torch.randn(3, 64, dtype=torch.float64)
    reference = ((torch.nn.functional.one_hot(y, 3).double().T @ rff_features(z, w) - target) ** 2).sum()
    (expected,) = torch.autograd.grad(reference, z)
    kept = ((features.class_sums(z, y, 3) - target) ** 2).sum()
    (kept_gradient,) = torch.autograd.grad(kept, z)
    monkeypatch.setattr("methods.dp_merf.KEEP_ENTRIES", 64)  # nothing kept: recomputed
    monkeypatch.setattr("methods.dp_merf.TILE_ENTRIES", 32 * 7)  # 7 rows per tile
    bounded = ((features.class_sums(z, y, 3) - target) ** 2).sum()
    (gradient,) = torch.autograd.grad(bounded, z)
    for value, grad in ((kept, kept_gradient), (bounded, gradient)):
        assert torch.allclose(value, reference) and torch.allclose(grad, expected)


def _handle(z, ledger):
    """z (n × d) as the private rows of a handle on ``ledger`` (numerical columns, wide bounds)."""
    import numpy as np

    from bench.core.data import Column, ColumnKind, Schema

    schema = Schema(
        columns=tuple(Column(f"c{i}", ColumnKind.NUMERICAL, bounds=(-1e7, 1e7)) for i in range(z.shape[1])),
        label="label",
        classes=("no", "yes"),
    )
    return PrivateData(LabelledData(np.asarray(z, dtype=np.float64), np.zeros(len(z), dtype=np.int64), schema), ledger)


def _pair_counts(z, order, thresholds):
    from bench.privacy.budget import PrivacyBudget

    return _handle(z, PrivacyLedger(PrivacyBudget.non_private())).pair_distance_counts(
        "pairs", lambda rows: rows.x, thresholds=thresholds, order=order, noise_multiplier=0.0, rng=None
    )


def test_dp_median_counts_move_by_at_most_the_declared_sensitivity_on_adversarial_neighbours():
    """Replace-one: a row replaced by the farthest or the nearest possible row (or a copy of its
    partner) changes one pair's distance, so the released counts move by at most √thresholds in
    L2; and with no noise the estimate lands within a threshold step of the true median."""
    import math

    import numpy as np

    from methods.dp_merf import DP_MEDIAN_THRESHOLDS

    rng = np.random.default_rng(0)
    z = rng.normal(size=(501, 3)) * [1.0, 10.0, 100.0]
    order = rng.permutation(len(z))
    thresholds = 400.0 * 2.0 ** -np.arange(DP_MEDIAN_THRESHOLDS - 1, -1, -1)
    counts = _pair_counts(z, order, thresholds)
    worst = 0.0
    for row in rng.choice(len(z), 40, replace=False):
        partner = (
            order[np.flatnonzero(order == row)[0] ^ 1] if np.flatnonzero(order == row)[0] < len(z) // 2 * 2 else row
        )
        for replacement in (np.full(3, 1e6), -np.full(3, 1e6), z[partner], np.zeros(3)):
            neighbour = z.copy()
            neighbour[row] = replacement
            worst = max(worst, float(np.linalg.norm(_pair_counts(neighbour, order, thresholds) - counts)))
    assert 0 < worst <= math.sqrt(DP_MEDIAN_THRESHOLDS)
    assert counts[-1] == len(z) // 2 and np.all(np.diff(counts) >= 0)


def test_dp_median_without_noise_is_the_median_pair_distance_within_a_threshold_step():
    import numpy as np

    from bench.privacy.budget import PrivacyBudget
    from bench.privacy.ledger import PrivacyLedger
    from methods.dp_merf import dp_median_distance

    z = np.random.default_rng(1).normal(size=(2000, 4)) * 50
    ledger = PrivacyLedger(PrivacyBudget.non_private())
    estimate = dp_median_distance(_handle(z, ledger), lambda rows: rows.x, 1e4, 0.0, np.random.default_rng(2))
    truth = np.median(np.linalg.norm(z[:1000] - z[1000:], axis=1))
    assert truth / 1.3 < estimate < truth * 1.3
    assert len(ledger.releases) == 1


def test_dp_median_release_declares_at_least_the_change_neighbours_cause():
    """The ledger sees the clean value released for D and for each adversarial neighbour D′ (one
    row replaced); its L2 change must never exceed the sensitivity the release declares. Checked
    on the release itself, so an understated declaration (e.g. 1 instead of √20) is caught, not
    only a broken count. The bench audit's verdict does not catch such a break yet (its fitted
    μ is not tested against the claim: issue 29)."""
    import numpy as np

    from bench.privacy.budget import PrivacyBudget
    from bench.privacy.ledger import PrivacyLedger
    from methods.dp_merf import dp_median_distance

    def released(z):
        seen = []
        ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5), observers=[seen.append])
        dp_median_distance(
            _handle(z, ledger), lambda rows: rows.x, 2e3, 6.0, np.random.default_rng(7)
        )  # the same public pairing each time
        (event,) = seen
        return np.asarray(event.clean, dtype=float), event.release.sensitivity

    rng = np.random.default_rng(3)
    z = rng.normal(size=(301, 2)) * [3.0, 300.0]
    base, declared = released(z)
    worst = 0.0
    for row in rng.choice(len(z), 25, replace=False):
        for replacement in ([1e5, 1e5], [-1e5, 0.0], [0.0, 0.0], z[(row + 1) % len(z)]):
            neighbour = z.copy()
            neighbour[row] = replacement
            worst = max(worst, float(np.linalg.norm(released(neighbour)[0] - base)))
    assert 1 < worst <= declared
