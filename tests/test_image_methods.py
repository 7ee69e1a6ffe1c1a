"""Image generators and the image settings of dp-merf, dp-hp and full-mmd (issue 7), the image
artifacts of a run, and ``--eval-set``."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from bench.privacy.private_data import PrivateData
from bench.privacy.budget import PrivacyBudget
from bench.harness.grid import GridError, GridSpec, expand
from bench.core.data import DataKind, LabelledData
from bench.api.contracts import Evaluation, FitContext
from bench.privacy.ledger import PrivacyLedger
from bench.api.registry import DATASETS, METHODS
from bench.harness.worker import execute
from datasets.images import ImageArrays, ImageDataset
from datasets.mnist import MNIST
from methods.full_mmd import labelled_gaussian_mmd2
from methods.nets import ConvolutionalConditionalGenerator, FullyConnectedConditionalGenerator, build_generator

TINY = "mnist-tiny-test"


@pytest.fixture(scope="module")
def tiny_mnist(data_dir):
    """The first 400 training and 200 test images of MNIST, registered as a dataset."""
    arrays = MNIST.read(data_dir)
    tiny = ImageArrays(arrays.train_x[:400], arrays.train_y[:400], arrays.test_x[:200], arrays.test_y[:200])
    dataset = ImageDataset(TINY, "MNIST, first 400/200 images (tests)", MNIST.schema, lambda _: tiny)
    DATASETS.register(dataset)
    yield dataset
    DATASETS.unregister(TINY)


def test_conv_generator_follows_the_seeds_shapes():
    net = ConvolutionalConditionalGenerator(5, 10, 200, (16, 8), 5, (1, 28, 28), torch.nn.Sigmoid())
    assert net.start == (
        16,
        7,
        7,
    )  # Linear(200 → 16·7·7 = 784), github.com/ParkLabML/DP-MERF code_balanced/models_gen.py
    out = net(torch.arange(10).repeat(3))
    assert out.shape == (30, 784) and ((out > 0) & (out < 1)).all()
    rgb = ConvolutionalConditionalGenerator(5, 10, 64, (16, 8), 5, (3, 32, 32))
    assert rgb(torch.zeros(4, dtype=torch.long)).shape == (4, 3 * 32 * 32)
    with pytest.raises(ValueError, match="bilinear"):
        ConvolutionalConditionalGenerator(5, 10, 64, (16, 8, 4), 5, (1, 28, 28))


def test_build_generator_picks_the_named_architecture():
    params = METHODS.get("dp-hp").hyperparameters.resolve("mnist").params  # fc, hidden 500-500
    fc = build_generator(params, 10, 784, torch.nn.Sigmoid(), (1, 28, 28))
    assert isinstance(fc, FullyConnectedConditionalGenerator)
    conv = build_generator(
        dataclasses.replace(params, architecture="conv", hidden="500"), 10, 784, torch.nn.Sigmoid(), (1, 28, 28)
    )
    assert isinstance(conv, ConvolutionalConditionalGenerator) and conv.fc[0].out_features == 500
    with pytest.raises(ValueError, match="image data"):
        build_generator(dataclasses.replace(params, architecture="conv"), 2, 8, torch.nn.Identity(), None)
    with pytest.raises(ValueError, match="architecture must be one of"):
        build_generator(dataclasses.replace(params, architecture="resnet"), 2, 8, torch.nn.Identity(), None)


def test_image_presets_are_the_seeds_and_gamma_follows_privacy():
    hp = METHODS.get("dp-hp").hyperparameters
    private = hp.resolve("mnist").values
    assert (private["sum_order"], private["prod_order"], private["prod_dims"]) == (100, 20, 2)
    assert private["sum_length_sq"] == 0.005 and private["gamma"] == 20.0 and private["gamma_on"] == "sum"
    assert private["architecture"] == "fc" and private["sum_share"] == 0.8 and private["labels"] == "uniform"
    assert hp.resolve("mnist", private=False).values["gamma"] == 5.0  # Table 9, non-private column
    fashion = hp.resolve("fashion-mnist").values
    assert fashion["architecture"] == "conv" and fashion["sum_length_sq"] == 0.15 and fashion["gamma"] == 10.0
    assert hp.resolve("fashion-mnist", private=False).values["gamma"] == 20.0
    merf = METHODS.get("dp-merf").hyperparameters.resolve("fashion-mnist").values
    assert (merf["n_features"], merf["architecture"], merf["batch_size"], merf["epochs"]) == (10_000, "conv", 100, 5)
    # the grid resolves per ε: a non-private cell gets the non-private γ
    spec = GridSpec(methods=["dp-hp"], datasets=["mnist"], epsilons=[1.0, math.inf], seeds=[0], evaluators=["fid"])
    cells, _ = expand(spec)
    assert {c.epsilon: c.params["gamma"] for c in cells} == {1.0: 20.0, math.inf: 5.0}


def _fit(method: str, train: LabelledData, eps: float, **overrides):
    adapter = METHODS.get(method)
    params = adapter.hyperparameters.resolve(TINY, "smoke", {k: str(v) for k, v in overrides.items()}).params
    params = dataclasses.replace(params, sum_length_sq=0.005, prod_length_sq=0.005) if method == "dp-hp" else params
    budget = PrivacyBudget(eps, 1e-5) if math.isfinite(eps) else PrivacyBudget.non_private()
    ledger = PrivacyLedger(budget)
    context = FitContext(budget, ledger, params, 0, torch.device("cpu"), data_kind=DataKind.IMAGE)
    return adapter.fit(PrivateData(train, context.ledger), context), ledger


@pytest.mark.parametrize("method", ["dp-merf", "dp-hp"])
@pytest.mark.parametrize("architecture", ["fc", "conv"])
def test_uniform_labels_release_nothing_and_sample_balanced_pixels(tiny_mnist, data_dir, method, architecture):
    train = tiny_mnist.load(data_dir, 0).train
    hidden = "64" if architecture == "conv" else "64-64"
    fitted, ledger = _fit(method, train, 1.0, architecture=architecture, hidden=hidden, labels="uniform")
    releases = ledger.to_dict()["releases"]
    assert not any("proportions" in r["what"] for r in releases)
    assert ledger.epsilon_spent == pytest.approx(1.0, rel=1e-6)
    facts = {f["name"]: f["value"] for f in ledger.to_dict()["public_facts"]}
    assert facts["class_proportions"] == "uniform 1/10"
    sample = fitted.sample(1000)
    assert np.bincount(sample.y, minlength=10).tolist() == [100] * 10
    assert sample.x.shape == (1000, 784) and sample.x.min() >= 0 and sample.x.max() <= 1


def test_released_labels_are_charged_on_images(tiny_mnist, data_dir):
    train = tiny_mnist.load(data_dir, 0).train
    _, ledger = _fit("dp-merf", train, 1.0, labels="released")
    assert any(r["what"] in ("class counts", "class proportions") for r in ledger.to_dict()["releases"])
    assert ledger.epsilon_spent <= 1.0 + 1e-9


def test_labelled_mmd_matches_the_explicit_double_sum():
    rng = np.random.default_rng(0)
    real, fake = torch.as_tensor(rng.normal(size=(7, 3))), torch.as_tensor(rng.normal(size=(5, 3)) + 0.5)
    real_y, fake_y = torch.as_tensor(rng.integers(0, 2, 7)), torch.as_tensor(rng.integers(0, 2, 5))
    ell = 1.3

    def k(a, ya, b, yb):
        return math.exp(-float(((a - b) ** 2).sum()) / (2 * ell**2)) * float(ya == yb)

    def mean(a, ya, b, yb):
        return sum(k(a[i], ya[i], b[j], yb[j]) for i in range(len(a)) for j in range(len(b))) / (len(a) * len(b))

    expected = (
        mean(real, real_y, real, real_y) + mean(fake, fake_y, fake, fake_y) - 2 * mean(real, real_y, fake, fake_y)
    )
    assert float(labelled_gaussian_mmd2(real, real_y, fake, fake_y, ell)) == pytest.approx(expected, rel=1e-10)
    assert float(labelled_gaussian_mmd2(real, real_y, real, real_y, ell)) == pytest.approx(0.0, abs=1e-12)
    # same points, other labels: the label kernel separates them
    assert float(labelled_gaussian_mmd2(real, real_y, real, 1 - real_y, ell)) > 0.1


def test_full_mmd_is_non_private_and_runs_only_at_infinite_epsilon():
    assert not METHODS.get("full-mmd").private
    cells, _ = expand(GridSpec(methods=["full-mmd"], datasets=["gmm2d"], epsilons=[0.5, 1.0], seeds=[0]))
    assert [c.epsilon for c in cells] == [math.inf]


@pytest.mark.parametrize("method", ["dp-hp", "dp-merf", "full-mmd", "real", "dp-gan", "dp-cgan"])
def test_image_cell_runs_and_writes_a_sample_grid(tiny_mnist, tmp_path, method):
    overrides = {"dp-hp": {"sum_order": "5", "prod_order": "3"}, "dp-merf": {"n_features": "200"}}
    spec = GridSpec(
        methods=[method],
        datasets=[TINY],
        epsilons=[1.0],
        seeds=[0],
        profile="smoke",
        evaluators=["fid"],
        overrides={k: v for k, v in overrides.items() if k == method},
    )
    (cell,), _ = expand(spec)
    cell = dataclasses.replace(cell, evaluators=())  # FID's Inception pass is tested in test_images.py
    outcome = execute(cell.to_json(), str(tmp_path), lambda fraction: None)
    assert outcome.status == "FINISHED", outcome.error
    assert (tmp_path / "samples.png").stat().st_size > 1000
    stored = np.load(tmp_path / "synthetic_sample.npz")
    assert stored["x"].dtype == np.uint8 and stored["x"].shape[1] == 784
    ledger = json.loads((tmp_path / "ledger.json").read_text())
    if METHODS.get(method).private:
        assert 0 < ledger["spent"]["epsilon"] <= 1.0 + 1e-9


def test_eval_set_changes_an_evaluator_setting_and_is_recorded():
    spec = GridSpec(
        methods=["real"],
        datasets=["mnist"],
        epsilons=[1.0],
        seeds=[0],
        evaluators=["fid"],
        evaluator_overrides={"fid": {"n_samples": "1000"}},
    )
    (cell,), _ = expand(spec)
    assert cell.evaluator_settings == {"fid": {"n_samples": 1000}}
    assert cell.mlflow_params()["eval.fid.n_samples"] == "1000"
    (plain,), _ = expand(dataclasses.replace(spec, evaluator_overrides={}))
    assert plain.evaluator_settings == {} and plain.key != cell.key
    (sized,), _ = expand(
        dataclasses.replace(
            spec, evaluators=["effective-size"], evaluator_overrides={"effective-size": {"ratios": "0.1, 0.01"}}
        )
    )
    assert sized.evaluator_settings == {"effective-size": {"ratios": (0.1, 0.01)}}
    with pytest.raises(GridError, match="no such setting"):
        expand(dataclasses.replace(spec, evaluator_overrides={"fid": {"weights_url": "x"}}))
    with pytest.raises(GridError, match="expected an int"):
        expand(dataclasses.replace(spec, evaluator_overrides={"fid": {"n_samples": "many"}}))


def test_eval_set_settings_reach_the_evaluator(tmp_path, monkeypatch):
    seen = {}

    @dataclasses.dataclass(frozen=True)
    class Recording:
        name: str = "recording-test"
        description: str = "records its setting"
        data_kinds: frozenset = frozenset({DataKind.TWO_D})
        metrics: dict = dataclasses.field(default_factory=lambda: {})
        level: int = 1

        def applies_to(self, schema):
            return True

        def evaluate(self, synthetic, real_train, real_test, context):
            seen["level"], seen["context"] = self.level, context
            return Evaluation({}, artifacts={"recording.txt": str(self.level).encode()})

    from bench.api.registry import EVALUATORS

    EVALUATORS.register(Recording())
    try:
        spec = GridSpec(
            methods=["real"],
            datasets=["gmm2d"],
            epsilons=[1.0],
            seeds=[0],
            evaluators=["recording-test"],
            evaluator_overrides={"recording-test": {"level": "7"}},
            data_dir=str(tmp_path / "data"),
        )
        (cell,), _ = expand(spec)
        outcome = execute(cell.to_json(), str(tmp_path), lambda fraction: None)
    finally:
        EVALUATORS.unregister("recording-test")
    assert outcome.status == "FINISHED", outcome.error
    assert seen["level"] == 7 and (tmp_path / "recording.txt").read_text() == "7"
    # the cell's --device, --data-dir, seed and protocol reach the evaluator
    context = seen["context"]
    assert (context.device, context.data_dir, context.seed, context.protocol) == ("cpu", tmp_path / "data", 0, "sound")
