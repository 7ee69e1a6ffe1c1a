"""The space a generator works in, derived from the public schema only.

For 2-D data the generator emits the raw coordinates; for images the flattened pixels in [0, 1]
(a sigmoid head, as the seeds' image generators). For tabular data it emits the encoding of
``bench.core.encoding`` (one-hot under the sound protocol, the reference code's integer codes under
the paper protocol), and its output heads keep each block in its valid range. Kernel methods
split that space into a *numerical* part (fed to a Gaussian-kernel feature map) and a
*categorical* part (one-hot or binary, fed to a linear kernel scaled by 1/√d_cat) — DP-MERF's
sum kernel (DP-MERF (arXiv:2002.11603) Sec. 4.3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from bench.core.encoding import TabularEncoder
from bench.core.data import ColumnKind, DataKind, RunProtocol, Schema


def _all_ordinal(schema: Schema) -> Schema:
    """The schema with every coded column read as ordinal: its integer code is a coordinate."""
    columns = tuple(replace(c, kind=ColumnKind.ORDINAL) if c.categories else c for c in schema.columns)
    return replace(schema, columns=columns)


@dataclass(frozen=True)
class ModelSpace:
    schema: Schema
    encoder: TabularEncoder | None  # None: raw coordinates (2-D data, image pixels)
    pixels: bool = False  # every coordinate a pixel in the public range [0, 1]
    # paper codes only: numerical and ordinal outputs as low + span·sigmoid(u) over their public
    # range, instead of ReLU in raw units (which a short schedule cannot grow to, e.g. fnlwgt ≈ 10⁵)
    range_outputs: bool = False

    @staticmethod
    def for_data(kind: DataKind, schema: Schema, protocol: RunProtocol) -> "ModelSpace":
        if kind == DataKind.TABULAR:
            return ModelSpace(schema, TabularEncoder(schema, "codes" if protocol == RunProtocol.PAPER else "onehot"))
        if kind == DataKind.DISCRETE:
            if protocol == RunProtocol.PAPER:  # the seeds feed every integer code to the Gaussian kernel
                # (github.com/ParkLabML/DP-HP dp_mehp/discretized_datasets.py)
                return ModelSpace(schema, TabularEncoder(_all_ordinal(schema), "codes"))
            return ModelSpace(schema, TabularEncoder(schema, "onehot"))
        if kind == DataKind.IMAGE:
            return ModelSpace(schema, None, pixels=True)
        return ModelSpace(schema, None)

    @property
    def image_shape(self) -> tuple[int, int, int] | None:
        """(C, H, W) from the schema's public fact, for image data; else None."""
        fact = self.schema.public_fact("image_shape")
        return None if fact is None else tuple(int(v) for v in fact.value)

    @property
    def width(self) -> int:
        return self.encoder.width if self.encoder else self.schema.n_features

    @property
    def numerical(self) -> np.ndarray:
        if self.encoder is None:
            return np.arange(self.schema.n_features)
        return self.encoder.indices(ColumnKind.NUMERICAL, ColumnKind.ORDINAL)

    @property
    def categorical(self) -> np.ndarray:
        if self.encoder is None:
            return np.zeros(0, dtype=np.int64)
        return self.encoder.indices(ColumnKind.CATEGORICAL, ColumnKind.BINARY)

    @property
    def n_categorical_columns(self) -> int:
        return self.encoder.n_categorical_columns if self.encoder else 0

    def categorical_norm_bound(self) -> float:
        """Upper bound on ‖x_cat‖² / d_cat over every valid row: 1 for one-hot and binary blocks
        (one 1 per column at most); for the paper's integer codes, Σ_j (k_j − 1)² / d_cat."""
        if self.n_categorical_columns == 0:
            return 0.0
        if self.encoder.mode == "onehot":
            return 1.0
        largest = [
            (len(c.categories) - 1) ** 2 if c.kind == ColumnKind.CATEGORICAL else 1
            for c in self.encoder.schema.columns
            if c.kind in (ColumnKind.CATEGORICAL, ColumnKind.BINARY)
        ]
        return sum(largest) / self.n_categorical_columns

    def coordinate_ranges(self) -> np.ndarray:
        """Public range of each numerical coordinate of the model space (1 when scaled)."""
        if self.encoder is None or self.encoder.mode == "onehot":
            return np.ones(len(self.numerical))
        ranges = []
        for column in self.encoder.schema.columns:
            if column.kind == ColumnKind.NUMERICAL:
                low, high = column.bounds
                ranges.append(high - low)
            elif column.kind == ColumnKind.ORDINAL:
                ranges.append(max(len(column.categories) - 1, 1))
        return np.asarray(ranges, dtype=np.float64)

    def coordinate_spans(self) -> np.ndarray:
        """Public range of *every* coordinate of the model space: 1 for [0, 1]-scaled, one-hot and
        binary coordinates; under the paper's codes a numerical column's public bounds and a
        categorical or ordinal column's k − 1; 1 for a raw column without bounds (2-D data)."""
        if self.encoder is None:
            return np.asarray([c.bounds[1] - c.bounds[0] if c.bounds else 1.0 for c in self.schema.columns])
        if self.encoder.mode == "onehot":
            return np.ones(self.width)
        spans = []
        for column in self.encoder.schema.columns:
            if column.kind == ColumnKind.NUMERICAL:
                spans.append(column.bounds[1] - column.bounds[0] if column.bounds else 1.0)
            elif column.kind in (ColumnKind.CATEGORICAL, ColumnKind.ORDINAL):
                spans.append(max(len(column.categories) - 1, 1))
            else:
                spans.append(1.0)
        return np.asarray(spans, dtype=np.float64)

    def coordinate_midpoints(self) -> np.ndarray:
        """The middle of each coordinate's public range (see :meth:`coordinate_spans`): a
        numerical column's (low + high)/2, a code's (k − 1)/2, 0.5 for [0, 1]-scaled, one-hot and
        binary coordinates; 0 for a raw column without bounds."""
        if self.encoder is None:
            return np.asarray([(c.bounds[0] + c.bounds[1]) / 2 if c.bounds else 0.0 for c in self.schema.columns])
        if self.encoder.mode == "onehot":
            return np.full(self.width, 0.5)
        middles = []
        for column in self.encoder.schema.columns:
            if column.kind == ColumnKind.NUMERICAL:
                middles.append((column.bounds[0] + column.bounds[1]) / 2 if column.bounds else 0.0)
            elif column.kind in (ColumnKind.CATEGORICAL, ColumnKind.ORDINAL):
                middles.append((len(column.categories) - 1) / 2)
            else:
                middles.append(0.5)
        return np.asarray(middles, dtype=np.float64)

    def encode(self, x: np.ndarray) -> np.ndarray:
        return self.encoder.encode(x) if self.encoder else x.astype(np.float32)

    def decode(self, z: np.ndarray) -> np.ndarray:
        return self.encoder.decode(z) if self.encoder else z

    def output_head(self) -> nn.Module:
        return nn.Sigmoid() if self.pixels else OutputHead(self)


