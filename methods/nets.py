"""Generator networks shared by the mean-embedding methods (DP-MERF, DP-HP, full MMD)."""

from __future__ import annotations

from typing import Protocol

import torch
from torch import nn


class ThreadInvariantBatchNorm1d(nn.BatchNorm1d):
    """``nn.BatchNorm1d`` whose batch statistics do not depend on torch's thread count.

    The fused CPU kernel splits each channel's sum between threads, so one batch normalises
    differently (in the last bits) at 1 and at 2 threads, and a long training run drifts apart.
    Column reductions of a contiguous batch (``mean(0)``, ``var(0)``) sum every column in one
    order whatever the thread count, so a cell may use idle cores and still give the numbers it
    gives on one (tests/test_thread_invariance.py). Parameters, buffers and the running-statistics
    update are ``nn.BatchNorm1d``'s; the values agree with it up to float rounding."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.momentum is None:
            return super().forward(x)
        x = x.contiguous()
        mean = x.mean(0)
        centred = x - mean
        var = (centred * centred).mean(0)
        if self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked += 1
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var * (len(x) / max(len(x) - 1, 1)), self.momentum)
        normalised = centred * torch.rsqrt(var + self.eps)
        return normalised * self.weight + self.bias if self.affine else normalised


class FullyConnectedConditionalGenerator(nn.Module):
    """The authors' ``FCCondGen``: [z; one-hot(y)] → (Linear → BatchNorm → ReLU)* → Linear.

    github.com/ParkLabML/DP-MERF code_balanced/models_gen.py FCCondGen and
    code_balanced/README.md (2-D: z ∈ R⁵, widths 200-500-500-200, linear output)."""

    def __init__(
        self, noise_dim: int, n_classes: int, hidden: tuple[int, ...], out_dim: int, head: nn.Module | None = None
    ) -> None:
        super().__init__()
        self.noise_dim = noise_dim
        self.n_classes = n_classes
        layers: list[nn.Module] = []
        width = noise_dim + n_classes
        for next_width in hidden:
            layers += [nn.Linear(width, next_width), ThreadInvariantBatchNorm1d(next_width), nn.ReLU()]
            width = next_width
        self.net = nn.Sequential(*layers)
        self.out = nn.Linear(width, out_dim)
        self.head = head if head is not None else nn.Identity()

    def forward(self, labels: torch.Tensor) -> torch.Tensor:
        z = torch.randn(len(labels), self.noise_dim, device=labels.device)
        one_hot = nn.functional.one_hot(labels, self.n_classes).to(z.dtype)
        hidden = self.net(torch.cat([z, one_hot], dim=1))
        # the output layer's transpose, W·hᵀ + b, viewed back as B × W: the same values, stored
        # column by column, which is the layout the tabular head works in (methods/space.py)
        return self.head(torch.addmm(self.out.bias[:, None], self.out.weight, hidden.T).T)


class ConvolutionalConditionalGenerator(nn.Module):
    """The authors' ``ConvCondGen`` (github.com/ParkLabML/DP-MERF code_balanced/models_gen.py,
    github.com/ParkLabML/DP-HP dp_mehp/all_aux_files.py): [z; one-hot(y)] →
    Linear(fc) → BN → ReLU → Linear(c₀·h·w) → BN → reshape (c₀, h, w) → for each further channel
    count: bilinear ×2 → Conv(k, same padding) → ReLU, the last convolution to the image's
    channels without ReLU → flattened channel-first (the ``head``, a sigmoid for pixels in [0, 1]).

    With channels (16, 8) and 28×28 images: 16×7×7 → 14×14×8 → 28×28×1, as the seeds."""

    def __init__(
        self,
        noise_dim: int,
        n_classes: int,
        fc_width: int,
        channels: tuple[int, ...],
        kernel: int,
        image_shape: tuple[int, int, int],
        head: nn.Module | None = None,
    ) -> None:
        super().__init__()
        out_channels, height, width = image_shape
        factor = 2 ** len(channels)
        if height % factor or width % factor:
            raise ValueError(
                f"a {height}×{width} image cannot be reached by {len(channels)} bilinear ×2 upsamplings; "
                f"use {len(channels) - 1} conv channel counts or an fc architecture"
            )
        if kernel % 2 == 0:
            raise ValueError(f"conv_kernel must be odd so that padding keeps the size (got {kernel})")
        self.noise_dim = noise_dim
        self.n_classes = n_classes
        self.start = (channels[0], height // factor, width // factor)
        start_size = channels[0] * self.start[1] * self.start[2]
        self.fc = nn.Sequential(
            nn.Linear(noise_dim + n_classes, fc_width),
            nn.BatchNorm1d(fc_width),
            nn.ReLU(),
            nn.Linear(fc_width, start_size),
            nn.BatchNorm1d(start_size),
        )
        layers: list[nn.Module] = []
        stages = list(zip(channels, (*channels[1:], out_channels)))
        for index, (in_ch, out_ch) in enumerate(stages):
            # UpsamplingBilinear2d of the seeds' code = align_corners=True
            layers += [
                nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
                nn.Conv2d(in_ch, out_ch, kernel, padding=kernel // 2),
            ]
            if index < len(stages) - 1:
                layers.append(nn.ReLU())
        self.conv = nn.Sequential(*layers)
        self.head = head if head is not None else nn.Identity()

    def forward(self, labels: torch.Tensor) -> torch.Tensor:
        z = torch.randn(len(labels), self.noise_dim, device=labels.device)
        one_hot = nn.functional.one_hot(labels, self.n_classes).to(z.dtype)
        start = self.fc(torch.cat([z, one_hot], dim=1)).view(len(labels), *self.start)
        return self.head(self.conv(start).flatten(1))


class ResidualBlockUp(nn.Module):
    """DP-MEPF's ``ResidualBlockG`` (github.com/ParkLabML/DP-MEPF code/generators.py): main path BN → ReLU → nearest ×2 →
    Conv3×3 → BN → ReLU → Conv3×3; skip path Conv1×1 → nearest ×2; the sum of the two."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.BatchNorm2d(in_channels),
            nn.ReLU(),
            nn.Upsample(scale_factor=2, mode="nearest"),
            nn.Conv2d(in_channels, out_channels, 3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, 3, padding=1),
        )
        self.skip = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1), nn.Upsample(scale_factor=2, mode="nearest"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.main(x) + self.skip(x)


class ResnetConditionalGenerator(nn.Module):
    """DP-MEPF's ``ResnetG`` (github.com/ParkLabML/DP-MEPF code/generators.py) for square images of side 4·2^k:
    [one-hot(y); z] (z_dim in all) → ConvTranspose(4×4, no bias) → k residual up-blocks
    (channels ngf·2^(k−1) … ngf) → BN → ReLU → Conv3×3 → tanh → (x + 1)/2 ∈ [0, 1], flattened
    channel-first. 32×32: 512 → 256 → 128 → 64 channels, ≈ 3.3 M parameters. Xavier-uniform
    init of every conv, as the authors'."""

    def __init__(self, noise_dim: int, n_classes: int, image_shape: tuple[int, int, int], ngf: int = 64) -> None:
        super().__init__()
        channels, height, width = image_shape
        blocks = (height // 4).bit_length() - 1
        if height != width or height < 8 or 4 * 2**blocks != height:
            raise ValueError(
                f"the resnet generator needs square images of side 4·2^k ≥ 8 (got {height}×{width}); use architecture=conv"
            )
        self.noise_dim, self.n_classes = noise_dim, n_classes
        widths = [ngf * 2 ** (blocks - 1 - i) for i in range(blocks)]
        self.start = nn.ConvTranspose2d(noise_dim + n_classes, widths[0] * 2 if blocks else ngf, 4, 1, 0, bias=False)
        ins = [widths[0] * 2, *widths[:-1]]
        self.blocks = nn.Sequential(*(ResidualBlockUp(i, o) for i, o in zip(ins, widths)))
        self.out = nn.Sequential(
            nn.BatchNorm2d(widths[-1]), nn.ReLU(), nn.Conv2d(widths[-1], channels, 3, padding=1), nn.Tanh()
        )
        for module in self.modules():
            if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d)):
                nn.init.xavier_uniform_(module.weight)

    def forward(self, labels: torch.Tensor) -> torch.Tensor:
        z = torch.randn(len(labels), self.noise_dim, device=labels.device)
        one_hot = nn.functional.one_hot(labels, self.n_classes).to(z.dtype)
        code = torch.cat([one_hot, z], dim=1)[:, :, None, None]
        return ((self.out(self.blocks(self.start(code))) + 1) / 2).flatten(1)


