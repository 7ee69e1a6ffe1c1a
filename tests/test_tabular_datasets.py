"""The tabular loaders on the real published files (adult, census, cervical, intrusion and the
samples in the shared data mirror) and on small files in the original format (credit, epileptic,
isolet, covtype, whose full files are not in the mirror).

The data folder is ``$DPBENCH_DATA_DIR``, else ``../shared/data`` next to the repository; a test
whose file is absent is skipped with the file's name. The slow parses (census, intrusion) run once
per module.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import math
import os
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from datasets.files import DataFileError
from bench.core.encoding import TabularEncoder
from bench.core.data import ColumnKind
from bench.api.registry import DATASETS
from datasets import adult, census, cervical, covtype, credit, epileptic, intrusion, isolet
from datasets.tabular import TabularDataset
from datasets.tabular_io import DataFormatError, sdgym_shuffle

DATA_DIR = Path(os.environ.get("DPBENCH_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")


def need(*files: str) -> None:
    missing = [f for f in files if not (DATA_DIR / f).exists()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not in {DATA_DIR} (set DPBENCH_DATA_DIR to the shared data mirror)")


def cached(dataset: TabularDataset, table, paper_table=None) -> TabularDataset:
    """The dataset with its (slow) file parsing replaced by an already parsed table."""
    return replace(
        dataset, read=lambda _: table, read_paper=(lambda _: paper_table) if paper_table is not None else None
    )


def pin(monkeypatch, module, attribute: str, content: bytes) -> None:
    """Pin a DataFile's checksum to the content of a test file.

    The full credit/epileptic/isolet/covtype files are not in the mirror, so these tests write
    small files in the original format; their content is not the publisher's, so the real
    checksum (or none, for files not pinned yet) cannot match. Pinning the DataFile to the test
    file's own content hash keeps the whole verified ``fetch`` path in the test — this is the
    only place where a checksum is replaced.
    """
    data_file = getattr(module, attribute)
    monkeypatch.setattr(module, attribute, replace(data_file, sha256=hashlib.sha256(content).hexdigest()))


def write(path: Path, content: bytes, gzipped: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(content, mtime=0) if gzipped else content)


# --- module-scoped parses of the real files --------------------------------------------------


@pytest.fixture(scope="module")
def adult_tables():
    need("adult/adult.data", "adult/adult.test")
    return adult.read(DATA_DIR), adult.read_paper(DATA_DIR)


@pytest.fixture(scope="module")
def census_tables():
    need("census/census-income.data.gz", "census/census-income.test.gz")
    return census.read(DATA_DIR)


@pytest.fixture(scope="module")
def cervical_tables():
    need("cervical/kag_risk_factors_cervical_cancer.csv")
    return cervical.read(DATA_DIR), cervical.read_paper(DATA_DIR)


@pytest.fixture(scope="module")
def intrusion_table():
    need("intrusion/kddcup.data_10_percent.gz")
    return intrusion.read(DATA_DIR)


# --- documented counts -----------------------------------------------------------------------


def test_adult_reads_both_published_files(adult_tables):
    full, paper = adult_tables
    train = adult._read_file(DATA_DIR / "adult" / "adult.data", skip_first_line=False)
    test = adult._read_file(DATA_DIR / "adult" / "adult.test", skip_first_line=True)
    assert (len(train.y), len(test.y), len(full.y)) == (32_561, 16_281, 48_842)
    assert full.x.shape == (48_842, 14) and set(np.unique(full.y)) == {0, 1}
    # education is ordinal in education-num order: code + 1 == education-num on every row
    assert np.array_equal(full.x[:, 3] + 1, full.x[:, 4])
    # '?' is its own category in the three columns that have unknowns, and only there
    names = [c.name for c in adult.COLUMNS]
    for name in ("workclass", "occupation", "native-country"):
        column = adult.COLUMNS[names.index(name)]
        assert column.categories[-1] == "?" and (full.x[:, names.index(name)] == len(column.categories) - 1).any()


def test_adult_paper_rows_are_sdgyms_train_part(adult_tables):
    full, paper = adult_tables
    assert paper.x.shape == (22_561, 14) and int(paper.y.sum()) == 5_473
    order = sdgym_shuffle(32_561)[:-10_000]  # adult.data rows come first in the full table
    assert np.array_equal(paper.x, full.x[order]) and np.array_equal(paper.y, full.y[order])


def test_census_reads_both_files_and_drops_the_instance_weight(census_tables):
    full = census_tables
    assert full.x.shape == (199_523 + 99_762, 40)
    kinds = [c.kind for c in census.COLUMNS]
    assert kinds.count(ColumnKind.NUMERICAL) == 7 and kinds.count(ColumnKind.CATEGORICAL) == 33
    assert "instance weight" not in [c.name for c in census.COLUMNS] and census.COLUMNS[-1].name == "year"
    assert int(full.y[:199_523].sum()) == 12_382  # census-income.data positives (DP-MERF (arXiv:2002.11603) App. K)


def test_census_paper_protocol_reads_the_data_file_only(census_tables):
    full = census_tables
    paper = census.read_paper(DATA_DIR)
    assert paper.x.shape == (199_523, 40)
    assert np.array_equal(paper.x, full.x[:199_523]) and np.array_equal(paper.y, full.y[:199_523])


def test_cervical_drops_rows_with_ten_or_more_missing_values(cervical_tables):
    sound, paper = cervical_tables
    raw = pd.read_csv(DATA_DIR / "cervical" / "kag_risk_factors_cervical_cancer.csv", na_values="?")
    assert raw.shape == (858, 36)
    assert sound.x.shape == (753, 34) and int(sound.y.sum()) == 53
    assert "STDs:vaginal condylomatosis" not in [c.name for c in cervical.COLUMNS]
    kinds = [c.kind for c in cervical.COLUMNS]
    assert kinds.count(ColumnKind.NUMERICAL) == 12 and kinds.count(ColumnKind.BINARY) == 22


def test_cervical_imputes_a_constant_in_sound_mode_and_the_reference_median_in_paper_mode(cervical_tables):
    sound, paper = cervical_tables
    raw = pd.read_csv(DATA_DIR / "cervical" / "kag_risk_factors_cervical_cancer.csv", na_values="?")
    kept = raw[raw.isna().sum(axis=1) < 10].reset_index(drop=True)
    for j, column in enumerate(cervical.COLUMNS):
        missing = kept[column.name].isna().to_numpy()
        assert np.all(sound.x[missing, j] == 0)  # data-independent fill
        assert np.array_equal(sound.x[~missing, j], paper.x[~missing, j])
        if missing.any():
            expected = round(float(kept[column.name].median()), 1) if column.kind == ColumnKind.NUMERICAL else 0.0
            assert np.allclose(paper.x[missing, j], expected)
    assert np.array_equal(sound.y, paper.y)


def test_intrusion_groups_the_23_attack_names_into_the_standard_5_classes(intrusion_table):
    assert intrusion_table.x.shape == (494_021, 40)
    counts = dict(zip(intrusion.CLASSES, np.bincount(intrusion_table.y, minlength=5).tolist()))
    assert counts == {"dos": 391_458, "normal": 97_278, "probe": 4_107, "r2l": 1_126, "u2r": 52}
    assert sum(len(names) for names in intrusion.ATTACK_GROUPS.values()) == 23
    assert "num_outbound_cmds" not in [c.name for c in intrusion.COLUMNS]
    assert intrusion.INTRUSION.undersampling.majority_class == intrusion.CLASSES.index("dos")


# --- the schema covers the real data ---------------------------------------------------------


def assert_encodes(schema, x, chunk=20_000):
    """Every raw value is inside the public domain, and the one-hot encoding round-trips."""
    encoder = TabularEncoder(schema)
    for j, column in enumerate(schema.columns):
        values = x[:, j]
        if column.kind == ColumnKind.NUMERICAL:
            low, high = column.bounds
            assert values.min() >= low and values.max() <= high, f"{column.name} leaves its bounds {column.bounds}"
        elif column.kind == ColumnKind.BINARY:
            assert np.isin(values, (0, 1)).all(), column.name
        else:
            assert values.min() >= 0 and values.max() < len(column.categories) and np.all(values == np.rint(values))
    tolerance = np.array([1e-5 * (c.bounds[1] - c.bounds[0]) if c.bounds else 0.0 for c in schema.columns])
    for start in range(0, len(x), chunk):
        part = x[start : start + chunk]
        encoded = encoder.encode(part)
        assert encoded.shape == (len(part), encoder.width) and encoded.min() >= 0 and encoded.max() <= 1
        assert np.all(np.abs(encoder.decode(encoded) - part) <= tolerance)  # codes exact, numbers to float precision


def test_adult_schema_encodes_its_data(adult_tables):
    assert_encodes(adult.SCHEMA, adult_tables[0].x)


def test_census_schema_encodes_its_data(census_tables):
    assert_encodes(census.SCHEMA, census_tables.x)


def test_cervical_schema_encodes_its_data(cervical_tables):
    assert_encodes(cervical.SCHEMA, cervical_tables[0].x)
    assert_encodes(cervical.SCHEMA, cervical_tables[1].x)


def test_intrusion_schema_encodes_its_data(intrusion_table):
    assert_encodes(intrusion.SCHEMA, intrusion_table.x, chunk=100_000)


# --- protocols -------------------------------------------------------------------------------


def check_sound(dataset: TabularDataset, seed: int = 0):
    """Stratified test split of the documented size with natural class counts; only the
    training split's majority class is thinned."""
    table = dataset.read(None)
    split = dataset.load(None, seed=seed, protocol="sound")
    n, f = len(table.y), dataset.test_fraction
    assert len(split.test) == math.ceil(f * n)
    natural = np.bincount(table.y, minlength=dataset.schema.n_classes)
    test_counts = split.test.class_counts()
    assert np.all(np.abs(test_counts - f * natural) <= 1)  # stratified, never undersampled
    train_counts = split.train.class_counts()
    rate = dataset.undersampling.rate if dataset.undersampling else 1.0
    majority = dataset.undersampling.majority_class if dataset.undersampling else None
    for c in range(dataset.schema.n_classes):
        available = natural[c] - test_counts[c]
        if c == majority and rate < 1:
            sd = math.sqrt(available * rate * (1 - rate))
            assert abs(train_counts[c] - rate * available) <= 5 * sd + 1
        else:
            assert train_counts[c] == available
    return split