class OutputHead(nn.Module):
    """Keeps each block of the generator's output valid: softmax over a one-hot categorical
    block, sigmoid for [0, 1]-scaled and binary values; for the paper's codes, ReLU on numbers
    and sigmoid on categorical codes, as the reference code (which can then only emit codes 0
    and 1: github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py)."""

    def __init__(self, space: ModelSpace) -> None:
        super().__init__()
        self.groups: list[tuple[str, list[int]]] = []
        if space.encoder is None:
            return
        codes = space.encoder.mode == "codes"
        ranged = codes and space.range_outputs
        for block in space.encoder.blocks:
            positions = list(range(block.start, block.stop))
            if block.kind == ColumnKind.CATEGORICAL and not codes:
                self.groups.append(("softmax", positions))
            elif block.kind in (ColumnKind.NUMERICAL, ColumnKind.ORDINAL) and codes:
                self.groups.append(("range" if ranged else "relu", positions))
            else:
                self.groups.append(("sigmoid", positions))
        # The head works on the output's columns (the transpose, W × B): there every block is a
        # contiguous slab, and softmax over a slab's first dimension runs along the batch in
        # vector registers (census, sound: 40 blocks of 1–52 columns × 0.5·n rows; row-major
        # per-block softmax or full-width masked operations cost 10–15× more). ``split`` and
        # ``cat`` are one view each and one copy: their backward passes write no per-block
        # full-size gradients. The generators emit column-major outputs so the transpose is free.
        self.segments: list[tuple[str, int]] = []  # (activation, columns), consecutive runs
        for activation, positions in self.groups:
            if self.segments and activation != "softmax" and self.segments[-1][0] == activation:
                self.segments[-1] = (activation, self.segments[-1][1] + len(positions))
            else:
                self.segments.append((activation, len(positions)))
        if ranged:  # each coordinate's public low and span, as a column (the head works on W × B)
            spans, lows = space.coordinate_spans(), space.coordinate_midpoints() - space.coordinate_spans() / 2
            self.register_buffer("low", torch.as_tensor(lows, dtype=torch.float32)[:, None])
            self.register_buffer("span", torch.as_tensor(spans, dtype=torch.float32)[:, None])

    def forward(self, raw: torch.Tensor) -> torch.Tensor:
        if not self.groups:
            return raw
        columns = raw.T.contiguous()  # a view when the generator emits column-major outputs
        pieces = columns.split([width for _, width in self.segments])
        out, start = [], 0
        for (activation, width), piece in zip(self.segments, pieces):
            if activation == "range":
                out.append(self.low[start : start + width] + self.span[start : start + width] * torch.sigmoid(piece))
            else:
                out.append(_ACTIVATIONS[activation](piece))
            start += width
        return torch.cat(out).T


def column_softmax(columns: torch.Tensor) -> torch.Tensor:
    """Softmax down each column (a categorical block's codes × the batch). Spelled out from
    column reductions, which sum each column in one order at any thread count: torch's fused
    softmax along dim 0 does not (another result at 2 threads than at 1 for some batch sizes),
    and the runner lends idle cores only to fits whose results do not depend on it."""
    exp = (columns - columns.max(0, keepdim=True).values).exp()
    return exp / exp.sum(0, keepdim=True)


_ACTIVATIONS = {"sigmoid": torch.sigmoid, "relu": torch.relu, "softmax": column_softmax}


# median of |U − U'| for independent U, U' ~ Uniform[0, 1]: P(|U − U'| ≤ t) = 1 − (1 − t)² = ½
UNIFORM_MEDIAN_GAP = 1 - 1 / math.sqrt(2)


def uniform_median_distance(dimension: int) -> float:
    """≈ median distance between two uniform points of the unit cube, √(d/6): a length scale
    that needs nothing but the public bounds (replaces the seeds' private median heuristic)."""
    return math.sqrt(max(dimension, 1) / 6.0)
