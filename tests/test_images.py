"""The image datasets (mnist, fashion-mnist, cifar10, cifar10-jpeg) and the fid evaluator.

Real files come from ``$DPBENCH_DATA_DIR``, else ``../shared/data`` next to the repository; a test
whose file is absent is skipped with the file's name. Formats the mirror lacks (CIFAR-10's
original python batches) and failure cases are tested on small files written here.

FID on this CPU: one ``calculate_frechet_distance`` (a 2048 × 2048 ``sqrtm``) takes about 20 s on
one core whatever the sample count, so the tests of FID values are marked slow; the default suite
checks the network, the weights, the preprocessing and the cache without it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import tarfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from pytorch_fid import inception as pytorch_fid_inception

from datasets.files import DataFileError
from bench.harness.grid import GridSpec, expand
from bench.core.data import DataKind, LabelledData
from bench.api.contracts import EvalContext
from bench.api.registry import DATASETS, EVALUATORS
from datasets import cifar10, mnist
from bench.core.images import as_images, image_shape, is_image_schema
from datasets.tabular_io import DataFormatError
from bench.core import inception
from evaluators import fid

DATA_DIR = Path(os.environ.get("DPBENCH_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
WEIGHTS = DATA_DIR / inception.MIRROR_FOLDER / inception.MIRROR_WEIGHTS
MNIST_FILES = [f"mnist/{name}" for name in mnist.MNIST_SHA256]
FASHION_FILES = [f"fashion-mnist/{name}" for name in mnist.FASHION_SHA256]
# Public: the MNIST page's training-set digit counts (also in torchvision's and Keras' docs).
MNIST_TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def need(*files: str | Path) -> None:
    missing = [str(f) for f in files if not (DATA_DIR / f).exists()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not in {DATA_DIR} (set DPBENCH_DATA_DIR to the shared data mirror)")


@pytest.fixture(scope="module")
def mnist_split():
    need(*MNIST_FILES)
    return DATASETS.get("mnist").load(DATA_DIR, seed=0)


@pytest.fixture(autouse=True)
def isolated_fid(tmp_path, monkeypatch):
    """Each test sees only the weights it is given (the FID cache is the context's, per test)."""
    monkeypatch.delenv(inception.WEIGHTS_VARIABLE, raising=False)
    monkeypatch.setenv("DPBENCH_OFFLINE", "1")


# --- loaders -------------------------------------------------------------------------------------


def test_mnist_shapes_range_and_class_counts(mnist_split):
    train, test = mnist_split.train, mnist_split.test
    assert train.x.shape == (60_000, 784) and test.x.shape == (10_000, 784)
    assert train.x.dtype == np.float32 and train.x.min() == 0.0 and train.x.max() == 1.0
    assert train.class_counts().tolist() == MNIST_TRAIN_COUNTS
    assert test.class_counts().tolist() == MNIST_TEST_COUNTS
    assert abs(float(train.x.mean()) - 0.1307) < 1e-3  # the widely quoted MNIST pixel mean
    assert train.schema.classes == tuple("0123456789")


def test_fashion_mnist_shapes_and_balanced_classes():
    need(*FASHION_FILES)
    split = DATASETS.get("fashion-mnist").load(DATA_DIR, seed=0, protocol="paper")
    assert split.train.x.shape == (60_000, 784) and split.test.x.shape == (10_000, 784)
    assert 0.0 <= split.train.x.min() and split.train.x.max() <= 1.0
    assert split.train.class_counts().tolist() == [6_000] * 10  # Fashion-MNIST README: balanced
    assert split.test.class_counts().tolist() == [1_000] * 10
    assert split.train.schema.classes[0] == "T-shirt/top" and split.train.schema.classes[9] == "Ankle boot"
    assert not split.caveats


def test_image_schema_carries_the_shape():
    schema = mnist.MNIST_SCHEMA
    assert image_shape(schema) == (1, 28, 28) and image_shape(cifar10.SCHEMA) == (3, 32, 32)
    assert schema.n_features == 784 and cifar10.SCHEMA.n_features == 3072 and schema.n_classes == 10
    assert schema.columns[0].name == "p0" and schema.columns[-1].name == "p783"
    assert all(column.bounds == (0.0, 1.0) for column in cifar10.SCHEMA.columns)
    assert as_images(np.zeros((5, 3072), np.float32), cifar10.SCHEMA).shape == (5, 3, 32, 32)
    assert is_image_schema(schema) and not is_image_schema(DATASETS.get("gmm2d").schema)
    with pytest.raises(ValueError, match="image_shape"):
        image_shape(DATASETS.get("adult").schema)
    for name in ("mnist", "fashion-mnist", "cifar10", "cifar10-jpeg"):
        assert DATASETS.get(name).kind == DataKind.IMAGE


def test_both_protocols_give_the_published_split():
    need(*MNIST_FILES)
    sound = DATASETS.get("mnist").load(DATA_DIR, seed=0, protocol="sound")
    paper = DATASETS.get("mnist").load(DATA_DIR, seed=5, protocol="paper")
    assert np.array_equal(sound.test.x, paper.test.x) and np.array_equal(sound.train.y, paper.train.y)
    with pytest.raises(ValueError, match="protocol"):
        DATASETS.get("mnist").load(DATA_DIR, seed=0, protocol="other")


def test_corrupt_or_missing_idx_file_gives_a_clear_error(tmp_path):
    folder = tmp_path / "mnist"
    folder.mkdir()
    (folder / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(b"not an idx file"))
    with pytest.raises(DataFileError, match="corrupt or not the original file.*train-images-idx3-ubyte.gz"):
        DATASETS.get("mnist").load(tmp_path, seed=0)
    (folder / "train-images-idx3-ubyte.gz").unlink()
    with pytest.raises(DataFileError, match="missing and DPBENCH_OFFLINE is set: get it from http://yann.lecun.com"):
        DATASETS.get("mnist").load(tmp_path, seed=0)


def test_idx_header_is_checked():
    header = np.array([mnist.IMAGE_MAGIC, 2, 28, 28], dtype=">u4").tobytes()
    images = mnist.parse_idx(header + bytes(2 * 784), mnist.IMAGE_MAGIC, (2, 28, 28), Path("x"))
    assert images.shape == (2, 28, 28)
    with pytest.raises(DataFormatError, match="idx header"):
        mnist.parse_idx(header + bytes(2 * 784), mnist.LABEL_MAGIC, (2,), Path("x"))
    with pytest.raises(DataFormatError, match="values after the header"):
        mnist.parse_idx(header + bytes(784), mnist.IMAGE_MAGIC, (2, 28, 28), Path("x"))


def solid_jpeg(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), colour).save(buffer, format="JPEG", quality=95)
    return buffer.getvalue()


