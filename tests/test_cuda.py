"""The CUDA path: the same features and the same privacy spend on a GPU as on the CPU.

Skipped where torch sees no CUDA device (CI has none); run on a GPU machine with
``pytest tests/test_cuda.py`` (``benchmarks/gpu_cells.py`` does, before its paper-scale cells).
The feature maps are pure functions of their inputs, so a GPU may only differ from the CPU by
float rounding; the fits draw their noise from the device's own generator, so their samples
differ, but the ledger (what is released, at which noise, charged how) must not.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from bench.api.registry import DATASETS
from bench.harness.grid import GridSpec, expand
from bench.harness.worker import execute
from datasets.images import ImageArrays, ImageDataset
from datasets.mnist import MNIST
from bench.privacy.row_wise import ROW_WISE_ATOL, ROW_WISE_RTOL
from methods.dp_merf import CUDA_TILE_ENTRIES, draw_frequencies, rff_class_sums, rff_features
from methods.encoders import build_encoder
from methods.hermite import hermite_features

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")

TINY = "mnist-tiny-cuda-test"


def same_numbers(a: dict, b: dict) -> bool:
    """Equal keys and values, numbers up to float32 rounding (a noise scale may be computed on the
    device in float32)."""
    if a.keys() != b.keys():
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, float) and isinstance(y, float):
            if x != pytest.approx(y, rel=1e-6):
                return False
        elif x != y:
            return False
    return True


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.cpu() - b.cpu()).norm() / b.cpu().norm())


def test_random_fourier_features_are_the_same_function_on_the_gpu():
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(3_000, 14, generator=generator, dtype=torch.float64)
    frequencies = draw_frequencies(500, torch.full((14,), 1.3, dtype=torch.float64), generator)
    on_cpu = rff_features(x, frequencies)
    on_gpu = rff_features(x.cuda(), frequencies.cuda())
    assert on_gpu.device.type == "cuda"
    assert relative_error(on_gpu, on_cpu) < 1e-12


def test_random_fourier_class_sums_and_their_gradient_are_the_same_on_the_gpu_in_its_larger_tiles():
    generator = torch.Generator().manual_seed(2)
    half = 1_000
    x = torch.randn(40_000, 6, generator=generator, dtype=torch.float64)
    labels = torch.randint(0, 2, (40_000,), generator=generator)
    frequencies = draw_frequencies(
        2 * half, torch.full((6,), 0.8, dtype=torch.float64), generator
    )  # D = 2 · half features
    target = torch.randn(2, 2 * half, generator=generator, dtype=torch.float64)
    assert (labels == 0).sum() > 2 * CUDA_TILE_ENTRIES // half  # several GPU tiles a class

    def loss_and_gradient(device: str):
        rows = x.to(device).requires_grad_(True)
        sums = rff_class_sums(rows, labels.to(device), 2, frequencies.to(device))
        loss = ((sums - target.to(device)) ** 2).sum()
        (gradient,) = torch.autograd.grad(loss, rows)
        return sums.detach(), gradient

    cpu_sums, cpu_gradient = loss_and_gradient("cpu")
    gpu_sums, gpu_gradient = loss_and_gradient("cuda")
    assert relative_error(gpu_sums, cpu_sums) < 1e-10
    assert relative_error(gpu_gradient, cpu_gradient) < 1e-10


@pytest.mark.parametrize("order", [5, 20, 100])
def test_hermite_features_are_the_same_function_on_the_gpu(order):
    generator = torch.Generator().manual_seed(order)
    x = torch.rand(2_000, 9, generator=generator, dtype=torch.float64) * 2 - 1
    rho = torch.tensor(0.7, dtype=torch.float64)
    on_cpu = hermite_features(x, rho, order)
    on_gpu = hermite_features(x.cuda(), rho.cuda(), order)
    assert on_gpu.device.type == "cuda"
    assert relative_error(on_gpu, on_cpu) < 1e-10


def test_a_row_gets_the_same_encoder_features_alone_as_within_a_batch(data_dir):
    """DP-MEPF's release sums per-row features, checked row-wise; at the ``cpu`` profile's seven
    layers cuDNN's default TF32 convolutions broke that on an H100 (``methods/encoders.py``)."""
    images = (
        (torch.as_tensor(MNIST.read(data_dir).train_x[:100], dtype=torch.float32) / 255).reshape(-1, 1, 28, 28).cuda()
    )
    _, encoder = build_encoder("efficientnet-lite0-imagenet", "stem,b0,b1,b2,b3,b4,b5")
    encoder = encoder.freeze().cuda()
    with torch.no_grad():
        batch = encoder(images).double()
        for i in (0, 99):
            alone = encoder(images[i : i + 1]).double()
            assert (alone - batch[i]).norm() <= ROW_WISE_RTOL * batch[i].norm() + ROW_WISE_ATOL


@pytest.fixture(scope="module")
def tiny_mnist(data_dir):
    arrays = MNIST.read(data_dir)
    tiny = ImageArrays(arrays.train_x[:400], arrays.train_y[:400], arrays.test_x[:200], arrays.test_y[:200])
    DATASETS.register(ImageDataset(TINY, "MNIST, first 400/200 images (tests)", MNIST.schema, lambda _: tiny))
    yield TINY
    DATASETS.unregister(TINY)


def run_cell(method: str, dataset: str, epsilon: float, device: str, folder) -> tuple[object, dict]:
    spec = GridSpec(
        methods=[method],
        datasets=[dataset],
        epsilons=[epsilon],
        seeds=[0],
        profile="smoke",
        device=device,
        evaluators=[],
        threads=1,
    )
    (cell,), _ = expand(spec)
    folder.mkdir()
    outcome = execute(
        dataclasses.replace(cell, evaluators=(), evaluator_settings={}).to_json(), str(folder), lambda fraction: None
    )
    return outcome, json.loads((folder / "ledger.json").read_text())


@pytest.mark.parametrize(
    "method, dataset, epsilon",
    [
        ("dp-merf", "gmm2d", 1.0),
        ("dp-hp", "cervical", 1.0),
        ("dp-gan", "gmm2d", 3.0),
        ("dp-cgan", "gmm2d", 3.0),
        ("full-mmd", "gmm2d", float("inf")),
        ("dp-merf", TINY, 1.0),
        ("dp-hp", TINY, 1.0),
        ("dp-mepf", TINY, 1.0),
    ],
)
def test_a_cell_runs_on_the_gpu_and_spends_what_the_cpu_cell_spends(method, dataset, epsilon, tiny_mnist, tmp_path):
    on_gpu, gpu_ledger = run_cell(method, dataset, epsilon, "cuda", tmp_path / "cuda")
    assert on_gpu.status == "FINISHED", on_gpu.error
    assert on_gpu.tags["device"] == torch.cuda.get_device_name()
    on_cpu, cpu_ledger = run_cell(method, dataset, epsilon, "cpu", tmp_path / "cpu")
    assert on_cpu.status == "FINISHED", on_cpu.error
    assert same_numbers(gpu_ledger["spent"], cpu_ledger["spent"])
    assert len(gpu_ledger["releases"]) == len(cpu_ledger["releases"])
    for on, off in zip(gpu_ledger["releases"], cpu_ledger["releases"]):
        assert same_numbers(on, off), (on, off)
    assert same_numbers(
        {"independent": on_gpu.metrics.get("privacy.epsilon_independent")},
        {"independent": on_cpu.metrics.get("privacy.epsilon_independent")},
    )
    assert (tmp_path / "cuda" / "synthetic.npz").exists()
