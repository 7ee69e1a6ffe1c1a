"""``adult-discrete``: the seeds' "simple" discretized Adult (Table 1; DP-HP (arXiv:2106.05042) Sec. 5.2).

Rows: SDGym's adult train — ``adult.data`` shuffled by ``np.random.seed(0)``, the last 10,000
rows dropped — 22,561 rows, 15 columns (the 14 features and the income label). The 10,000
dropped rows are the test split. Recipe (github.com/mvinaroz/dp-hp, in its history: "bounded" then "simple"
from the seeds' ``discretization_funs.py``, verified there to reproduce the seeds' file on every
column):

- age: min(v, 70) // 10 → 1..7 (7 bins; public bounds [17, 90])
- fnlwgt: min(v, 500,000) // 50,000 → 0..10
- education-num: 1..16; education, workclass, marital-status, occupation, relationship, sex:
  their category codes
- race, native-country: min(code, 1) → the first category vs the rest
- capital-gain: min(v, 15,000) // 1,500, then min(·, 1) → v ≥ 1,500; capital-loss:
  min(v, 2,500) // 250, then min(·, 1) → v ≥ 250
- hours-per-week: min(v // 10, 6) // 2 → 0..3
- income: 0/1

Deviation: SDGym codes categories by descending frequency (a private order); here codes follow
``adult.names``. Marginal errors do not depend on code order, and the two capped columns agree
because ``adult.names`` lists the most frequent value first in both (White, United-States).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from datasets.files import fetch
from bench.core.data import Column, ColumnKind, PublicFact
from datasets import adult
from datasets.discrete import DiscreteDataset, bin_by_width, discrete_schema
from datasets.tabular_io import sdgym_shuffle


def _ordinal(name: str, labels: list[str]) -> Column:
    return Column(name, ColumnKind.ORDINAL, categories=tuple(labels))


def _categorical(name: str, labels: tuple[str, ...]) -> Column:
    return Column(name, ColumnKind.CATEGORICAL, categories=tuple(labels))


COLUMNS = (
    _ordinal("age", ["17-19", "20-29", "30-39", "40-49", "50-59", "60-69", "70+"]),
    _categorical("workclass", adult.WORKCLASS),
    _ordinal("fnlwgt", [f"{50 * i}k-{50 * (i + 1)}k" for i in range(10)] + ["500k+"]),
    _ordinal("education", list(adult.EDUCATION)),
    _ordinal("education-num", [str(v) for v in range(1, 17)]),
    _categorical("marital-status", adult.MARITAL_STATUS),
    _categorical("occupation", adult.OCCUPATION),
    _categorical("relationship", adult.RELATIONSHIP),
    _categorical("race", ("White", "other")),
    _categorical("sex", adult.SEX),
    _ordinal("capital-gain", ["<1500", ">=1500"]),
    _ordinal("capital-loss", ["<250", ">=250"]),
    _ordinal("hours-per-week", ["1-19", "20-39", "40-59", "60+"]),
    _categorical("native-country", ("United-States", "other")),
    _categorical("income", adult.CLASSES),
)

SCHEMA = discrete_schema(
    COLUMNS,
    (
        PublicFact("marginal_alphas", (2, 3, 4), "evaluation setting, not data: the seeds' Table 1 reports α = 3, 4"),
        PublicFact(
            "published_rows",
            {"SDGym adult train": 22_561},
            "adult.names: 32,561 rows in adult.data; SDGym keeps all but its last 10,000 shuffled rows",
        ),
    ),
)


def discretize(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Raw ``adult`` rows (schema of ``datasets.adult``) → the 15 codes of ``COLUMNS``."""
    col = {column.name: x[:, j] for j, column in enumerate(adult.COLUMNS)}
    codes = [
        bin_by_width(np.minimum(col["age"], 70), 10, 7) - 1,
        col["workclass"],
        bin_by_width(np.minimum(col["fnlwgt"], 500_000), 50_000, 10),
        col["education"],
        col["education-num"] - 1,
        col["marital-status"],
        col["occupation"],
        col["relationship"],
        np.minimum(col["race"], 1),
        col["sex"],
        np.minimum(bin_by_width(np.minimum(col["capital-gain"], 15_000), 1_500, 10), 1),
        np.minimum(bin_by_width(np.minimum(col["capital-loss"], 2_500), 250, 10), 1),
        bin_by_width(np.minimum(np.floor(col["hours-per-week"] / 10), 6), 2, 3),
        np.minimum(col["native-country"], 1),
        y,
    ]
    return np.stack([np.asarray(c, dtype=np.int64) for c in codes], axis=1)


def read(data_dir: Path | None) -> tuple[np.ndarray, np.ndarray]:
    table = adult._read_file(fetch(adult.TRAIN_FILE, data_dir), skip_first_line=False)
    order = sdgym_shuffle(len(table.y))
    train, test = order[: -adult.SDGYM_TEST_ROWS], order[-adult.SDGYM_TEST_ROWS :]
    return discretize(table.x[train], table.y[train]), discretize(table.x[test], table.y[test])


ADULT_DISCRETE = DiscreteDataset(
    name="adult-discrete",
    description="Adult discretized as the seeds' Table 1 ('simple'): 22,561 rows × 15 columns incl. income",
    schema=SCHEMA,
    read=read,
    recipe=__doc__,
)
