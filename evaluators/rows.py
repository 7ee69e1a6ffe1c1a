"""What the output-privacy and fidelity evaluators share: a mixed-type distance over the public
encoding, and class-matched subsets of the real splits.

Distance: each row encoded as ``bench.core.encoding.TabularEncoder`` does for the generators
(numerical columns scaled to [0, 1] by their public bounds, ordinal codes to [0, 1], binary 0/1),
except that a categorical column's one-hot block is divided by √2, so that two different
categories are 1 apart, like the ends of a numerical range: every column contributes at most 1 to
the squared Euclidean distance (a Gower-like L2). The label is one more categorical column. A
numerical column without public bounds (``gmm2d``) is scaled by the real training rows' range:
the evaluators see the real rows anyway, and nothing they compute is released to a method.
"""

from __future__ import annotations

import math

import numpy as np

from bench.core.data import ColumnKind, LabelledData, Schema


def distance_features(data: LabelledData, reference: LabelledData) -> np.ndarray:
    """``data`` (features and label) in the mixed-type distance space; ``reference`` (the real
    training rows) only scales numerical columns that have no public bounds."""
    columns = []
    for j, column in enumerate(data.schema.columns):
        values = data.x[:, j].astype(np.float64)
        if column.kind == ColumnKind.CATEGORICAL:
            columns.append(_one_hot(values, len(column.categories)))
        elif column.kind == ColumnKind.ORDINAL:
            columns.append((values / max(len(column.categories) - 1, 1))[:, None])
        elif column.kind == ColumnKind.BINARY:
            columns.append(values[:, None])
        else:
            low, high = (
                column.bounds if column.bounds is not None else (reference.x[:, j].min(), reference.x[:, j].max())
            )
            columns.append(((np.clip(values, low, high) - low) / max(high - low, 1e-12))[:, None])
    columns.append(_one_hot(data.y.astype(np.float64), data.schema.n_classes))
    return np.hstack(columns)


def _one_hot(codes: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros((len(codes), k))
    out[np.arange(len(codes)), codes.astype(np.int64)] = 1 / math.sqrt(2)
    return out


def is_tabular(schema: Schema) -> bool:
    """Rows of public columns (not images): what these distances are defined on."""
    return schema.public_fact("image_shape") is None


def class_matched(
    train: LabelledData, test: LabelledData, cap: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices of ``members`` (training rows), ``non_members`` (test rows) and ``reference`` (other
    test rows), with members and non-members of the same size *per class* — undersampling makes
    the training split's class mix differ from the test split's, and an attack must not score
    that — and the reference drawn in the training split's class proportions. At most ``cap``
    members; the test rows are split half non-members, half reference."""
    classes = train.schema.n_classes
    train_by_class = [rng.permutation(np.flatnonzero(train.y == c)) for c in range(classes)]
    test_by_class = [rng.permutation(np.flatnonzero(test.y == c)) for c in range(classes)]
    sizes = np.array([min(len(a), len(b) // 2) for a, b in zip(train_by_class, test_by_class)])
    if sizes.sum() > cap:
        sizes = np.floor(sizes * cap / sizes.sum()).astype(int)
    members = np.concatenate([a[:m] for a, m in zip(train_by_class, sizes)]).astype(np.int64)
    non_members = np.concatenate([b[:m] for b, m in zip(test_by_class, sizes)]).astype(np.int64)
    left = np.setdiff1d(np.arange(len(test)), non_members)
    return members, non_members, left[in_class_mix(subset(test, left), train, cap, rng)]


def in_class_mix(rows: LabelledData, like: LabelledData, cap: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of as many of ``rows`` as can be drawn (at most ``cap``) in ``like``'s class
    proportions (a test split's rows in the undersampled training split's class mix)."""
    classes = like.schema.n_classes
    shares = np.bincount(like.y, minlength=classes) / max(len(like), 1)
    by_class = [rng.permutation(np.flatnonzero(rows.y == c)) for c in range(classes)]
    available = np.array([len(b) for b in by_class])
    total = min(cap, int(np.min(np.where(shares > 0, available / np.maximum(shares, 1e-12), np.inf))))
    return np.concatenate([b[: int(round(total * s))] for b, s in zip(by_class, shares)]).astype(np.int64)


def subset(data: LabelledData, index: np.ndarray) -> LabelledData:
    return LabelledData(data.x[index], data.y[index], data.schema)
