"""Encoding tabular rows for generators and classifiers, from the public schema only.

Rows of a tabular ``LabelledData`` hold raw codes: numbers for numerical columns, the index into
``Column.categories`` for ordinal and categorical columns, 0/1 for binary ones. Two encodings:

* ``onehot`` (sound default): numerical columns scaled to [0, 1] by their *public* bounds (values
  outside are clipped, so feature norms — hence sensitivities — hold), ordinal columns as
  rank / (k − 1) in [0, 1], categorical columns one-hot, binary columns as 0/1.
* ``codes`` (paper-compat): the reference code's raw values — numbers unscaled, categorical
  integer codes as they are. Its consequence: ‖x_cat‖² is no longer bounded by the number of
  categorical columns, so a method must use a larger sensitivity (DP-MERF (arXiv:2002.11603) App. G
  bounds one-hot codes; github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py feeds integer codes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from bench.core.data import ColumnKind, Schema

EncodingMode = Literal["onehot", "codes"]


@dataclass(frozen=True)
class Block:
    """Where one column lives in the encoded vector."""

    column: int
    start: int
    stop: int
    kind: ColumnKind


class SchemaError(ValueError):
    pass


@dataclass(frozen=True)
class TabularEncoder:
    schema: Schema
    mode: EncodingMode = "onehot"

    def __post_init__(self) -> None:
        for column in self.schema.columns:
            if column.kind == ColumnKind.NUMERICAL and self.mode == "onehot" and column.bounds is None:
                raise SchemaError(f"numerical column {column.name!r} needs public bounds in the schema")
            if column.kind in (ColumnKind.CATEGORICAL, ColumnKind.ORDINAL) and not column.categories:
                raise SchemaError(f"column {column.name!r} needs its public category list in the schema")

    @property
    def blocks(self) -> list[Block]:
        blocks, start = [], 0
        for index, column in enumerate(self.schema.columns):
            width = len(column.categories) if column.kind == ColumnKind.CATEGORICAL and self.mode == "onehot" else 1
            blocks.append(Block(index, start, start + width, column.kind))
            start += width
        return blocks

    @property
    def width(self) -> int:
        return self.blocks[-1].stop if self.schema.columns else 0

    def indices(self, *kinds: ColumnKind) -> np.ndarray:
        """Encoded positions of the columns of these kinds."""
        return np.array([i for b in self.blocks if b.kind in kinds for i in range(b.start, b.stop)], dtype=np.int64)

    @property
    def n_categorical_columns(self) -> int:
        """Columns in the 'categorical' block of a sum kernel (categorical and binary)."""
        return sum(c.kind in (ColumnKind.CATEGORICAL, ColumnKind.BINARY) for c in self.schema.columns)

    def validate(self, x: np.ndarray) -> None:
        """Refuse rows outside the public domain: the feature maps' sensitivity bounds assume
        binary values in {0, 1}, category codes in 0..k−1 and finite numbers (numerical values
        are clipped to their public bounds by ``encode``)."""
        if not np.isfinite(x).all():
            raise SchemaError("rows contain NaN or infinite values; impute or drop them before encoding")
        for block, column in zip(self.blocks, self.schema.columns):
            values = x[:, block.column]
            if block.kind == ColumnKind.BINARY:
                allowed = "0 or 1"
                bad = ~np.isin(values, (0, 1))
            elif block.kind in (ColumnKind.CATEGORICAL, ColumnKind.ORDINAL):
                allowed = f"integer codes 0..{len(column.categories) - 1}"
                bad = (values != np.rint(values)) | (values < 0) | (values > len(column.categories) - 1)
            else:
                continue
            if bad.any():
                raise SchemaError(
                    f"column {column.name!r} holds {int(bad.sum())} value(s) outside its public domain "
                    f"(e.g. {values[bad][0]:g}; allowed: {allowed}); fix the data file or the schema"
                )

    def encode(self, x: np.ndarray) -> np.ndarray:
        self.validate(x)
        out = np.zeros((len(x), self.width), dtype=np.float32)
        for block, column in zip(self.blocks, self.schema.columns):
            values = x[:, block.column]
            if self.mode == "codes":
                if block.kind == ColumnKind.NUMERICAL and column.bounds is not None:
                    values = np.clip(values, *column.bounds)
                out[:, block.start] = values
            elif block.kind == ColumnKind.NUMERICAL:
                low, high = column.bounds
                out[:, block.start] = (np.clip(values, low, high) - low) / (high - low)
            elif block.kind == ColumnKind.ORDINAL:
                out[:, block.start] = values / max(len(column.categories) - 1, 1)
            elif block.kind == ColumnKind.CATEGORICAL:
                out[np.arange(len(x)), block.start + values.astype(np.int64)] = 1.0
            else:
                out[:, block.start] = values
        return out

    def decode(self, z: np.ndarray) -> np.ndarray:
        """Map encoded (e.g. generated) vectors back to valid raw codes in the schema."""
        x = np.zeros((len(z), len(self.schema.columns)), dtype=np.float32)
        for block, column in zip(self.blocks, self.schema.columns):
            values = z[:, block.start : block.stop]
            if block.kind == ColumnKind.NUMERICAL:
                low, high = column.bounds if column.bounds else (-np.inf, np.inf)
                raw = values[:, 0] if self.mode == "codes" else low + np.clip(values[:, 0], 0, 1) * (high - low)
                x[:, block.column] = np.clip(raw, low, high)
            elif block.kind == ColumnKind.ORDINAL:
                top = len(column.categories) - 1
                scaled = values[:, 0] if self.mode == "codes" else values[:, 0] * top
                x[:, block.column] = np.clip(np.rint(scaled), 0, top)
            elif block.kind == ColumnKind.CATEGORICAL:
                top = len(column.categories) - 1
                codes = np.rint(values[:, 0]) if self.mode == "codes" else values.argmax(axis=1)
                x[:, block.column] = np.clip(codes, 0, top)
            else:
                x[:, block.column] = values[:, 0] > 0.5
        return x
