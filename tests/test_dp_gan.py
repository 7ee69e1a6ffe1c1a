"""DP-GAN / DP-CGAN: the DP-SGD accounting against an independent accountant, the private
discriminator step, and the generator's isolation from real data."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from autodp.mechanism_zoo import GaussianMechanism
from autodp.transformer_zoo import AmplificationBySampling, Composition
from opacus import PrivacyEngine

from bench.privacy.budget import PrivacyBudget
from bench.core.contracts import DataKind, FitContext, LabelledData
from bench.privacy.ledger import PrivacyLedger
from datasets.gmm2d import draw_split
from methods.dp_gan import (
    HYPERPARAMETERS,
    DPGan,
    Generator,
    discriminator,
    discriminator_step,
    dp_cgan,
    generator_gradient,
)
from methods.space import ModelSpace


def autodp_subsampled_gaussian_epsilon(sigma: float, sampling_rate: float, steps: int, delta: float) -> float:
    """ε of Poisson-subsampled Gaussian DP-SGD by autodp's RDP machinery — a different library
    and implementation from the Opacus accountants the ledger uses."""
    subsampled = AmplificationBySampling(PoissonSampling=True)(
        GaussianMechanism(sigma=sigma), sampling_rate, improved_bound_flag=True  # valid for the Gaussian
    )
    return Composition()([subsampled], [steps]).get_approxDP(delta)


def small_gmm2d(every: int = 30) -> LabelledData:
    train = draw_split(seed=0).train
    return LabelledData(train.x[::every], train.y[::every], train.schema)


def fit(method, calibrator="tight", epsilon=1.0, **overrides):
    params = HYPERPARAMETERS.resolve("gmm2d", "smoke", {k: str(v) for k, v in overrides.items()}).values
    budget = PrivacyBudget(epsilon, 1e-5)
    ledger = PrivacyLedger(budget, calibrator)
    context = FitContext(budget, ledger, params, 0, torch.device("cpu"), data_kind=DataKind.TWO_D)
    return method.fit(small_gmm2d(), context), ledger


@pytest.mark.parametrize("calibrator", ["paper", "tight"])
def test_ledger_epsilon_matches_an_independent_accountant(calibrator):
    model, ledger = fit(DPGan(), calibrator, epochs=2, batch_size=150)
    (phase,) = [r for r in ledger.releases if r.subsampled]
    assert phase.compositions == 2 * math.ceil(3000 / 150)
    assert phase.sampling_rate == pytest.approx(1 / math.ceil(3000 / 150))
    independent = autodp_subsampled_gaussian_epsilon(phase.noise_multiplier, phase.sampling_rate, phase.compositions, 1e-5)
    spent = ledger.epsilon_spent
    assert spent <= 1.0
    if calibrator == "paper":  # both RDP: the same bound up to the order grid
        assert spent == pytest.approx(independent, rel=0.05)
    else:  # PRV is tighter than any RDP bound, and calibrated to the target
        assert spent <= independent * 1.01 and spent == pytest.approx(1.0, abs=0.01)
    sample = model.sample(50)
    assert sample.x.shape == (50, 2) and set(np.unique(sample.y)) <= set(range(5))


def test_cgan_charges_class_proportions_only_when_not_public():
    _, ledger = fit(dp_cgan(), epochs=1, batch_size=300)
    assert [r.what for r in ledger.releases if not r.subsampled] == []  # gmm2d: public proportions
    assert any(f.name == "class_proportions" for f in ledger.public_facts)


def _networks(conditional: bool):
    torch.manual_seed(0)
    schema = small_gmm2d().schema
    space = ModelSpace.for_data(DataKind.TWO_D, schema, "sound")
    net = Generator(5, 5, (16,), space, conditional)
    critic = discriminator(2 + 5, (16,))
    return net, critic


def test_discriminator_step_without_noise_is_the_clipped_real_gradient_plus_the_fake_gradient():
    net, critic = _networks(conditional=False)
    reference = copy.deepcopy(critic)
    x, y = torch.randn(40, 2), torch.randint(0, 5, (40,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=40)
    private, optimiser, _ = PrivacyEngine().make_private(
        module=critic, optimizer=torch.optim.SGD(critic.parameters(), lr=1.0), data_loader=loader,
        noise_multiplier=0.0, max_grad_norm=1e9, loss_reduction="sum", poisson_sampling=False,
    )
    with torch.no_grad():
        fake_x, fake_one_hot = net(torch.randn(40, 5))
    real_one_hot = torch.nn.functional.one_hot(y, 5).float()
    discriminator_step(private, optimiser, x, real_one_hot, fake_x, fake_one_hot, expected_batch=40)
    assert all(p.grad is None for p in net.parameters()), "real data reached the generator"

    bce = torch.nn.functional.binary_cross_entropy_with_logits
    loss = bce(reference(torch.cat([x, real_one_hot], 1)).squeeze(1), torch.ones(40)) + bce(
        reference(torch.cat([fake_x, fake_one_hot], 1)).squeeze(1), torch.zeros(40)
    )
    loss.backward()
    for p, q in zip(private.parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach(), q.detach() - q.grad, rtol=1e-5, atol=1e-6)


def test_discriminator_step_clips_each_real_row():
    net, critic = _networks(conditional=True)
    reference = copy.deepcopy(critic)
    x = torch.full((8, 2), 1e4)  # huge rows: unclipped gradients would be huge
    y = torch.zeros(8, dtype=torch.long)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
    private, optimiser, _ = PrivacyEngine().make_private(
        module=critic, optimizer=torch.optim.SGD(critic.parameters(), lr=1.0), data_loader=loader,
        noise_multiplier=0.0, max_grad_norm=0.5, loss_reduction="sum", poisson_sampling=False,
    )
    with torch.no_grad():
        fake_x, fake_one_hot = net(torch.randn(8, 5), y)
    discriminator_step(private, optimiser, x, torch.nn.functional.one_hot(y, 5).float(), fake_x, fake_one_hot, 8)
    fake_loss = torch.nn.functional.binary_cross_entropy_with_logits(
        reference(torch.cat([fake_x, fake_one_hot], 1)).squeeze(1), torch.zeros(8)
    )
    fake_loss.backward()
    # the step is −(real part + fake part); the real part is a mean of 8 gradients of norm ≤ 0.5
    real_part = [-(p.detach() - q.detach()) - q.grad for p, q in zip(private.parameters(), reference.parameters())]
    assert torch.sqrt(sum((r**2).sum() for r in real_part)) <= 0.5 + 1e-5


def test_generator_gradient_depends_on_the_discriminator_parameters_only():
    net, critic = _networks(conditional=True)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(10, 2)), batch_size=10)
    wrapped = copy.deepcopy(critic)
    private, _, _ = PrivacyEngine().make_private(
        module=wrapped, optimizer=torch.optim.SGD(wrapped.parameters(), lr=1.0), data_loader=loader,
        noise_multiplier=1.0, max_grad_norm=1.0,
    )
    labels = torch.randint(0, 5, (32,))
    gradients = []
    for model in (private, critic):
        net.zero_grad(set_to_none=True)
        torch.manual_seed(7)
        if model is private:
            model.disable_hooks()
        generator_gradient(net, model, 32, labels)
        gradients.append([p.grad.clone() for p in net.parameters()])
    for a, b in zip(*gradients):
        torch.testing.assert_close(a, b)
    assert all(getattr(p, "grad_sample", None) is None for p in private.parameters())


def test_unconditional_gan_refuses_requested_labels():
    model, _ = fit(DPGan(), epochs=1, batch_size=300)
    with pytest.raises(ValueError, match="unconditional"):
        model.sample(3, labels=np.zeros(3, dtype=np.int64))
    conditional, _ = fit(dp_cgan(), epochs=1, batch_size=300)
    assert (conditional.sample(4, labels=np.array([0, 1, 2, 3])).y == [0, 1, 2, 3]).all()