def check_paper(dataset: TabularDataset, n_rows: int, seed: int = 0):
    """The reference's order: undersample everything, then an unstratified split."""
    split = dataset.load(None, seed=seed, protocol="paper")
    table = (dataset.read_paper or dataset.read)(None)
    assert len(table.y) == n_rows
    natural = np.bincount(table.y, minlength=dataset.schema.n_classes)
    kept = natural.copy()
    if dataset.undersampling and dataset.undersampling.rate < 1:
        m = dataset.undersampling.majority_class
        kept[m] = int(natural[m] * dataset.undersampling.rate)
    total = int(kept.sum())
    assert len(split.test) == math.ceil(dataset.test_fraction * total) and len(split.train) + len(split.test) == total
    assert np.array_equal(split.train.class_counts() + split.test.class_counts(), kept)
    return split


def test_adult_protocols(adult_tables):
    dataset = cached(adult.ADULT, *adult_tables)
    check_sound(dataset)
    split = check_paper(dataset, 22_561)
    assert (
        len(split.train) == 11_077 and len(split.test) == 1_231
    )  # as github.com/ParkLabML/DP-MERF code_tab/single_generator_priv_all.py


def test_adult_as_dphp_reads_it_keeps_every_row_and_codes_education_as_categorical(adult_tables):
    """DP-HP (arXiv:2106.05042) Table 3: 48,842 samples, 6 numerical + 8 categorical features."""
    dataset = cached(adult.ADULT_DPHP, adult_tables[0])
    check_sound(dataset)
    split = check_paper(dataset, 48_842)
    assert len(split.train) + len(split.test) == 11_687 + int(37_155 * 0.4)  # >50K rows + 0.4 of <=50K
    kinds = [c.kind for c in split.train.schema.columns]
    assert kinds.count(ColumnKind.NUMERICAL) == 6 and kinds.count(ColumnKind.CATEGORICAL) == 8
    assert DATASETS.get("adult-dphp") is adult.ADULT_DPHP


