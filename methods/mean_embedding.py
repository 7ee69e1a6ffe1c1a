"""Pieces shared by the mean-embedding methods (DP-MERF, DP-HP): bounded-memory class sums,
the class-proportion release, and the trained conditional generator they return."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch.utils.checkpoint import checkpoint

from bench.core.data import LabelledData, Schema
from bench.api.contracts import FitContext
from bench.privacy.private_data import CountQuery, PrivateData
from methods.nets import proportional_labels
from methods.space import ModelSpace

# The memory budget of one batch's per-row features: rows × features per chunk, 2^25 = 128 MiB
# of float32 (256 MiB of float64 for the real rows). A generated batch within it is processed
# whole, with no recomputation; only larger ones (census: 0.5·n rows) are checkpointed chunk by
# chunk, which keeps a census cell under 2 GiB at the price of a second forward pass.
CHUNK_ELEMENTS = 1 << 25

ClassSums = Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]


def rows_per_chunk(elements_per_row: int) -> int:
    return max(1, CHUNK_ELEMENTS // max(elements_per_row, 1))


def bounded_class_sums(
    class_sums: ClassSums, z: torch.Tensor, labels: torch.Tensor, n_classes: int, elements_per_row: int
) -> torch.Tensor:
    """``class_sums(z, labels, n_classes)`` over row chunks with activation checkpointing: the
    same value and gradient, but the per-row feature tensors of a large batch (census: 0.5·n
    rows) are never all held at once; each chunk's are recomputed in the backward pass."""
    chunk = rows_per_chunk(elements_per_row)
    if len(z) <= chunk:
        return class_sums(z, labels, n_classes)
    return sum(
        checkpoint(class_sums, z[start : start + chunk], labels[start : start + chunk], n_classes, use_reentrant=False)
        for start in range(0, len(z), chunk)
    )


def embedding_sum(
    class_sums: ClassSums, z: torch.Tensor, y: torch.Tensor, n_classes: int, elements_per_row: int
) -> torch.Tensor:
    """Σᵢ onehot(yᵢ) h(zᵢ)ᵀ of the real rows in float64, chunk by chunk (no graph kept)."""
    chunk = rows_per_chunk(elements_per_row)
    total = None
    with torch.no_grad():
        for start in range(0, len(z), chunk):
            part = class_sums(z[start : start + chunk].double(), y[start : start + chunk], n_classes)
            total = part if total is None else total + part
    return total


LABEL_MODES = ("released", "uniform")


def proportions_released(schema: Schema, context: FitContext) -> bool:
    """Whether :func:`release_proportions` spends budget (so the caller calibrates k = 2)."""
    return _label_mode(context) == "released" and schema.public_fact("class_proportions") is None


def _label_mode(context: FitContext) -> str:
    mode = getattr(context.params, "labels", "released")  # methods without the parameter release
    if mode not in LABEL_MODES:
        raise ValueError(f"labels must be one of {', '.join(LABEL_MODES)} (got {mode!r})")
    return mode


def release_proportions(data: PrivateData, context: FitContext, noise_multiplier: float) -> torch.Tensor:
    """Class proportions w̃: public ones if the schema declares them; uniform ones when the
    method's ``labels`` parameter says so (the seeds' image and 2-D code: labels are generated
    uniformly and nothing is released — a data-independent choice, not an estimate); else noisy
    ones (charged).

    Released as the handle's class counts (Gaussian, L2 sensitivity √2: one replaced row moves two
    counts by 1) divided by the public row count m: the proportions with noise std σ·√2/m, as the
    authors' tabular code (github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py,
    github.com/ParkLabML/DP-HP dp_mehp/run_sum_prod_kernel_tabular_data.py)."""
    schema = data.schema
    fact = schema.public_fact("class_proportions")
    if fact is not None:
        context.ledger.use_public_fact(fact.name, fact.value, fact.why)
        return torch.tensor(fact.value, dtype=torch.float64)
    if _label_mode(context) == "uniform":
        uniform = torch.full((schema.n_classes,), 1.0 / schema.n_classes, dtype=torch.float64)
        context.ledger.use_public_fact(
            "class_proportions",
            f"uniform 1/{schema.n_classes}",
            "assumed, not estimated: generated labels are uniform (the seeds' image code); no row is read",
        )
        return uniform
    (counts,) = data.counts(
        [CountQuery("class counts", lambda rows: rows.y, schema.n_classes)],
        noise_multiplier=noise_multiplier,
        rng=context.torch_rng("class-proportions-noise"),
    )
    noisy = torch.as_tensor(counts, dtype=torch.float64) / data.n_rows
    return noisy.clamp(min=1e-3)  # the authors' clamp of negative noisy proportions


@dataclass
class TrainedConditionalGenerator:
    """A fitted method's sampler: labels in the released proportions (or given), rows decoded
    back to the dataset's schema."""

    generator: torch.nn.Module  # labels → rows of the model space (methods/nets.py)
    proportions: torch.Tensor
    space: ModelSpace
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
        z = torch.cat(parts).numpy().astype(np.float32)
        return LabelledData(self.space.decode(z).astype(np.float32), y.numpy(), self.space.schema)
