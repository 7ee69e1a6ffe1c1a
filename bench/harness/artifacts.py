"""What a cell leaves to look at besides its numbers: the first rows of its synthetic data
(``synthetic_sample.csv``, or 8-bit pixels in ``.npz`` for images), a scatter of 2-D data against
the real test rows, and a grid of generated images per class (``samples.png``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

SAMPLE_ROWS = 1000  # rows of synthetic data kept as an artifact


def save_sample(data: Any, path: Path) -> None:
    """The first rows of synthetic data: a CSV in the schema's columns, or for images an ``.npz``
    of 8-bit pixels (n × C·H·W) and labels, a few kB instead of a 784-column CSV."""
    import pandas as pd

    from bench.core.images import is_image_schema

    if is_image_schema(data.schema):
        pixels = np.rint(np.clip(data.x[:SAMPLE_ROWS], 0, 1) * 255).astype(np.uint8)
        np.savez_compressed(path.with_suffix(".npz"), x=pixels, y=data.y[:SAMPLE_ROWS])
        return

    rows = data.x[:SAMPLE_ROWS]
    frame = pd.DataFrame(rows, columns=[c.name for c in data.schema.columns])
    frame[data.schema.label] = [data.schema.classes[k] for k in data.y[:SAMPLE_ROWS]]
    frame.to_csv(path, index=False)


def save_scatter(synthetic: Any, real: Any, path: Path, title: str) -> None:
    """Side-by-side scatter of real (the test split's) and synthetic 2-D samples, coloured by class."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 5), sharex=True, sharey=True)
    for ax, data, name in ((axes[0], real, "real (test split)"), (axes[1], synthetic, "synthetic")):
        shown = min(len(data), 20_000)
        ax.scatter(data.x[:shown, 0], data.x[:shown, 1], c=data.y[:shown], s=1, cmap="tab10", alpha=0.5)
        ax.set_title(name)
        ax.set_aspect("equal")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def save_image_grid(synthetic: Any, path: Path, title: str, per_class: int = 10) -> None:
    """The first ``per_class`` generated images of every class, one row per class (greyscale or RGB)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bench.core.images import as_images

    classes = synthetic.schema.classes
    fig, axes = plt.subplots(
        len(classes), per_class, figsize=(per_class * 0.9, len(classes) * 0.9 + 0.4), squeeze=False
    )
    for row, name in enumerate(classes):
        index = np.flatnonzero(synthetic.y == row)[:per_class]
        images = as_images(synthetic.x[index], synthetic.schema)
        for column, ax in enumerate(axes[row]):
            ax.set_xticks([])
            ax.set_yticks([])
            if column < len(images):
                image = images[column].transpose(1, 2, 0)
                ax.imshow(image[..., 0] if image.shape[-1] == 1 else image, cmap="gray", vmin=0, vmax=1)
        axes[row][0].set_ylabel(name, rotation=0, ha="right", va="center", fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


SAMPLES_PNG = "samples.png"
DRAWN_KINDS = ("2d", "image")  # the data kinds whose samples a picture shows


def save_samples_png(kind: str, synthetic: Any, real_test: Any, folder: Path, title: str) -> None:
    """``samples.png`` in ``folder`` for data of ``kind``: generated points beside the real test
    split's (2-D) or a grid of generated images per class; nothing for other kinds. The real points
    are the test split's, which the evaluators read anyway: a picture left beside the run draws no
    private training row."""
    if kind == "2d":
        save_scatter(synthetic, real_test, folder / SAMPLES_PNG, title)
    elif kind == "image":
        save_image_grid(synthetic, folder / SAMPLES_PNG, title)
