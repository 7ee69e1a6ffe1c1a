"""``census-discrete``: Census-Income discretized by the seeds' rule (Table 1; DP-HP (arXiv:2106.05042) Sec. 5.2).

Rows: ``census-income.data`` (199,523 rows, SDGym's census train, which the seeds read); the 40
attributes and the income label, 41 columns (the instance weight is dropped, as in ``census``).
``census-income.test`` (99,762 rows) is the test split.

Recipe: the seeds' ``code_tab/discretization_funs.py`` (github.com/mvinaroz/dp-hp history) divides every column
whose maximum exceeds 50 by max // 10 ("bounded"), then squeezes columns whose maximum still
exceeds 18 ("simple"). Here the maximum is the *public* one — the documented upper bound of a
numerical column (``datasets.census.BOUNDS``) or the number of listed categories − 1 — never the
rows' maximum, and the "simple" squeeze is the same division by max // 10 with threshold 18 (the
seeds' exact squeeze is not recoverable: their census file is not public). So:

- age [0, 90] → //9, 11 bins; wage per hour [0, 9,999] → //999; capital gains, capital losses,
  dividends [0, 99,999] → //9,999 (11 bins each). The seeds divide by the private maxima
  (e.g. capital losses' 4,608), so their bins are finer where the data are.
- weeks worked [0, 52] → //5, 11 bins; num persons worked for employer: 7 values, unchanged.
- categorical columns keep their ``census-income.names`` codes when they have at most 19
  values; larger ones (industry 52, occupation 47, household-family 38, major industry 24,
  state 52, the three countries 43) are grouped by integer division of the code — adjacent codes
  in the public ``census-income.names`` order, where the seeds' SDGym codes follow the private
  frequency order (so they merge rare categories).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from datasets.files import fetch
from bench.core.data import Column, ColumnKind, PublicFact
from datasets import census
from datasets.discrete import DiscreteDataset, bin_by_width, discrete_schema

BOUNDED_THRESHOLD = 50  # "bounded": columns whose maximum exceeds this are divided by max // 10
SIMPLE_THRESHOLD = 18  # "simple": then again for those whose maximum still exceeds this


def _divisors(maximum: int) -> list[int]:
    """The integer divisions the two passes apply to a column with this public maximum."""
    divisors = []
    for threshold in (BOUNDED_THRESHOLD, SIMPLE_THRESHOLD):
        if maximum > threshold:
            divisors.append(maximum // 10)
            maximum //= maximum // 10
    return divisors


def _public_maximum(column: Column) -> int:
    if column.kind == ColumnKind.NUMERICAL:
        return int(column.bounds[1])
    return len(column.categories) - 1


def _bin_labels(column: Column, divisors: list[int]) -> tuple[str, ...]:
    width = int(np.prod(divisors)) if divisors else 1
    top = _public_maximum(column)
    if column.kind != ColumnKind.NUMERICAL and width == 1:
        return column.categories
    low = int(column.bounds[0]) if column.kind == ColumnKind.NUMERICAL else 0
    labels = []
    for start in range(low, top + 1, width):
        stop = min(start + width - 1, top)
        if column.kind == ColumnKind.NUMERICAL:
            labels.append(f"{start}-{stop}" if stop > start else str(start))
        else:
            labels.append(" | ".join(column.categories[start : stop + 1]))
    return tuple(labels)


def _discrete_column(column: Column) -> tuple[Column, list[int]]:
    divisors = _divisors(_public_maximum(column))
    labels = _bin_labels(column, divisors)
    kind = ColumnKind.ORDINAL if column.kind == ColumnKind.NUMERICAL else ColumnKind.CATEGORICAL
    return Column(column.name, kind, categories=labels), divisors


_PLAN = [_discrete_column(column) for column in census.COLUMNS]
COLUMNS = tuple(column for column, _ in _PLAN) + (Column("income", ColumnKind.CATEGORICAL, categories=census.CLASSES),)
SCHEMA = discrete_schema(
    COLUMNS,
    (
        PublicFact(
            "marginal_alphas",
            (2, 3),
            "evaluation setting, not data: the seeds' Table 1 reports α = 2, 3; "
            "α = 4 (101,270 subsets) costs ≈ 3 min per convention on 2 cores",
        ),
        PublicFact(
            "published_rows", {"census-income.data": 199_523}, "census-income.names: Number of instances data = 199523"
        ),
    ),
)


def discretize(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    codes = []
    for j, (column, divisors) in enumerate(_PLAN):
        values = x[:, j] - (census.COLUMNS[j].bounds[0] if census.COLUMNS[j].bounds else 0)
        width = int(np.prod(divisors)) if divisors else 1
        codes.append(bin_by_width(np.maximum(values, 0), width, len(column.categories) - 1))
    codes.append(y.astype(np.int64))
    return np.stack(codes, axis=1)


def read(data_dir: Path | None) -> tuple[np.ndarray, np.ndarray]:
    train = census._read_file(fetch(census.TRAIN_FILE, data_dir))
    test = census._read_file(fetch(census.TEST_FILE, data_dir))
    return discretize(train.x, train.y), discretize(test.x, test.y)


CENSUS_DISCRETE = DiscreteDataset(
    name="census-discrete",
    description="Census-Income discretized by the seeds' rule on public maxima: 199,523 rows × 41 columns incl. income",
    schema=SCHEMA,
    read=read,
    recipe=__doc__,
)
