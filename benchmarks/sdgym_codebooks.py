"""Writes SDGym's categorical codebooks as the Python literals of ``datasets/census_sdgym.py`` and
``datasets/intrusion_sdgym.py``.

    PYTHONPATH=. python benchmarks/sdgym_codebooks.py census > /tmp/census_codebook.py
    PYTHONPATH=. python benchmarks/sdgym_codebooks.py intrusion > /tmp/intrusion_codebook.py

SDGym v0.1.0 (``sdgym-utils/data/real/census.py`` l.101-110, ``intrusion.py`` l.73-116), whose
arrays both seeds' codes read, codes every categorical value by its rank in descending frequency
(``value_counts``) — census over ``census-income.data`` (``?`` an ordinary value), intrusion over
all 494,021 rows of the 10% file. Its ``census.json``/``intrusion.json`` are not in this project's
mirror, so the order is recounted here from those files with the same rule; ties are broken by
first appearance in the file (pandas' order for ties was not pinned). Values that never occur
(listed in the public value lists only) follow, in list order. The result is a statistic of the
private rows, used uncharged as the authors' pipeline did: the datasets that use it
(``census-sdgym``, ``intrusion-sdgym``) are labelled as that ablation.
"""

from __future__ import annotations

import sys

import numpy as np

from datasets import census, intrusion
from datasets.files import fetch


def frequency_order(x: np.ndarray, columns) -> dict[str, tuple[str, ...]]:
    """Each categorical column's values by descending count in ``x`` (ties: first appearance)."""
    order = {}
    for j, column in enumerate(columns):
        if not column.categories or column.kind.value == "binary":
            continue
        codes = x[:, j].astype(int)
        counts = np.bincount(codes, minlength=len(column.categories))
        first = np.full(len(column.categories), len(codes))
        seen, at = np.unique(codes, return_index=True)
        first[seen] = at
        ranked = sorted(range(len(column.categories)), key=lambda c: (-counts[c], first[c], c))
        order[column.name] = tuple(column.categories[c] for c in ranked)
    return order


CODEBOOKS = {
    "census": lambda: frequency_order(census._read_file(fetch(census.TRAIN_FILE, None)).x, census.COLUMNS),
    "intrusion": lambda: frequency_order(intrusion.read(None).x, intrusion.COLUMNS),
}


if __name__ == "__main__":
    sys.stdout.write("SDGYM_ORDER = {\n")
    for name, categories in CODEBOOKS[sys.argv[1]]().items():
        sys.stdout.write(f"    {name!r}: {categories!r},\n")
    sys.stdout.write("}\n")
