"""``isolet`` and ``isolet-subset``: UCI ISOLET spoken letters, vowel vs. consonant.

``isolet`` reads the original UCI files ``isolet/isolet1+2+3+4.data`` (6,238 rows) and
``isolet/isolet5.data`` (1,559 rows): no header, 617 comma-separated features, then the letter
1..26 (written as a float, e.g. ``1.``). UCI serves them compressed (``.Z``); uncompress them into
the data folder. The label is 1 for the vowels A, E, I, O, U (letters 1, 5, 9, 15, 21) and 0
otherwise — the seeds' binarisation (github.com/ParkLabML/DP-HP data/Isolet/isolet_labels.npy: the committed labels have
ones exactly at those letters). No content checksum is pinned yet (the files were not available
offline); until it is, local copies are used unverified, with a warning.

``isolet-subset`` reads ``isolet-subset/isolet_1560.mat`` (MATLAB: ``fea`` 1,560 × 617 in
[-1, 1], ``gnd`` letters 1..26): the 'isolet1' speaker group (30 speakers) of ISOLET as
distributed by D. Cai's data page. Results on it must be reported as the subset.

Bounds: isolet.info: "All attributes are continuous, real-valued attributes scaled into the
range -1.0 to 1.0", so [-1, 1] for all 617 features.

Protocols: ``sound`` uses all 7,797 published rows; ``paper`` uses ``isolet1+2+3+4.data`` only
(6,238 rows), the file the seeds read (their 4,366 samples = 70% of it). Split 70/30 (seeds); no
undersampling (rate 1.0 in the seeds).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from datasets.files import DataFile, fetch
from bench.core.data import PublicFact, Schema
from datasets.tabular import Table, TabularDataset, Undersampling
from datasets.tabular_io import DataFormatError, numeric, numerical, read_csv

UCI = "the UCI Machine Learning Repository, ISOLET (archive.ics.uci.edu/dataset/54/isolet)"
MANUAL = (
    "download isolet.zip from https://archive.ics.uci.edu/dataset/54/isolet and uncompress "
    "isolet1+2+3+4.data.Z and isolet5.data.Z (uncompress or gzip -d)"
)
TRAIN_FILE = DataFile("isolet", "isolet1+2+3+4.data", None, None, UCI, manual=MANUAL)  # checksum not pinned yet
TEST_FILE = DataFile("isolet", "isolet5.data", None, None, UCI, manual=MANUAL)  # checksum not pinned yet
SUBSET_FILE = DataFile(
    "isolet-subset",
    "isolet_1560.mat",
    "9d04317e379b959639e5bf0cc553a9d81c39935ebf1f6983ca20a2facd325578",
    None,
    "the isolet1 speaker group of ISOLET (1,560 rows) as a MATLAB file (D. Cai's data page), in the local data mirror",
    manual="this subset is in the project's shared data mirror (shared/data/isolet-subset)",
)

N_FEATURES = 617
VOWELS = (1, 5, 9, 15, 21)  # A, E, I, O, U as letter numbers 1..26
COLUMNS = tuple(numerical(f"f{i}", -1.0, 1.0) for i in range(1, N_FEATURES + 1))  # isolet.info: scaled to [-1, 1]
CLASSES = ("consonant", "vowel")

SCHEMA = Schema(
    columns=COLUMNS,
    label="vowel",
    classes=CLASSES,
    public_facts=(
        PublicFact(
            "published_rows",
            {"isolet1+2+3+4.data": 6_238, "isolet5.data": 1_559},
            "isolet.info: 7797 instances (3 missing of 150 speakers × 26 letters × 2)",
        ),
    ),
)
SUBSET_SCHEMA = Schema(columns=COLUMNS, label="vowel", classes=CLASSES)


def _binary_letters(letters: np.ndarray, path: Path) -> np.ndarray:
    bad = ~np.isin(letters, np.arange(1, 27))
    if bad.any():
        raise DataFormatError(f"file {path}: letter {letters[bad][0]!r} in row {int(np.argmax(bad))}; expected 1..26")
    return np.isin(letters, VOWELS).astype(np.int64)


def _read_file(path: Path) -> Table:
    frame = read_csv(path, N_FEATURES + 1, "UCI ISOLET", header=None, skipinitialspace=True, dtype=np.float64)
    x = frame.iloc[:, :N_FEATURES].to_numpy(dtype=np.float64)
    if not np.isfinite(x).all():
        row = int(np.argmax(~np.isfinite(x).all(axis=1)))
        raise DataFormatError(f"file {path}: row {row} has a missing or infinite feature")
    letters = numeric(frame[N_FEATURES], "letter", path)
    return Table(x.astype(np.float32), _binary_letters(letters, path))


def read(data_dir: Path | None) -> Table:
    first = _read_file(fetch(TRAIN_FILE, data_dir))
    second = _read_file(fetch(TEST_FILE, data_dir))
    return Table(np.concatenate([first.x, second.x]), np.concatenate([first.y, second.y]))


def read_paper(data_dir: Path | None) -> Table:
    return _read_file(fetch(TRAIN_FILE, data_dir))


def read_subset(data_dir: Path | None) -> Table:
    from scipy.io import loadmat  # scipy is a dependency; imported here to keep module import light

    path = fetch(SUBSET_FILE, data_dir)
    try:
        content = loadmat(path)
    except (ValueError, TypeError, OSError) as error:
        raise DataFormatError(f"{path} cannot be read as a MATLAB file ({error}); is it isolet_1560.mat?") from None
    if "fea" not in content or "gnd" not in content:
        raise DataFormatError(f"{path} lacks the arrays 'fea' and 'gnd'; is it isolet_1560.mat?")
    fea, gnd = np.asarray(content["fea"], dtype=np.float64), np.asarray(content["gnd"]).ravel()
    if fea.ndim != 2 or fea.shape[1] != N_FEATURES or len(gnd) != len(fea):
        raise DataFormatError(
            f"{path}: fea has shape {fea.shape} and gnd {gnd.shape}; expected (n, {N_FEATURES}) and (n,)"
        )
    if not np.isfinite(fea).all():
        raise DataFormatError(f"{path}: fea has missing or infinite values")
    return Table(fea.astype(np.float32), _binary_letters(gnd.astype(np.float64), path))


SPLIT = "70/30 as in DP-MERF and DP-HP (github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py)"
NO_UNDERSAMPLING = Undersampling(
    0,
    1.0,
    "DP-HP grid "
    "(github.com/ParkLabML/DP-HP dp_mehp/run_sum_prod_kernel_tabular_data.py) and DP-MERF Table 4: rate 1.0 (none)",
)

ISOLET = TabularDataset(
    name="isolet",
    description="UCI ISOLET, vowel vs. consonant: 7,797 rows (isolet1+2+3+4 + isolet5), 617 numerical features in [-1, 1]",
    schema=SCHEMA,
    read=read,
    test_fraction=0.3,
    split_source=SPLIT,
    undersampling=NO_UNDERSAMPLING,
    read_paper=read_paper,
)

ISOLET_SUBSET = TabularDataset(
    name="isolet-subset",
    description="SUBSET of UCI ISOLET (speaker group isolet1): 1,560 rows, vowel vs. consonant, 617 numerical features",
    schema=SUBSET_SCHEMA,
    read=read_subset,
    test_fraction=0.3,
    split_source=SPLIT + " (isolet's ratio)",
    undersampling=NO_UNDERSAMPLING,
)
