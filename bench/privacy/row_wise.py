"""What the private-data handle checks of every query before it releases anything, and the
per-row vector arithmetic of its sums: a feature map or a count query must map each row on its
own (``check_row_wise``, ``check_codes_row_wise`` on the rows ``probe_rows`` picks), else the
sensitivity derived from the shape of one row's vector does not hold; rows are clipped to a norm
ball and summed per class here (``clip_rows``, ``label_sums``).

Both ``sum`` and ``pair_distance_counts`` rest on ``features`` mapping each row on its own (a map
that normalises by statistics of the batch it is given moves every row's vector when one row is
replaced, and the derived sensitivity no longer holds). The handle checks it on each call: the
first and the last row of the first batch, given alone, must come back as they did in the batch
(:func:`check_row_wise`), and so must the probed rows across the batch: the two extreme ones and a
fixed spread of others, alone and in sub-batches of 64 (:func:`probe_rows`). Count queries' codes are checked the same way, exactly
(:func:`check_codes_row_wise`), and must give one code per row. A deterministic probe, drawing
nothing from any run's generator, so no released value moves; a method that wanted to evade it
could, but a mistaken one cannot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from bench.core.data import LabelledData
from bench.core.threads import one_torch_thread


@dataclass(frozen=True)
class CountQuery:
    """The histogram of ``codes(rows)`` (one integer per row; values outside [0, size) are clipped
    to its ends) over ``size`` bins, released as ``what`` (by ``PrivateData.counts`` and its kin)."""

    what: str
    codes: Callable[[LabelledData], np.ndarray]
    size: int


def label_sums(vectors: Any, labels: np.ndarray, n_classes: int) -> Any:
    """Σ_{i: yᵢ = c} vᵢ for every class c (C × d), as one product with the one-hot labels."""
    if hasattr(vectors, "detach"):  # torch
        import torch

        one_hot = torch.nn.functional.one_hot(torch.as_tensor(labels, device=vectors.device).long(), n_classes)
        if vectors.device.type != "cpu":
            return one_hot.to(vectors.dtype).T @ vectors
        # On one thread: the CPU product splits its reduction over the rows by the thread count,
        # so the released sums (and the whole fit) would change with the cores a cell is lent
        # (DP-MERF adult, paper protocol: different samples at 1 and 2 threads).
        with one_torch_thread():
            return one_hot.to(vectors.dtype).T @ vectors
    return np.eye(n_classes, dtype=np.asarray(vectors).dtype)[labels].T @ np.asarray(vectors)


# A row given alone and within a batch goes through products of different shapes (BLAS blocking,
# float32 tiles, cuDNN's batch-size-dependent algorithms), which leaves round-off: about 1e-7 of
# the vector's norm for one product, 5e-7 through seven blocks of EfficientNet-Lite0 (DP-MEPF's
# ``cpu`` profile), where single small entries differ by 1e-3 of themselves — so the comparison is
# of norms, the scale at which a release's L2 sensitivity is stated. A batch statistic moves a row
# by a sizeable fraction of its norm.
ROW_WISE_RTOL, ROW_WISE_ATOL = 1e-4, 1e-6


class NotRowWiseError(ValueError):
    """A query's ``features`` did not map each row on its own."""


PROBED_RANDOM_ROWS = 4  # single rows, besides the first, the last and the two extreme rows
PROBED_SUBSET_ROWS = 64  # rows of each probed sub-batch: the first, the last and a spread of the batch


