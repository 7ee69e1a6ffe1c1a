"""Figure helpers shared by the report and by evaluators that return figures as artifacts (so no
plugin imports the report): matplotlib on the file-only Agg backend, saving, and the log axis of
training-set sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """matplotlib.pyplot on the file-only Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    pyplot().close(fig)


def format_size_axis(ax: Any, sizes: list[int]) -> None:
    """Log x axis of training-set sizes, ticks at the sizes (60k, 30k, …, 60)."""
    ax.set_xscale("log")
    ticks = sorted(set(sizes))
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{s / 1000:g}k" if s >= 1000 else f"{s}" for s in ticks], fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel("training images (log scale)")
    ax.set_ylabel("mean accuracy of the classifiers")
    ax.grid(alpha=0.3)
