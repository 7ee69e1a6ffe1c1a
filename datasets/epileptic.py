"""``epileptic``: UCI Epileptic Seizure Recognition, seizure vs. not.

File: ``epileptic/data.csv``: 11,500 rows × 180 columns with a header: an id column (e.g.
``X21.V1.791``, unnamed in the header), the 178 EEG samples ``X1``..``X178`` (integers), and ``y``
in 1..5. The label is 1 if ``y == 1`` (seizure, 2,300 rows) else 0 (DP-HP (arXiv:2106.05042) App. G). The id
column is not a feature. UCI no longer serves the file; it is mirrored on Kaggle. No content
checksum is pinned yet (the file was not available offline); until it is, a local copy is used
unverified, with a warning.

Bounds: every sample is an EEG amplitude digitised with 12-bit resolution (Andrzejak et al.
2001, Phys. Rev. E 64, 061907, the recordings this data set re-cuts), so [-2048, 2047].

Split 70/30 (seeds); no undersampling (rate 1.0 everywhere in the seeds). Both protocols read
the same rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from datasets.files import DataFile, fetch
from bench.core.data import PublicFact, Schema
from datasets.tabular import Table, TabularDataset, Undersampling
from datasets.tabular_io import DataFormatError, check_header, features, numeric, numerical, read_csv

DATA_FILE = DataFile(
    "epileptic",
    "data.csv",
    None,
    None,  # content checksum not pinned yet (see module docstring)
    "the UCI Machine Learning Repository, Epileptic Seizure Recognition (dataset 388; now withdrawn, mirrored on Kaggle)",
    manual="download data.csv of 'Epileptic Seizure Recognition' (11,500 × 180) from a UCI mirror such as Kaggle",
)

FEATURES = tuple(f"X{i}" for i in range(1, 179))
LABEL = "y"
ADC_BOUNDS = (-2048.0, 2047.0)  # 12-bit EEG digitisation
COLUMNS = tuple(numerical(name, *ADC_BOUNDS) for name in FEATURES)
CLASSES = ("no seizure", "seizure")
SEIZURE = 1  # the value of y that marks a seizure

SCHEMA = Schema(
    columns=COLUMNS,
    label="seizure",
    classes=CLASSES,
    public_facts=(PublicFact("published_rows", 11_500, "UCI Epileptic Seizure Recognition: 11,500 instances"),),
)


def read(data_dir: Path | None) -> Table:
    path = fetch(DATA_FILE, data_dir)
    what = "UCI Epileptic Seizure Recognition data.csv"
    dtypes = {name: np.float64 for name in FEATURES + (LABEL,)}
    frame = read_csv(path, len(FEATURES) + 2, what, header=0, dtype=dtypes)
    check_header(path, frame.columns[1:], FEATURES + (LABEL,), what)
    x = features(frame, COLUMNS, FEATURES, path)
    labels = numeric(frame[LABEL], LABEL, path)
    bad = ~np.isin(labels, [1, 2, 3, 4, 5])
    if bad.any():
        raise DataFormatError(f"file {path}: y is {labels[bad][0]!r} in row {int(np.argmax(bad))}; expected 1..5")
    return Table(x, (labels == SEIZURE).astype(np.int64))


EPILEPTIC = TabularDataset(
    name="epileptic",
    description="UCI Epileptic Seizure Recognition, seizure vs. rest: 11,500 rows, 178 numerical EEG features",
    schema=SCHEMA,
    read=read,
    test_fraction=0.3,
    split_source="70/30 as in DP-MERF and DP-HP "
    "(github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py, "
    "github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py)",
    undersampling=Undersampling(
        0,
        1.0,
        "DP-HP grid "
        "(github.com/ParkLabML/DP-HP dp_mehp/run_sum_prod_kernel_tabular_data.py) and DP-MERF Table 4: rate 1.0 (none)",
    ),
)
