"""``adult``: UCI Adult (income > 50K), from the original ``adult.data`` and ``adult.test``.

Files: ``adult/adult.data`` (32,561 rows) and ``adult/adult.test`` (16,281 rows; its first line
``|1x3 Cross validator`` is skipped and its labels' trailing ``.`` stripped). 14 features in UCI
order, label ``income`` (0 = ``<=50K``, 1 = ``>50K``).

Schema (public, hard-coded from ``adult.names``): 6 numerical columns, ``education`` ordinal in
the order of ``education-num`` (1 = Preschool … 16 = Doctorate, as SDGym), the other 7 nominal
columns categorical with their ``adult.names`` value lists in that file's order.

Missing values: the file marks unknowns with ``?`` (adult.names: "Convert Unknown to '?'"). They
are kept as their own category ``"?"``, appended to the three columns the UCI dataset page lists
as having missing values (workclass, occupation, native-country). No imputation, so no statistic
of the private rows enters the data. A ``?`` in any other column is an error.

Numerical bounds (never computed from the rows):
- age [17, 90]: adult.names' extraction rule AAGE > 16; 90 is the CPS top code for age
  (census-income.names, the same survey, reports 91 distinct ages 0..90).
- fnlwgt [0, 1,500,000]: not documented; a benchmark clipping constant (the encoder clips).
- education-num [1, 16]: the 16 documented education levels.
- capital-gain [0, 99,999]: 99,999 is the documented top code; capital-loss [0, 99,999]: the
  same five-digit CPS field.
- hours-per-week [1, 168]: adult.names' extraction rule HRSWK > 0; 168 hours in a week.

Protocols:
- ``sound``: all 48,842 published rows (adult.data + adult.test), the seeds' 90/10 split
  (stratified), training-only undersampling of ``<=50K`` at 0.4.
- ``paper``: SDGym's adult 'train' part, which DP-MERF reads via ``sdgym.load_dataset('adult')``
  (github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py,
  via sdgym 0.1.0): ``adult.data`` only, ``np.random.seed(0)`` shuffle, the
  last 10,000 rows dropped as SDGym's test → 22,561 rows (5,473 positives). SDGym codes
  categoricals by descending frequency, a data-dependent order; here the codes stay the public
  ``adult.names`` order in both protocols (only the ``codes`` encoding could tell them apart).
  DP-HP's Table 2 uses a different, unrecoverable pickle (``adult.p``, 48,842 rows): see
  ``adult-dphp`` below.

``adult-dphp``: Adult as DP-HP's Table 2 reads it (DP-HP (arXiv:2106.05042) Table 3: 48,842
samples, 6 numerical and 8 categorical features; github.com/ParkLabML/DP-HP
dp_mehp/all_aux_files_tab_data.py reads ``adult.p`` with categorical columns [1,3,5,6,7,8,9,13],
so ``education`` is categorical). The same published rows as ``adult``; it differs only where the
seeds' two papers differ: under ``--protocol paper`` it keeps all 48,842 rows (not SDGym's
22,561-row train part, which DP-MERF reads), and ``education`` is categorical, not ordinal, under
both protocols. The pickle itself is not retrievable, so its value codes and row order may still
differ (the codes follow ``adult.names`` here).

``adult-dphp-sorted``: ``adult-dphp`` with every categorical column's codes in sorted-name order,
the order scikit-learn's ``LabelEncoder`` gives and so the likeliest coding of ``adult.p``. The
same rows and values; only the codes differ. It matters under ``--protocol paper``, where DP-HP's
tabular generator emits each categorical code as one rounded number, so which categories get
the small codes decides what it can produce (issue 19's adult gap; the authors' code scores
0.589 on these codes and ≈ 0.52 on ``adult.names`` order, benchmarks/reference_dphp_adult.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from datasets.files import DataFile, fetch
from bench.core.data import PublicFact, Schema
from datasets.tabular import Table, TabularDataset, Undersampling, recode
from datasets.tabular_io import (
    MISSING,
    categorical,
    code_labels,
    features,
    numerical,
    ordinal,
    read_csv,
    sdgym_shuffle,
)

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult"
TRAIN_FILE = DataFile(
    "adult",
    "adult.data",
    "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    f"{UCI}/adult.data",
    "the UCI Machine Learning Repository, Adult (archive.ics.uci.edu/dataset/2/adult)",
)
TEST_FILE = DataFile(
    "adult",
    "adult.test",
    "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    f"{UCI}/adult.test",
    "the UCI Machine Learning Repository, Adult (archive.ics.uci.edu/dataset/2/adult)",
)

# Value lists: adult.names, in that file's order; "?" where UCI lists missing values.
WORKCLASS = (
    "Private",
    "Self-emp-not-inc",
    "Self-emp-inc",
    "Federal-gov",
    "Local-gov",
    "State-gov",
    "Without-pay",
    "Never-worked",
    MISSING,
)
# Ordinal, in the order of education-num 1..16 (adult.data pairs each level with its number).
EDUCATION = (
    "Preschool",
    "1st-4th",
    "5th-6th",
    "7th-8th",
    "9th",
    "10th",
    "11th",
    "12th",
    "HS-grad",
    "Some-college",
    "Assoc-voc",
    "Assoc-acdm",
    "Bachelors",
    "Masters",
    "Prof-school",
    "Doctorate",
)
MARITAL_STATUS = (
    "Married-civ-spouse",
    "Divorced",
    "Never-married",
    "Separated",
    "Widowed",
    "Married-spouse-absent",
    "Married-AF-spouse",
)
OCCUPATION = (
    "Tech-support",
    "Craft-repair",
    "Other-service",
    "Sales",
    "Exec-managerial",
    "Prof-specialty",
    "Handlers-cleaners",
    "Machine-op-inspct",
    "Adm-clerical",
    "Farming-fishing",
    "Transport-moving",
    "Priv-house-serv",
    "Protective-serv",
    "Armed-Forces",
    MISSING,
)
RELATIONSHIP = ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried")
RACE = ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black")
SEX = ("Female", "Male")
NATIVE_COUNTRY = (
    "United-States",
    "Cambodia",
    "England",
    "Puerto-Rico",
    "Canada",
    "Germany",
    "Outlying-US(Guam-USVI-etc)",
    "India",
    "Japan",
    "Greece",
    "South",
    "China",
    "Cuba",
    "Iran",
    "Honduras",
    "Philippines",
    "Italy",
    "Poland",
    "Jamaica",
    "Vietnam",
    "Mexico",
    "Portugal",
    "Ireland",
    "France",
    "Dominican-Republic",
    "Laos",
    "Ecuador",
    "Taiwan",
    "Haiti",
    "Columbia",
    "Hungary",
    "Guatemala",
    "Nicaragua",
    "Scotland",
    "Thailand",
    "Yugoslavia",
    "El-Salvador",
    "Trinadad&Tobago",
    "Peru",
    "Hong",
    "Holand-Netherlands",
    MISSING,
)

COLUMNS = (
    numerical("age", 17, 90),
    categorical("workclass", WORKCLASS),
    numerical("fnlwgt", 0, 1_500_000),  # undocumented: benchmark clipping constant
    ordinal("education", EDUCATION),
    numerical("education-num", 1, 16),
    categorical("marital-status", MARITAL_STATUS),
    categorical("occupation", OCCUPATION),
    categorical("relationship", RELATIONSHIP),
    categorical("race", RACE),
    categorical("sex", SEX),
    numerical("capital-gain", 0, 99_999),
    numerical("capital-loss", 0, 99_999),
    numerical("hours-per-week", 1, 168),
    categorical("native-country", NATIVE_COUNTRY),
)
CLASSES = ("<=50K", ">50K")

SCHEMA = Schema(
    columns=COLUMNS,
    label="income",
    classes=CLASSES,
    public_facts=(
        PublicFact(
            "published_rows",
            {"adult.data": 32_561, "adult.test": 16_281},
            "adult.names: 48842 instances (train=32561, test=16281)",
        ),
    ),
)

N_COLUMNS = 15
SDGYM_TEST_ROWS = 10_000  # SDGym's adult recipe keeps the last 10,000 shuffled rows as its test


def _read_file(path: Path, skip_first_line: bool) -> Table:
    dtypes = {j: (np.float64 if COLUMNS[j].bounds is not None else "category") for j in range(len(COLUMNS))}
    dtypes[len(COLUMNS)] = "category"
    frame = read_csv(
        path,
        N_COLUMNS,
        "UCI adult",
        header=None,
        skiprows=1 if skip_first_line else 0,
        skipinitialspace=True,
        dtype=dtypes,
        keep_default_na=False,
        na_values=[],
    )
    x = features(frame, COLUMNS, range(len(COLUMNS)), path)
    y = code_labels(frame[len(COLUMNS)], {c: i for i, c in enumerate(CLASSES)}, "income", path, strip=".")
    return Table(x, y)


def read(data_dir: Path | None) -> Table:
    train = _read_file(fetch(TRAIN_FILE, data_dir), skip_first_line=False)
    test = _read_file(fetch(TEST_FILE, data_dir), skip_first_line=True)
    return Table(np.concatenate([train.x, test.x]), np.concatenate([train.y, test.y]))


def read_paper(data_dir: Path | None) -> Table:
    table = _read_file(fetch(TRAIN_FILE, data_dir), skip_first_line=False)
    keep = sdgym_shuffle(len(table.y))[:-SDGYM_TEST_ROWS]
    return Table(table.x[keep], table.y[keep])


ADULT = TabularDataset(
    name="adult",
    description="UCI Adult, income >50K: 48,842 rows (adult.data + adult.test), 14 features (6 numerical, 8 categorical)",
    schema=SCHEMA,
    read=read,
    test_fraction=0.1,
    split_source="90/10 as in DP-MERF and DP-HP "
    "(github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py, "
    "github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py)",
    undersampling=Undersampling(
        0,
        0.4,
        "DP-HP grid "
        "(github.com/ParkLabML/DP-HP dp_mehp/run_sum_prod_kernel_tabular_data.py) and DP-MERF Table 4: keep 0.4 of <=50K",
    ),
    read_paper=read_paper,
)


SCHEMA_DPHP = replace(
    SCHEMA, columns=tuple(categorical(c.name, c.categories) if c.name == "education" else c for c in COLUMNS)
)

ADULT_DPHP = replace(
    ADULT,
    name="adult-dphp",
    description="UCI Adult as DP-HP's Table 2 reads it: all 48,842 rows under both protocols, education categorical "
    "(6 numerical, 8 categorical features)",
    schema=SCHEMA_DPHP,
    read_paper=None,  # DP-HP's adult.p has all 48,842 rows (DP-HP (arXiv:2106.05042) Table 3)
)


def _sorted_codes(schema: Schema) -> Schema:
    return replace(
        schema,
        columns=tuple(
            replace(c, categories=tuple(sorted(c.categories))) if c.categories else c for c in schema.columns
        ),
    )


SCHEMA_DPHP_SORTED = _sorted_codes(SCHEMA_DPHP)


def read_sorted_codes(data_dir: Path | None) -> Table:
    """All 48,842 rows with each categorical code renumbered to its name's rank in sorted order."""
    return recode(read(data_dir), SCHEMA_DPHP, SCHEMA_DPHP_SORTED)