ARCHITECTURES = ("fc", "conv")


class GeneratorParams(Protocol):
    """The parameters ``build_generator`` reads (fields of DP-MERF's, DP-HP's and full-MMD's dataclasses)."""

    architecture: str
    noise_dim: int
    hidden: str
    conv_channels: str
    conv_kernel: int


def build_generator(
    params: GeneratorParams,
    n_classes: int,
    out_dim: int,
    head: nn.Module,
    image_shape: tuple[int, int, int] | None,
    columns: int | None = None,
) -> nn.Module:
    """The generator the hyperparameters name: ``architecture`` ``fc`` (``hidden`` widths) or
    ``conv`` (images only: ``hidden`` = the fc width, ``conv_channels``, ``conv_kernel``).
    ``columns`` (the table's columns, default ``out_dim``) is the unit of ``c`` widths."""
    architecture = params.architecture
    noise_dim = params.noise_dim
    if architecture == "fc":
        return FullyConnectedConditionalGenerator(
            noise_dim, n_classes, parse_widths(params.hidden, out_dim, columns), out_dim, head
        )
    if architecture == "conv":
        if image_shape is None:
            raise ValueError("architecture=conv needs image data; use architecture=fc for this dataset")
        (fc_width,) = parse_widths(params.hidden, out_dim)[:1]
        channels = parse_widths(params.conv_channels, 1)
        return ConvolutionalConditionalGenerator(
            noise_dim, n_classes, fc_width, channels, params.conv_kernel, image_shape, head
        )
    raise ValueError(f"architecture must be one of {', '.join(ARCHITECTURES)} (got {architecture!r})")


