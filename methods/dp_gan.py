"""``dp-gan`` and ``dp-cgan``: GANs whose discriminator is trained with DP-SGD through Opacus
(Xie et al. 2018; Torkzadehmahani et al. 2019), the seeds' GAN baselines (DP-HP (arXiv:2106.05042) Sec. 5).

Only the discriminator touches real rows, and only through Opacus: per-sample gradients of the
real-data loss, clipped to ``max_grad_norm``, summed, Gaussian noise added, on Poisson-sampled
batches. The rows, the batches and the per-sample gradients stay inside the private-data handle's
DP-SGD query (``PrivateData.dp_sgd``, :mod:`bench.privacy.dp_sgd`); the method gives it the row
encoding and the real-data loss. One discriminator step (``discriminator_step``) is

1. the real loss's privatised gradient (the handle: clip per sample, sum, the ledger's noise),
2. plus the fake loss's gradient, computed with the per-sample hooks off — it depends on the
   generator and the current (already private) discriminator only, so it is post-processing and
   is added after the noise, never clipped with or charged as real data (the double-charging
   pitfall of Opacus' old DCGAN example, opacus#418),
3. one step of the underlying optimiser.

The generator's gradient (``generator_gradient``) is a function of the discriminator's
parameters and the noise alone — real data cannot reach it except through the privatised
discriminator. The DP-SGD phase (sampling rate q, steps, σ, clipping norm) is calibrated by the
ledger's accountant (Opacus PRV by default, RDP with ``--calibrator paper``) so that, composed
with any other release, it meets the run's (ε, δ), and is charged before training starts.

``dp-cgan`` feeds one-hot labels to both networks and samples generated labels from the class
proportions (public, or released with ``label_share`` of the budget and charged) — never from
the real batch, which would leak labels to the generator outside the private path. ``dp-gan``
generates the label as one more softmax block of its output; the discriminator sees it like any
other column.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from bench.privacy.private_data import PrivateData
from bench.core.params import HyperParameters, Setting, batch_rows
from bench.api.contracts import AuditSpec
from bench.core.data import DataKind, LabelledData
from bench.api.contracts import FitContext
from bench.api.declare import method
from bench.privacy.dp_sgd import DPSGDTraining
from methods.mean_embedding import release_proportions
from methods.nets import parse_widths, proportional_labels
from methods.space import ModelSpace


def _images() -> dict[str, Setting]:
    """The seeds' DP-CGAN image code
    (github.com/ParkLabML/DP-MERF dpcgan/dp_cgan_reference_im.py): MLP generator and discriminator with
    h_dim 128, z_dim 100, batch 600, clipping norm 1.1, run at the seeds' weaker ε = 9.6
    (``--eps 9.6``). The code's up-to-100k TensorFlow steps (lr 0.1 → 0.052) are out of reach on
    a CPU; 20 epochs = 2,000 steps with the DCGAN Adam setting are a documented choice. What it
    costs is measured (preset ``image-gaps``): DP-CGAN on MNIST at 100 epochs, the noise recalibrated
    to the same ε, reaches the seeds' Fig. 6 mean where 20 epochs score half of it (results/README.md)."""
    code = "github.com/ParkLabML/DP-MERF dpcgan/dp_cgan_reference_im.py"
    return {
        "noise_dim": Setting(100, f"{code}: z_dim 100"),
        "hidden": Setting("128", f"{code}: MLP generator, h_dim 128"),
        "discriminator_hidden": Setting("128", f"{code}: MLP discriminator, h_dim 128"),
        "batch_size": Setting(600, f"{code}: batch 600"),
        "max_grad_norm": Setting(1.1, f"{code}: clip 1.1"),
        "epochs": Setting(20, "documented choice: 2,000 DP-SGD steps (the code: up to 100k)"),
    }


@dataclass(frozen=True)
class DPGanParams:
    epochs: int
    batch_size: int
    max_grad_norm: float
    lr_discriminator: float
    lr_generator: float
    noise_dim: int
    hidden: str
    discriminator_hidden: str
    label_share: float