ADULT_DPHP_SORTED = replace(
    ADULT_DPHP,
    name="adult-dphp-sorted",
    description="adult-dphp with categorical codes in sorted-name order (scikit-learn LabelEncoder's, the likeliest "
    "coding of DP-HP's adult.p): the same rows and values",
    schema=SCHEMA_DPHP_SORTED,
    read=read_sorted_codes,
)


def read_dphp_logs(data_dir: Path | None) -> Table:
    """adult.data's 32,561 rows with sorted-name codes: adult.p as DP-HP's logs describe it."""
    train = _read_file(fetch(TRAIN_FILE, data_dir), skip_first_line=False)
    return recode(train, SCHEMA_DPHP, SCHEMA_DPHP_SORTED)


ADULT_DPHP_LOGS = replace(
    ADULT_DPHP_SORTED,
    name="adult-dphp-logs",
    description="adult.p as DP-HP's logs evidence it: adult.data's 32,561 rows (7,841 >50K), sorted-name codes, "
    "education categorical",
    read=read_dphp_logs,
)

# The authors' preprocessing of adult.p, DP-HP's input file (issue 28): every column, the category
# codes included, z-scored by its mean and population sd over adult.data's 32,561 rows (scikit-learn
# StandardScaler; their run log prints z-scored rows). Statistics of the private rows: transcribed
# here, recomputed from adult.data by tests/test_tabular_datasets.py, and never charged — the
# dataset below is an ablation that names them as a caveat, not a private setting.
DPHP_ZSCORE = {  # column: (mean, sd)
    "age": (38.58164675532078, 13.640223092304081),
    "workclass": (3.8688922330395257, 1.4559374031960135),
    "fnlwgt": (189778.36651208502, 105548.3568808909),
    "education": (10.298209514449802, 3.8702045191455707),
    "education-num": (10.0806793403151, 2.5726808256012395),
    "marital-status": (2.6118362458155464, 1.5061985937547038),
    "occupation": (6.572740394951015, 4.228791865498648),
    "relationship": (1.4463622124627622, 1.6067462769838632),
    "race": (3.6658579281963086, 0.8487925701178607),
    "sex": (0.6692054912318418, 0.47049920482064395),
    "capital-gain": (1077.6488437087312, 7385.178676946586),
    "capital-loss": (87.303829734959, 402.9540308275458),
    "hours-per-week": (40.437455852092995, 12.347239075706955),
    "native-country": (36.718866128190164, 7.823661762882539),
}
ZSCORE_CAVEAT = (
    "authors' preprocessing: every column (category codes included) z-scored by its mean and sd over adult.data's "
    "32,561 rows, as DP-HP's adult.p was — statistics of the private rows, not charged, and the column bounds "
    "follow from them; an ablation, not a private setting"
)