def test_adult_with_sorted_codes_holds_the_same_values_under_other_codes(adult_tables):
    """adult-dphp-sorted renumbers categories only: decoding both gives the same names, row by row."""
    need("adult/adult.data", "adult/adult.test")
    names_coded, sorted_coded = adult_tables[0], adult.read_sorted_codes(DATA_DIR)
    np.testing.assert_array_equal(sorted_coded.y, names_coded.y)
    for j, (by_name, by_sort) in enumerate(zip(adult.SCHEMA_DPHP.columns, adult.SCHEMA_DPHP_SORTED.columns)):
        if by_name.categories is None:
            np.testing.assert_array_equal(sorted_coded.x[:, j], names_coded.x[:, j])
            continue
        assert list(by_sort.categories) == sorted(by_name.categories)
        decoded_sorted = np.asarray(by_sort.categories)[sorted_coded.x[:, j].astype(int)]
        np.testing.assert_array_equal(decoded_sorted, np.asarray(by_name.categories)[names_coded.x[:, j].astype(int)])
    race = [c.name for c in adult.SCHEMA_DPHP.columns].index("race")
    # adult.data's first row is White: code 0 in adult.names' order, 4 in sorted order (LabelEncoder's)
    assert (names_coded.x[0, race], sorted_coded.x[0, race]) == (0, 4)
    assert DATASETS.get("adult-dphp-sorted") is adult.ADULT_DPHP_SORTED


