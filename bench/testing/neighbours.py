"""The kit's test data: rows redrawn from the public domain, adversarial replace-one neighbours,
and how two releases' values are compared."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.core.data import ColumnKind, LabelledData
from bench.privacy.ledger import ReleaseEvent
from bench.privacy.releases import GaussianRelease


# ---- test datasets: public-domain redraws and adversarial neighbours ---------------------------------


def _column_range(data: LabelledData, j: int) -> tuple[float, float]:
    """A numerical column's public bounds; without them, the rows' range (the kit's own use only)."""
    column = data.schema.columns[j]
    if column.bounds is not None:
        return float(column.bounds[0]), float(column.bounds[1])
    return float(data.x[:, j].min()), float(data.x[:, j].max())


def column_codes(data: LabelledData, j: int) -> int | None:
    column = data.schema.columns[j]
    if column.categories is not None:
        return len(column.categories)
    return 2 if column.kind == ColumnKind.BINARY else None


def redrawn_from_public_domain(data: LabelledData, rng: np.random.Generator) -> LabelledData:
    """As many rows as ``data``, each value drawn uniformly from its column's public domain and
    each label uniformly from the classes: a dataset unrelated to ``data`` but of its public size."""
    n = len(data)
    columns = []
    for j in range(data.schema.n_features):
        codes = column_codes(data, j)
        if codes is not None:
            columns.append(rng.integers(0, codes, n).astype(np.float32))
        else:
            low, high = _column_range(data, j)
            columns.append(rng.uniform(low, high, n).astype(np.float32))
    x = np.stack(columns, 1) if columns else np.zeros((n, 0), np.float32)
    return LabelledData(x, rng.integers(0, data.schema.n_classes, n).astype(data.y.dtype), data.schema)


def adversarial_neighbour(data: LabelledData, row: int) -> LabelledData:
    """``data`` with one row replaced (replace-one): each value moved to the far end of its
    column's public domain, the label to another class."""
    x, y = data.x.copy(), data.y.copy()
    for j in range(data.schema.n_features):
        codes = column_codes(data, j)
        low, high = (0.0, float(codes - 1)) if codes is not None else _column_range(data, j)
        x[row, j] = low if abs(x[row, j] - low) > abs(x[row, j] - high) else high
    y[row] = (y[row] + 1) % data.schema.n_classes
    return LabelledData(x, y, data.schema)


# ---- comparing values ----------------------------------------------------------------------------------


def clean_distance(mine: ReleaseEvent, theirs: ReleaseEvent) -> float:
    """How far one release's clean value moved between two fits, in its declared norm: the largest
    over the values released separately (``each``), or the whole list as one vector (a DP-SGD step)."""
    release = mine.release
    if not isinstance(release, GaussianRelease) and getattr(release, "mechanism", "") == "exponential":
        return float(np.max(np.abs(_numpy(mine.clean) - _numpy(theirs.clean)), initial=0.0))
    order = 2 if isinstance(release, GaussianRelease) else 1
    pairs = (
        list(zip(mine.clean, theirs.clean)) if isinstance(mine.clean, (list, tuple)) else [(mine.clean, theirs.clean)]
    )
    differences = [(_numpy(a).astype(np.float64) - _numpy(b).astype(np.float64)).ravel() for a, b in pairs]
    if not mine.each:
        differences = [np.concatenate(differences)] if differences else []
    return max((float(np.linalg.norm(d, order)) for d in differences), default=0.0)


def same_rows(a: LabelledData, b: LabelledData) -> bool:
    return np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)


def is_additive(event: ReleaseEvent) -> bool:
    """Gaussian (incl. DP-SGD steps) and Laplace releases add noise to a clean value."""
    return isinstance(event.release, GaussianRelease) or getattr(event.release, "mechanism", "") == "laplace"


def close_values(clean: Any, noisy: Any) -> bool:
    pairs = zip(clean, noisy) if isinstance(clean, (list, tuple)) else [(clean, noisy)]
    return all(np.allclose(_numpy(a), _numpy(b), rtol=1e-6, atol=1e-9) for a, b in pairs)


def _numpy(value: Any) -> np.ndarray:
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
