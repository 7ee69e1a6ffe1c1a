"""Public building blocks for a method: the count queries of every column's 1-way histogram
(``one_way_queries``, for a ``PrivateData`` handle) and a sampler of independent columns from
released histograms (``ColumnSampler``). Built on the schema's public domains only; the
``independent`` baseline and the README's example method use them, so a plugin needs nothing
from ``methods/``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from bench.core.data import Column, ColumnKind, LabelledData, Schema
from bench.privacy.private_data import CountQuery  # counts: replace-one moves one −1, another +1


@dataclass
class ColumnSampler:
    """Independent columns: per column a probability vector over its bins (codes, or equal-width
    bins of a numerical column's public bounds), and the label's."""

    schema: Schema
    column_probabilities: list[np.ndarray]
    label_probabilities: np.ndarray
    rng: np.random.Generator

    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        x = np.zeros((n, self.schema.n_features), dtype=np.float32)
        for j, (column, probabilities) in enumerate(zip(self.schema.columns, self.column_probabilities)):
            bins = self.rng.choice(len(probabilities), size=n, p=probabilities)
            if column.kind == ColumnKind.NUMERICAL:
                low, high = column.public_bounds()
                width = (high - low) / len(probabilities)
                x[:, j] = low + (bins + self.rng.random(n)) * width  # uniform within the drawn bin
            else:
                x[:, j] = bins
        if labels is None:
            labels = self.rng.choice(len(self.label_probabilities), size=n, p=self.label_probabilities)
        return LabelledData(x, np.asarray(labels, dtype=np.int64), self.schema)

    @classmethod
    def from_histograms(
        cls, schema: Schema, histograms: Sequence[np.ndarray], rng: np.random.Generator
    ) -> "ColumnSampler":
        """From noisy 1-way histograms — every column's, then the label's, as :func:`one_way_queries`
        asks for them — made probabilities (negative counts clipped; an all-zero one uniform).
        Post-processing of released values: free."""
        *columns, label = [probabilities(h) for h in histograms]
        return cls(schema, columns, label, rng)


def probabilities(noisy_counts: np.ndarray) -> np.ndarray:
    """A noisy histogram as a probability vector: negative counts clipped at 0, then normalised;
    uniform when nothing is left."""
    clipped = np.clip(noisy_counts, 0.0, None)
    return clipped / clipped.sum() if clipped.sum() > 0 else uniform_probabilities(len(clipped))


def one_way_queries(schema: Schema, n_bins: int = 20, label: bool = True) -> list[CountQuery]:
    """The handle's count queries for every column's 1-way histogram — its codes, or ``n_bins``
    equal-width bins of a numerical column's public bounds — and, with ``label``, the label's."""
    queries = [
        CountQuery(
            f"1-way marginal of {column.name}",
            _column_codes(j, column, n_bins),
            n_bins if column.kind == ColumnKind.NUMERICAL else column.domain_size(),
        )
        for j, column in enumerate(schema.columns)
    ]
    if label:
        queries.append(CountQuery(f"1-way marginal of the label {schema.label}", lambda rows: rows.y, schema.n_classes))
    return queries


def _column_codes(j: int, column: Column, n_bins: int) -> Callable[[LabelledData], np.ndarray]:
    """Row → bin of column ``j``: equal-width bins of a numerical column's public bounds, else its code."""
    if column.kind == ColumnKind.NUMERICAL:
        low, high = column.public_bounds()
        return lambda rows: np.floor((rows.x[:, j] - low) / (high - low) * n_bins)
    return lambda rows: np.rint(rows.x[:, j])


def uniform_probabilities(size: int) -> np.ndarray:
    return np.full(size, 1.0 / size)
