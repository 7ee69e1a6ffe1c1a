"""``credit`` and ``credit-sample``: the ULB credit-card fraud data (Kaggle ``mlg-ulb/creditcardfraud``).

``credit`` reads the original ``credit/creditcard.csv`` (284,807 rows × 31 columns with a header:
Time, V1..V28, Amount, Class; 492 frauds), which only Kaggle distributes (a log-in is needed). As
in both seeds, ``Time`` is dropped; the features are V1..V28 and Amount (29 numerical); the label
is ``Class`` (1 = fraud). Split 80/20 (seeds); training-only undersampling of class 0 at 0.002
(DP-HP grid). No content checksum of ``creditcard.csv`` is pinned yet (the file was not
available offline); until it is, a local copy is used unverified, with a warning.

``credit-sample`` reads ``credit-sample/creditcard_sample.csv``: 1,722 real rows of that file (all
492 frauds + 1,230 normal rows), written with an unnamed index column before the original
columns. It is a sample, already rebalanced, so it is not undersampled; results on it must be
reported as the sample, never as ``credit``.

Bounds (never computed from the rows): V1..V28 are principal-component scores of undisclosed
features and ``Amount`` a transaction amount; no range is documented for either, so the bounds
are benchmark clipping constants: V1..V28 in [-50, 50], Amount in [0, 30,000].

Both protocols read the same rows (the seeds use the whole file).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from datasets.files import DataFile, fetch
from bench.core.data import PublicFact, Schema
from datasets.tabular import Table, TabularDataset, Undersampling
from datasets.tabular_io import check_header, code_binary, features, numerical, read_csv

DATA_FILE = DataFile(
    "credit",
    "creditcard.csv",
    None,
    None,  # content checksum not pinned yet (see module docstring)
    "Kaggle, Credit Card Fraud Detection (www.kaggle.com/datasets/mlg-ulb/creditcardfraud), licence DbCL v1.0",
    manual="log in to Kaggle, download www.kaggle.com/datasets/mlg-ulb/creditcardfraud and extract creditcard.csv",
)
SAMPLE_FILE = DataFile(
    "credit-sample",
    "creditcard_sample.csv",
    "2942d1f71d326ef41f8092c4affdb9a8aee8982599d5345df3ecaea29c4ef377",
    None,
    "a 1,722-row sample of Kaggle's creditcard.csv (all 492 frauds + 1,230 normal rows) in the local data mirror",
    manual="this sample exists only in the project's shared data mirror (shared/data/credit-sample)",
)

FEATURES = tuple(f"V{i}" for i in range(1, 29)) + ("Amount",)
HEADER = ("Time",) + FEATURES + ("Class",)
LABEL = "Class"
V_BOUND = 50.0  # benchmark clipping constant (undocumented range)
AMOUNT_BOUNDS = (0.0, 30_000.0)  # benchmark clipping constant (undocumented range)

COLUMNS = tuple(numerical(name, -V_BOUND, V_BOUND) for name in FEATURES[:-1]) + (numerical("Amount", *AMOUNT_BOUNDS),)
CLASSES = ("normal", "fraud")

SCHEMA = Schema(
    columns=COLUMNS,
    label=LABEL,
    classes=CLASSES,
    public_facts=(PublicFact("published_rows", 284_807, "Kaggle mlg-ulb/creditcardfraud: 284,807 transactions"),),
)
SAMPLE_SCHEMA = Schema(columns=COLUMNS, label=LABEL, classes=CLASSES)


def _read(path: Path, index_column: bool) -> Table:
    expected = len(HEADER) + (1 if index_column else 0)
    what = "Kaggle creditcard.csv" + (" sample" if index_column else "")
    dtypes = {name: np.float64 for name in HEADER}
    frame = read_csv(path, expected, what, header=0, dtype=dtypes)
    if index_column:
        frame = frame.iloc[:, 1:]
    check_header(path, frame.columns, HEADER, what)
    x = features(frame, COLUMNS, FEATURES, path)
    y = code_binary(frame[LABEL], LABEL, path).astype(np.int64)
    return Table(x, y)


def read(data_dir: Path | None) -> Table:
    return _read(fetch(DATA_FILE, data_dir), index_column=False)


def read_sample(data_dir: Path | None) -> Table:
    return _read(fetch(SAMPLE_FILE, data_dir), index_column=True)


SOURCE_SPLIT = "80/20 as in DP-MERF and DP-HP (github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py)"

CREDIT = TabularDataset(
    name="credit",
    description="Kaggle credit-card fraud (creditcard.csv): 284,807 rows, 29 numerical features (Time dropped)",
    schema=SCHEMA,
    read=read,
    test_fraction=0.2,
    split_source=SOURCE_SPLIT,
    undersampling=Undersampling(
        0,
        0.002,
        "DP-HP grid "
        "(github.com/ParkLabML/DP-HP dp_mehp/run_sum_prod_kernel_tabular_data.py): keep 0.002 of class 0 (DP-MERF Table 4: 0.005)",
    ),
)

CREDIT_SAMPLE = TabularDataset(
    name="credit-sample",
    description="SAMPLE of Kaggle credit-card fraud: 1,722 real rows (all 492 frauds + 1,230 normal), 29 numerical features",
    schema=SAMPLE_SCHEMA,
    read=read_sample,
    test_fraction=0.2,
    split_source=SOURCE_SPLIT + " (credit's ratio)",
    undersampling=None,  # the sample is already rebalanced by its selection
)
