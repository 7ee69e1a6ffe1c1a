"""The common machinery of the image datasets: schema, layout, loading.

Layout: ``LabelledData.x`` is 2-D (n × d float32), so an image is stored flattened in
channel-first order (C·H·W values, index ``c·H·W + h·W + w``), with pixels scaled from the
published 8-bit values to [0, 1] (value / 255). The schema has one numerical column per pixel,
``p0`` … ``p{d-1}``, with bounds (0, 1) — the documented 8-bit range, never computed from the
rows — and carries the image shape as the public fact ``image_shape`` = (C, H, W);
:func:`image_shape` and :func:`as_images` turn a schema and a feature matrix back into images.

Protocols: image datasets come with a published train/test split, which both ``sound`` and
``paper`` use as it is (the seeds train on the whole training set and test on the published test
set: DP-MEPF (arXiv:2205.12900) Sec. 6, DP-HP (arXiv:2106.05042) Sec. 5.3). The seed does not change the split; there is no
undersampling and nothing is computed from the private rows, so no caveat is needed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.core.images import IMAGE_SHAPE_FACT
from bench.core.data import (
    PROTOCOLS,
    Column,
    ColumnKind,
    DataKind,
    LabelledData,
    PublicFact,
    RunProtocol,
    Schema,
    Split,
)

PIXEL_BOUNDS = (0.0, 1.0)
SPLIT_NOTE = "the published split, under both protocols"


@dataclass(frozen=True)
class ImageArrays:
    """Published 8-bit pixels, flattened channel-first (n × C·H·W uint8), and labels (n,)."""

    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray


def image_schema(
    shape: tuple[int, int, int],
    classes: tuple[str, ...],
    shape_source: str,
    published_rows: dict[str, int],
    rows_source: str,
) -> Schema:
    """One numerical [0, 1] column per pixel, the class names, the shape as a public fact."""
    n_pixels = int(np.prod(shape))
    return Schema(
        columns=tuple(Column(f"p{i}", ColumnKind.NUMERICAL, PIXEL_BOUNDS) for i in range(n_pixels)),
        label="class",
        classes=classes,
        public_facts=(
            PublicFact(IMAGE_SHAPE_FACT, tuple(shape), shape_source),
            PublicFact("published_rows", dict(published_rows), rows_source),
        ),
    )


def to_unit_float(pixels: np.ndarray) -> np.ndarray:
    """8-bit pixels as float32 in [0, 1]; one pass, no float64 temporary (CIFAR is 0.7 GiB)."""
    return np.divide(pixels, np.float32(255), dtype=np.float32)


@dataclass(frozen=True)
class ImageDataset:
    name: str
    description: str
    schema: Schema
    read: Callable[[Path | None], ImageArrays]
    kind: DataKind = DataKind.IMAGE
    source: str | None = None  # the images' origin when another dataset holds the same ones (None: its own)

    def load(self, data_dir: Path | None, seed: int, protocol: RunProtocol = RunProtocol.SOUND) -> Split:
        """The published split under either protocol; ``seed`` is not used (the split is fixed)."""
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
        arrays = self.read(data_dir)
        return Split(self._labelled(arrays.train_x, arrays.train_y), self._labelled(arrays.test_x, arrays.test_y))

    def _labelled(self, pixels: np.ndarray, labels: np.ndarray) -> LabelledData:
        return LabelledData(to_unit_float(pixels), labels.astype(np.int64), self.schema)
