"""Every run keeps its synthetic sample (``synthetic.npz``), so a new evaluator can score old runs
without refitting (``python -m bench evaluate``).

The file is a compressed NumPy archive: ``x`` (float32; images as 8-bit pixels), ``y`` (int64) and
``meta``, a JSON string naming the dataset, its columns and classes (checked against the dataset's
schema on loading), the rows generated and kept, and ``private_rows``: True when the rows carry no
privacy guarantee (a non-private method's output — ``real``'s is the training rows themselves).
Such a file is as private as the data folder: it goes only where the run's artifacts go (the local
``mlartifacts/`` or the tracking server the user chose), never into a committed store — the
committed results hold no artifacts, and an export to a committed record must refuse it.

Bounded size: every row up to ``KEPT_ROWS`` (all the mirror's tables), every image up to
``KEPT_IMAGES`` (all of MNIST's, FashionMNIST's and CIFAR-10's training-set-sized samples, so that
``image-downstream`` rescores the 60,000 images a run trained on); the first rows are kept.

Images are scored as they are stored: the run rounds generated images to 8-bit pixels
(:func:`as_8bit_images`) before any evaluator sees them, so an in-run score and a later rescoring
of the stored sample are the same number. A generator's output is an image, and an image is 8-bit
(as the published sample grids and the real data are); the seeds' code scored the float outputs,
which differ by at most 1/510 a pixel.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

SAMPLE_FILE = "synthetic.npz"
KEPT_ROWS = 200_000
KEPT_IMAGES = 60_000


class SampleError(ValueError):
    pass


def as_8bit_images(data: Any) -> Any:
    """Image data with its pixels rounded to the nearest of the 256 8-bit levels (as float32 in
    [0, 1], the dataset's layout); what ``save_synthetic`` stores and ``load_synthetic`` reads."""
    from bench.core.data import LabelledData

    pixels = np.rint(np.clip(data.x, 0, 1) * 255).astype(np.uint8)
    return LabelledData(pixels.astype(np.float32) / 255, data.y, data.schema)


def save_synthetic(data: Any, path: Path, *, dataset: str, private_rows: bool) -> None:
    from bench.core.images import is_image_schema

    image = is_image_schema(data.schema)
    kept = min(len(data), KEPT_IMAGES if image else KEPT_ROWS)
    x = data.x[:kept]
    meta = {
        "dataset": dataset,
        "columns": [c.name for c in data.schema.columns],
        "classes": list(data.schema.classes),
        "rows_generated": len(data),
        "rows_kept": kept,
        "pixels_8bit": image,
        "private_rows": private_rows,
    }
    stored = np.rint(np.clip(x, 0, 1) * 255).astype(np.uint8) if image else x.astype(np.float32)
    np.savez_compressed(path, x=stored, y=data.y[:kept].astype(np.int64), meta=np.array(json.dumps(meta)))


def load_synthetic(path: Path, schema: Any) -> tuple[Any, dict]:
    """The stored rows as ``LabelledData`` in ``schema`` (which must be the one they were
    generated in), and the file's metadata."""
    from bench.core.data import LabelledData

    with np.load(path, allow_pickle=False) as stored:
        meta = json.loads(str(stored["meta"]))
        x, y = stored["x"], stored["y"]
    if meta["columns"] != [c.name for c in schema.columns] or meta["classes"] != list(schema.classes):
        raise SampleError(f"{path}: its columns or classes are not those of dataset {meta['dataset']!r} now")
    x = x.astype(np.float32) / 255 if meta["pixels_8bit"] else x.astype(np.float32)
    return LabelledData(x, y, schema), meta