def _zscored(column):
    mean, sd = DPHP_ZSCORE[column.name]
    low, high = column.bounds if column.bounds is not None else (0.0, len(column.categories) - 1.0)
    return numerical(column.name, (low - mean) / sd, (high - mean) / sd)


SCHEMA_DPHP_ZSCORED = replace(SCHEMA_DPHP_SORTED, columns=tuple(_zscored(c) for c in SCHEMA_DPHP_SORTED.columns))


def read_dphp_zscored(data_dir: Path | None) -> Table:
    """adult-dphp-logs' rows with every column z-scored by ``DPHP_ZSCORE``."""
    table = read_dphp_logs(data_dir)
    mean, sd = (np.array([DPHP_ZSCORE[c.name][k] for c in SCHEMA_DPHP_SORTED.columns]) for k in (0, 1))
    return Table((table.x - mean) / sd, table.y)


ADULT_DPHP_ZSCORED = replace(
    ADULT_DPHP_LOGS,
    name="adult-dphp-zscored",
    description="adult-dphp-logs z-scored column by column, codes included, as DP-HP's adult.p was (the authors' "
    "preprocessing: uncharged statistics of the rows, an ablation): 14 numerical features",
    schema=SCHEMA_DPHP_ZSCORED,
    read=read_dphp_zscored,
    caveats=(ZSCORE_CAVEAT,),
)


