"""Where a run finds its files: the data folder, the shared cache, and whether it may download.
One rule each, read by the command line, the worker, the walls, the dataset loaders and the
evaluators alike (so no plugin looks these up in another plugin)."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_VARIABLE = "DPBENCH_DATA_DIR"
OFFLINE_VARIABLE = "DPBENCH_OFFLINE"  # set: never download a dataset or weights file, say where to put it
CACHE_VARIABLE = "DPBENCH_CACHE_DIR"


def data_folder(data_dir: Path | str | None) -> Path:
    """The data folder a run reads: ``--data-dir``, else ``$DPBENCH_DATA_DIR``, else ``./data``."""
    if data_dir:
        return Path(data_dir)
    return Path(os.environ.get(DATA_DIR_VARIABLE) or "data")


def cache_dir() -> Path:
    """``$DPBENCH_CACHE_DIR``, else ``~/.cache/dpbench``: where the grid's cells share what they
    compute from the real data (it holds derivatives of private data: keep it as private as the
    data folder), and with ``$DPBENCH_JAX_CACHE`` the XLA programs Private-PGM compiles (``jax/``,
    methods/pgm.py)."""
    return Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "dpbench")


def offline() -> bool:
    """Whether downloads are forbidden (``$DPBENCH_OFFLINE`` set)."""
    return bool(os.environ.get(OFFLINE_VARIABLE))
