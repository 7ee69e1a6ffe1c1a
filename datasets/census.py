"""``census``: UCI Census-Income (KDD), 1994/95 CPS, income above $50,000.

Files: ``census/census-income.data.gz`` (199,523 rows) and ``census/census-income.test.gz``
(99,762 rows), the raw UCI format (no header; 40 attributes, the instance weight at column 24,
the label ``- 50000.`` / ``50000+.`` last). The instance weight is dropped, as in SDGym and as
census-income.names asks ("should *not* be used in the classifiers"). Label ``income``:
0 = ``- 50000``, 1 = ``50000+``.

Schema (public, hard-coded): the 40 attributes of census-income.names in its order, 7 numerical
("continuous" there) and 33 nominal (categorical, including ``year``, which the seeds' code
omits by a column-index slip,
github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py, data_loading). Category lists are the value
lists of census-income.names, transcribed below verbatim (whitespace-stripped). Missing values
are written ``?``; they are kept as their own category ``"?"`` in the eight columns whose
distinct-value count in census-income.names exceeds the listed values by one (state of previous
residence 51, the three migration codes 10/9/10, migration prev res in sunbelt 4, the three
countries of birth 43). ``hispanic origin`` has the documented values ``NA`` and ``Do not know``;
they are ordinary categories (read with pandas' NA parsing off).

Numerical bounds (never computed from the rows):
- age [0, 90]: census-income.names reports 91 distinct ages (the CPS top-codes age at 90).
- wage per hour [0, 9,999]: the CPS field (AHRSPAY) has four digits.
- capital gains, capital losses, dividends from stocks [0, 99,999]: five-digit CPS fields
  (99,999 is the top code of capital gains).
- num persons worked for employer [0, 6]: 7 documented distinct values, coded 0..6.
- weeks worked in year [0, 52].

Protocols:
- ``sound``: all 299,285 published rows (data + test), the seeds' 80/20 split (stratified),
  training-only undersampling of ``- 50000`` at 0.2 (DP-HP's grid).
- ``paper``: ``census-income.data`` only (199,523 rows) — SDGym's census 'train', which both
  seeds read (github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py;
  DP-HP (arXiv:2106.05042) Table 3: 199,523 rows).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from datasets.files import DataFile, fetch
from bench.core.data import ColumnKind, PublicFact, Schema
from datasets.tabular import Table, TabularDataset, Undersampling
from datasets.tabular_io import MISSING, categorical, code_labels, features, numerical, read_csv, split_names_list

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/census-income-mld"
SOURCE = "the UCI Machine Learning Repository, Census-Income (KDD) (archive.ics.uci.edu/dataset/117)"
TRAIN_FILE = DataFile(
    "census",
    "census-income.data.gz",
    "3676a81db7d3528f3f8b9f3c699d0f0aa28db45e6e994fa0b8ed38327539ee86",
    f"{UCI}/census-income.data.gz",
    SOURCE,
)
TEST_FILE = DataFile(
    "census",
    "census-income.test.gz",
    "98402b1ab879573d0a7f38a699a40258080e25e33d3401e7bf9c96d3fa0fab8c",
    f"{UCI}/census-income.test.gz",
    SOURCE,
)

# census-income.names, the attribute section, verbatim (one attribute per line, file order).
NAMES = """\
age: continuous.
class of worker: Not in universe, Federal government, Local government, Never worked, Private, Self-employed-incorporated, Self-employed-not incorporated, State government, Without pay.
detailed industry recode: 0, 40, 44, 2, 43, 47, 48, 1, 11, 19, 24, 25, 32, 33, 34, 35, 36, 37, 38, 39, 4, 42, 45, 5, 15, 16, 22, 29, 31, 50, 14, 17, 18, 28, 3, 30, 41, 46, 51, 12, 13, 21, 23, 26, 6, 7, 9, 49, 27, 8, 10, 20.
detailed occupation recode: 0, 12, 31, 44, 19, 32, 10, 23, 26, 28, 29, 42, 40, 34, 14, 36, 38, 2, 20, 25, 37, 41, 27, 24, 30, 43, 33, 16, 45, 17, 35, 22, 18, 39, 3, 15, 13, 46, 8, 21, 9, 4, 6, 5, 1, 11, 7.
education: Children, 7th and 8th grade, 9th grade, 10th grade, High school graduate, 11th grade, 12th grade no diploma, 5th or 6th grade, Less than 1st grade, Bachelors degree(BA AB BS), 1st 2nd 3rd or 4th grade, Some college but no degree, Masters degree(MA MS MEng MEd MSW MBA), Associates degree-occup /vocational, Associates degree-academic program, Doctorate degree(PhD EdD), Prof school degree (MD DDS DVM LLB JD).
wage per hour: continuous.
enroll in edu inst last wk: Not in universe, High school, College or university.
marital stat: Never married, Married-civilian spouse present, Married-spouse absent, Separated, Divorced, Widowed, Married-A F spouse present.
major industry code: Not in universe or children, Entertainment, Social services, Agriculture, Education, Public administration, Manufacturing-durable goods, Manufacturing-nondurable goods, Wholesale trade, Retail trade, Finance insurance and real estate, Private household services, Business and repair services, Personal services except private HH, Construction, Medical except hospital, Other professional services, Transportation, Utilities and sanitary services, Mining, Communications, Hospital services, Forestry and fisheries, Armed Forces.
major occupation code: Not in universe, Professional specialty, Other service, Farming forestry and fishing, Sales, Adm support including clerical, Protective services, Handlers equip cleaners etc , Precision production craft & repair, Technicians and related support, Machine operators assmblrs & inspctrs, Transportation and material moving, Executive admin and managerial, Private household services, Armed Forces.
race: White, Black, Other, Amer Indian Aleut or Eskimo, Asian or Pacific Islander.
hispanic origin: Mexican (Mexicano), Mexican-American, Puerto Rican, Central or South American, All other, Other Spanish, Chicano, Cuban, Do not know, NA.
sex: Female, Male.
member of a labor union: Not in universe, No, Yes.
reason for unemployment: Not in universe, Re-entrant, Job loser - on layoff, New entrant, Job leaver, Other job loser.
full or part time employment stat: Children or Armed Forces, Full-time schedules, Unemployed part- time, Not in labor force, Unemployed full-time, PT for non-econ reasons usually FT, PT for econ reasons usually PT, PT for econ reasons usually FT.
capital gains: continuous.
capital losses: continuous.
dividends from stocks: continuous.
tax filer stat: Nonfiler, Joint one under 65 & one 65+, Joint both under 65, Single, Head of household, Joint both 65+.
region of previous residence: Not in universe, South, Northeast, West, Midwest, Abroad.
state of previous residence: Not in universe, Utah, Michigan, North Carolina, North Dakota, Virginia, Vermont, Wyoming, West Virginia, Pennsylvania, Abroad, Oregon, California, Iowa, Florida, Arkansas, Texas, South Carolina, Arizona, Indiana, Tennessee, Maine, Alaska, Ohio, Montana, Nebraska, Mississippi, District of Columbia, Minnesota, Illinois, Kentucky, Delaware, Colorado, Maryland, Wisconsin, New Hampshire, Nevada, New York, Georgia, Oklahoma, New Mexico, South Dakota, Missouri, Kansas, Connecticut, Louisiana, Alabama, Massachusetts, Idaho, New Jersey.
detailed household and family stat: Child <18 never marr not in subfamily, Other Rel <18 never marr child of subfamily RP, Other Rel <18 never marr not in subfamily, Grandchild <18 never marr child of subfamily RP, Grandchild <18 never marr not in subfamily, Secondary individual, In group quarters, Child under 18 of RP of unrel subfamily, RP of unrelated subfamily, Spouse of householder, Householder, Other Rel <18 never married RP of subfamily, Grandchild <18 never marr RP of subfamily, Child <18 never marr RP of subfamily, Child <18 ever marr not in subfamily, Other Rel <18 ever marr RP of subfamily, Child <18 ever marr RP of subfamily, Nonfamily householder, Child <18 spouse of subfamily RP, Other Rel <18 spouse of subfamily RP, Other Rel <18 ever marr not in subfamily, Grandchild <18 ever marr not in subfamily, Child 18+ never marr Not in a subfamily, Grandchild 18+ never marr not in subfamily, Child 18+ ever marr RP of subfamily, Other Rel 18+ never marr not in subfamily, Child 18+ never marr RP of subfamily, Other Rel 18+ ever marr RP of subfamily, Other Rel 18+ never marr RP of subfamily, Other Rel 18+ spouse of subfamily RP, Other Rel 18+ ever marr not in subfamily, Child 18+ ever marr Not in a subfamily, Grandchild 18+ ever marr not in subfamily, Child 18+ spouse of subfamily RP, Spouse of RP of unrelated subfamily, Grandchild 18+ ever marr RP of subfamily, Grandchild 18+ never marr RP of subfamily, Grandchild 18+ spouse of subfamily RP.
detailed household summary in household: Child under 18 never married, Other relative of householder, Nonrelative of householder, Spouse of householder, Householder, Child under 18 ever married, Group Quarters- Secondary individual, Child 18 or older.
instance weight: continuous.
migration code-change in msa: Not in universe, Nonmover, MSA to MSA, NonMSA to nonMSA, MSA to nonMSA, NonMSA to MSA, Abroad to MSA, Not identifiable, Abroad to nonMSA.
migration code-change in reg: Not in universe, Nonmover, Same county, Different county same state, Different state same division, Abroad, Different region, Different division same region.
migration code-move within reg: Not in universe, Nonmover, Same county, Different county same state, Different state in West, Abroad, Different state in Midwest, Different state in South, Different state in Northeast.
live in this house 1 year ago: Not in universe under 1 year old, Yes, No.
migration prev res in sunbelt: Not in universe, Yes, No.
num persons worked for employer: continuous.
family members under 18: Both parents present, Neither parent present, Mother only present, Father only present, Not in universe.
country of birth father: Mexico, United-States, Puerto-Rico, Dominican-Republic, Jamaica, Cuba, Portugal, Nicaragua, Peru, Ecuador, Guatemala, Philippines, Canada, Columbia, El-Salvador, Japan, England, Trinadad&Tobago, Honduras, Germany, Taiwan, Outlying-U S (Guam USVI etc), India, Vietnam, China, Hong Kong, Cambodia, France, Laos, Haiti, South Korea, Iran, Greece, Italy, Poland, Thailand, Yugoslavia, Holand-Netherlands, Ireland, Scotland, Hungary, Panama.
country of birth mother: India, Mexico, United-States, Puerto-Rico, Dominican-Republic, England, Honduras, Peru, Guatemala, Columbia, El-Salvador, Philippines, France, Ecuador, Nicaragua, Cuba, Outlying-U S (Guam USVI etc), Jamaica, South Korea, China, Germany, Yugoslavia, Canada, Vietnam, Japan, Cambodia, Ireland, Laos, Haiti, Portugal, Taiwan, Holand-Netherlands, Greece, Italy, Poland, Thailand, Trinadad&Tobago, Hungary, Panama, Hong Kong, Scotland, Iran.
country of birth self: United-States, Mexico, Puerto-Rico, Peru, Canada, South Korea, India, Japan, Haiti, El-Salvador, Dominican-Republic, Portugal, Columbia, England, Thailand, Cuba, Laos, Panama, China, Germany, Vietnam, Italy, Honduras, Outlying-U S (Guam USVI etc), Hungary, Philippines, Poland, Ecuador, Iran, Guatemala, Holand-Netherlands, Taiwan, Nicaragua, France, Jamaica, Scotland, Yugoslavia, Hong Kong, Trinadad&Tobago, Greece, Cambodia, Ireland.
citizenship: Native- Born in the United States, Foreign born- Not a citizen of U S , Native- Born in Puerto Rico or U S Outlying, Native- Born abroad of American Parent(s), Foreign born- U S citizen by naturalization.
own business or self employed: 0, 2, 1.
fill inc questionnaire for veteran's admin: Not in universe, Yes, No.
veterans benefits: 0, 2, 1.
weeks worked in year: continuous.
year: 94, 95.
"""

# Columns whose documented distinct-value count (census-income.names, "Information about .data
# file") is one more than the listed values: the extra value is the missing marker "?".
WITH_MISSING = frozenset(
    {
        "state of previous residence",
        "migration code-change in msa",
        "migration code-change in reg",
        "migration code-move within reg",
        "migration prev res in sunbelt",
        "country of birth father",
        "country of birth mother",
        "country of birth self",
    }
)

BOUNDS = {  # see the module docstring for the source of each
    "age": (0, 90),
    "wage per hour": (0, 9_999),
    "capital gains": (0, 99_999),
    "capital losses": (0, 99_999),
    "dividends from stocks": (0, 99_999),
    "num persons worked for employer": (0, 6),
    "weeks worked in year": (0, 52),
}
DROPPED = "instance weight"
CLASSES = ("- 50000", "50000+")


def _attributes() -> list[tuple[str, str]]:
    rows = []
    for line in NAMES.strip().splitlines():
        name, _, values = line.partition(":")
        rows.append((name.strip(), values.strip()))
    return rows


def _columns():
    columns = []
    for name, values in _attributes():
        if name == DROPPED:
            continue
        if values == "continuous.":
            columns.append(numerical(name, *BOUNDS[name]))
        else:
            categories = split_names_list(values) + ((MISSING,) if name in WITH_MISSING else ())
            columns.append(categorical(name, categories))
    return tuple(columns)


ATTRIBUTES = [name for name, _ in _attributes()]  # the 41 file columns before the label
COLUMNS = _columns()
SOURCES = [ATTRIBUTES.index(column.name) for column in COLUMNS]  # file column of each feature
N_COLUMNS = len(ATTRIBUTES) + 1

SCHEMA = Schema(
    columns=COLUMNS,
    label="income",
    classes=CLASSES,
    public_facts=(
        PublicFact(
            "published_rows",
            {"census-income.data": 199_523, "census-income.test": 99_762},
            "census-income.names: Number of instances data = 199523, test = 99762",
        ),
    ),
)


def _read_file(path: Path) -> Table:
    dtypes = {j: "category" for j in range(N_COLUMNS)}
    for column, source in zip(COLUMNS, SOURCES):
        if column.kind == ColumnKind.NUMERICAL:
            dtypes[source] = np.float64
    dtypes[ATTRIBUTES.index(DROPPED)] = np.float64
    frame = read_csv(
        path,
        N_COLUMNS,
        "UCI census-income",
        header=None,
        skipinitialspace=True,
        dtype=dtypes,
        keep_default_na=False,
        na_values=[],
    )
    x = features(frame, COLUMNS, SOURCES, path)
    y = code_labels(frame[N_COLUMNS - 1], {c: i for i, c in enumerate(CLASSES)}, "income", path, strip=".")
    return Table(x, y)


def read(data_dir: Path | None) -> Table:
    train = _read_file(fetch(TRAIN_FILE, data_dir))
    test = _read_file(fetch(TEST_FILE, data_dir))
    return Table(np.concatenate([train.x, test.x]), np.concatenate([train.y, test.y]))


def read_paper(data_dir: Path | None) -> Table:
    return _read_file(fetch(TRAIN_FILE, data_dir))


CENSUS = TabularDataset(
    name="census",
    description="UCI Census-Income (KDD), income >50K: 299,285 rows (data + test), 40 features (7 numerical, 33 categorical)",
    schema=SCHEMA,
    read=read,
    test_fraction=0.2,
    split_source="80/20 as in DP-MERF and DP-HP "
    "(github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py, "
    "github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py)",
    undersampling=Undersampling(
        0,
        0.2,
        "DP-HP grid "
        "(github.com/ParkLabML/DP-HP dp_mehp/run_sum_prod_kernel_tabular_data.py): keep 0.2 of '- 50000' (DP-MERF Table 4: 0.4)",
    ),
    read_paper=read_paper,
)
