"""``dp-mepf``: DP mean embeddings of pretrained perceptual features (Harder, Jalali Asadabadi,
Sutherland & Park, TMLR 2023, arXiv 2205.12900; the revised TMLR version).

Algorithm (DP-MEPF (arXiv:2205.12900) Sec. 3):

1. A frozen encoder pretrained on PUBLIC data (``methods/encoders.py``) gives e(x) ∈ R^D, the
   post-ReLU activations of the chosen layers, concatenated. Its public training data is
   recorded in the ledger.
2. φ1(x) = e/‖e‖, φ2(x) = e²/‖e²‖ (elementwise square, each normalised to unit norm; Sec. 3.1). An all-zero e (all activations
   dead) maps to the zero vector — the authors' code divides by zero there — so ‖φ_t(x)‖ ≤ 1
   always, and every entry is ≥ 0.
3. ONE streaming pass over the private images (the handle's ``sums``) accumulates the
   (per-class, when labelled) SUMS of φ1 and φ2 in batches of ``batch_size``; per-image features
   are never stored (CIFAR-10 with VGG19 would be 60 GB). Each moment is released once through
   the ledger as S_t/m (m public), then divided by the class proportions (uniform: the paper's eq. 6 with its
   1/m normalisation and a balanced generator; or released: ``labels=released``).
4. A generator (conv for 28×28, ResNet for 32×32) is trained on the released embedding only,
   with the authors' GFMN moving-average estimate of the embedding difference
   (github.com/ParkLabML/DP-MEPF code/feature_matching.py).
5. Optional DP early stopping (``early_stopping=true``; the paper's CIFAR-10/CelebA runs): the
   first and second moments of FID-Inception pool3 features of the private TRAINING set are
   released with noise multiplier σ_stop = 10σ (Sec. 3.2), and the generator checkpoint with the
   smallest proxy distance to that noisy release is returned. Selection reads nothing else.

Sensitivity (replace-one, m public), derived by the private-data handle's one-pass sums
(``PrivateData.sums(..., nonnegative=True)``, which clamps each φ at 0 and clips it to norm 1 — both
no-ops here — so that the bound below holds by construction). For a ≥ 0, b ≥ 0 with
‖a‖, ‖b‖ ≤ 1: ‖a − b‖² = ‖a‖² + ‖b‖² − 2⟨a, b⟩ ≤ 2, since ⟨a, b⟩ ≥ 0. Unlabelled: replacing
x by x′ moves S = Σᵢ φ(xᵢ) by φ(x′) − φ(x), so ‖ΔS/m‖ ≤ √2/m. Labelled (S is the K × D matrix
of class sums): if the label stays, one row moves by φ(x′) − φ(x) (≤ √2 as before); if the
label changes from k to k′, row k moves by −φ(x) and row k′ by +φ(x′), so
‖ΔS‖²_F = ‖φ(x)‖² + ‖φ(x′)‖² ≤ 2. Either way ‖ΔS/m‖_F ≤ √2/m per moment. The paper states 2/m
(eq. 4, valid but loose by √2); the authors' code uses 1/m for φ2 (``second_moment_sens =
var_bound / 2`` in code/dp_functions.py) — an UNDER-estimate (two orthogonal non-negative unit vectors are √2
apart), so their φ2 release is under-noised. This module never does that: both moments use √2/m.

Deviations from the authors' code, on purpose (and in docs/data.md): the proxy release really
adds its noise (their code charges σ_stop in the accountant but never adds it:
get_test_data_embedding in code/feature_matching.py), and a
(φ1)-only run composes both proxy moments (their accounting counted one).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from bench.privacy.private_data import CountQuery, PrivateData
from bench.core.data import DataKind, LabelledData
from bench.api.contracts import FitContext
from bench.api.declare import method
from bench.core.images import image_shape
from bench.core.params import HyperParameters, Rule, Setting
from bench.privacy.ledger import BudgetShare
from methods.encoders import EncoderError, build_encoder, shares_data
from methods.mean_embedding import TrainedConditionalGenerator, release_proportions
from methods.nets import ConvolutionalConditionalGenerator, ResnetConditionalGenerator, parse_widths
from methods.space import ModelSpace

SQRT2 = math.sqrt(2.0)
NORM_FLOOR = 1e-12  # ‖e‖ below this is treated as an all-zero e: φ stays ≤ 1 in norm, no 0/0
MEPF_ARCHITECTURE = Rule(choices=("conv", "resnet"))  # its own generators (methods/nets.py: conv, ResNet)
T7 = "DP-MEPF (arXiv:2205.12900) Table 7"
T8 = "DP-MEPF (arXiv:2205.12900) Table 8"


# --- feature moments and the private release -------------------------------------------------------


def unit_rows(v: torch.Tensor) -> torch.Tensor:
    """Each row divided by its L2 norm; a zero row stays zero (norm floor instead of 0/0)."""
    return v / v.norm(dim=1, keepdim=True).clamp_min(NORM_FLOOR)


def feature_moments(e: torch.Tensor, moments: int) -> list[torch.Tensor]:
    """[φ1] or [φ1, φ2] of each row of e (non-negative features): unit-norm (or zero) rows."""
    if moments not in (1, 2):
        raise ValueError(f"moments must be 1 (φ1) or 2 (φ1, φ2), got {moments}")
    out = [unit_rows(e)]
    if moments == 2:
        out.append(unit_rows(e * e))
    return out


@torch.no_grad()
def feature_width(encoder: nn.Module, shape: tuple[int, int, int], device: torch.device) -> int:
    """D, the encoder's feature count, from one blank (public) image."""
    return int(encoder(torch.zeros(1, *shape, device=device)).shape[1])


