"""``real``: the non-private upper bound, which "generates" the training rows themselves.

It fills the "Real" column of the seeds' tables: train-on-real, test-on-real.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.privacy.private_data import PrivateData
from bench.core.params import NoParameters
from bench.core.data import DataKind, LabelledData
from bench.api.contracts import FitContext
from bench.api.declare import method


@dataclass
class RealData:
    train: LabelledData
    rng: np.random.Generator

    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        """The training rows: all of them when n equals their number, else drawn without
        replacement (with replacement when more rows are asked for than exist)."""
        if labels is None:
            if n == len(self.train):
                index = np.arange(n)
            else:
                index = self.rng.choice(len(self.train), size=n, replace=n > len(self.train))
        else:
            index = np.empty(len(labels), dtype=np.int64)
            for label in np.unique(labels):
                rows = np.flatnonzero(self.train.y == label)
                if len(rows) == 0:
                    raise ValueError(f"the training data has no row of class {label}")
                wanted = np.flatnonzero(labels == label)
                index[wanted] = self.rng.choice(rows, size=len(wanted), replace=len(wanted) > len(rows))
        return LabelledData(self.train.x[index], self.train.y[index], self.train.schema)


@method("real", "Non-private upper bound: returns the real training data", kinds=frozenset(DataKind), private=False)
def real(data: PrivateData, context: FitContext[NoParameters]) -> RealData:
    train = data.rows(trusted="non-private: the baseline returns the training rows")
    return RealData(train, context.rng("synthetic-rows"))
