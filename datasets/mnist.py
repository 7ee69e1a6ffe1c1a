"""``mnist`` and ``fashion-mnist``: 28×28 greyscale digits / clothing, from the published idx files.

Files (the publishers' names, in ``mnist/`` and ``fashion-mnist/``): ``train-images-idx3-ubyte.gz``,
``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz``.
Each is verified by the sha256 of its decompressed content (mirrors re-gzip; the content is the
publisher's) and downloaded from the publisher's URL when missing and ``DPBENCH_OFFLINE`` is unset.

idx format (yann.lecun.com/exdb/mnist, "FILE FORMATS"): a big-endian header — magic number
(0x00000803 for 3-D ubyte images, 0x00000801 for 1-D ubyte labels), then one 32-bit size per
dimension — followed by the ubyte values in row-major order. The whole file is decompressed once
and the values taken with ``np.frombuffer`` (no per-image work).

Split: the published 60,000 training and 10,000 test images, under both protocols
(``datasets/images.py``). Pixels: value / 255, float32 in [0, 1]; shape (1, 28, 28).
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import numpy as np

from datasets.files import DataFile, fetch
from datasets.images import SPLIT_NOTE, ImageArrays, ImageDataset, image_schema
from datasets.tabular_io import DataFormatError

IMAGE_MAGIC = 0x00000803  # ubyte (0x08), 3 dimensions
LABEL_MAGIC = 0x00000801  # ubyte (0x08), 1 dimension
SIDE = 28
N_TRAIN, N_TEST = 60_000, 10_000

MNIST_URL = "http://yann.lecun.com/exdb/mnist"
MNIST_SOURCE = (
    "MNIST (yann.lecun.com/exdb/mnist, CC BY-SA 3.0; torchvision's mirror "
    "https://ossci-datasets.s3.amazonaws.com/mnist serves the same files)"
)
FASHION_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com"
FASHION_SOURCE = "Fashion-MNIST (github.com/zalandoresearch/fashion-mnist, MIT)"

MNIST_SHA256 = {  # content (decompressed) sha256, as in the data mirror's README
    "train-images-idx3-ubyte.gz": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte.gz": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte.gz": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte.gz": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
FASHION_SHA256 = {
    "train-images-idx3-ubyte.gz": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte.gz": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte.gz": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte.gz": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}

MNIST_CLASSES = tuple(str(digit) for digit in range(10))
# Label names in label order: the Fashion-MNIST README's "Labels" table.
FASHION_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)


def idx_files(folder: str, url: str, source: str, sha256: dict[str, str]) -> dict[str, DataFile]:
    return {name: DataFile(folder, name, digest, f"{url}/{name}", source) for name, digest in sha256.items()}


MNIST_FILES = idx_files("mnist", MNIST_URL, MNIST_SOURCE, MNIST_SHA256)
FASHION_FILES = idx_files("fashion-mnist", FASHION_URL, FASHION_SOURCE, FASHION_SHA256)


def parse_idx(raw: bytes, magic: int, shape: tuple[int, ...], path: Path) -> np.ndarray:
    """The ubyte values of an idx file whose header must be ``magic`` and ``shape``."""
    header_size = 4 * (1 + len(shape))
    if len(raw) < header_size:
        raise DataFormatError(f"{path} is too short for an idx header; it is not the published file")
    header = tuple(int(v) for v in np.frombuffer(raw, dtype=">u4", count=1 + len(shape)))
    if header != (magic, *shape):
        raise DataFormatError(f"{path}: idx header {header}, expected {(magic, *shape)}; it is not the published file")
    values = np.frombuffer(raw, dtype=np.uint8, offset=header_size)
    if values.size != int(np.prod(shape)):
        raise DataFormatError(f"{path}: {values.size} values after the header, expected {int(np.prod(shape))}")
    return values.reshape(shape)


def read_idx(data_file: DataFile, data_dir: Path | None, magic: int, shape: tuple[int, ...]) -> np.ndarray:
    path = fetch(data_file, data_dir)
    with gzip.open(path, "rb") as handle:
        raw = handle.read()
    return parse_idx(raw, magic, shape, path)


def read_split(files: dict[str, DataFile], data_dir: Path | None, prefix: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    images = read_idx(files[f"{prefix}-images-idx3-ubyte.gz"], data_dir, IMAGE_MAGIC, (n, SIDE, SIDE))
    labels = read_idx(files[f"{prefix}-labels-idx1-ubyte.gz"], data_dir, LABEL_MAGIC, (n,))
    if labels.max() > 9:
        raise DataFormatError(f"{files[f'{prefix}-labels-idx1-ubyte.gz'].filename}: a label above 9")
    return images.reshape(n, SIDE * SIDE), labels  # one channel: (H, W) row-major is channel-first


def reader(files: dict[str, DataFile]) -> Callable[[Path | None], ImageArrays]:
    def read(data_dir: Path | None) -> ImageArrays:
        train_x, train_y = read_split(files, data_dir, "train", N_TRAIN)
        test_x, test_y = read_split(files, data_dir, "t10k", N_TEST)
        return ImageArrays(train_x, train_y, test_x, test_y)

    return read


ROWS = {"train": N_TRAIN, "test": N_TEST}
MNIST_SCHEMA = image_schema(
    (1, SIDE, SIDE),
    MNIST_CLASSES,
    "MNIST's documented format: 28×28 greyscale (yann.lecun.com/exdb/mnist)",
    ROWS,
    "yann.lecun.com/exdb/mnist: a training set of 60,000 examples, and a test set of 10,000 examples",
)
FASHION_SCHEMA = image_schema(
    (1, SIDE, SIDE),
    FASHION_CLASSES,
    "Fashion-MNIST README: 28x28 grayscale images",
    ROWS,
    "Fashion-MNIST README: a training set of 60,000 examples and a test set of 10,000 examples",
)

MNIST = ImageDataset(
    name="mnist",
    description=f"MNIST handwritten digits, 28×28 greyscale, 10 classes: 60,000 train / 10,000 test ({SPLIT_NOTE})",
    schema=MNIST_SCHEMA,
    read=reader(MNIST_FILES),
)
FASHION_MNIST = ImageDataset(
    name="fashion-mnist",
    description=f"Fashion-MNIST clothing, 28×28 greyscale, 10 classes: 60,000 train / 10,000 test ({SPLIT_NOTE})",
    schema=FASHION_SCHEMA,
    read=reader(FASHION_FILES),
)