def class_sums(phi: torch.Tensor, labels: torch.Tensor, n_rows: int) -> torch.Tensor:
    """Σ_{i: yᵢ = k} φ(xᵢ) for every k (n_rows × D); unlabelled: labels all 0, n_rows = 1."""
    return phi.new_zeros(n_rows, phi.shape[1]).index_add_(0, labels, phi)


def as_image_tensor(rows: np.ndarray, shape: tuple[int, int, int]) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(rows, dtype=np.float32)).view(len(rows), *shape)


def release_moments(
    data: PrivateData,
    encoder: nn.Module,
    moments: int,
    labelled: bool,
    shape: tuple[int, int, int],
    batch: int,
    device: torch.device,
    sigma: float,
    rng: torch.Generator,
    what: str,
) -> list[torch.Tensor]:
    """Each moment's mean S_t/m (the K × D class sums when ``labelled``, else 1 × D) released once
    through the handle's one-pass sums: the handle clamps φ_t at 0, clips it to norm 1 (both no-ops
    for these features) and derives the sensitivity √2/m itself (module docstring). ``batch``
    images go through the encoder at a time; no per-image feature is kept."""

    @torch.no_grad()
    def features(rows: LabelledData) -> list[torch.Tensor]:
        images = as_image_tensor(rows.x, shape).to(device)
        return [phi.cpu() for phi in feature_moments(encoder(images).double(), moments)]

    noisy = data.sums(
        [f"φ{t + 1} {what}" for t in range(moments)],
        features,
        norm_bound=1.0,
        noise_multiplier=sigma,
        rng=rng,
        mean=True,
        by_label=labelled,
        chunk_rows=batch,
        nonnegative=True,
    )
    return noisy if labelled else [n.reshape(1, -1) for n in noisy]


# --- the moving-average generator loss (GFMN, the authors' code) ------------------------------------


