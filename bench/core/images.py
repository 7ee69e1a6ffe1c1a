"""Image layout of a schema: the public fact ``image_shape`` = (C, H, W) and the flattened
channel-first rows (C·H·W values per row, index ``c·H·W + h·W + w``). Datasets declare it; the
harness and evaluators read it through these helpers without importing any dataset."""

from __future__ import annotations

import numpy as np

from bench.core.data import Schema

IMAGE_SHAPE_FACT = "image_shape"


def image_shape(schema: Schema) -> tuple[int, int, int]:
    """(C, H, W) of an image schema; a ValueError for a schema that does not declare one."""
    fact = schema.public_fact(IMAGE_SHAPE_FACT)
    if fact is None:
        raise ValueError(f"the schema declares no {IMAGE_SHAPE_FACT!r} public fact; it is not an image schema")
    channels, height, width = (int(v) for v in fact.value)
    return channels, height, width


def is_image_schema(schema: Schema) -> bool:
    return schema.public_fact(IMAGE_SHAPE_FACT) is not None


def as_images(x: np.ndarray, schema: Schema) -> np.ndarray:
    """The rows of ``x`` (n × C·H·W) as an n × C × H × W view (no copy for contiguous input)."""
    return x.reshape(len(x), *image_shape(schema))
