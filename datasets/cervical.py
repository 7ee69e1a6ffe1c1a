"""``cervical``: UCI Cervical cancer (Risk Factors), label ``Biopsy``.

File: ``cervical/kag_risk_factors_cervical_cancer.csv`` (858 rows × 36 columns with a header;
``?`` = missing), the file the seeds' code reads
(github.com/ParkLabML/DP-HP data/Cervical/kag_risk_factors_cervical_cancer.csv).

Rows: rows with 10 or more missing values are dropped (858 → 753 rows, 53 positives), as in the
reference code. The filter looks at each row alone, so it is a row-wise transformation, not a
statistic of the data set.

Features (34, the reference's selection): 12 numerical and 22 binary; ``STDs:vaginal
condylomatosis`` is not used (reference); ``Hinselmann``, ``Schiller`` and ``Citology`` (the
other diagnostic targets) are features, as in the reference.

Imputation of the remaining missing values:
- ``sound``: every missing value becomes 0, a data-independent constant (for binary columns 0 =
  "no"; for numerical ones 0 doubles as a "not reported" code). The reference's per-column median
  would be a statistic of the private rows (a data-dependent release that no method accounts for),
  so it is not used here.
- ``paper``: the reference code's imputation: numerical columns get the column median of the 753
  kept rows, rounded to one decimal; binary columns get 0. The median is computed from all kept
  rows (training and test), exactly as the reference does; this leaks test rows into training and
  is not differentially private — it exists only to reproduce the seeds' numbers.

Numerical bounds (never computed from the rows): ages and durations in years are bounded by a
human lifetime, [0, 100] (Age, First sexual intercourse, Smokes (years), Hormonal Contraceptives
(years), IUD (years), STDs: Time since first/last diagnosis); ``STDs (number)`` counts the 12 STD
types the file lists, [0, 12]. Not documented, benchmark clipping constants: Number of sexual
partners [0, 50], Num of pregnancies [0, 25], Smokes (packs/year) [0, 100], STDs: Number of
diagnosis [0, 12].

Split 80/20 (seeds); training-only undersampling of class 0 at 0.3 (DP-HP grid).
"""

from __future__ import annotations

from dataclasses import replace

from pathlib import Path

import numpy as np
import pandas as pd

from datasets.files import DataFile, fetch
from bench.core.data import ColumnKind, PublicFact, Schema
from datasets.tabular import Table, TabularDataset, Undersampling
from datasets.tabular_io import DataFormatError, binary, code_binary, features, numerical, read_csv

DATA_FILE = DataFile(
    "cervical",
    "kag_risk_factors_cervical_cancer.csv",
    "8df193ad5c9ff4288fb4c401eef70dcd2cbda404ce7f82ac74c68cfc960ab063",
    "https://archive.ics.uci.edu/ml/machine-learning-databases/00383/risk_factors_cervical_cancer.csv",
    "the UCI Machine Learning Repository, Cervical cancer (Risk Factors) (archive.ics.uci.edu/dataset/383), "
    "as copied to Kaggle and to the DP-HP repository",
)

# The file's header (UCI attribute list), in order.
HEADER = (
    "Age",
    "Number of sexual partners",
    "First sexual intercourse",
    "Num of pregnancies",
    "Smokes",
    "Smokes (years)",
    "Smokes (packs/year)",
    "Hormonal Contraceptives",
    "Hormonal Contraceptives (years)",
    "IUD",
    "IUD (years)",
    "STDs",
    "STDs (number)",
    "STDs:condylomatosis",
    "STDs:cervical condylomatosis",
    "STDs:vaginal condylomatosis",
    "STDs:vulvo-perineal condylomatosis",
    "STDs:syphilis",
    "STDs:pelvic inflammatory disease",
    "STDs:genital herpes",
    "STDs:molluscum contagiosum",
    "STDs:AIDS",
    "STDs:HIV",
    "STDs:Hepatitis B",
    "STDs:HPV",
    "STDs: Number of diagnosis",
    "STDs: Time since first diagnosis",
    "STDs: Time since last diagnosis",
    "Dx:Cancer",
    "Dx:CIN",
    "Dx:HPV",
    "Dx",
    "Hinselmann",
    "Schiller",
    "Citology",
    "Biopsy",
)
LABEL = "Biopsy"
UNUSED = "STDs:vaginal condylomatosis"
MAX_MISSING = 10  # rows with this many missing values or more are dropped (reference code)