def test_adult_as_dpmerf_reads_it_is_sdgyms_train_part_with_its_frequency_codebook(adult_tables):
    """DP-MERF's code reads sdgym.load_dataset('adult') (github.com/ParkLabML/DP-MERF
    code_tab/single_generator_priv_all.py): 22,561 rows, 5,473 >50K; undersampled at 0.4 and split
    90/10, 11,077 train / 1,231 test (the file name ..._samples_11077_features_14 in mvinaroz/dp-hp's
    history). SDGym's codes rank each category by its frequency in adult.data."""
    need("adult/adult.data", "adult/adult.test")
    table = adult.read_sdgym_train(DATA_DIR)
    assert table.x.shape == (22_561, 14) and int(table.y.sum()) == 5_473
    split = adult.ADULT_SDGYM.load(DATA_DIR, 0, "paper")
    assert (len(split.train), len(split.test)) == (11_077, 1_231)
    assert any(
        c.startswith("authors' preprocessing: categorical codes ordered by each value's frequency")
        for c in split.caveats
    )
    assert any("frequency" in c for c in adult.ADULT_SDGYM.load(DATA_DIR, 0, "sound").caveats)
    whole = adult_tables[0].x[:32_561]  # adult.data's rows, adult.names codes
    for j, column in enumerate(adult.SCHEMA.columns):
        if column.name in adult.SDGYM_ORDER:
            counts = np.bincount(whole[:, j].astype(int), minlength=len(column.categories))
            frequency = [column.categories[k] for k in np.argsort(-counts, kind="stable")]
            assert counts[[column.categories.index(n) for n in adult.SDGYM_ORDER[column.name]]].tolist() == sorted(
                counts, reverse=True
            ), column.name  # descending; ties may fall in either order
            assert adult.SDGYM_ORDER[column.name][:3] == tuple(frequency[:3]), column.name
    relationship = [c.name for c in adult.SCHEMA.columns].index("relationship")
    assert adult.SCHEMA_SDGYM.columns[relationship].categories[0] == "Husband"
    assert DATASETS.get("adult-sdgym") is adult.ADULT_SDGYM


def test_census_with_sdgym_codes_is_census_renumbered_by_descending_frequency():
    """Issue 58: the seeds' census arrays carry SDGym's frequency codes; under the paper protocol a
    sigmoid head emits codes 0 and 1 only, which SDGym's codebook makes the most frequent values."""
    from datasets import census_sdgym

    need("census/census-income.data.gz")
    ours = census.read_paper(DATA_DIR)
    theirs = census_sdgym.read_paper(DATA_DIR)
    assert theirs.x.shape == ours.x.shape == (199_523, 40) and np.array_equal(theirs.y, ours.y)
    for j, (old, new) in enumerate(zip(census.SCHEMA.columns, census_sdgym.SCHEMA_SDGYM.columns)):
        if old.categories is None:
            assert np.array_equal(theirs.x[:, j], ours.x[:, j]), old.name
            continue
        names_ours = np.asarray(old.categories)[ours.x[:, j].astype(int)]
        names_theirs = np.asarray(new.categories)[theirs.x[:, j].astype(int)]
        assert np.array_equal(names_ours, names_theirs), old.name  # the same values, renumbered
        counts = np.bincount(theirs.x[:, j].astype(int), minlength=len(new.categories))
        assert np.all(np.diff(counts) <= 0), old.name  # code 0 the most frequent, and so on
    mother = [c.name for c in census.COLUMNS].index("country of birth mother")
    share_01 = {name: float(np.mean(t.x[:, mother] <= 1)) for name, t in (("ours", ours), ("sdgym", theirs))}
    assert share_01["sdgym"] > 0.8 > 0.1 > share_01["ours"]
    assert DATASETS.get("census-sdgym") is census_sdgym.CENSUS_SDGYM
    assert any("frequency" in c for c in census_sdgym.CENSUS_SDGYM.load(DATA_DIR, 0, "paper").caveats)