@dataclass
class MovingAverageLoss:
    """github.com/ParkLabML/DP-MEPF code/feature_matching.py and
    code/model_builder.py (ConstMat): per moment a parameter v_t (U(−1/√D, 1/√D), the code's
    ``kaiming_uniform_(a=√5)``) tracks d_t = μ̃_t − m_t(fake) by an Adam step on mean((v_t − d_t)²);
    the generator then minimises −Σ_t ⟨v_t, m_t(fake)⟩ with the updated v_t held constant, whose
    gradient is that of ½‖μ̃_t − m_t‖² once v_t ≈ d_t, with the batch noise averaged out."""

    targets: list[torch.Tensor]
    lr: float
    generator: torch.Generator
    averages: list[nn.Parameter] = field(init=False)
    optimiser: torch.optim.Optimizer = field(init=False)

    def __post_init__(self) -> None:
        self.averages = []
        for target in self.targets:
            bound = 1.0 / math.sqrt(target.shape[1])
            init = (torch.rand(target.shape, generator=self.generator) * 2 - 1) * bound
            self.averages.append(nn.Parameter(init.to(target.device, target.dtype)))
        self.optimiser = torch.optim.Adam(self.averages, lr=self.lr, betas=(0.5, 0.999))

    def generator_loss(self, fakes: list[torch.Tensor]) -> torch.Tensor:
        self.optimiser.zero_grad(set_to_none=True)
        tracking = sum(
            nn.functional.mse_loss(v, (target - fake).detach())
            for v, target, fake in zip(self.averages, self.targets, fakes)
        )
        tracking.backward()
        self.optimiser.step()
        return -sum((v.detach() * fake).sum() for v, fake in zip(self.averages, fakes))


