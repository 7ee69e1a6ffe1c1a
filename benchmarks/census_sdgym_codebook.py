"""Writes SDGym's census codebook as the Python literal of ``datasets/census_sdgym.py``.

    PYTHONPATH=. python benchmarks/census_sdgym_codebook.py > /tmp/codebook.py

SDGym v0.1.0 (``sdgym-utils/data/real/census.py`` l.101-110), whose census arrays both seeds'
codes read, codes every categorical value by its rank in descending frequency over
``census-income.data`` (``value_counts``; ``?`` an ordinary value). Its ``census.json`` is not in
this project's mirror, so the order is recounted here from that file with the same rule; ties are
broken by first appearance in the file (pandas' order for ties was not pinned). Values that never
occur in ``census-income.data`` (listed in census-income.names only) follow, in names order. The
result is a statistic of the private rows, used uncharged as the authors' pipeline did: the
dataset that uses it (``census-sdgym``) is labelled as that ablation.
"""

from __future__ import annotations

import sys

import numpy as np

from datasets import census
from datasets.files import fetch


def sdgym_order() -> dict[str, tuple[str, ...]]:
    table = census._read_file(fetch(census.TRAIN_FILE, None))
    order = {}
    for j, column in enumerate(census.COLUMNS):
        if not column.categories:
            continue
        codes = table.x[:, j].astype(int)
        counts = np.bincount(codes, minlength=len(column.categories))
        first = np.full(len(column.categories), len(codes))
        seen, at = np.unique(codes, return_index=True)
        first[seen] = at
        ranked = sorted(range(len(column.categories)), key=lambda c: (-counts[c], first[c], c))
        order[column.name] = tuple(column.categories[c] for c in ranked)
    return order


if __name__ == "__main__":
    sys.stdout.write("SDGYM_ORDER = {\n")
    for name, categories in sdgym_order().items():
        sys.stdout.write(f"    {name!r}: {categories!r},\n")
    sys.stdout.write("}\n")
