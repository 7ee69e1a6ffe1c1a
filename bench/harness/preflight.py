"""Checks made once, in the runner, before any cell starts.

A missing, corrupt, truncated or malformed data file fails every cell of its dataset the same
way; finding it once, before the grid starts, turns N identical failed runs into one line on the
command line (exit code 2). The same load gives n_train, so a δ that is not below 1/n_train is
reported once per dataset instead of once per cell.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path
from typing import Iterable

from bench.harness.grid import GridError
from bench.harness.cell import Cell
from bench.privacy.budget import DeltaKind


def check_device(cells: Iterable[Cell]) -> None:
    """``--device cuda`` on a machine without CUDA fails every cell; say so before starting."""
    if any(cell.device == "cuda" for cell in cells):
        import torch

        if not torch.cuda.is_available():
            raise GridError("--device cuda was asked for, but torch sees no CUDA device; use --device auto or cpu")


def check_data(cells: Iterable[Cell]) -> None:
    """Load every (dataset, data folder, protocol) of ``cells`` once. Data file errors propagate
    (``DataFileError``: one line, exit code 2); warnings (clipped values, δ ≥ 1/n) are shown."""
    from bench.api.registry import DATASETS

    checked: dict[tuple, int] = {}
    for cell in cells:
        where = (cell.dataset, cell.data_dir, cell.protocol)
        if where not in checked:
            split = DATASETS.get(cell.dataset).load(
                Path(cell.data_dir) if cell.data_dir else None, cell.seed, cell.protocol
            )
            checked[where] = len(split.train)
            del split
        n_train = checked[where]
        if math.isfinite(cell.epsilon) and cell.delta.kind is not DeltaKind.NOT_APPLICABLE:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                cell.delta.resolve(n_train)
            for warning in caught:
                where_text = f"{cell.dataset} (n_train = {n_train})"
                note = f"warning: {where_text}: {warning.message}"
                if note not in _shown:
                    _shown.add(note)
                    print(note, file=sys.stderr)


_shown: set[str] = set()
