"""``marginals``: average total-variation distance between real and synthetic α-way marginals.

For each α, every one of the C(D, α) column subsets is scored by the total variation distance
(½ L1) between the real and the synthetic normalised contingency tables, each over the full
public domain of its columns (empty bins included); the metric ``tv_<α>`` is the mean over all
subsets (DP-HP (arXiv:2106.05042) Sec. 5.2, after PrivBayes). Lower is better. The real rows are the training
rows the generator learned from, as in the seeds and the marginal-based literature.

``paper.tv_<α>`` reproduces the seeds' ``dp_mehp/marginals_eval.py`` (github.com/ParkLabML/DP-HP) so
Table 1 can be compared like-for-like: it scores (α+1)-way marginals (``get_alpha_indices``
builds (α+1)-tuples), with ``np.histogramdd`` bins per column = real max − min (a binary column
gets one bin and never contributes; the top two codes share a bin), edges from each matrix's
own range, after clipping the synthetic codes to the real per-column range.

Exact and vectorised: all pair tables under one value of an (α−2)-column prefix are blocks of one
Gram matrix of one-hot rows (``total_l1_distance``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import torch

from bench.core.data import DataKind, LabelledData, Schema, check_same_schema
from bench.api.contracts import Direction, EvalContext, Evaluation, MetricSpec

DEFAULT_ALPHAS = (2, 3, 4)
ALL_ALPHAS = range(1, 7)


def column_subsets(n_columns: int, alpha: int) -> np.ndarray:
    """All C(n_columns, α) column subsets, one per row, in lexicographic order."""
    if not 1 <= alpha <= n_columns:
        raise ValueError(f"α = {alpha} needs 1 <= α <= {n_columns} (the number of columns)")
    return np.array(list(itertools.combinations(range(n_columns), alpha)), dtype=np.int64).reshape(-1, alpha)


def _one_hot(codes: np.ndarray, sizes: np.ndarray) -> torch.Tensor:
    """rows × Σ sizes float32 one-hot blocks, one per column."""
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    out = torch.zeros(codes.shape[0], int(sizes.sum()), dtype=torch.float32)
    out.scatter_(1, torch.as_tensor(codes + offsets, dtype=torch.int64), 1.0)
    return out


def _grouped_gram(one_hot: torch.Tensor, prefix_codes: np.ndarray) -> dict[int, torch.Tensor]:
    """For every value v of the prefix: Σ over rows with that value of x xᵀ (pair counts)."""
    order = np.argsort(prefix_codes, kind="stable")
    values, starts = np.unique(prefix_codes[order], return_index=True)
    bounds = list(starts) + [len(order)]
    grams = {}
    for v, start, stop in zip(values, bounds[:-1], bounds[1:]):
        rows = one_hot[torch.as_tensor(order[start:stop])]
        grams[int(v)] = rows.T @ rows
    return grams


BATCH_ELEMENTS = 1 << 23  # cell indices held at once by the counting path (64 MiB of int64)
# Measured on 2 cores (benchmarks/bench_marginals.py): seconds per subset-row counted, per
# multiply-add of a Gram product, and per Gram product's fixed overhead.
COUNT_SECONDS, FLOP_SECONDS, PRODUCT_SECONDS = 3e-8, 5e-11, 2e-3


def _counted_tables(codes: torch.Tensor, sizes: torch.Tensor, subsets: torch.Tensor) -> torch.Tensor:
    """The normalised contingency tables of ``subsets`` over ``codes`` (D × n), concatenated."""
    widths = sizes[subsets]
    strides = torch.ones_like(widths)
    for j in range(subsets.shape[1] - 2, -1, -1):
        strides[:, j] = strides[:, j + 1] * widths[:, j + 1]
    cells = widths.prod(dim=1)
    flat = (torch.cumsum(cells, 0) - cells).unsqueeze(1).expand(-1, codes.shape[1]).clone()
    for j in range(subsets.shape[1]):
        flat += codes[subsets[:, j]] * strides[:, j : j + 1]
    return torch.bincount(flat.reshape(-1), minlength=int(cells.sum())).double() / codes.shape[1]


def counted_l1_distance(real: np.ndarray, synthetic: np.ndarray, sizes: np.ndarray, alpha: int) -> float:
    """``total_l1_distance`` by counting each subset's cells (one bincount per batch of
    subsets): the cheaper path when subsets × rows is small."""
    sizes_t = torch.as_tensor(sizes)
    real_t = torch.as_tensor(np.ascontiguousarray(real.T), dtype=torch.int64)
    synthetic_t = torch.as_tensor(np.ascontiguousarray(synthetic.T), dtype=torch.int64)
    subsets = column_subsets(len(sizes), alpha)
    per_batch = max(1, BATCH_ELEMENTS // max(len(real), len(synthetic), 1))
    total = 0.0
    for start in range(0, len(subsets), per_batch):
        batch = torch.as_tensor(subsets[start : start + per_batch])
        difference = _counted_tables(real_t, sizes_t, batch) - _counted_tables(synthetic_t, sizes_t, batch)
        total += float(difference.abs().sum())
    return total


def _estimated_seconds(sizes: np.ndarray, alpha: int, rows: int) -> tuple[float, float]:
    """(counting path, Gram path) run-time estimates for these domains and total row count."""
    counting = COUNT_SECONDS * math.comb(len(sizes), alpha) * rows
    tails = np.cumsum(sizes[::-1])[::-1]  # one-hot width of the columns from j on
    gram = 0.0
    for prefix in itertools.combinations(range(len(sizes)), alpha - 2):
        first = prefix[-1] + 1 if prefix else 0
        if first < len(sizes):
            groups = min(int(np.prod(sizes[list(prefix)])), rows)
            gram += FLOP_SECONDS * rows * float(tails[first]) ** 2 + PRODUCT_SECONDS * 2 * groups
    return counting, gram


def total_l1_distance(real: np.ndarray, synthetic: np.ndarray, sizes: Sequence[int], alpha: int) -> float:
    """Σ over all C(D, α) column subsets of ‖p_real − p_synthetic‖₁ of their α-way tables,
    by whichever of the two exact paths is estimated to be faster."""
    sizes = np.asarray(sizes, dtype=np.int64)
    column_subsets(len(sizes), alpha)  # validates α
    if alpha < 2:
        return counted_l1_distance(real, synthetic, sizes, alpha)
    counting, gram = _estimated_seconds(sizes, alpha, len(real) + len(synthetic))
    if counting <= gram:
        return counted_l1_distance(real, synthetic, sizes, alpha)
    return gram_l1_distance(real, synthetic, sizes, alpha)


def gram_l1_distance(real: np.ndarray, synthetic: np.ndarray, sizes: np.ndarray, alpha: int) -> float:
    """``total_l1_distance`` (α ≥ 2) through Gram matrices of one-hot rows.

    Every subset is a prefix of α − 2 columns followed by a pair (b, c) after it. For each prefix
    and each value of it, the pair tables of all (b, c) are blocks of one Gram matrix of the
    one-hot rows with that value, so the work is a few large matrix products instead of one
    pass over the rows per subset (census, 10,660 3-way subsets: seconds, not minutes)."""
    n_columns = len(sizes)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    block = torch.as_tensor(np.repeat(np.arange(n_columns), sizes))
    real_one_hot, synthetic_one_hot = _one_hot(real, sizes), _one_hot(synthetic, sizes)
    total = 0.0
    for prefix in itertools.combinations(range(n_columns), alpha - 2):
        first = prefix[-1] + 1 if prefix else 0
        if n_columns - first < 2:
            continue
        tail = slice(int(offsets[first]), None)
        upper_pairs = (block[tail].unsqueeze(1) < block[tail].unsqueeze(0)).float()
        real_grams = _grouped_gram(real_one_hot[:, tail], _prefix_codes(real, sizes, prefix))
        synthetic_grams = _grouped_gram(synthetic_one_hot[:, tail], _prefix_codes(synthetic, sizes, prefix))
        for v in real_grams.keys() | synthetic_grams.keys():
            difference = (real_grams[v] / len(real) if v in real_grams else 0.0) - (
                synthetic_grams[v] / len(synthetic) if v in synthetic_grams else 0.0
            )
            total += float((difference.abs() * upper_pairs).sum())
    return total


def _prefix_codes(codes: np.ndarray, sizes: np.ndarray, prefix: tuple[int, ...]) -> np.ndarray:
    if not prefix:
        return np.zeros(len(codes), dtype=np.int64)
    return np.ravel_multi_index(tuple(codes[:, j] for j in prefix), tuple(sizes[list(prefix)]))


def mean_tv_distance(real: np.ndarray, synthetic: np.ndarray, sizes: Sequence[int], alpha: int) -> float:
    """Mean over all C(D, α) column subsets of ½‖p_real − p_synthetic‖₁ of their α-way tables.

    ``real`` and ``synthetic`` are integer code matrices (rows × D) with codes in [0, sizes[j])."""
    return 0.5 * total_l1_distance(real, synthetic, sizes, alpha) / math.comb(len(sizes), alpha)


def _histogramdd_bins(values: np.ndarray, bins: int) -> np.ndarray:
    """The bin ``np.histogramdd(values, bins)`` puts each value in, with edges from the values'
    own range (numpy widens an empty range to ±0.5; the maximum falls in the last bin)."""
    low, high = float(values.min()), float(values.max())
    if low == high:
        low, high = low - 0.5, high + 0.5
    index = np.floor((values - low) / (high - low) * bins).astype(np.int64)
    return np.clip(index, 0, bins - 1)


def paper_codes(real: np.ndarray, synthetic: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both matrices re-binned as the seeds' ``marginals_eval.py`` bins them, and the bin counts."""
    low, high = real.min(axis=0), real.max(axis=0)
    synthetic = np.clip(np.rint(synthetic), low, high)
    bins = np.maximum(high - low, 1).astype(np.int64)
    real_bins = np.stack([_histogramdd_bins(real[:, j], bins[j]) for j in range(real.shape[1])], axis=1)
    synthetic_bins = np.stack([_histogramdd_bins(synthetic[:, j], bins[j]) for j in range(real.shape[1])], axis=1)
    return real_bins, synthetic_bins, bins