def probe_rows(batch: np.ndarray) -> list[np.ndarray]:
    """The row sets a row-wise check maps on their own, as index arrays: single rows — the first,
    the last, the rows of largest and smallest norm (an extreme row is where a clipping or a batch
    statistic shows first), ``PROBED_RANDOM_ROWS`` spread over the batch — and three sub-batches
    of ``PROBED_SUBSET_ROWS`` (the first rows, the last, a spread), whose own statistics differ
    from the whole batch's, so a map that normalises by its batch moves their rows even where a
    single row falls back to a default. A fixed draw: nothing is taken from a run's generators, so
    no released value moves. A map that treats one chosen row apart can still pass; one that
    reads a statistic of its batch is caught."""
    n = len(batch)
    if n <= 1:
        return []
    norms = np.linalg.norm(batch.reshape(n, -1).astype(float), axis=1)
    draw = np.random.default_rng(20261128)
    singles = {
        0,
        n - 1,
        int(np.argmax(norms)),
        int(np.argmin(norms)),
        *(int(i) for i in draw.choice(n, size=min(n, PROBED_RANDOM_ROWS), replace=False)),
    }
    probes = [np.array([i]) for i in sorted(singles)]
    size = min(PROBED_SUBSET_ROWS, n // 2)
    if size >= 2:
        probes += [np.arange(size), np.arange(n - size, n), np.sort(draw.choice(n, size=size, replace=False))]
    return probes


def _subset(rows: LabelledData, index: np.ndarray) -> LabelledData:
    return LabelledData(rows.x[index], rows.y[index], rows.schema)


def check_codes_row_wise(query: CountQuery, rows: LabelledData, codes: np.ndarray) -> None:
    """Refuses a count query unless it gives one code per row and the probed rows
    (:func:`probe_rows`), given on their own, get the codes they got among all rows: a code
    computed from a statistic of the rows (a mean, a quantile) moves many bins when one row is
    replaced, and the count's L1 change of 2 is gone."""
    if codes.shape != (len(rows),):
        raise ValueError(f"{query.what}: codes(rows) must give one code per row ({len(rows)}); got shape {codes.shape}")
    for index in probe_rows(np.asarray(codes, dtype=float)):
        alone = np.asarray(query.codes(_subset(rows, index)))
        if alone.shape != index.shape or np.any(alone != codes[index]):
            raise NotRowWiseError(
                f"{query.what}: codes must map each row on its own ({_describe_probe(index)} on its own got other "
                "codes than among all rows): a count's sensitivity holds only for a per-row code, so release any "
                "statistic of the rows through its own query first"
            )


def clean_histogram(query: CountQuery, rows: LabelledData) -> np.ndarray:
    """The query's clean histogram: its codes (checked row-wise) clipped to its bins, counted."""
    given = np.asarray(query.codes(rows))
    check_codes_row_wise(query, rows, given)
    codes = np.clip(given, 0, query.size - 1).astype(np.int64)
    return np.bincount(codes, minlength=query.size).astype(np.float64)


def paired_distances(what: str, features: Callable[[LabelledData], Any], rows: LabelledData, order: Any) -> np.ndarray:
    """The sorted Euclidean distances between the ``features`` (checked row-wise) of the disjoint
    row pairs (order[0], order[1]), (order[2], order[3]), … of a public permutation ``order``."""
    if sorted(np.asarray(order).tolist()) != list(range(len(rows))):
        raise ValueError(f"{what}: order must be a permutation of the {len(rows)} rows")
    z = features(rows)
    check_row_wise(what, features, rows, z)
    z = np.asarray(z, dtype=float)
    paired = np.asarray(order)[: len(rows) // 2 * 2]
    return np.sort(np.linalg.norm(z[paired[0::2]] - z[paired[1::2]], axis=1))


def _describe_probe(index: np.ndarray) -> str:
    """The probe by its size, not its rows: which row has the largest norm is a fact of the private
    rows, and a refusal's message reaches the run's failed record."""
    return "one row" if len(index) == 1 else f"a block of {len(index)} rows"


def check_row_wise(what: str, features: Callable[[LabelledData], Any], rows: LabelledData, vectors: Any) -> None:
    """Refuses ``features`` unless the probed rows of ``rows`` (:func:`probe_rows`), given on their
    own, map to the vectors they got within ``rows`` (``vectors``, n × d), each row within
    round-off of its norm."""
    batch = as_numpy(vectors)
    if batch.ndim != 2 or len(batch) != len(rows):
        raise NotRowWiseError(
            f"{what}: features(rows) must give one vector per row ({len(rows)} × d); got shape {tuple(batch.shape)}"
        )
    for index in probe_rows(batch):
        alone = as_numpy(features(_subset(rows, index)))
        within = batch[index]
        if alone.shape != within.shape or np.any(
            np.linalg.norm(alone - within, axis=1) > ROW_WISE_RTOL * np.linalg.norm(within, axis=1) + ROW_WISE_ATOL
        ):
            raise NotRowWiseError(
                f"{what}: features must map each row on its own ({_describe_probe(index)} on its own gave other "
                "vectors than within the batch): the sensitivity a handle query derives holds only for a per-row map, "
                "so compute any statistic of the rows through its own query first"
            )


RECODING_WHY = "a public map of each row on its own (checked row-wise): replace-one neighbours stay neighbours"


def check_recoding_row_wise(
    what: str, recode: Callable[[LabelledData], LabelledData], rows: LabelledData
) -> LabelledData:
    """``recode(rows)``, refused unless it gives one row per row and each probed row recoded on its
    own (labels included) is the row it became among all rows."""
    recoded = recode(rows)
    if len(recoded) != len(rows):
        raise NotRowWiseError(f"{what}: a recoding maps each row to one row; got {len(recoded)} from {len(rows)}")

    def as_vectors(batch: LabelledData) -> np.ndarray:
        coded = recode(batch)
        return np.column_stack([coded.x, coded.y])

    check_row_wise(what, as_vectors, rows, np.column_stack([recoded.x, recoded.y]))
    return recoded


def flat_rows(tensors: Sequence[Any]) -> np.ndarray:
    """Per-row tensors (rows × anything, several) as one rows × d array."""
    return np.concatenate([as_numpy(t).reshape(len(t), -1) for t in tensors], axis=1)


def as_numpy(vectors: Any) -> np.ndarray:
    if hasattr(vectors, "detach"):  # torch
        return vectors.detach().cpu().double().numpy()
    return np.asarray(vectors, dtype=float)


def clamp_negative(vectors: Any) -> Any:
    """Each entry at least 0; vectors already non-negative are returned as they are (same bits)."""
    if hasattr(vectors, "detach"):  # torch
        return vectors if len(vectors) == 0 or float(vectors.min()) >= 0 else vectors.clamp(min=0)
    vectors = np.asarray(vectors)
    return vectors if vectors.size == 0 or float(vectors.min()) >= 0 else np.maximum(vectors, 0)


def clip_rows(vectors: Any, norm_bound: float) -> Any:
    """Each row scaled to norm ≤ ``norm_bound``; rows already within it are untouched (a factor of
    exactly 1), so when every row is, the multiplication pass is skipped with the same bits."""
    if hasattr(vectors, "detach"):  # torch
        import torch

        norms = torch.linalg.vector_norm(vectors, dim=1, keepdim=True)
        if len(vectors) == 0 or float(norms.max()) <= norm_bound:
            return vectors
        return vectors * torch.clamp(norm_bound / torch.clamp(norms, min=1e-300), max=1.0)
    vectors = np.asarray(vectors)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if len(vectors) == 0 or float(norms.max()) <= norm_bound:
        return vectors
    return vectors * np.minimum(1.0, norm_bound / np.maximum(norms, 1e-300))


def checked_structured_sums(
    what: str, structured: Any, checked: Any, largest_norm: float, norm_bound: float, n_rows: int
) -> tuple[Any, str | None]:
    """The class sums ``PrivateData.structured_sum`` releases: a method's ``structured`` sums when
    they equal the handle's own ``checked`` sums of the rows' clipped features (to 10⁻⁹, the
    round-off of another summation order), so the method keeps its bits; the handle's clipped sums,
    with a caveat, when a row's features exceeded the bound (``largest_norm``); otherwise the
    query is refused (``NotRowWiseError``)."""
    if largest_norm > norm_bound * (1 + 1e-9):
        return checked, (
            # no norm in the text: the ledger is published, and the largest norm is a fact of the rows
            f"{what}: a row's features exceeded the norm bound {norm_bound:g}; the handle's clipped sum was released"
        )
    close = np.allclose(
        as_numpy(structured), as_numpy(checked), rtol=1e-9, atol=1e-12 * max(norm_bound, 1e-300) * max(n_rows, 1)
    )
    if not close:
        raise NotRowWiseError(
            f"{what}: the structured class sums differ from the sums of the rows' own "
            "features: class_sums must be Σ over each class's rows of features(row)"
        )
    return structured, None