def test_intrusion_with_sdgym_codes_holds_protocol_service_and_flag_as_frequency_ranks():
    """Issue 58: the seeds' code feeds SDGym's frequency codes of protocol, service and flag as
    numbers; ours are categorical in alphabetical order, whose codes 0/1 are rare values."""
    from datasets import intrusion_sdgym

    need("intrusion/kddcup.data_10_percent.gz")
    ours = intrusion.read(DATA_DIR)
    theirs = intrusion_sdgym.read(DATA_DIR)
    assert theirs.x.shape == ours.x.shape == (494_021, 40) and np.array_equal(theirs.y, ours.y)
    for j, (old, new) in enumerate(zip(intrusion.COLUMNS, intrusion_sdgym.COLUMNS)):
        if old.name not in intrusion_sdgym.SDGYM_ORDER:
            assert new == old and np.array_equal(theirs.x[:, j], ours.x[:, j]), old.name
            continue
        assert new.kind == ColumnKind.NUMERICAL and new.public_bounds() == (0, len(old.categories) - 1)
        order = intrusion_sdgym.SDGYM_ORDER[old.name]
        names = np.asarray(old.categories)[ours.x[:, j].astype(int)]
        assert np.array_equal(np.asarray(order)[theirs.x[:, j].astype(int)], names), old.name
        counts = np.bincount(theirs.x[:, j].astype(int), minlength=len(order))
        assert np.all(np.diff(counts) <= 0), old.name
    service = [c.name for c in intrusion.COLUMNS].index("service")
    assert np.mean(theirs.x[:, service] <= 1) > 0.75 > 0.01 > np.mean(ours.x[:, service] <= 1)
    assert DATASETS.get("intrusion-sdgym") is intrusion_sdgym.INTRUSION_SDGYM


def test_adult_as_dphps_logs_evidence_it_is_adult_data_with_sorted_codes():
    """DP-HP's adult.p (github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py) is not
    retrievable; the weights its run log prints (mvinaroz/dp-hp d562cb6
    dp_mehp/run_output_adult_census_cerv_cred_priv.txt) are integers over the training rows only for
    adult.data's 32,561 rows (7,841 >50K): at undersampling 0.4 and a 90% split, 15,956 training rows."""
    need("adult/adult.data", "adult/adult.test")
    table = adult.read_dphp_logs(DATA_DIR)
    assert table.x.shape == (32_561, 14) and int(table.y.sum()) == 7_841
    split = adult.ADULT_DPHP_LOGS.load(DATA_DIR, 0, "paper")
    assert (len(split.train), len(split.test)) == (15_956, 1_773)
    assert split.train.schema == adult.SCHEMA_DPHP_SORTED
    assert DATASETS.get("adult-dphp-logs") is adult.ADULT_DPHP_LOGS


def test_the_authors_z_scored_adult_p_recomputes_its_transcribed_statistics():
    """adult-dphp-zscored is adult-dphp-logs with every column z-scored as DP-HP's adult.p was: the
    transcribed means and population sds are adult.data's (32,561 rows), the z-scored rows have mean
    0 and sd 1, and the same rows and split sizes as adult-dphp-logs, the statistics named as a caveat."""
    need("adult/adult.data", "adult/adult.test")
    raw = adult.read_dphp_logs(DATA_DIR).x.astype(np.float64)
    names = [c.name for c in adult.SCHEMA_DPHP_SORTED.columns]
    assert np.allclose([adult.DPHP_ZSCORE[n] for n in names], np.column_stack([raw.mean(0), raw.std(0)]), rtol=1e-12)
    z = adult.read_dphp_zscored(DATA_DIR).x
    assert np.allclose(z.mean(0), 0, atol=1e-9) and np.allclose(z.std(0), 1, atol=1e-9)
    split = adult.ADULT_DPHP_ZSCORED.load(DATA_DIR, 0, "paper")
    assert (len(split.train), len(split.test)) == (15_956, 1_773) and adult.ZSCORE_CAVEAT in split.caveats
    assert all(c.kind.value == "numerical" for c in split.train.schema.columns)
    assert DATASETS.get("adult-dphp-zscored") is adult.ADULT_DPHP_ZSCORED


