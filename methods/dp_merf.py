"""``dp-merf``: DP mean embeddings with random Fourier features (Harder et al., AISTATS 2021).

Algorithm (seed-dpmerf.md §1.9):

1. Draw Ω ∈ R^{D/2 × d} with Ω_jk ~ N(0, 1/ℓ_k²) — data-independent.
2. φ(x) = √(2/D) [cos(Ωx); sin(Ωx)], so ‖φ(x)‖₂ = 1 exactly (eq. 4).
3. U = (1/m) Σᵢ onehot(yᵢ) φ(xᵢ)ᵀ ∈ R^{C×D} (eq. 14, stored class-major); L2 sensitivity 2/m under replace-one
   (§2, eq. 9–10).
4. Ũ = U + N(0, σ²(2/m)² I), σ from the ledger's calibrator; one release.
5. Class proportions: public when the dataset schema says so (recorded as a public fact);
   otherwise released with the Gaussian mechanism (sensitivity √2/m, same σ, so k = 2 — Alg. 1
   and the authors' tabular code) and charged.
6. Train a conditional generator to minimise ‖Ũ·diag(1/w̃) − V·diag(1/w̃)‖²_F where
   V = (1/B) Σⱼ φ(G(zⱼ, yⱼ)) onehot(yⱼ)ᵀ and yⱼ ~ w̃ (the code's reweighting of both sides, §1.5).

The length scale is a fixed hyperparameter, never computed from the private rows: the seeds'
median heuristic on training points is not accounted (seed-dpmerf.md §1.3, §8.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from bench.hyperparams import HyperParameters, Setting
from bench.interfaces import DataKind, FitContext, LabelledData, Schema
from bench.ledger import GaussianRelease
from methods.nets import FullyConnectedConditionalGenerator, parse_widths, proportional_labels

CHUNK_ELEMENTS = 1 << 24  # rows × features per chunk when embedding the real data (64 MiB float32)

HYPERPARAMETERS = HyperParameters(
    defaults={
        "n_features": Setting(10_000, "seed-dpmerf.md §3.2: D = 10,000 (image setting, code default)"),
        "length_scale": Setting(1.0, "documented choice: ℓ = 1 on features scaled to unit range"),
        "epochs": Setting(50, "seed-dpmerf.md §1.7 (2-D code: 50 epochs)"),
        "batch_size": Setting(500, "seed-dpmerf.md §1.7 (2-D code: batch 500)"),
        "lr": Setting(3e-3, "seed-dpmerf.md §1.7 (2-D code: -lr 3e-3)"),
        "lr_decay": Setting(0.9, "seed-dpmerf.md §1.7 (StepLR γ = 0.9 per epoch)"),
        "noise_dim": Setting(5, "seed-dpmerf.md §1.7 (d_code 5)"),
        "hidden": Setting("200-500-500-200", "seed-dpmerf.md §1.7 (FCCondGen widths)"),
    },
    per_dataset={
        "gmm2d": {
            "n_features": Setting(30_000, "seed-dpmerf.md §3.3; seed-dphp.md §3.1: DP-MERF used 30,000 features"),
            "length_scale": Setting(math.sqrt(0.5), "seed-dpmerf.md §1.3/§3.3: code --rff-sigma 0.5 = ℓ²"),
            "epochs": Setting(50, "seed-dpmerf.md §3.3: 50 epochs"),
            "batch_size": Setting(500, "seed-dpmerf.md §3.3: batch 500"),
            "lr": Setting(3e-3, "seed-dpmerf.md §3.3: lr 3e-3, decay 0.9 per epoch"),
        },
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


class _CosSinClassSums(torch.autograd.Function):
    """Per-class sums of [cos(p); sin(p)] over the rows of a projection p (B × D/2).

    Autograd's own graph for cos, sin, concatenation and the one-hot product keeps several
    B × D temporaries and recomputes sin/cos in the backward pass; this keeps the forward's
    cos and sin and needs one fused multiply-add backward (2.2× faster per DP-MERF step at
    D = 30,000 on 2 CPU cores, see benchmarks/bench_dp_merf.py)."""

    @staticmethod
    def forward(ctx, projection: torch.Tensor, labels: torch.Tensor, n_classes: int) -> torch.Tensor:
        cos, sin = torch.cos(projection), torch.sin(projection)
        sums = projection.new_zeros(n_classes, 2 * projection.shape[1])
        half = projection.shape[1]
        sums[:, :half].index_add_(0, labels, cos)
        sums[:, half:].index_add_(0, labels, sin)
        ctx.save_for_backward(cos, sin, labels)
        return sums

    @staticmethod
    def backward(ctx, grad_sums: torch.Tensor):
        cos, sin, labels = ctx.saved_tensors
        half = cos.shape[1]
        per_row = grad_sums[labels]  # each row receives its own class's gradient
        grad_projection = torch.addcmul(cos * per_row[:, half:], sin, per_row[:, :half], value=-1)
        return grad_projection, None, None


def rff_class_sums(x: torch.Tensor, labels: torch.Tensor, n_classes: int, frequencies: torch.Tensor) -> torch.Tensor:
    """Σ_{j: yⱼ = c} φ(xⱼ) for every class c, as a C × D matrix (differentiable in x)."""
    projection = x @ frequencies.T.to(x.dtype)
    scale = 1.0 / math.sqrt(frequencies.shape[0])  # √(2/D)
    return _CosSinClassSums.apply(projection, labels, n_classes) * scale


def labelled_embedding_sum(
    x: torch.Tensor, y: torch.Tensor, n_classes: int, frequencies: torch.Tensor
) -> torch.Tensor:
    """Σᵢ onehot(yᵢ) φ(xᵢ)ᵀ (C × D), accumulated over row chunks so memory stays bounded."""
    n_features = 2 * frequencies.shape[0]
    total = torch.zeros(n_classes, n_features, dtype=torch.float64, device=x.device)
    chunk = max(1, CHUNK_ELEMENTS // n_features)
    with torch.no_grad():
        for start in range(0, len(x), chunk):
            total += rff_class_sums(x[start : start + chunk].double(), y[start : start + chunk], n_classes, frequencies)
    return total


@dataclass
class MerfGenerator:
    generator: FullyConnectedConditionalGenerator
    proportions: torch.Tensor
    schema: Schema
    device: torch.device
    label_rng: torch.Generator
    batch: int = 10_000

    @torch.no_grad()
    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        self.generator.eval()
        y = (
            proportional_labels(n, self.proportions.cpu(), self.label_rng)
            if labels is None
            else torch.as_tensor(labels, dtype=torch.long)
        )
        parts = [self.generator(y[s : s + self.batch].to(self.device)).cpu() for s in range(0, n, self.batch)]
        x = torch.cat(parts).numpy().astype(np.float32)
        return LabelledData(x, y.numpy(), self.schema)


def release_proportions(train: LabelledData, context: FitContext, noise_multiplier: float) -> torch.Tensor:
    """Class proportions w̃: public ones if the schema declares them, else noisy ones (charged)."""
    schema = train.schema
    fact = schema.public_fact("class_proportions")
    if fact is not None:
        context.ledger.use_public_fact(fact.name, fact.value, fact.why)
        return torch.tensor(fact.value, dtype=torch.float64)
    m = len(train)
    sensitivity = math.sqrt(2) / m  # one replaced row moves two proportions by 1/m
    generator = torch.Generator().manual_seed(context.seed + 1)
    counts = torch.as_tensor(train.class_counts(), dtype=torch.float64) / m
    noisy = counts + torch.randn(len(counts), generator=generator, dtype=torch.float64) * noise_multiplier * sensitivity
    context.ledger.record(
        GaussianRelease("class proportions", sensitivity=sensitivity, noise_multiplier=noise_multiplier)
    )
    return noisy.clamp(min=1e-3)  # the authors' clamp of negative noisy proportions (§1.5)


@dataclass(frozen=True)
class DPMerf:
    name: str = "dp-merf"
    description: str = "DP-MERF: random Fourier feature mean embedding released once, generator trained to match"
    data_kinds: frozenset[DataKind] = frozenset({DataKind.TWO_D})
    private: bool = True
    hyperparameters: HyperParameters = field(default_factory=lambda: HYPERPARAMETERS)

    def fit(self, train: LabelledData, context: FitContext) -> MerfGenerator:
        p = context.params
        device = context.device
        m, n_classes = len(train), train.schema.n_classes
        public_proportions = train.schema.public_fact("class_proportions") is not None
        sigma = context.ledger.calibrate_gaussian(compositions=1 if public_proportions else 2)
        proportions = release_proportions(train, context, sigma).to(device)

        generator = torch.Generator().manual_seed(context.seed)
        length_scales = torch.full((train.schema.n_features,), float(p["length_scale"]))
        context.ledger.use_public_fact(
            "length_scale", float(p["length_scale"]), "fixed hyperparameter, not computed from the rows"
        )
        frequencies = draw_frequencies(int(p["n_features"]), length_scales, generator).to(device)

        x = torch.as_tensor(train.x, device=device)
        y = torch.as_tensor(train.y, device=device)
        sensitivity = 2.0 / m  # ‖φ(x) onehot(y)ᵀ‖_F = 1 → replace-one changes the mean by ≤ 2/m
        embedding = labelled_embedding_sum(x, y, n_classes, frequencies) / m
        noise = torch.randn(embedding.shape, generator=generator, dtype=torch.float64).to(device)
        noisy_embedding = embedding + noise * sigma * sensitivity
        context.ledger.record(
            GaussianRelease("labelled RFF mean embedding", sensitivity=sensitivity, noise_multiplier=sigma)
        )
        target = (noisy_embedding / proportions[:, None]).float()
        frequencies = frequencies.float()

        net = FullyConnectedConditionalGenerator(
            int(p["noise_dim"]), n_classes, parse_widths(str(p["hidden"])), train.schema.n_features
        ).to(device)
        optimiser = torch.optim.Adam(net.parameters(), lr=float(p["lr"]))
        schedule = torch.optim.lr_scheduler.StepLR(optimiser, step_size=1, gamma=float(p["lr_decay"]))
        batch, epochs = int(p["batch_size"]), int(p["epochs"])
        steps_per_epoch = max(1, math.ceil(m / batch))  # the 2-D code: n_data / batch steps per epoch
        label_rng = torch.Generator().manual_seed(context.seed + 2)
        weights = proportions.float()
        for epoch in range(epochs):
            net.train()
            for step in range(steps_per_epoch):
                labels = torch.multinomial(weights.cpu(), batch, replacement=True, generator=label_rng).to(device)
                fake = net(labels)
                generated = rff_class_sums(fake, labels, n_classes, frequencies) / (batch * weights[:, None])
                loss = ((target - generated) ** 2).sum()
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                optimiser.step()
                context.progress(epoch * steps_per_epoch + step + 1, epochs * steps_per_epoch)
            schedule.step()
        return MerfGenerator(net, proportions.float(), train.schema, device, label_rng)