def balanced_labels(batch: int, n_classes: int, generator: torch.Generator) -> torch.Tensor:
    """batch // K of every class plus batch mod K random ones (the code's balanced batches,
    github.com/ParkLabML/DP-MEPF code/util.py GeneratorNoiseMaker)."""
    labels = torch.arange(n_classes).repeat(batch // n_classes)
    extra = torch.randint(0, n_classes, (batch % n_classes,), generator=generator)
    return torch.cat([labels, extra])


def fake_class_means(phi: torch.Tensor, labels: torch.Tensor, n_rows: int) -> torch.Tensor:
    counts = torch.bincount(labels, minlength=n_rows).clamp_min(1).to(phi.dtype)
    return class_sums(phi, labels, n_rows) / counts[:, None]


# --- DP early stopping -----------------------------------------------------------------------------


@dataclass
class ReleasedProxy:
    """The noisy first and second moments of the proxy features of the private training set."""

    means: list[torch.Tensor]
    encoder: nn.Module

    @torch.no_grad()
    def score(self, images: torch.Tensor, batch: int) -> float:
        """Σ_t ‖ν̃_t − mean φ_t(generated)‖²: uses the released ν̃ only, never the private rows."""
        totals = None
        for start in range(0, len(images), batch):
            phis = feature_moments(self.encoder(images[start : start + batch]).double(), 2)
            parts = [phi.sum(0, keepdim=True).cpu() for phi in phis]
            totals = parts if totals is None else [t + p for t, p in zip(totals, parts)]
        return float(sum(((nu.cpu() - t / len(images)) ** 2).sum() for nu, t in zip(self.means, totals)))


def release_proxy(
    encoder: nn.Module,
    data: PrivateData,
    sigma_stop: float,
    rng: torch.Generator,
    batch: int,
    device: torch.device,
) -> ReleasedProxy:
    """ν̃_t = (1/m) Σᵢ φ_t^proxy(xᵢ) + N(0, (σ_stop·√2/m)²), t = 1, 2, unlabelled, over the private
    training set (the paper's proxy, Sec. 3.2, with its noise actually added: the authors' code
    forgets it, code/feature_matching.py). Two releases, both charged."""
    shape = image_shape(data.schema)
    noisy = release_moments(
        data, encoder, 2, False, shape, batch, device, sigma_stop, rng, "DP early-stopping proxy (Inception pool3)"
    )
    return ReleasedProxy([n.float() for n in noisy], encoder)


# --- hyperparameters -------------------------------------------------------------------------------


def cifar10_lr_mavg(labelled: bool, moments: int, epsilon: float) -> float:
    """Table 7's LR_mavg for CIFAR-10 by setting, variant and ε group (DP-MEPF (arXiv:2205.12900) App. B.1)."""
    if not labelled:
        return 1e-3  # unlabelled: 1e-3 at every ε
    if epsilon >= 5:  # {∞, 10, 5}
        return 3e-4 if moments == 2 else 1e-4
    return 1e-2  # {2, 1} and {0.5, 0.2}


def _mnist_like(name: str, lr_gen: float, lr_mavg: float) -> dict[str, Setting]:
    return {
        "encoder": Setting(
            "efficientnet-lite0-imagenet",
            f"deviation: the paper's {('SVHN' if name == 'MNIST' else 'CIFAR-10')}-trained ResNet18 (DP-MEPF (arXiv:2205.12900) Sec. 6) "
            "is not published (not in github.com/ParkLabML/DP-MEPF); an ImageNet encoder shipped on PyPI instead",
        ),
        "iterations": Setting(100_000, f"{T8}: 100,000 iterations ({name})"),
        "batch_size": Setting(100, f"{T8}: batch size 100 ({name})"),
        "lr_gen": Setting(lr_gen, f"{T7}: {name}, ε < ∞, LR_gen"),
        "lr_mavg": Setting(lr_mavg, f"{T7}: {name}, ε < ∞, LR_mavg"),
        "architecture": Setting(
            "conv",
            "DP-MEPF (arXiv:2205.12900) Sec. 6, "
            "github.com/ParkLabML/DP-MEPF code/mnist_gen_model.py: ConvCondGen (FC → bilinear upsampling conv)",
            rule=MEPF_ARCHITECTURE,
        ),
    }


def _cifar10() -> dict[str, Setting]:
    return {
        "encoder": Setting(
            "vgg19-imagenet",
            "DP-MEPF (arXiv:2205.12900) Sec. 6, "
            "github.com/ParkLabML/DP-MEPF code/model_builder.py: VGG19 pretrained on ImageNet, all 16 conv layers",
        ),
        "iterations": Setting(200_000, f"{T8}: 200,000 iterations (CIFAR-10)"),
        "batch_size": Setting(128, f"{T8}: batch size 128 (CIFAR-10)"),
        "lr_gen": Setting(1e-3, f"{T7}: CIFAR-10, LR_gen 1e-3 in every row"),
        "lr_mavg": Setting(None, f"None = {T7} by setting, variant and ε group (cifar10_lr_mavg)"),
        "architecture": Setting(
            "resnet",
            "DP-MEPF (arXiv:2205.12900) App. B.1, "
            "github.com/ParkLabML/DP-MEPF code/generators.py: ResnetG (3 residual blocks at 32×32)",
            rule=MEPF_ARCHITECTURE,
        ),
        "early_stopping": Setting(
            True, "DP-MEPF (arXiv:2205.12900) Sec. 3.2: DP proxy checkpoint selection on CIFAR-10"
        ),
    }


@dataclass(frozen=True)
class DPMepfParams:
    moments: int
    labelled: bool
    encoder: str
    layers: str
    input_size: int | None  # None: the encoder's native resolution
    weights: str | None  # None: the encoder's default local file
    iterations: int
    batch_size: int
    lr_gen: float
    lr_mavg: float | None  # None: Table 7's value for the setting and ε (cifar10_lr_mavg)
    z_dim: int
    architecture: str
    hidden: str
    conv_channels: str
    conv_kernel: int
    ngf: int
    labels: str
    early_stopping: bool
    stop_noise_ratio: float
    eval_every: int
    proxy_samples: int


HYPERPARAMETERS = HyperParameters(
    DPMepfParams,
    defaults={
        "moments": Setting(
            2, "DP-MEPF (arXiv:2205.12900) Sec. 3.1: (φ1, φ2), the first row of Tables 1, 2, 14–16; 1 = (φ1)"
        ),
        "labelled": Setting(
            True,
            "DP-MEPF (arXiv:2205.12900) Sec. 3.1, eq. 6: labelled generation (MNIST, FashionMNIST, CIFAR-10 'labeled')",
        ),
        "encoder": Setting("efficientnet-lite0-imagenet", "methods/encoders.py: the encoder available offline"),
        "layers": Setting(
            "all", "DP-MEPF (arXiv:2205.12900) Sec. 3.1: every layer of the encoder (VGG19: all 16 convs)"
        ),
        "input_size": Setting(
            None, "github.com/ParkLabML/DP-MEPF code/model_builder.py: native resolution (None), no upsampling"
        ),
        "weights": Setting(None, "None = the encoder's default local file (methods/encoders.py)"),
        "iterations": Setting(100_000, f"{T8}: 100,000 (MNIST, FashionMNIST)"),
        "batch_size": Setting(100, f"{T8}: batch size 100 (MNIST, FashionMNIST)"),
        "lr_gen": Setting(1e-5, f"{T7}: MNIST, ε < ∞"),
        "lr_mavg": Setting(1e-4, f"{T7}: MNIST, ε < ∞"),
        "z_dim": Setting(
            100, "github.com/ParkLabML/DP-MEPF code/dp_mepf_args.py: z_dim 100 (labelled: 10 one-hot + 90 Gaussian)"
        ),
        "architecture": Setting(
            "conv", "DP-MEPF (arXiv:2205.12900) Sec. 6: conv for 28×28, resnet for 32×32", rule=MEPF_ARCHITECTURE
        ),
        "hidden": Setting("500", "github.com/ParkLabML/DP-MEPF code/mnist_gen_model.py ConvCondGen: FC(100 → 500)"),
        "conv_channels": Setting(
            "16-8", "github.com/ParkLabML/DP-MEPF code/mnist_gen_model.py ConvCondGen: 16×7×7 → 8 → 1 channels"
        ),
        "conv_kernel": Setting(5, "github.com/ParkLabML/DP-MEPF code/mnist_gen_model.py ConvCondGen: 5×5 convolutions"),
        "ngf": Setting(64, "github.com/ParkLabML/DP-MEPF code/model_builder.py ResnetG: ngf = 64"),
        "labels": Setting(
            "uniform",
            "DP-MEPF (arXiv:2205.12900) eq. 6: class blocks normalised by 1/m with balanced generated labels "
            "(counts not released); 'released' releases and charges the proportions",
        ),
        "early_stopping": Setting(False, "DP-MEPF (arXiv:2205.12900) Sec. 3.2: used for CIFAR-10 and CelebA only"),
        "stop_noise_ratio": Setting(10.0, "DP-MEPF (arXiv:2205.12900) Sec. 3.2: σ_stop = 10σ"),
        "eval_every": Setting(
            5_000,
            "github.com/ParkLabML/DP-MEPF code/README.md, --syn_eval_iter 5_000: proxy every 5,000 iterations (CIFAR-10)",
        ),
        "proxy_samples": Setting(
            5_000,
            "github.com/ParkLabML/DP-MEPF "
            "code/dp_mepf.py (fid_dataset_size): 5,000 generated samples per proxy evaluation",
        ),
    },
    per_dataset={
        "mnist": _mnist_like("MNIST", 1e-5, 1e-4),
        "fashion-mnist": _mnist_like("FashionMNIST", 1e-4, 1e-3),
        "cifar10": _cifar10(),
        "cifar10-jpeg": _cifar10(),
    },
    per_dataset_non_private={
        "mnist": {"lr_mavg": Setting(1e-3, f"{T7}: MNIST, ε = ∞, LR_mavg")},
        "fashion-mnist": {
            "lr_gen": Setting(1e-5, f"{T7}: FashionMNIST, ε = ∞, LR_gen"),
            "lr_mavg": Setting(1e-3, f"{T7}: FashionMNIST, ε = ∞, LR_mavg"),
        },
    },
    profiles={
        "smoke": {
            "iterations": 3,
            "batch_size": 20,
            "layers": "stem,b0",
            "encoder": "efficientnet-lite0-imagenet",
            "eval_every": 2,
            "proxy_samples": 20,
            "hidden": "64",
            "early_stopping": False,
        },
        "cpu": {
            "encoder": Setting(
                "efficientnet-lite0-imagenet", "deviation: a 0.4-GFLOP ImageNet encoder instead of ResNet18/VGG19"
            ),
            "layers": Setting(
                "stem,b0,b1,b2,b3,b4,b5",
                "deviation: the first 7 of 17 layers (D = 31,408 at 28×28), ≈ 5× cheaper per step than all",
            ),
            "iterations": Setting(4_000, "deviation: 4,000 instead of 100,000 iterations (Table 8)"),
            "lr_gen": Setting(1e-3, "deviation: 1e-3 instead of Table 7's 1e-5/1e-4, for 25× fewer steps"),
            "lr_mavg": Setting(1e-3, "deviation: Table 7's non-private MNIST value 1e-3, for fewer steps"),
            "early_stopping": Setting(False, "deviation: no Inception pass over the private set on a CPU"),
        },
    },
)


# --- the adapter -----------------------------------------------------------------------------------


class IgnoreLabels(nn.Module):
    """An unlabelled generator behind the label-conditional sampling interface: every image
    comes from the single-class generator, and the labels attached to it are the uniform draws
    the sampler made — they carry no information (score unlabelled runs with FID)."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, labels: torch.Tensor) -> torch.Tensor:
        return self.net(torch.zeros_like(labels))


def build_mepf_generator(p: DPMepfParams, n_rows: int, space: ModelSpace) -> nn.Module:
    shape = space.image_shape
    z_dim = p.z_dim
    noise_dim = z_dim - n_rows if n_rows > 1 else z_dim  # labelled: one-hot + Gaussian = z_dim
    if noise_dim < 1:
        raise ValueError(f"z_dim={z_dim} leaves no Gaussian noise after the {n_rows}-class one-hot; raise z_dim")
    architecture = p.architecture
    if architecture == "conv":
        (fc_width,) = parse_widths(p.hidden, 1)[:1]
        channels = parse_widths(p.conv_channels, 1)
        return ConvolutionalConditionalGenerator(
            noise_dim, n_rows, fc_width, channels, p.conv_kernel, shape, space.output_head()
        )
    if architecture == "resnet":
        return ResnetConditionalGenerator(noise_dim, n_rows, shape, p.ngf)
    raise ValueError(f"dp-mepf architecture must be conv or resnet (got {architecture!r})")


@torch.no_grad()
def _proxy_score(net, proxy: ReleasedProxy, n: int, n_rows: int, shape, device, label_rng) -> float:
    net.eval()  # evaluated as it would be sampled (running BN statistics)
    labels = balanced_labels(n, n_rows, label_rng).to(device)
    images = torch.cat([net(labels[s : s + 500]) for s in range(0, n, 500)]).view(n, *shape)
    return proxy.score(images, 50)


@method(
    "dp-mepf",
    "DP-MEPF: mean embeddings (φ1[, φ2]) of a public-data-pretrained encoder's features, released once; "
    "generator trained to match",
    kinds={DataKind.IMAGE},
    hyperparameters=HYPERPARAMETERS,
    label_params=(
        "encoder",
    ),  # shown beside the method in every table: the result depends on the encoder's public data
)
def dp_mepf(data: PrivateData, context: FitContext[DPMepfParams]) -> TrainedConditionalGenerator:
    p = context.params
    device = context.device
    ledger = context.ledger
    moments, labelled = p.moments, p.labelled
    if moments not in (1, 2):
        raise ValueError(f"dp-mepf.moments must be 1 (φ1) or 2 (φ1, φ2), got {moments}")
    space = ModelSpace.for_data(DataKind.IMAGE, data.schema, context.protocol)
    shape = space.image_shape
    if shape is None:
        raise ValueError("dp-mepf needs image data (a schema with an image_shape public fact)")
    m, n_classes = data.n_rows, data.schema.n_classes
    n_rows = n_classes if labelled else 1
    batch = p.batch_size
    if labelled and batch < n_classes:
        raise ValueError(f"dp-mepf.batch_size={batch} must be at least the {n_classes} classes for balanced batches")

    labels_mode = p.labels
    if labels_mode not in ("uniform", "released"):
        raise ValueError(f"dp-mepf.labels must be uniform or released (got {labels_mode!r})")
    release_counts = labelled and labels_mode == "released" and data.schema.public_fact("class_proportions") is None
    early = p.early_stopping

    # --- budget: k moment releases (+ proportions) at σ, two proxy releases at ratio·σ
    k = moments + int(release_counts)
    ratio = p.stop_noise_ratio
    if early:
        proxy_weight = 2.0 / ratio**2  # precision of the proxy releases, in units of one σ release
        sigma, sigma_proxy = ledger.calibrate_shares(
            [BudgetShare(k / (k + proxy_weight), k), BudgetShare(proxy_weight / (k + proxy_weight), 2)]
        )
    else:
        sigma, sigma_proxy = ledger.calibrate_gaussian(compositions=k), 0.0
    noise_rng = context.torch_rng("release-noise")  # proportions, moments, proxy

    # --- step 1: the public encoder
    spec, encoder = build_encoder(
        p.encoder, p.layers, p.weights or "", p.input_size or 0, context.public_weights
    )  # "", 0: defaults
    seen = shares_data(encoder.trained_on, context.dataset) if context.dataset else None
    if seen:
        raise EncoderError(
            f"the encoder {p.weights or spec.name} was trained on {seen}, which holds the private "
            f"dataset {context.dataset}'s images: it is not public for this run; pretrain on another dataset"
        )
    if encoder.trained_rows is not None:  # by content: its images under any name
        data.check_disjoint(f"the encoder {p.weights or spec.name}", encoder.trained_rows)
    encoder = encoder.to(device)
    public = getattr(encoder, "public_data", None) or spec.public_data  # a checkpoint may name its own
    ledger.use_public_fact(f"encoder {spec.name}", p.layers, f"pretrained on public data: {public}")
    if spec.shares_fid_space:
        ledger.caveats.append(
            f"dp-mepf trained on the features of {spec.name}, the network FID uses: its FID is measured in the "
            "space the generator matched and is not comparable with other methods' FID"
        )

    # --- step 2: one private pass, one release per moment
    if labelled:
        if release_counts:  # from the moments' noise stream, in its order (proportions, moments, proxy)
            (counts,) = data.counts(
                [CountQuery("class proportions", lambda rows: rows.y, n_classes)],
                noise_multiplier=sigma,
                rng=noise_rng,
            )
            # the authors' clamp of negative noisy proportions
            proportions = (torch.as_tensor(counts, dtype=torch.float64) / m).clamp(min=1e-3)
        else:  # public, or uniform by assumption: nothing released (release_proportions draws no noise here)
            proportions = release_proportions(data, context, sigma)
    else:
        proportions = torch.ones(1, dtype=torch.float64)
    what = f"{'class-wise ' if labelled else ''}mean embedding ({spec.name}, D = {feature_width(encoder, shape, device):,})"
    noisy = release_moments(data, encoder, moments, labelled, shape, batch, device, sigma, noise_rng, what)
    targets = [(n / proportions[:, None]).float().to(device) for n in noisy]  # per-class means

    proxy = None
    if early:
        _, proxy_encoder = build_encoder("inception-fid-imagenet", "pool3", public_weights=context.public_weights)
        proxy = release_proxy(proxy_encoder.to(device), data, sigma_proxy, noise_rng, 50, device)

    # --- step 3: generator training on the released embedding only
    torch.manual_seed(context.stream_seed("torch-global"))  # network init and latents use the global generator
    net = build_mepf_generator(p, n_rows, space).to(device)
    lr_mavg = p.lr_mavg if p.lr_mavg is not None else cifar10_lr_mavg(labelled, moments, context.budget.epsilon)
    optimiser = torch.optim.Adam(net.parameters(), lr=p.lr_gen, betas=(0.5, 0.999))
    tracker = MovingAverageLoss(targets, lr_mavg, context.torch_rng("moving-average-init"))
    label_rng = context.torch_rng("generated-labels")
    iterations, eval_every = p.iterations, max(1, p.eval_every)
    best = (math.inf, None)
    for step in range(iterations):
        net.train()
        labels = balanced_labels(batch, n_rows, label_rng).to(device)
        images = net(labels).view(batch, *shape)
        fakes = [fake_class_means(phi, labels, n_rows) for phi in feature_moments(encoder(images), moments)]
        loss = tracker.generator_loss(fakes)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        context.progress(step + 1, iterations)
        if proxy is not None and ((step + 1) % eval_every == 0 or step + 1 == iterations):
            score = _proxy_score(net, proxy, p.proxy_samples, n_rows, shape, device, label_rng)
            if score < best[0]:
                best = (score, copy.deepcopy(net.state_dict()))
    if best[1] is not None:
        net.load_state_dict(best[1])

    sampler_net = net if labelled else IgnoreLabels(net)
    uniform = torch.full((n_classes,), 1.0 / n_classes, dtype=torch.float64)
    weights = proportions.float() if labelled else uniform.float()
    return TrainedConditionalGenerator(sampler_net, weights, space, device, context.torch_rng("sampling-labels"))