def test_census_protocols(census_tables):
    full = census_tables
    paper = type(full)(full.x[:199_523], full.y[:199_523])
    dataset = cached(census.CENSUS, full, paper)
    check_sound(dataset, seed=1)
    check_paper(dataset, 199_523, seed=1)


def test_cervical_protocols(cervical_tables):
    dataset = cached(cervical.CERVICAL, *cervical_tables)
    check_sound(dataset)
    check_paper(dataset, 753)


def test_cervical_as_dpmerf_reads_it_keeps_every_row(cervical_tables):
    """DP-MERF's code keeps every cervical row (--undersample 1.0, its Table 4); DP-HP's grid keeps 0.3
    of the negatives: 753 rows, 80/20 → 602 / 151 under the paper protocol."""
    dataset = cached(cervical.CERVICAL_DPMERF, *cervical_tables)
    split = dataset.load(DATA_DIR, 0, "paper")
    assert (len(split.train), len(split.test)) == (602, 151)
    assert int(split.train.y.sum() + split.test.y.sum()) == 53
    assert DATASETS.get("cervical-dpmerf") is cervical.CERVICAL_DPMERF


def test_intrusion_protocols(intrusion_table):
    dataset = cached(intrusion.INTRUSION, intrusion_table)
    split = check_sound(dataset, seed=2)
    assert split.test.class_counts()[4] in (15, 16)  # u2r: 52 rows, 30% stratified
    check_paper(dataset, 494_021, seed=2)


def test_loading_goes_through_the_registered_dataset():
    need("adult/adult.data", "adult/adult.test")
    split = DATASETS.get("adult").load(DATA_DIR, seed=3)
    assert len(split.test) == 4_885 and split.train.schema is adult.SCHEMA


# --- the samples in the mirror ---------------------------------------------------------------


def test_registered_names_keep_samples_apart():
    names = set(DATASETS.names())
    assert {"adult", "census", "cervical", "credit", "epileptic", "isolet", "covtype", "intrusion"} <= names
    assert {"credit-sample", "covtype-subset", "isolet-subset"} <= names
    for name in ("credit-sample", "covtype-subset", "isolet-subset"):
        assert DATASETS.get(name).description.startswith(("SAMPLE", "SUBSET"))


def test_credit_sample_loads():
    need("credit-sample/creditcard_sample.csv")
    table = credit.read_sample(DATA_DIR)
    assert table.x.shape == (1_722, 29) and np.bincount(table.y).tolist() == [1_230, 492]
    assert_encodes(credit.SAMPLE_SCHEMA, table.x)
    dataset = cached(credit.CREDIT_SAMPLE, table)
    check_sound(dataset)
    check_paper(dataset, 1_722)
    assert DATASETS.get("credit-sample").load(DATA_DIR, seed=0).train.x.shape[1] == 29


def test_covtype_subset_loads():
    need("covtype-subset/10_cover.npz")
    table = covtype.read_subset(DATA_DIR)
    assert table.x.shape == (286_048, 10) and np.bincount(table.y).tolist() == [283_301, 2_747]
    assert_encodes(covtype.SUBSET_SCHEMA, table.x, chunk=100_000)
    dataset = cached(covtype.COVTYPE_SUBSET, table)
    check_sound(dataset)
    check_paper(dataset, 286_048)


def test_isolet_subset_loads():
    need("isolet-subset/isolet_1560.mat")
    table = isolet.read_subset(DATA_DIR)
    assert table.x.shape == (1_560, 617) and np.bincount(table.y).tolist() == [1_260, 300]  # 5 vowels × 60
    assert_encodes(isolet.SUBSET_SCHEMA, table.x)
    dataset = cached(isolet.ISOLET_SUBSET, table)
    check_sound(dataset)
    check_paper(dataset, 1_560)


# --- full datasets absent from the mirror: small files in the original format ----------------


