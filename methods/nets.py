"""Generator networks shared by the mean-embedding methods (DP-MERF, DP-HP, full MMD)."""

from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import nn


class FullyConnectedConditionalGenerator(nn.Module):
    """The authors' ``FCCondGen``: [z; one-hot(y)] → (Linear → BatchNorm → ReLU)* → Linear.

    seed-dpmerf.md §1.7 (2-D: z ∈ R⁵, widths 200-500-500-200, linear output)."""

    def __init__(
        self, noise_dim: int, n_classes: int, hidden: tuple[int, ...], out_dim: int, head: nn.Module | None = None
    ) -> None:
        super().__init__()
        self.noise_dim = noise_dim
        self.n_classes = n_classes
        layers: list[nn.Module] = []
        width = noise_dim + n_classes
        for next_width in hidden:
            layers += [nn.Linear(width, next_width), nn.BatchNorm1d(next_width), nn.ReLU()]
            width = next_width
        layers.append(nn.Linear(width, out_dim))
        self.net = nn.Sequential(*layers)
        self.head = head if head is not None else nn.Identity()

    def forward(self, labels: torch.Tensor) -> torch.Tensor:
        z = torch.randn(len(labels), self.noise_dim, device=labels.device)
        one_hot = nn.functional.one_hot(labels, self.n_classes).to(z.dtype)
        return self.head(self.net(torch.cat([z, one_hot], dim=1)))


class ConvolutionalConditionalGenerator(nn.Module):
    """The authors' ``ConvCondGen`` (seed-dpmerf.md §1.7, seed-dphp.md §3.4): [z; one-hot(y)] →
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
            nn.Linear(noise_dim + n_classes, fc_width), nn.BatchNorm1d(fc_width), nn.ReLU(),
            nn.Linear(fc_width, start_size), nn.BatchNorm1d(start_size),
        )
        layers: list[nn.Module] = []
        stages = list(zip(channels, (*channels[1:], out_channels)))
        for index, (in_ch, out_ch) in enumerate(stages):
            # UpsamplingBilinear2d of the seeds' code = align_corners=True
            layers += [nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
                       nn.Conv2d(in_ch, out_ch, kernel, padding=kernel // 2)]
            if index < len(stages) - 1:
                layers.append(nn.ReLU())
        self.conv = nn.Sequential(*layers)
        self.head = head if head is not None else nn.Identity()

    def forward(self, labels: torch.Tensor) -> torch.Tensor:
        z = torch.randn(len(labels), self.noise_dim, device=labels.device)
        one_hot = nn.functional.one_hot(labels, self.n_classes).to(z.dtype)
        start = self.fc(torch.cat([z, one_hot], dim=1)).view(len(labels), *self.start)
        return self.head(self.conv(start).flatten(1))


ARCHITECTURES = ("fc", "conv")


def build_generator(
    params: Mapping[str, Any], n_classes: int, out_dim: int, head: nn.Module, image_shape: tuple[int, int, int] | None
) -> nn.Module:
    """The generator the hyperparameters name: ``architecture`` ``fc`` (``hidden`` widths) or
    ``conv`` (images only: ``hidden`` = the fc width, ``conv_channels``, ``conv_kernel``)."""
    architecture = str(params.get("architecture", "fc"))
    noise_dim = int(params["noise_dim"])
    if architecture == "fc":
        return FullyConnectedConditionalGenerator(
            noise_dim, n_classes, parse_widths(str(params["hidden"]), out_dim), out_dim, head
        )
    if architecture == "conv":
        if image_shape is None:
            raise ValueError("architecture=conv needs image data; use architecture=fc for this dataset")
        (fc_width,) = parse_widths(str(params["hidden"]), out_dim)[:1]
        channels = parse_widths(str(params["conv_channels"]), 1)
        return ConvolutionalConditionalGenerator(
            noise_dim, n_classes, fc_width, channels, int(params["conv_kernel"]), image_shape, head
        )
    raise ValueError(f"architecture must be one of {', '.join(ARCHITECTURES)} (got {architecture!r})")


def parse_widths(text: str, data_width: int) -> tuple[int, ...]:
    """``"200-500-500-200"`` → (200, 500, 500, 200); ``"4d-2d"`` → multiples of the data width
    (the authors' tabular generator: 4·d then 2·d hidden units)."""
    try:
        widths = tuple(int(w[:-1]) * data_width if w.endswith("d") else int(w) for w in text.split("-"))
    except ValueError:
        raise ValueError(f"hidden widths {text!r} must look like 200-500-500-200 or 4d-2d") from None
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