# SDGym's adult codebook (sdv-dev/SDGym v0.1.0 sdgym-utils/data/real/adult.py, published as its
# adult.json): each categorical column's values by descending frequency over all 32,561 rows of
# adult.data (most frequent = 0). Ties (native-country: France/Greece 29, Cambodia/Trinadad&Tobago
# 19, Thailand/Laos 18, Honduras/Hungary 13) are in first-appearance order; only codes ≥ 27 depend on it.
SDGYM_ORDER = {
    "workclass": (
        "Private",
        "Self-emp-not-inc",
        "Local-gov",
        MISSING,
        "State-gov",
        "Self-emp-inc",
        "Federal-gov",
        "Without-pay",
        "Never-worked",
    ),
    "marital-status": (
        "Married-civ-spouse",
        "Never-married",
        "Divorced",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
    ),
    "occupation": (
        "Prof-specialty",
        "Craft-repair",
        "Exec-managerial",
        "Adm-clerical",
        "Sales",
        "Other-service",
        "Machine-op-inspct",
        MISSING,
        "Transport-moving",
        "Handlers-cleaners",
        "Farming-fishing",
        "Tech-support",
        "Protective-serv",
        "Priv-house-serv",
        "Armed-Forces",
    ),
    "relationship": ("Husband", "Not-in-family", "Own-child", "Unmarried", "Wife", "Other-relative"),
    "race": ("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"),
    "sex": ("Male", "Female"),
    "native-country": (
        "United-States",
        "Mexico",
        MISSING,
        "Philippines",
        "Germany",
        "Canada",
        "Puerto-Rico",
        "El-Salvador",
        "India",
        "Cuba",
        "England",
        "Jamaica",
        "South",
        "China",
        "Italy",
        "Dominican-Republic",
        "Vietnam",
        "Guatemala",
        "Japan",
        "Poland",
        "Columbia",
        "Taiwan",
        "Haiti",
        "Iran",
        "Portugal",
        "Nicaragua",
        "Peru",
        "France",
        "Greece",
        "Ecuador",
        "Ireland",
        "Hong",
        "Cambodia",
        "Trinadad&Tobago",
        "Thailand",
        "Laos",
        "Yugoslavia",
        "Outlying-US(Guam-USVI-etc)",
        "Honduras",
        "Hungary",
        "Scotland",
        "Holand-Netherlands",
    ),
}
SCHEMA_SDGYM = replace(
    SCHEMA, columns=tuple(replace(c, categories=SDGYM_ORDER[c.name]) if c.name in SDGYM_ORDER else c for c in COLUMNS)
)

SDGYM_CAVEATS = (
    "authors' preprocessing: categorical codes ordered by each value's frequency in adult.data "
    "(SDGym's codebook), a statistic of the private rows that is not charged; it matters only where "
    "codes are fed to a model as numbers (--protocol paper)",
)


def read_sdgym(data_dir: Path | None) -> Table:
    return recode(read(data_dir), SCHEMA, SCHEMA_SDGYM)


def read_sdgym_train(data_dir: Path | None) -> Table:
    """SDGym's adult 'train' array, the rows DP-MERF's tabular code reads: 22,561 rows, 5,473 >50K."""
    return recode(read_paper(data_dir), SCHEMA, SCHEMA_SDGYM)


ADULT_SDGYM = replace(
    ADULT,
    name="adult-sdgym",
    description="UCI Adult as DP-MERF's code reads it (SDGym): categorical codes by descending frequency in adult.data; "
    "paper protocol: SDGym's 22,561-row train part",
    schema=SCHEMA_SDGYM,
    read=read_sdgym,
    read_paper=read_sdgym_train,
    caveats=SDGYM_CAVEATS,
)