def _declared_metrics() -> dict[str, MetricSpec]:
    return {
        f"tv_{alpha}": MetricSpec.quality(
            Direction.LOWER,
            f"mean TV distance of all {alpha}-way marginals, full domains "
            f"(paper.tv_{alpha}: the seeds' code, {alpha + 1}-way, own-range bins)",
        )
        for alpha in ALL_ALPHAS
    }


@dataclass(frozen=True)
class MarginalErrors:
    name: str = "marginals"
    description: str = "mean TV distance of all α-way marginals (discretized data); lower is better"
    data_kinds: frozenset[DataKind] = frozenset({DataKind.DISCRETE})
    alphas: tuple[int, ...] | None = None  # None: the dataset's ``marginal_alphas``, else 2, 3, 4
    metrics: Mapping[str, MetricSpec] = field(default_factory=_declared_metrics)

    def applies_to(self, schema: Schema) -> bool:
        return all(column.categories for column in schema.columns)

    def alphas_for(self, schema: Schema) -> tuple[int, ...]:
        if self.alphas is not None:
            return self.alphas
        fact = schema.public_fact("marginal_alphas")
        return tuple(fact.value) if fact is not None else DEFAULT_ALPHAS

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        """Both conventions are always reported; the protocol does not change them."""
        check_same_schema(synthetic, real_train)
        sizes = [len(column.categories) for column in real_train.schema.columns]
        real = real_train.x.astype(np.int64)
        generated = synthetic.x.astype(np.int64)
        alphas = self.alphas_for(real_train.schema)
        values = {f"tv_{alpha}": mean_tv_distance(real, generated, sizes, alpha) for alpha in alphas}
        real_bins, generated_bins, bins = paper_codes(real_train.x, synthetic.x)
        for alpha in alphas:
            if alpha + 1 <= real.shape[1]:
                values[f"paper.tv_{alpha}"] = mean_tv_distance(real_bins, generated_bins, bins, alpha + 1)
        return Evaluation(values)


MARGINALS = MarginalErrors()