HYPERPARAMETERS = HyperParameters(
    DPGanParams,
    defaults={
        "epochs": Setting(
            20, "documented choice: expected passes over the data (the seeds give none for tabular GANs)"
        ),
        "batch_size": Setting(64, "documented choice: expected Poisson batch (q = batch/n)"),
        "max_grad_norm": Setting(1.0, "documented choice: per-sample clipping norm (Opacus examples)"),
        "lr_discriminator": Setting(2e-4, "documented choice: Adam 2e-4, β = (0.5, 0.999) (DCGAN defaults)"),
        "lr_generator": Setting(2e-4, "documented choice: Adam 2e-4, β = (0.5, 0.999) (DCGAN defaults)"),
        "noise_dim": Setting(
            10, "as the seeds' tabular generators (github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py)"
        ),
        "hidden": Setting(
            "4d-2d",
            "generator widths as the seeds' tabular generators "
            "(github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py)",
        ),
        "discriminator_hidden": Setting(
            "2d-1d", "documented choice: LeakyReLU(0.2) MLP, no BatchNorm (per-sample gradients)"
        ),
        "label_share": Setting(0.1, "dp-cgan: share of ε (and δ/2) for the class proportions when they are not public"),
    },
    per_dataset={
        "gmm2d": {
            "hidden": Setting(
                "200-500-500-200",
                "the 2-D generator of the mean-embedding methods "
                "(github.com/ParkLabML/DP-HP dp_mehp/dp_mehp_synth_data_2d.py)",
            ),
            "discriminator_hidden": Setting("200-200", "documented choice for 2-D data"),
            "batch_size": Setting(
                500, "the 2-D batch of the seeds' code (github.com/ParkLabML/DP-HP dp_mehp/dp_mehp_synth_data_2d.py)"
            ),
            "epochs": Setting(10, "documented choice: 1,800 DP-SGD steps on 90,000 rows"),
            "noise_dim": Setting(5, "github.com/ParkLabML/DP-HP dp_mehp/dp_mehp_synth_data_2d.py: d_code 5"),
        },
        "mnist": _images(),
        "fashion-mnist": _images(),
    },
    profiles={"smoke": {"epochs": 1, "batch_size": 256}},
)


