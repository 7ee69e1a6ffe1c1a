"""Tabular encoding, the model space, and DP-MERF's sum kernel on tabular data, both protocols."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from bench.privacy.private_data import PrivateData
from bench.privacy.budget import PrivacyBudget
from bench.core.encoding import SchemaError, TabularEncoder
from bench.core.data import Column, ColumnKind, DataKind, LabelledData, Schema
from bench.api.contracts import FitContext
from bench.privacy.ledger import PrivacyLedger
from methods.dp_merf import HYPERPARAMETERS, dp_merf, sum_kernel_features
from methods.space import ModelSpace

SCHEMA = Schema(
    columns=(
        Column("age", ColumnKind.NUMERICAL, bounds=(0.0, 100.0)),
        Column("education", ColumnKind.ORDINAL, categories=("low", "mid", "high")),
        Column("colour", ColumnKind.CATEGORICAL, categories=("red", "green", "blue", "cyan")),
        Column("smoker", ColumnKind.BINARY),
    ),
    label="y",
    classes=("no", "yes"),
)


def table(n=400, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = np.stack(
        [
            rng.uniform(20, 80, n) + 10 * y,
            rng.integers(0, 3, n),
            (rng.integers(0, 2, n) + 2 * y),
            rng.integers(0, 2, n),
        ],
        axis=1,
    ).astype(np.float32)
    return LabelledData(x, y, SCHEMA)


def test_one_hot_encoding_round_trips_and_clips_to_public_bounds():
    encoder = TabularEncoder(SCHEMA)
    data = table()
    encoded = encoder.encode(data.x)
    assert encoded.shape == (len(data), 1 + 1 + 4 + 1)
    assert encoded.min() >= 0 and encoded.max() <= 1
    assert np.allclose(encoder.decode(encoded), data.x, atol=1e-4)
    outside = encoder.encode(np.array([[250.0, 2, 3, 1]], dtype=np.float32))
    assert outside[0, 0] == 1.0  # clipped at the public upper bound


def test_codes_encoding_keeps_raw_values():
    encoder = TabularEncoder(SCHEMA, "codes")
    data = table()
    assert np.array_equal(encoder.encode(data.x), data.x)
    assert encoder.width == 4


def test_schema_without_public_bounds_is_refused():
    schema = Schema((Column("income", ColumnKind.NUMERICAL),), "y", ("a", "b"))
    with pytest.raises(SchemaError, match="needs public bounds"):
        TabularEncoder(schema)


@pytest.mark.parametrize("protocol", ["sound", "paper"])
def test_feature_norm_never_exceeds_the_sensitivity_bound(protocol):
    space = ModelSpace.for_data(DataKind.TABULAR, SCHEMA, protocol)
    features = sum_kernel_features(space, 200, None, torch.Generator().manual_seed(0))
    extreme = np.array([[0, 0, 0, 0], [100, 2, 3, 1], [1e6, 2, 3, 1]], dtype=np.float32)
    rows = np.concatenate([table(2000).x, extreme])
    z = torch.as_tensor(space.encode(rows), dtype=torch.float64)
    labels = torch.zeros(len(z), dtype=torch.long)
    norms = torch.stack([features.class_sums(z[i : i + 1], labels[:1], 1).norm() for i in range(len(z))])
    assert norms.max().item() <= features.norm_bound + 1e-9
    assert norms.max().item() > 0.99 * features.norm_bound  # the bound is attained
    if protocol == "sound":
        assert features.norm_bound == pytest.approx(math.sqrt(2))
    else:  # integer codes: ‖x_cat‖²/d_cat ≤ ((4−1)² + 1)/2 = 5
        assert features.norm_bound == pytest.approx(math.sqrt(1 + 5))


@pytest.mark.parametrize("protocol", ["sound", "paper"])
def test_dp_merf_on_tabular_data_charges_counts_and_embedding(protocol):
    data = table()
    budget = PrivacyBudget(1.0, 1e-5)
    ledger = PrivacyLedger(budget)
    params = dataclasses.replace(HYPERPARAMETERS.resolve("adult", "smoke").params, epochs=5)
    context = FitContext(budget, ledger, params, seed=0, device=torch.device("cpu"), protocol=protocol)
    model = dp_merf.fit(PrivateData(data, context.ledger), context)
    releases = {r.what: r for r in ledger.releases}
    assert set(releases) == {"class counts", "labelled mean embedding (RFF sum kernel)"}
    bound = math.sqrt(2) if protocol == "sound" else math.sqrt(6)
    assert releases["labelled mean embedding (RFF sum kernel)"].sensitivity == pytest.approx(2 * bound / len(data))
    assert releases["class counts"].sensitivity == pytest.approx(
        math.sqrt(2)
    )  # the handle's counts: one row moves two by 1
    assert ledger.epsilon_spent == pytest.approx(1.0, rel=1e-6)
    sample = model.sample(300)
    assert sample.schema == SCHEMA and sample.x.shape == (300, 4)
    assert set(np.unique(sample.x[:, 2])) <= {0, 1, 2, 3} and set(np.unique(sample.x[:, 3])) <= {0, 1}
    assert sample.x[:, 0].min() >= 0 and sample.x[:, 0].max() <= 100


def test_paper_protocol_splits_carry_their_privacy_caveat_and_sound_ones_the_tuned_rate_and_the_count():
    from datasets.tabular import Table, TabularDataset, Undersampling

    rng = np.random.default_rng(0)
    rows = Table(table(500).x, rng.integers(0, 2, 500))
    dataset = TabularDataset("toy", "toy", SCHEMA, lambda _: rows, 0.2, "test", Undersampling(0, 0.5, "test"))
    tuned, count = dataset.load(None, 0, "sound").caveats  # the undersampling rate was chosen on the data
    assert tuned.startswith("tuned_on_private_data: undersampling rate 0.5")
    assert "row count after undersampling" in count  # Binomial in the private class count, used as public
    paper = dataset.load(None, 0, "paper").caveats
    assert "not a sound privacy claim" in paper[0] and tuned in paper


@pytest.mark.parametrize("protocol", ["sound", "paper"])
def test_output_head_equals_its_per_block_definition(protocol):
    """The head's few full-width operations give each block's activation, values and gradients."""
    space = ModelSpace.for_data(DataKind.TABULAR, SCHEMA, protocol)
    head = space.output_head()
    raw = torch.randn(6, space.width, dtype=torch.float64, requires_grad=True)
    activations = {"softmax": lambda b: torch.softmax(b, 1), "relu": torch.relu, "sigmoid": torch.sigmoid}
    reference = torch.cat([activations[a](raw[:, p[0] : p[-1] + 1]) for a, p in head.groups], dim=1)
    weights = torch.randn_like(reference)
    (expected,) = torch.autograd.grad((reference * weights).sum(), raw)
    output = head(raw)
    (gradient,) = torch.autograd.grad((output * weights).sum(), raw)
    assert torch.allclose(output, reference) and torch.allclose(gradient, expected)
    assert {a for a, _ in head.groups} == ({"sigmoid", "softmax"} if protocol == "sound" else {"relu", "sigmoid"})


def test_range_outputs_emit_numerical_columns_within_their_public_bounds():
    """dp-hp.numerical_outputs=public-range (issue 28): under the paper protocol each numerical
    and ordinal output is low + span·sigmoid(u), so even extreme pre-activations stay inside the
    public range (the ReLU head emits raw units a short schedule cannot grow to); categorical
    codes keep their sigmoid."""
    from dataclasses import replace

    space = replace(ModelSpace.for_data(DataKind.TABULAR, SCHEMA, "paper"), range_outputs=True)
    head = space.output_head()
    raw = torch.cat(
        [torch.full((1, space.width), -50.0), torch.zeros(1, space.width), torch.full((1, space.width), 50.0)]
    )
    out = head(raw)
    numeric = space.numerical
    low = space.coordinate_midpoints()[numeric] - space.coordinate_spans()[numeric] / 2
    high = low + space.coordinate_spans()[numeric]
    assert torch.allclose(out[0, numeric].double(), torch.as_tensor(low), atol=1e-3)
    assert torch.allclose(out[1, numeric].double(), torch.as_tensor((low + high) / 2), atol=1e-3)
    assert torch.allclose(out[2, numeric].double(), torch.as_tensor(high), atol=1e-2)
    assert {a for a, _ in head.groups} == {"range", "sigmoid"}
    assert {a for a, _ in ModelSpace.for_data(DataKind.TABULAR, SCHEMA, "paper").output_head().groups} == {
        "relu",
        "sigmoid",
    }
