"""Generator networks shared by the mean-embedding methods (DP-MERF, DP-HP)."""

from __future__ import annotations

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