class Generator(nn.Module):
    """[z; one-hot(y) if conditional] → (Linear → BatchNorm → ReLU)* → Linear → output heads.
    Unconditional: the output ends with a softmax label block of width K."""

    def __init__(self, noise_dim: int, n_classes: int, hidden: tuple[int, ...], space: ModelSpace, conditional: bool):
        super().__init__()
        self.noise_dim, self.n_classes, self.conditional = noise_dim, n_classes, conditional
        layers: list[nn.Module] = []
        width = noise_dim + (n_classes if conditional else 0)
        for next_width in hidden:
            layers += [nn.Linear(width, next_width), nn.BatchNorm1d(next_width), nn.ReLU()]
            width = next_width
        layers.append(nn.Linear(width, space.width + (0 if conditional else n_classes)))
        self.net = nn.Sequential(*layers)
        self.head = space.output_head()
        self.data_width = space.width

    def forward(self, z: torch.Tensor, labels: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows in the model space and the label one-hots (given, or generated soft ones)."""
        if self.conditional:
            one_hot = nn.functional.one_hot(labels, self.n_classes).to(z.dtype)
            return self.head(self.net(torch.cat([z, one_hot], dim=1))), one_hot
        raw = self.net(z)
        return self.head(raw[:, : self.data_width]), torch.softmax(raw[:, self.data_width :], dim=1)


def discriminator(input_width: int, hidden: tuple[int, ...]) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = input_width
    for next_width in hidden:
        layers += [nn.Linear(width, next_width), nn.LeakyReLU(0.2)]
        width = next_width
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


def _logits(model: nn.Module, x: torch.Tensor, one_hot: torch.Tensor) -> torch.Tensor:
    return model(torch.cat([x, one_hot], dim=1)).squeeze(1)


def _fake_batch(net: Generator, size: int, labels: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    z = torch.randn(size, net.noise_dim, device=next(net.parameters()).device)
    return net(z, labels)


def generator_gradient(net: Generator, critic: nn.Module, size: int, labels: torch.Tensor | None) -> torch.Tensor:
    """Non-saturating generator loss −log D(G(z)); backpropagates into the generator. Its inputs
    are the two networks and the labels to generate — no real rows."""
    x, one_hot = _fake_batch(net, size, labels)
    loss = nn.functional.binary_cross_entropy_with_logits(
        _logits(critic, x, one_hot), torch.ones(size, device=x.device)
    )
    loss.backward()
    return loss.detach()


def real_loss(model: nn.Module, x: torch.Tensor, one_hot: torch.Tensor) -> torch.Tensor:
    """The discriminator's loss on a real batch, summed over its rows (the handle clips each row's
    gradient of it): −log D(x)."""
    return nn.functional.binary_cross_entropy_with_logits(
        _logits(model, x, one_hot), torch.ones(len(x), device=x.device), reduction="sum"
    )


def discriminator_step(training: DPSGDTraining, fake_x: torch.Tensor, fake_one_hot: torch.Tensor) -> None:
    """One DP-SGD step of the discriminator (see the module docstring)."""
    training.private_gradient(real_loss)  # clipped per sample, summed, noised by the ledger
    with training.public() as model:
        fake_loss = nn.functional.binary_cross_entropy_with_logits(
            _logits(model, fake_x, fake_one_hot), torch.zeros(len(fake_x), device=fake_x.device)
        )
        fake_loss.backward()  # accumulates onto the private gradient
    training.optimiser_step()


@dataclass
class TrainedGan:
    generator: Generator
    proportions: torch.Tensor | None
    space: ModelSpace
    device: torch.device
    label_rng: torch.Generator
    batch: int = 10_000

    @torch.no_grad()
    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        self.generator.eval()
        if labels is not None and not self.generator.conditional:
            raise ValueError("an unconditional GAN generates its own labels; use dp-cgan for requested labels")
        if labels is None and self.proportions is not None:
            labels = proportional_labels(n, self.proportions.cpu(), self.label_rng).numpy()
        xs, ys = [], []
        for start in range(0, n, self.batch):
            size = min(self.batch, n - start)
            given = None if labels is None else torch.as_tensor(labels[start : start + size], device=self.device)
            x, one_hot = _fake_batch(self.generator, size, given)
            xs.append(x.cpu())
            ys.append(one_hot.argmax(dim=1).cpu())
        z = torch.cat(xs).numpy().astype(np.float32)
        y = np.asarray(labels) if labels is not None else torch.cat(ys).numpy()
        return LabelledData(self.space.decode(z).astype(np.float32), y.astype(np.int64), self.space.schema)


def _labels(proportions, size, rng, device) -> torch.Tensor | None:
    if proportions is None:
        return None
    return torch.multinomial(proportions.cpu(), size, replacement=True, generator=rng).to(device)


def _fit_gan(data: PrivateData, context: FitContext[DPGanParams], conditional: bool) -> TrainedGan:
    p, device, ledger = context.params, context.device, context.ledger
    torch.manual_seed(context.stream_seed("torch-global"))  # network init and latents use the global generator
    m, n_classes = data.n_rows, data.schema.n_classes
    space = ModelSpace.for_data(context.data_kind, data.schema, context.protocol)

    proportions = None
    if conditional:
        public = data.schema.public_fact("class_proportions") is not None
        share = p.label_share
        sigma = (
            0.0
            if public
            else ledger.calibrate_gaussian(1, epsilon=share * context.budget.epsilon, delta=context.budget.delta / 2)
        )
        proportions = release_proportions(data, context, sigma).float()

    batch = batch_rows(m, p.batch_size, None, real_rows=True)
    steps_per_epoch = math.ceil(m / batch)  # Opacus' Poisson loader: q = 1/steps_per_epoch
    steps = p.epochs * steps_per_epoch
    clip = p.max_grad_norm

    net = Generator(p.noise_dim, n_classes, parse_widths(p.hidden, space.width), space, conditional).to(device)
    critic = discriminator(space.width + n_classes, parse_widths(p.discriminator_hidden, space.width)).to(device)
    betas = (0.5, 0.999)
    optimiser_g = torch.optim.Adam(net.parameters(), lr=p.lr_generator, betas=betas)
    optimiser_d = torch.optim.Adam(critic.parameters(), lr=p.lr_discriminator, betas=betas)

    def encode(rows: LabelledData) -> tuple[torch.Tensor, torch.Tensor]:
        return (
            torch.as_tensor(space.encode(rows.x)),
            nn.functional.one_hot(torch.as_tensor(rows.y, dtype=torch.long), n_classes).float(),
        )

    # charged before any real row is touched, under replace-one: a replaced row can move
    # the clipped sum by 2C (bench.privacy.replace_one), not C as Opacus' accountants assume
    training = data.dp_sgd(
        f"discriminator DP-SGD ({steps} steps, Poisson q = {1.0 / steps_per_epoch:.4g}, clipping norm {clip:g})",
        critic,
        optimiser_d,
        encode,
        clipping_norm=clip,
        epochs=p.epochs,
        steps_per_epoch=steps_per_epoch,
        expected_batch=batch,
        noise_rng=context.torch_rng("dp-sgd-noise"),
        batch_rng=context.torch_rng("poisson-batches"),
        device=device,
    )
    label_rng = context.torch_rng("generated-labels")
    for done in training.steps():
        labels = _labels(proportions, batch, label_rng, device)
        with torch.no_grad():
            fake_x, fake_one_hot = _fake_batch(net, batch, labels)
        discriminator_step(training, fake_x, fake_one_hot)
        optimiser_g.zero_grad(set_to_none=True)
        with training.public() as private_critic:
            generator_gradient(net, private_critic, batch, _labels(proportions, batch, label_rng, device))
        optimiser_g.step()
        context.progress(done + 1, steps)
    return TrainedGan(net, proportions, space, device, label_rng)


def _real_gradients(train: LabelledData, context: FitContext, conditional: bool) -> list[torch.Tensor]:
    """Per-row gradients (one tensor per parameter, rows × shape) of the real-data loss of
    the discriminator as the fit initialises it — the input of the step-level DP-SGD audit's
    gradient canary (``bench.privacy.audit.audit_dp_sgd_step``)."""
    from torch.func import functional_call, grad, vmap

    p: DPGanParams = context.params
    torch.manual_seed(context.stream_seed("torch-global"))  # as fit: the same initial discriminator
    space = ModelSpace.for_data(context.data_kind, train.schema, context.protocol)
    n_classes = train.schema.n_classes
    Generator(p.noise_dim, n_classes, parse_widths(p.hidden, space.width), space, conditional)
    critic = discriminator(space.width + n_classes, parse_widths(p.discriminator_hidden, space.width))
    x = torch.as_tensor(space.encode(train.x))
    one_hot = nn.functional.one_hot(torch.as_tensor(train.y, dtype=torch.long), n_classes).float()
    params = {k: v.detach() for k, v in critic.named_parameters()}

    def loss(weights, row, label):
        logit = functional_call(critic, weights, (torch.cat([row, label]).unsqueeze(0),)).squeeze()
        return nn.functional.binary_cross_entropy_with_logits(logit, torch.ones(()))

    grads = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, one_hot)
    return [grads[name] for name, _ in critic.named_parameters()]


def _audit(conditional: bool) -> AuditSpec:
    """Audited: one full-batch DP-SGD step; the step-level audit takes the critic's real gradients."""
    return AuditSpec(
        {"epochs": "1", "batch_size": "{rows}"},
        dp_sgd_gradients=functools.partial(_real_gradients, conditional=conditional),
    )


@method(
    "dp-gan",
    "DP-GAN: GAN with a DP-SGD (Opacus) discriminator; labels generated as a column",
    kinds={DataKind.TWO_D, DataKind.TABULAR, DataKind.IMAGE},
    hyperparameters=HYPERPARAMETERS,
    audit=_audit(conditional=False),
)
def dp_gan(data: PrivateData, context: FitContext[DPGanParams]) -> TrainedGan:
    return _fit_gan(data, context, conditional=False)


@method(
    "dp-cgan",
    "DP-CGAN: conditional GAN with a DP-SGD (Opacus) discriminator; labels from released proportions",
    kinds={DataKind.TWO_D, DataKind.TABULAR, DataKind.IMAGE},
    hyperparameters=HYPERPARAMETERS,
    audit=_audit(conditional=True),
)
def dp_cgan(data: PrivateData, context: FitContext[DPGanParams]) -> TrainedGan:
    return _fit_gan(data, context, conditional=True)
