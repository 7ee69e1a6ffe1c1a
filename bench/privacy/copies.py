"""Does a synthetic sample copy its training rows? A check that needs no assumption about the code
that made it: the share of synthetic rows equal to a training row against the share equal to a
held-out row of the same distribution, over as many rows of each. A generator that never saw a
row cannot tell the two splits apart, so an honest DP method — whatever it does — matches both
alike up to sampling error; one that hands back training rows (through a door the walls missed,
or through arithmetic the checks cannot see) matches the training split far more. The conformance
kit runs it as the named check ``no_training_copies``; the worker warns with it on every private
run (tag ``warning.training_copies``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bench.core.data import PIXEL, DataKind, LabelledData, row_keys

# The excess of training over held-out matches that is flagged: at least this share of the
# synthetic rows, and COPY_SIGMAS standard errors of the difference of the two shares.
COPY_MARGIN = 0.05
COPY_SIGMAS = 4.0
MOST_ROWS = 20_000  # rows of each split compared (a prefix: the splits are shuffled by their loaders)
TABULAR_RESOLUTION = 1e-6  # values equal to six decimals are one value


@dataclass(frozen=True)
class Copies:
    """Shares of ``n`` synthetic rows equal to some training row and to some held-out row."""

    train_share: float
    test_share: float
    n: int

    @property
    def excess(self) -> float:
        return self.train_share - self.test_share

    @property
    def suspicious(self) -> bool:
        """Training rows matched by far more than held-out rows: more than ``COPY_MARGIN`` of the
        sample and ``COPY_SIGMAS`` standard errors (at least one match's worth)."""
        variance = self.train_share * (1 - self.train_share) + self.test_share * (1 - self.test_share)
        error = max(math.sqrt(variance / max(self.n, 1)), 1 / max(self.n, 1))
        return self.excess > max(COPY_MARGIN, COPY_SIGMAS * error)

    def describe(self) -> str:
        return (
            f"{self.train_share:.1%} of {self.n:,} synthetic rows equal a training row, "
            f"{self.test_share:.1%} a held-out row"
        )


def training_copies(synthetic: LabelledData, train: LabelledData, test: LabelledData, kind: DataKind) -> Copies:
    """:class:`Copies` of ``synthetic`` (features and label) against equal-sized prefixes of the
    training and held-out splits; images match at their 8-bit pixels, other data to six decimals."""
    resolution = PIXEL if kind == DataKind.IMAGE else TABULAR_RESOLUTION
    size = min(len(train), len(test), MOST_ROWS)
    mine = _keys(synthetic, len(synthetic) if len(synthetic) <= MOST_ROWS else MOST_ROWS, resolution)
    if len(mine) == 0 or size == 0:
        return Copies(0.0, 0.0, len(mine))
    train_keys, test_keys = _keys(train, size, resolution), _keys(test, size, resolution)
    return Copies(float(np.isin(mine, train_keys).mean()), float(np.isin(mine, test_keys).mean()), len(mine))


def _keys(data: LabelledData, rows: int, resolution: float) -> np.ndarray:
    labelled = np.concatenate(
        [data.x[:rows].astype(np.float64), data.y[:rows, None].astype(np.float64) * resolution], 1
    )
    return row_keys(labelled, resolution)