def add_member(archive: tarfile.TarFile, name: str, content: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    archive.addfile(info, io.BytesIO(content))


def test_jpeg_tar_layout_order_and_channels(tmp_path, monkeypatch):
    """A miniature tar in the mirror's layout: rows by class then file number, channel-first pixels."""
    monkeypatch.setattr(cifar10, "PER_CLASS", {"train": 2, "test": 1})
    path = tmp_path / "mini.tar"
    with tarfile.open(path, "w") as archive:
        add_member(archive, "CIFAR-10-images/README.md", b"# CIFAR-10-images\n")
        for split, count in (("test", 1), ("train", 2)):
            for label, name in reversed(list(enumerate(cifar10.CLASSES))):  # out of order on purpose
                for number in range(count):
                    add_member(
                        archive,
                        f"CIFAR-10-images/{split}/{name}/{number:04d}.jpg",
                        solid_jpeg((20 * label, 100 + 50 * number, 30)),
                    )
    arrays = cifar10.read_jpeg_tar(path)
    assert arrays.train_x.shape == (20, 3072) and arrays.test_x.shape == (10, 3072)
    assert arrays.train_y.tolist() == [c for c in range(10) for _ in range(2)]
    row = arrays.train_x[2 * 3 + 1].astype(int)  # class 3 (cat), file 0001
    assert abs(row[:1024].mean() - 60) < 3 and abs(row[1024:2048].mean() - 150) < 3 and abs(row[2048:].mean() - 30) < 3

    with tarfile.open(path, "a") as archive:
        add_member(archive, "CIFAR-10-images/train/unicorn/0000.jpg", solid_jpeg((0, 0, 0)))
    with pytest.raises(DataFormatError, match="unexpected member CIFAR-10-images/train/unicorn"):
        cifar10.read_jpeg_tar(path)


def test_cifar10_jpeg_copy_loads():
    need(f"{cifar10.JPEG_FILE.folder}/{cifar10.JPEG_FILE.filename}")
    dataset = DATASETS.get("cifar10-jpeg")
    assert dataset.description.startswith("JPEG COPY")
    split = dataset.load(DATA_DIR, seed=0)
    assert split.train.x.shape == (50_000, 3072) and split.test.x.shape == (10_000, 3072)
    assert split.train.class_counts().tolist() == [5_000] * 10 and split.test.class_counts().tolist() == [1_000] * 10
    assert split.train.x.min() == 0.0 and split.train.x.max() == 1.0
    with tarfile.open(DATA_DIR / "cifar10-jpeg" / "CIFAR-10-images.tar") as archive:
        content = archive.extractfile("CIFAR-10-images/train/automobile/0000.jpg").read()
    expected = np.asarray(Image.open(io.BytesIO(content)).convert("RGB")).transpose(2, 0, 1) / np.float32(255)
    assert np.array_equal(as_images(split.train.x[5_000:5_001], split.train.schema)[0], expected.astype(np.float32))


def write_original_batches(folder: Path, rows: int) -> dict[str, bytes]:
    """Pickled batches in the python version's format; label = batch index, pixel = row + channel."""
    folder.mkdir(parents=True)
    written = {}
    for index, name in enumerate((*cifar10.TRAIN_BATCHES, cifar10.TEST_BATCH)):
        data = np.zeros((rows, 3072), np.uint8)
        data[:, 1024:2048], data[:, 2048:] = 100, 200  # green and blue planes
        data[:, 0] = index
        content = pickle.dumps({b"data": data, b"labels": [index] * rows, b"batch_label": name.encode()})
        (folder / name).write_bytes(content)
        written[name] = content
    return written


def test_cifar10_original_batches(tmp_path, monkeypatch):
    """The python version from its extracted folder and from the archive, verified by md5."""
    monkeypatch.setattr(cifar10, "BATCH_ROWS", 3)
    batches = write_original_batches(tmp_path / "cifar10" / "cifar-10-batches-py", rows=3)
    monkeypatch.setattr(cifar10, "published_md5", lambda: {k: hashlib.md5(v).hexdigest() for k, v in batches.items()})
    split = DATASETS.get("cifar10").load(tmp_path, seed=0)
    assert split.train.x.shape == (15, 3072) and split.test.x.shape == (3, 3072)
    assert split.train.y.tolist() == [0] * 3 + [1] * 3 + [2] * 3 + [3] * 3 + [4] * 3 and set(split.test.y) == {5}
    images = as_images(split.train.x, split.train.schema)
    assert np.allclose(images[:, 1], 100 / 255) and np.allclose(images[:, 2], 200 / 255)

    archive_path = tmp_path / "archive" / "cifar10" / "cifar-10-python.tar.gz"
    archive_path.parent.mkdir(parents=True)
    with tarfile.open(archive_path, "w:gz") as archive:
        archive.add(tmp_path / "cifar10" / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    from_archive = DATASETS.get("cifar10").load(tmp_path / "archive", seed=0)
    assert np.array_equal(from_archive.train.x, split.train.x)

    damaged = bytearray(batches["test_batch"])
    damaged[len(damaged) // 2] ^= 1  # one flipped bit in the pixel data
    (tmp_path / "cifar10" / "cifar-10-batches-py" / "test_batch").write_bytes(bytes(damaged))
    with pytest.raises(DataFileError, match="test_batch is corrupt or not the original"):
        DATASETS.get("cifar10").load(tmp_path, seed=0)


def test_cifar10_without_original_points_to_the_jpeg_copy(tmp_path):
    with pytest.raises(DataFileError, match="cifar-10-python.tar.gz.*separate dataset cifar10-jpeg") as error:
        DATASETS.get("cifar10").load(tmp_path, seed=0)
    assert "\n" not in str(error.value)


# --- registration: which evaluators score images ---------------------------------------------------


IMAGE_EVALUATORS = ("effective-size", "fid", "image-downstream", "image-downstream-10pct", "prdc")


def test_only_the_image_evaluators_score_image_data():
    for name in IMAGE_EVALUATORS:
        evaluator = EVALUATORS.get(name)
        assert evaluator.data_kinds == frozenset({DataKind.IMAGE})
        assert evaluator.applies_to(mnist.MNIST_SCHEMA) and evaluator.applies_to(cifar10.SCHEMA)
        assert not evaluator.applies_to(DATASETS.get("adult").schema)
        assert not evaluator.applies_to(DATASETS.get("gmm2d").schema)
    for other in ("downstream", "nll"):
        assert DataKind.IMAGE not in EVALUATORS.get(other).data_kinds
    (cell,), _ = expand(GridSpec(methods=["real"], datasets=["mnist"], epsilons=[1.0], seeds=[0]))
    assert cell.evaluators == ("fid", "image-downstream")  # the other two repeat their work: named only
    (named,), _ = expand(
        GridSpec(methods=["real"], datasets=["mnist"], epsilons=[1.0], seeds=[0], evaluators=list(IMAGE_EVALUATORS))
    )
    assert named.evaluators == IMAGE_EVALUATORS


# --- fid: weights and network ---------------------------------------------------------------------


def test_weights_come_from_the_data_dir_offline():
    need(WEIGHTS)
    assert inception.resolve_weights(None, str(DATA_DIR)) == WEIGHTS
    network, sha256, device = EVALUATORS.get("fid").network(EvalContext(device="auto", data_dir=DATA_DIR))
    assert sha256 == inception.MIRROR_SHA256 and device in ("cpu", "cuda")
    assert EVALUATORS.get("fid").network(EvalContext(device="cpu", data_dir=DATA_DIR))[2] == "cpu"  # --device cpu
    with torch.inference_mode():
        features = network(torch.rand(2, 3, 28, 28, device=device))[0]
    assert features.shape == (2, 2048, 1, 1)


def test_fid_constants_are_pytorch_fids_own():
    """bench/core/inception.py and evaluators/fid.py spell out pytorch-fid's weights file name and pool3 block index so that
    listing the evaluators does not import pytorch-fid; they must stay pytorch-fid's."""
    from urllib.parse import urlparse

    assert inception.STANDARD_WEIGHTS == Path(urlparse(pytorch_fid_inception.FID_WEIGHTS_URL).path).name
    assert fid.POOL3 == pytorch_fid_inception.InceptionV3.BLOCK_INDEX_BY_DIM[2048]


def test_listing_evaluators_does_not_import_pytorch_fid():
    """`bench table` and a cell without images load every evaluator module; pytorch-fid (and the
    torchvision models it pulls in, ≈ 1.3 s) is imported only when an FID is computed."""
    import subprocess
    import sys

    code = (
        "import sys; from bench.api.registry import EVALUATORS; [e for e in EVALUATORS]; "
        "print('pytorch_fid' in sys.modules, 'torchvision.models' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_network_matches_pytorch_fids_own_construction(monkeypatch):
    """pytorch-fid's InceptionV3 built its own way (its download replaced by the same weights plus
    the fc layer it insists on) gives the same features as the download-free construction."""
    need(WEIGHTS)
    state = torch.load(WEIGHTS, map_location="cpu", weights_only=True)
    full = {**state, "fc.weight": torch.zeros(1008, 2048), "fc.bias": torch.zeros(1008)}
    ours = fid.fid_network(inception.fid_inception_core(state, WEIGHTS))
    monkeypatch.setattr(pytorch_fid_inception, "load_state_dict_from_url", lambda *args, **kwargs: full)
    theirs = pytorch_fid_inception.InceptionV3([3]).eval()
    images = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        assert torch.allclose(ours(images)[0], theirs(images)[0], atol=1e-6)
        # the network the evaluator runs: batch norms folded, channels-last — the same features
        # up to float rounding
        fast = fid.load_network(str(WEIGHTS), inception.file_sha256(WEIGHTS), "cpu")
        assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in fast.modules())
        expected = theirs(images)[0]
        assert torch.allclose(
            fast(images.contiguous(memory_format=torch.channels_last))[0], expected, rtol=1e-4, atol=1e-4
        )


def test_missing_weights_error_says_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    with pytest.raises(inception.FidWeightsError) as error:
        inception.resolve_weights(None, str(tmp_path / "no-data"))
    message = str(error.value)
    assert "\n" not in message
    assert inception.WEIGHTS_VARIABLE in message and "DPBENCH_OFFLINE" in message
    assert str(tmp_path / "no-data" / "fid-inception" / inception.MIRROR_WEIGHTS) in message
    monkeypatch.setenv(inception.WEIGHTS_VARIABLE, str(tmp_path / "elsewhere.pth"))
    with pytest.raises(inception.FidWeightsError, match="elsewhere.pth does not exist"):
        inception.resolve_weights(None, None)


def test_wrong_weights_are_refused(tmp_path):
    need(WEIGHTS)
    state = torch.load(WEIGHTS, map_location="cpu", weights_only=True)
    inception.fid_inception_core(state, WEIGHTS)  # only fc missing: accepted
    without_conv = {k: v for k, v in state.items() if k != "Conv2d_1a_3x3.conv.weight"}
    with pytest.raises(inception.FidWeightsError, match="1 missing keys besides fc"):
        inception.fid_inception_core(without_conv, WEIGHTS)
    with pytest.raises(inception.FidWeightsError, match="1 unexpected"):
        inception.fid_inception_core({**state, "extra.weight": torch.zeros(1)}, WEIGHTS)
    with pytest.raises(inception.FidWeightsError, match="does not fit"):
        inception.fid_inception_core({**state, "Conv2d_1a_3x3.conv.weight": torch.zeros(1)}, WEIGHTS)
    with pytest.raises(inception.FidWeightsError, match="is corrupt"):
        inception.check_known_file(tmp_path / inception.MIRROR_WEIGHTS, "0" * 64)
    not_weights = tmp_path / "weights.pth"
    not_weights.write_bytes(b"junk")
    with pytest.raises(inception.FidWeightsError, match="cannot be read as a weights file"):
        fid.load_network(str(not_weights), "0" * 64, "cpu")


def test_greyscale_is_replicated_to_three_channels():
    need(WEIGHTS)
    network, _, device = EVALUATORS.get("fid").network(EvalContext(data_dir=DATA_DIR))
    grey = np.random.default_rng(0).random((2, 1, 28, 28), dtype=np.float32)
    mu_grey, sigma_grey = fid.activation_statistics(grey, network, 2, device)
    mu_rgb, sigma_rgb = fid.activation_statistics(np.repeat(grey, 3, axis=1), network, 2, device)
    assert np.array_equal(mu_grey, mu_rgb) and np.array_equal(sigma_grey, sigma_rgb)


def test_streamed_statistics_equal_numpy():
    """The batch-by-batch mean and covariance equal np.mean / np.cov of all features at once."""
    features = np.random.default_rng(1).normal(3.0, 1.0, size=(7, 5))

    def network(batch):  # stands in for InceptionV3: one "image" row of features per input
        return [batch.flatten(1)[:, :5].reshape(len(batch), 5, 1, 1)]

    images = np.zeros((7, 3, 1, 5), np.float32)
    images[:, 0, 0, :] = features / 10  # inside [0, 1], so clipping leaves them alone
    mu, sigma = fid.activation_statistics(images, network, 3, "cpu")
    expected = images[:, 0, 0, :].astype(np.float64)
    assert np.allclose(mu, expected.mean(0)) and np.allclose(sigma, np.cov(expected, rowvar=False))


def test_pixels_are_clipped_to_the_bounds_without_changing_the_data():
    def network(batch):  # the first three pixels as "features"
        return [batch.flatten(1)[:, :3].reshape(len(batch), 3, 1, 1)]

    images = np.array([[-1.0, 0.5, 2.0], [0.0, 0.25, 1.0]], np.float32).reshape(2, 3, 1, 1)
    before = images.copy()
    mu, _ = fid.activation_statistics(images, network, 2, "cpu")
    assert np.allclose(mu, [0.0, 0.375, 1.0]) and np.array_equal(images, before)


# --- fid: real statistics, reference split, sample count --------------------------------------------


def small_images(n: int, offset: float) -> LabelledData:
    x = np.full((n, 784), offset, np.float32) + np.linspace(0, 0.5, n, dtype=np.float32)[:, None]
    return LabelledData(x, np.arange(n) % 10, mnist.MNIST_SCHEMA)


def test_real_statistics_are_cached_and_the_reference_follows_the_protocol(tmp_path, monkeypatch):
    need(WEIGHTS)
    seen: list[tuple[str, int]] = []

    def counting(images, network, batch_size, device, progress=lambda done, total: None):
        seen.append(len(images))
        flat = images.reshape(len(images), -1)[:, :4].astype(np.float64)  # cheap 4-d stand-in features
        return flat.mean(0), np.cov(flat, rowvar=False) + np.eye(4)  # + I: full rank, no sqrtm warning

    monkeypatch.setattr(fid, "activation_statistics", counting)
    evaluator = replace(EVALUATORS.get("fid"), n_samples=5)
    sound = EvalContext(data_dir=DATA_DIR, cache_dir=tmp_path / "cache", protocol="sound")
    paper = replace(sound, protocol="paper")
    train, test, synthetic = small_images(12, 0.1), small_images(8, 0.2), small_images(9, 0.3)

    first = evaluator.evaluate(synthetic, train, test, sound).metrics
    assert seen == [8, 5]  # sound: the test split (8 images) is the reference, then 5 synthetic
    assert first["n_samples"] == 5 and first["n_real"] == 8 and first["fid"] > 0
    assert len(list((tmp_path / "cache" / "fid").glob("real-*.npz"))) == 1

    seen.clear()
    again = evaluator.evaluate(synthetic, train, test, sound).metrics
    assert {k: v for k, v in again.items() if k != "seconds_per_image"} == {
        k: v for k, v in first.items() if k != "seconds_per_image"
    }
    assert seen == [5]  # cache hit: synthetic only

    seen.clear()
    assert evaluator.evaluate(synthetic, train, test, paper).metrics["n_real"] == 12
    assert seen == [12, 5]  # paper: the training split (the seeds')

    seen.clear()
    replace(evaluator, n_real=6).evaluate(synthetic, train, test, paper)  # other subset: other key
    assert seen == [6, 5]
    assert len(list((tmp_path / "cache" / "fid").glob("real-*.npz"))) == 3

    seen.clear()
    evaluator.evaluate(synthetic, train, test, replace(sound, cache_dir=None))  # no cache dir: no disk cache
    assert seen == [8, 5]


@pytest.mark.slow
def test_fid_is_zero_against_itself_and_grows_with_noise():
    """On 24 MNIST test images; each FID value costs one 2048 × 2048 sqrtm (≈ 20 s on one core)."""
    need(*MNIST_FILES, WEIGHTS)
    split = DATASETS.get("mnist").load(DATA_DIR, seed=0)
    real = LabelledData(split.test.x[:24], split.test.y[:24], split.test.schema)
    evaluator, context = EVALUATORS.get("fid"), EvalContext(data_dir=DATA_DIR)
    itself = evaluator.evaluate(real, split.train, real, context).metrics
    assert abs(itself["fid"]) < 1e-3 and itself["n_samples"] == 24 and itself["n_real"] == 24
    rng = np.random.default_rng(0)
    values = []
    for scale in (0.1, 0.3):
        noisy = np.clip(real.x + rng.normal(0, scale, real.x.shape).astype(np.float32), 0, 1)
        values.append(
            evaluator.evaluate(LabelledData(noisy, real.y, real.schema), split.train, real, context).metrics["fid"]
        )
    assert itself["fid"] < values[0] < values[1]


def test_prdc_separates_real_images_from_noise(tmp_path):
    """On 50 MNIST test images against 50 others: high coverage and precision for real images,
    none for uniform noise (which no real k-NN ball contains)."""
    need(*MNIST_FILES, WEIGHTS)
    split = DATASETS.get("mnist").load(DATA_DIR, seed=0)
    evaluator = replace(EVALUATORS.get("prdc"), n_samples=50)
    context = EvalContext(data_dir=DATA_DIR, cache_dir=tmp_path)
    other = LabelledData(split.test.x[5000:5050], split.test.y[5000:5050], split.test.schema)
    real = evaluator.evaluate(other, split.train, split.test, context).metrics
    assert real["precision"] > 0.6 and real["coverage"] > 0.6 and real["recall"] > 0.6 and real["n_samples"] == 50
    noise = np.random.default_rng(0).random(other.x.shape).astype(np.float32)
    fake = evaluator.evaluate(LabelledData(noise, other.y, other.schema), split.train, split.test, context).metrics
    assert fake["precision"] == 0 and fake["coverage"] == 0 and fake["density"] == 0
    assert list((tmp_path / "prdc").glob("real-*.npz"))  # the real features were cached