def parse_widths(text: str, data_width: int, columns: int | None = None) -> tuple[int, ...]:
    """``"200-500-500-200"`` → (200, 500, 500, 200); ``"4d-2d"`` → multiples of the data width
    (the encoded width the generator emits); ``"4c-2c"`` → multiples of the table's columns (the
    authors' tabular generators, whose d is the number of integer-coded columns: 4·d then 2·d
    hidden units; under one-hot encoding the encoded width can be 10× larger)."""
    units = {"d": data_width, "c": data_width if columns is None else columns}
    try:
        widths = tuple(int(w[:-1]) * units[w[-1]] if w[-1] in units else int(w) for w in text.split("-"))
    except ValueError:
        raise ValueError(f"hidden widths {text!r} must look like 200-500-500-200, 4d-2d or 4c-2c") from None
    if not widths or min(widths) < 1:
        raise ValueError(f"hidden widths {text!r} must be positive integers")
    return widths


def proportional_labels(n: int, proportions: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``n`` labels in the given proportions (largest-remainder rounding), shuffled."""
    proportions = proportions / proportions.sum()
    exact = proportions.double().cpu() * n
    counts = exact.floor().long()
    remainder = n - int(counts.sum())
    if remainder:
        counts[torch.argsort(exact - counts, descending=True)[:remainder]] += 1
    labels = torch.repeat_interleave(torch.arange(len(counts)), counts)
    return labels[torch.randperm(n, generator=generator)]
