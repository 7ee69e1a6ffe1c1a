"""``covtype`` and ``covtype-subset``: UCI Covertype (forest cover type from cartographic data).

``covtype`` reads the original ``covtype/covtype.data.gz``: 581,012 rows × 55 integer columns,
no header: 10 quantitative features, 4 binary wilderness-area columns, 40 binary soil-type
columns, and the cover type 1..7, coded here as class 0..6 (as SDGym; so class 1 is Lodgepole
Pine, the majority). Column names are those of covtype.info. No content checksum is pinned yet
(the file was not available offline); until it is, a local copy is used unverified, with a
warning, and it is not downloaded.

``covtype-subset`` reads ``covtype-subset/10_cover.npz`` (arrays ``X``: 286,048 × 10 quantitative
features, ``y``: 0/1): the Covertype rows of cover types 2 (Lodgepole Pine, ``y = 0``, 283,301
rows) and 4 (Cottonwood/Willow, ``y = 1``, 2,747 rows) — the class sizes covtype.info documents
for those two types — as distributed by the ODDS / ADBench "cover" set. Binary task; results on
it must be reported as the subset.

Bounds (never computed from the rows): Aspect [0, 360] (degrees azimuth), Slope [0, 90]
(degrees), the three Hillshade indices [0, 255] (covtype.info: "0 to 255 index"), Elevation
[0, 4,500] m (the study area is in Colorado, whose highest point is 4,401 m). The distances have
no documented range; benchmark clipping constants: horizontal distances [0, 10,000] m, the
vertical distance to hydrology [-1,000, 1,000] m.

Protocols:
- ``sound``: all 581,012 rows; split 70/30 (seeds); training-only undersampling of class 1
  (Lodgepole Pine) at 0.03 (DP-HP grid).
- ``paper``: the seeds concatenate SDGym's covtype train and test files and keep the first 20,000
  rows (github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py,
  data_loading). SDGym's recipe shuffles covtype.data with
  ``np.random.seed(0)`` before cutting its test set off the end, so train + test is the whole
  file in that shuffled order; the paper rows are therefore the first 20,000 rows of that order
  (not the first 20,000 lines of the file, which are sorted by area).

``covtype-subset`` uses covtype's 70/30 split and undersamples its class 0 (the same Lodgepole
Pine class) at covtype's rate 0.03; both protocols read the same rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from datasets.files import DataFile, fetch
from bench.core.data import PublicFact, Schema
from datasets.tabular import Table, TabularDataset, Undersampling
from datasets.tabular_io import DataFormatError, binary, numerical, read_csv, sdgym_shuffle

DATA_FILE = DataFile(
    "covtype",
    "covtype.data.gz",
    None,  # content checksum not pinned yet (see module docstring)
    "https://archive.ics.uci.edu/ml/machine-learning-databases/covtype/covtype.data.gz",
    "the UCI Machine Learning Repository, Covertype (archive.ics.uci.edu/dataset/31/covertype)",
)
SUBSET_FILE = DataFile(
    "covtype-subset",
    "10_cover.npz",
    "945a097c3542ae81a551bf1c06dcad78a755d94f84fcaf1d60687e42d1a656df",
    None,
    "Covertype rows of cover types 2 vs 4, 10 quantitative features (ODDS / ADBench 'cover'), in the local data mirror",
    manual="this subset is in the project's shared data mirror (shared/data/covtype-subset)",
)

QUANTITATIVE = (  # covtype.info names, file order, with bounds (see the module docstring)
    ("Elevation", 0, 4_500),
    ("Aspect", 0, 360),
    ("Slope", 0, 90),
    ("Horizontal_Distance_To_Hydrology", 0, 10_000),
    ("Vertical_Distance_To_Hydrology", -1_000, 1_000),
    ("Horizontal_Distance_To_Roadways", 0, 10_000),
    ("Hillshade_9am", 0, 255),
    ("Hillshade_Noon", 0, 255),
    ("Hillshade_3pm", 0, 255),
    ("Horizontal_Distance_To_Fire_Points", 0, 10_000),
)
NUMERICAL_COLUMNS = tuple(numerical(name, low, high) for name, low, high in QUANTITATIVE)
COLUMNS = (
    NUMERICAL_COLUMNS
    + tuple(binary(f"Wilderness_Area{i}") for i in range(1, 5))
    + tuple(binary(f"Soil_Type{i}") for i in range(1, 41))
)
# covtype.info, cover types 1..7
CLASSES = ("Spruce/Fir", "Lodgepole Pine", "Ponderosa Pine", "Cottonwood/Willow", "Aspen", "Douglas-fir", "Krummholz")
N_FILE_COLUMNS = len(COLUMNS) + 1
PAPER_ROWS = 20_000

SCHEMA = Schema(
    columns=COLUMNS,
    label="Cover_Type",
    classes=CLASSES,
    public_facts=(PublicFact("published_rows", 581_012, "covtype.info: 581012 observations"),),
)
SUBSET_CLASSES = ("Lodgepole Pine", "Cottonwood/Willow")  # original cover types 2 and 4
SUBSET_SCHEMA = Schema(columns=NUMERICAL_COLUMNS, label="Cover_Type", classes=SUBSET_CLASSES)


def read(data_dir: Path | None) -> Table:
    path = fetch(DATA_FILE, data_dir)
    frame = read_csv(path, N_FILE_COLUMNS, "UCI covtype.data", header=None, dtype=np.int32)
    values = frame.to_numpy()
    x = values[:, : len(COLUMNS)].astype(np.float32)
    indicators = values[:, len(NUMERICAL_COLUMNS) : len(COLUMNS)]
    bad = (indicators != 0) & (indicators != 1)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise DataFormatError(
            f"file {path}: binary column {COLUMNS[len(NUMERICAL_COLUMNS) + col].name!r} is {indicators[row, col]} "
            f"in row {row}; expected 0 or 1"
        )
    cover = values[:, -1]
    if cover.min() < 1 or cover.max() > len(CLASSES):
        row = int(np.argmax((cover < 1) | (cover > len(CLASSES))))
        raise DataFormatError(f"file {path}: cover type {cover[row]} in row {row}; expected 1..7")
    return Table(x, (cover - 1).astype(np.int64))


def read_paper(data_dir: Path | None) -> Table:
    table = read(data_dir)
    rows = sdgym_shuffle(len(table.y))[:PAPER_ROWS]
    return Table(table.x[rows], table.y[rows])


def read_subset(data_dir: Path | None) -> Table:
    path = fetch(SUBSET_FILE, data_dir)
    try:
        with np.load(path, allow_pickle=False) as content:
            x, y = content["X"], content["y"]
    except (ValueError, KeyError, OSError) as error:
        raise DataFormatError(
            f"{path} cannot be read as an .npz with arrays X and y ({error}); is it 10_cover.npz?"
        ) from None
    if x.ndim != 2 or x.shape[1] != len(NUMERICAL_COLUMNS) or y.shape != (len(x),):
        raise DataFormatError(f"{path}: X has shape {x.shape} and y {y.shape}; expected (n, 10) and (n,)")
    if not np.isin(y, (0, 1)).all():
        raise DataFormatError(f"{path}: y has values other than 0 and 1")
    x = x.astype(np.float32)
    if not np.isfinite(x).all():
        raise DataFormatError(f"{path}: X has missing or infinite values")
    return Table(x, y.astype(np.int64))


SPLIT = "70/30 as in DP-MERF and DP-HP (github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py)"

COVTYPE = TabularDataset(
    name="covtype",
    description="UCI Covertype, 7 cover types: 581,012 rows, 54 features (10 numerical, 44 binary)",
    schema=SCHEMA,
    read=read,
    test_fraction=0.3,
    split_source=SPLIT,
    undersampling=Undersampling(
        1,
        0.03,
        "DP-HP grid "
        "(github.com/ParkLabML/DP-HP dp_mehp/run_sum_prod_kernel_tabular_data.py) and DP-MERF Table 4: keep 0.03 of class 1 (Lodgepole Pine)",
    ),
    read_paper=read_paper,
)

COVTYPE_SUBSET = TabularDataset(
    name="covtype-subset",
    description=(
        "SUBSET of UCI Covertype: 286,048 rows of cover types 2 vs 4 (Lodgepole Pine vs Cottonwood/Willow), "
        "10 numerical features"
    ),
    schema=SUBSET_SCHEMA,
    read=read_subset,
    test_fraction=0.3,
    split_source=SPLIT + " (covtype's ratio)",
    undersampling=Undersampling(
        0,
        0.03,
        "covtype's DP-HP rate for the same class, Lodgepole Pine "
        "(github.com/ParkLabML/DP-HP dp_mehp/run_sum_prod_kernel_tabular_data.py)",
    ),
)
