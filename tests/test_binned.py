"""The marginal methods on tabular data through a public binning (methods/binned.py, issue 59):
the binning is a function of the public schema, each row is recoded on its own and decoded back
into its bin, and the handle refuses a recoding that is not row-wise."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from bench.api.contracts import FitContext
from bench.api.registry import DATASETS, METHODS
from bench.core.data import LabelledData
from bench.privacy.budget import PrivacyBudget
from bench.privacy.ledger import PrivacyLedger
from bench.privacy.private_data import PrivateData
from bench.privacy.row_wise import NotRowWiseError
from methods.binned import LABEL_COLUMN, binning

DATA_DIR = os.environ.get("DPBENCH_DATA_DIR")
pytestmark = pytest.mark.skipif(not DATA_DIR, reason="needs DPBENCH_DATA_DIR (adult)")


@pytest.fixture(scope="module")
def adult():
    return DATASETS.get("adult").load(DATA_DIR, 0).train


def test_the_binning_follows_the_public_schema_alone(adult):
    recoding = binning(adult.schema, 16)
    names = [c.name for c in recoding.schema.columns]
    assert names == [c.name for c in adult.schema.columns] + [LABEL_COLUMN]
    by_name = dict(zip(names, zip(recoding.edges, recoding.log_scale)))
    age_edges, age_log = by_name["age"]
    assert not age_log and age_edges[0] == 17 and age_edges[-1] == 90 and len(age_edges) == 17
    fnlwgt_edges, fnlwgt_log = by_name["fnlwgt"]  # public range 0 … 1.5 M: log scale
    assert fnlwgt_log and math.isclose(fnlwgt_edges[-1], math.log1p(1_500_000))
    assert by_name["workclass"][0] is None  # a coded column keeps its codes
    assert recoding.schema.columns[-1].categories == adult.schema.classes


def test_a_decoded_row_falls_in_the_bin_it_came_from(adult):
    recoding = binning(adult.schema, 16)
    coded = recoding.encode(adult)
    decoded = recoding.decode(coded, np.random.default_rng(0))
    again = recoding.encode(decoded)
    assert np.array_equal(again.x, coded.x)
    assert np.array_equal(decoded.y, adult.y)
    for j, column in enumerate(adult.schema.columns):
        if recoding.edges[j] is None:
            assert np.array_equal(decoded.x[:, j], adult.x[:, j])
        else:
            low, high = column.public_bounds()
            assert low - 1e-3 <= decoded.x[:, j].min() and decoded.x[:, j].max() <= high * (1 + 1e-6) + 1e-3


def test_values_outside_the_public_bounds_fall_in_the_end_bins(adult):
    recoding = binning(adult.schema, 16)
    rows = LabelledData(adult.x[:2].copy(), adult.y[:2].copy(), adult.schema)
    age = [c.name for c in adult.schema.columns].index("age")
    rows.x[0, age], rows.x[1, age] = -50.0, 1_000.0
    coded = recoding.encode(rows)
    assert coded.x[0, age] == 0 and coded.x[1, age] == 15


def test_the_handle_refuses_a_recoding_that_reads_other_rows(adult):
    ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    data = PrivateData(adult, ledger)
    recoding = binning(adult.schema, 16)
    coded = data.recoded("public bins", recoding.encode)
    assert coded.n_rows == data.n_rows and coded.schema == recoding.schema
    assert [fact.name for fact in ledger.public_facts] == ["recoding: public bins"]
    assert not ledger.releases

    def centred(rows: LabelledData) -> LabelledData:  # subtracts the batch mean: a statistic of all rows
        return LabelledData(rows.x - rows.x.mean(axis=0), rows.y, rows.schema)

    with pytest.raises(NotRowWiseError, match="each row on its own"):
        data.recoded("centred by the batch mean", centred)


def test_without_noise_mst_binned_reproduces_the_binned_one_way_marginals(adult):
    """At ε = ∞ MST measures every 1-way marginal exactly, so the decoded sample, binned again,
    has the training rows' 1-way marginals up to sampling error: catches a column decoded into
    another's place or a label lost on the way."""
    method = METHODS.get("mst-binned")
    rows = LabelledData(adult.x[:3000], adult.y[:3000], adult.schema)
    ledger = PrivacyLedger(PrivacyBudget(math.inf, 1e-5))
    params = method.hyperparameters.resolve("adult").params  # 1,000 mirror-descent steps: converged
    context = FitContext.of(DATASETS.get("adult"), params, 0, ledger)
    sample = method.fit(PrivateData(rows, ledger), context).sample(3000)
    recoding = binning(adult.schema, params.bins)
    want, got = recoding.encode(rows).x, recoding.encode(sample).x
    for j, column in enumerate(recoding.schema.columns):
        size = len(column.categories)
        tv = (
            0.5
            * np.abs(
                np.bincount(want[:, j].astype(int), minlength=size) / 3000
                - np.bincount(got[:, j].astype(int), minlength=size) / 3000
            ).sum()
        )
        assert tv < 0.05, (column.name, tv)