NUMERICAL_BOUNDS = {  # file order; see the module docstring for each source
    "Age": (0, 100),
    "Number of sexual partners": (0, 50),
    "First sexual intercourse": (0, 100),
    "Num of pregnancies": (0, 25),
    "Smokes (years)": (0, 100),
    "Smokes (packs/year)": (0, 100),
    "Hormonal Contraceptives (years)": (0, 100),
    "IUD (years)": (0, 100),
    "STDs (number)": (0, 12),
    "STDs: Number of diagnosis": (0, 12),
    "STDs: Time since first diagnosis": (0, 100),
    "STDs: Time since last diagnosis": (0, 100),
}
COLUMNS = tuple(
    numerical(name, *NUMERICAL_BOUNDS[name]) if name in NUMERICAL_BOUNDS else binary(name)
    for name in HEADER
    if name not in (LABEL, UNUSED)
)
CLASSES = ("negative", "positive")

SCHEMA = Schema(
    columns=COLUMNS,
    label=LABEL,
    classes=CLASSES,
    public_facts=(PublicFact("published_rows", 858, "UCI Cervical cancer (Risk Factors): 858 instances"),),
)


def _read_kept(data_dir: Path | None) -> tuple[pd.DataFrame, Path]:
    path = fetch(DATA_FILE, data_dir)
    frame = read_csv(
        path,
        len(HEADER),
        "UCI cervical cancer (risk factors)",
        header=0,
        na_values=["?"],
        keep_default_na=False,
        dtype=np.float64,
    )
    frame.columns = [str(name).strip() for name in frame.columns]
    if list(frame.columns) != list(HEADER):
        wrong = next(n for n, e in zip(frame.columns, HEADER) if n != e)
        raise DataFormatError(f"file {path} has an unexpected column {wrong!r}; is it the original UCI file?")
    kept = frame[frame.isna().sum(axis=1) < MAX_MISSING].reset_index(drop=True)
    return kept, path


def _table(frame: pd.DataFrame, path: Path, fill: dict[str, float]) -> Table:
    frame = frame.fillna(fill)
    names = [column.name for column in COLUMNS]
    x = features(frame, COLUMNS, names, path)
    y = code_binary(frame[LABEL], LABEL, path).astype(np.int64)
    return Table(x, y)


def read(data_dir: Path | None) -> Table:
    frame, path = _read_kept(data_dir)
    return _table(frame, path, {column.name: 0.0 for column in COLUMNS})


def read_paper(data_dir: Path | None) -> Table:
    frame, path = _read_kept(data_dir)
    fill = {
        column.name: (round(float(frame[column.name].median()), 1) if column.kind == ColumnKind.NUMERICAL else 0.0)
        for column in COLUMNS
    }
    return _table(frame, path, fill)


CERVICAL = TabularDataset(
    name="cervical",
    description=(
        "UCI Cervical cancer risk factors, label Biopsy: 753 rows (858 minus rows with >=10 missing), "
        "34 features (12 numerical, 22 binary)"
    ),
    schema=SCHEMA,
    read=read,
    test_fraction=0.2,
    split_source="80/20 as in DP-MERF and DP-HP "
    "(github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py, "
    "github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py)",
    undersampling=Undersampling(
        0,
        0.3,
        "DP-HP grid "
        "(github.com/ParkLabML/DP-HP dp_mehp/run_sum_prod_kernel_tabular_data.py): keep 0.3 of class 0 (DP-MERF Table 4: 1.0)",
    ),
    read_paper=read_paper,
)


CERVICAL_DPMERF = replace(
    CERVICAL,
    name="cervical-dpmerf",
    description="cervical as DP-MERF's code reads it: every row kept (no undersampling), 80/20 split",
    # DP-MERF Table 4 and github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py (--undersample 1.0)
    undersampling=None,
)