def test_credit_reads_kaggles_creditcard_csv(tmp_path, monkeypatch):
    need("credit-sample/creditcard_sample.csv")
    sample = pd.read_csv(DATA_DIR / "credit-sample" / "creditcard_sample.csv").iloc[:, 1:]  # drop the index column
    sample["Class"] = sample["Class"].astype(str)  # Kaggle's file quotes the header and the class: "0"
    content = sample.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC).encode()
    assert content.startswith(b'"Time","V1",')
    write(tmp_path / "credit" / "creditcard.csv", content)
    pin(monkeypatch, credit, "DATA_FILE", content)
    table = credit.read(tmp_path)
    assert table.x.shape == (1_722, 29) and int(table.y.sum()) == 492
    assert np.allclose(table.x[:, -1], sample["Amount"].to_numpy(np.float32))  # Time is dropped
    split = credit.CREDIT.load(tmp_path, seed=0)
    assert len(split.test) == math.ceil(0.2 * 1_722)
    assert split.train.class_counts()[1] == 492 - split.test.class_counts()[1]


def epileptic_csv(n=50, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    header = '"",' + ",".join(f'"X{i}"' for i in range(1, 179)) + ',"y"'
    lines = [header]
    for k in range(n):
        values = ",".join(str(v) for v in rng.integers(-1500, 1500, 178))
        lines.append(f'"X{k % 23 + 1}.V1.{100 + k}",{values},{k % 5 + 1}')
    return ("\n".join(lines) + "\n").encode()


def test_epileptic_reads_data_csv(tmp_path, monkeypatch):
    content = epileptic_csv()
    write(tmp_path / "epileptic" / "data.csv", content)
    pin(monkeypatch, epileptic, "DATA_FILE", content)
    table = epileptic.read(tmp_path)
    assert table.x.shape == (50, 178) and int(table.y.sum()) == 10  # y == 1 on every fifth row
    assert np.array_equal(table.y, (np.arange(50) % 5 == 0).astype(int))
    assert_encodes(epileptic.SCHEMA, table.x)
    split = epileptic.EPILEPTIC.load(tmp_path, seed=0, protocol="paper")
    assert len(split.test) == 15 and len(split.train) == 35


def isolet_lines(fea: np.ndarray, letters: np.ndarray) -> bytes:
    rows = [", ".join(f"{v:.4f}" for v in row) + f", {int(letter)}." for row, letter in zip(fea, letters)]
    return ("\n".join(rows) + "\n").encode()


def test_isolet_reads_both_uci_files(tmp_path, monkeypatch):
    need("isolet-subset/isolet_1560.mat")
    from scipy.io import loadmat

    mat = loadmat(DATA_DIR / "isolet-subset" / "isolet_1560.mat")
    fea, gnd = mat["fea"][:300], mat["gnd"].ravel()[:300]  # real rows, written in the UCI format
    first, second = isolet_lines(fea[:200], gnd[:200]), isolet_lines(fea[200:], gnd[200:])
    write(tmp_path / "isolet" / "isolet1+2+3+4.data", first)
    write(tmp_path / "isolet" / "isolet5.data", second)
    pin(monkeypatch, isolet, "TRAIN_FILE", first)
    pin(monkeypatch, isolet, "TEST_FILE", second)
    table = isolet.read(tmp_path)
    assert table.x.shape == (300, 617)
    assert np.allclose(table.x, fea, atol=5e-5)
    assert np.array_equal(table.y, np.isin(gnd, (1, 5, 9, 15, 21)).astype(int))
    assert len(isolet.read_paper(tmp_path).y) == 200  # the seeds read isolet1+2+3+4.data only
    assert_encodes(isolet.SCHEMA, table.x)


def covtype_rows(n=300, seed=0) -> tuple[bytes, np.ndarray]:
    """covtype.data rows: the 10 quantitative values of real rows of the mirror's subset when
    present (else synthetic ones), one wilderness area and one soil type each, cover type 1..7."""
    rng = np.random.default_rng(seed)
    path = DATA_DIR / "covtype-subset" / "10_cover.npz"
    if path.exists():
        with np.load(path) as content:
            quantitative = content["X"][:n].astype(np.int64)
    else:
        quantitative = np.column_stack([rng.integers(1900, 3800, n)] + [rng.integers(0, 255, n) for _ in range(9)])
    wilderness = np.eye(4, dtype=np.int64)[rng.integers(0, 4, n)]
    soil = np.eye(40, dtype=np.int64)[rng.integers(0, 40, n)]
    cover = np.arange(n) % 7 + 1
    values = np.column_stack([quantitative, wilderness, soil, cover])
    return ("\n".join(",".join(map(str, row)) for row in values) + "\n").encode(), values


def test_covtype_reads_the_uci_gzip(tmp_path, monkeypatch):
    content, values = covtype_rows()
    write(tmp_path / "covtype" / "covtype.data.gz", content, gzipped=True)
    pin(monkeypatch, covtype, "DATA_FILE", content)  # content checksum: of the decompressed bytes
    table = covtype.read(tmp_path)
    assert table.x.shape == (300, 54) and np.array_equal(table.y, values[:, -1] - 1)
    assert np.array_equal(table.x, values[:, :54])
    assert_encodes(covtype.SCHEMA, table.x)
    paper = covtype.read_paper(tmp_path)  # fewer than 20,000 rows: all of them, in SDGym's order
    assert np.array_equal(paper.x, table.x[sdgym_shuffle(300)])
    assert covtype.COVTYPE.undersampling.majority_class == covtype.CLASSES.index("Lodgepole Pine")


# --- errors ----------------------------------------------------------------------------------


def test_a_file_with_the_wrong_number_of_columns_is_refused(tmp_path, monkeypatch):
    # native-country is missing: 14 columns
    content = b"39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, <=50K\n"
    write(tmp_path / "adult" / "adult.data", content)
    pin(monkeypatch, adult, "TRAIN_FILE", content)
    with pytest.raises(DataFormatError, match=r"has 14 columns, expected 15; is it the original UCI adult file\?"):
        adult.read_paper(tmp_path)


def test_a_value_outside_the_documented_categories_is_refused(tmp_path, monkeypatch):
    good = (
        "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, "
        "United-States, <=50K\n"
    )
    content = (good + good.replace("State-gov", "Space-agency")).encode()
    write(tmp_path / "adult" / "adult.data", content)
    pin(monkeypatch, adult, "TRAIN_FILE", content)
    with pytest.raises(
        DataFormatError, match=r"column 'workclass' has value\(s\) 'Space-agency' outside its 9 documented"
    ):
        adult.read_paper(tmp_path)
    content = (good + good.replace("Never-married", "?")).encode()  # '?' only where UCI lists unknowns
    write(tmp_path / "adult" / "adult.data", content)
    pin(monkeypatch, adult, "TRAIN_FILE", content)
    with pytest.raises(DataFormatError, match="column 'marital-status' has value"):
        adult.read_paper(tmp_path)


def test_an_unknown_attack_name_is_refused(tmp_path, monkeypatch):
    row = "0,tcp,http,SF,181,5450" + ",0" * 16 + ",8,8" + ",0.00" * 7 + ",9,9" + ",1.00" * 8
    content = (row + ",normal.\n" + row + ",mailbomb.\n").encode()
    write(tmp_path / "intrusion" / "kddcup.data_10_percent.gz", content, gzipped=True)
    pin(monkeypatch, intrusion, "DATA_FILE", content)
    with pytest.raises(DataFormatError, match="'mailbomb'"):
        intrusion.read(tmp_path)


def test_a_wrong_header_is_refused(tmp_path, monkeypatch):
    content = epileptic_csv(n=5).replace(b'"X7"', b'"X7b"')
    write(tmp_path / "epileptic" / "data.csv", content)
    pin(monkeypatch, epileptic, "DATA_FILE", content)
    with pytest.raises(DataFormatError, match="unexpected header \\(column 'X7b' where 'X7' is expected\\)"):
        epileptic.read(tmp_path)


def test_an_unpinned_file_is_used_with_a_warning_and_a_missing_one_explains_the_manual_download(tmp_path):
    assert credit.DATA_FILE.sha256 is None  # until someone pins the checksum of the real creditcard.csv
    with pytest.raises(DataFileError, match="creditcard.csv is missing: log in to Kaggle"):
        credit.read(tmp_path)
    write(tmp_path / "epileptic" / "data.csv", epileptic_csv(n=5))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(epileptic.read(tmp_path).y) == 5
    assert any("no content checksum is pinned" in str(w.message) for w in caught)


def test_a_corrupted_real_file_is_refused(tmp_path):
    need("cervical/kag_risk_factors_cervical_cancer.csv")
    original = (DATA_DIR / "cervical" / "kag_risk_factors_cervical_cancer.csv").read_bytes()
    write(tmp_path / "cervical" / "kag_risk_factors_cervical_cancer.csv", original.replace(b"18,4.0", b"19,4.0", 1))
    with pytest.raises(DataFileError, match="corrupt or not the original file"):
        cervical.read(tmp_path)
