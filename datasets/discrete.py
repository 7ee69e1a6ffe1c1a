"""Discretized tables: every column a small public domain of integer codes, for α-way marginal
benchmarks (DP-HP (arXiv:2106.05042) Sec. 5.2; the seeds follow PrivBayes, Zhang et al. 2017).

The task is to learn the joint distribution of all columns, the label included (the seeds' code
uses all 15 Adult columns,
github.com/ParkLabML/DP-HP dp_mehp/discretized_datasets.py), so a discretized dataset has one class
("all rows") and its class proportions are public. Bin edges come from public documentation (the
source dataset's schema bounds and category lists), never from the rows; each dataset module
states its recipe and where it deviates from the seeds'.

Both protocols read the same rows: the seeds' training part (SDGym's train) is the private data,
and the source's held-out rows are the test split (the marginal evaluator scores against the
training rows, as the seeds and the marginal-based literature do).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from bench.core.data import PROTOCOLS, DataKind, LabelledData, Schema, Split, discrete_schema  # noqa: F401 (re-exported for the datasets)


def domain_sizes(schema: Schema) -> np.ndarray:
    """Number of codes of every column (the full public domain, empty bins included)."""
    return np.array([len(column.categories) for column in schema.columns], dtype=np.int64)


def bin_by_width(values: np.ndarray, width: int, top: int) -> np.ndarray:
    """``min(v // width, top)``: the seeds' integer-division discretization."""
    return np.minimum(np.floor(values / width), top).astype(np.int64)


@dataclass(frozen=True)
class DiscreteDataset:
    name: str
    description: str
    schema: Schema
    read: Callable[[Path | None], tuple[np.ndarray, np.ndarray]]  # (train codes, test codes)
    recipe: str
    kind: DataKind = DataKind.DISCRETE

    def load(self, data_dir: Path | None, seed: int, protocol: str = "sound") -> Split:
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
        train, test = self.read(data_dir)
        return Split(self._labelled(train), self._labelled(test))

    def _labelled(self, codes: np.ndarray) -> LabelledData:
        sizes = domain_sizes(self.schema)
        if codes.min() < 0 or (codes.max(axis=0) >= sizes).any():
            raise ValueError(f"{self.name}: a code lies outside its column's public domain; fix the recipe")
        return LabelledData(codes.astype(np.float32), np.zeros(len(codes), dtype=np.int64), self.schema)
