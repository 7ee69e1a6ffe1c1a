"""The common machinery of the tabular datasets: reading, splitting, undersampling, protocols.

``--protocol sound`` (default): split first, stratified, with the seeds' test fraction; then
undersample the majority class of the *training split only*, keeping each of its rows
independently with probability ``rate`` (a row-wise, data-independent operation, so it cannot
leak how many rows a class has). The test split keeps the natural class distribution.

``--protocol paper``: the reference code's order
(github.com/ParkLabML/DP-HP dp_mehp/all_aux_files_tab_data.py, data_loading): undersample the
whole table first — keep ``int(count_majority × rate)`` rows of the majority class — then a plain
(unstratified) ``train_test_split(random_state=seed)``, so the test set is undersampled too. The
reference draws that subset unseeded; here it is seeded so runs are reproducible. A dataset may
also select other rows in paper mode (``read_paper``), e.g. covtype's first 20,000.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from sklearn.model_selection import train_test_split

from bench.core.data import PROTOCOLS, DataKind, LabelledData, RunProtocol, Schema, Split


PAPER_CAVEATS = (
    "paper protocol: the undersampled row count int(count_majority × rate) depends on the private "
    "class counts and the test set is undersampled too; any reference imputation uses statistics "
    "of private rows (test rows included). None of this is charged: the paper protocol is for "
    "comparison with the seeds' numbers, not a sound privacy claim.",
)


@dataclass(frozen=True)
class Table:
    """Raw-coded features (n × d, schema order) and integer labels (n,)."""

    x: np.ndarray
    y: np.ndarray


@dataclass(frozen=True)
class Undersampling:
    majority_class: int
    rate: float  # fraction of the majority class kept
    source: str  # where the rate comes from


@dataclass(frozen=True)
class TabularDataset:
    name: str
    description: str
    schema: Schema
    read: Callable[[Path | None], Table]
    test_fraction: float
    split_source: str
    undersampling: Undersampling | None = None
    read_paper: Callable[[Path | None], Table] | None = None
    kind: DataKind = DataKind.TABULAR
    # uses of private data the dataset's own recipe makes (e.g. a codebook ordered by the rows'
    # frequencies), named on every split so the ledger and the report show them
    caveats: tuple[str, ...] = ()

    def load(self, data_dir: Path | None, seed: int, protocol: RunProtocol = RunProtocol.SOUND) -> Split:
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
        if protocol == RunProtocol.PAPER:
            table = (self.read_paper or self.read)(data_dir)
            train, test = paper_split(table, self.test_fraction, self.undersampling, seed)
            return Split(
                self._labelled(train), self._labelled(test), PAPER_CAVEATS + self._tuned_caveats() + self.caveats
            )
        table = self.read(data_dir)
        train, test = sound_split(table, self.test_fraction, self.undersampling, seed)
        return Split(
            self._labelled(train), self._labelled(test), self._tuned_caveats() + self._count_caveats() + self.caveats
        )

    def _count_caveats(self) -> tuple[str, ...]:
        """Bernoulli undersampling makes the training row count Binomial in the private class count;
        methods then use that exact count as public (``n_train``, the normaliser of every mean)."""
        if self.undersampling is None or self.undersampling.rate >= 1:
            return ()
        return (
            "uncharged: the training row count after undersampling (each class-"
            f"{self.undersampling.majority_class} row kept with probability {self.undersampling.rate:g}) depends on "
            "the private class count, and methods use it as public (n_train); its exact value is not charged",
        )

    def _tuned_caveats(self) -> tuple[str, ...]:
        if self.undersampling is None or self.undersampling.rate >= 1:
            return ()
        return (
            f"tuned_on_private_data: undersampling rate {self.undersampling.rate:g} of class "
            f"{self.undersampling.majority_class} ({self.undersampling.source}) was chosen with access "
            "to this dataset and is not charged",
        )

    def _labelled(self, table: Table) -> LabelledData:
        return LabelledData(table.x.astype(np.float32), table.y.astype(np.int64), self.schema)


def _take(table: Table, index: np.ndarray) -> Table:
    return Table(table.x[index], table.y[index])


def sound_split(
    table: Table, test_fraction: float, undersampling: Undersampling | None, seed: int
) -> tuple[Table, Table]:
    index = np.arange(len(table.y))
    train_index, test_index = train_test_split(index, test_size=test_fraction, random_state=seed, stratify=table.y)
    if undersampling is not None and undersampling.rate < 1:
        rng = np.random.default_rng([seed, 7])
        majority = table.y[train_index] == undersampling.majority_class
        keep = ~majority | (rng.random(len(train_index)) < undersampling.rate)
        train_index = train_index[keep]
    return _take(table, np.sort(train_index)), _take(table, np.sort(test_index))


def paper_split(
    table: Table, test_fraction: float, undersampling: Undersampling | None, seed: int
) -> tuple[Table, Table]:
    index = np.arange(len(table.y))
    if undersampling is not None and undersampling.rate < 1:
        rng = np.random.default_rng([seed, 11])
        majority = np.flatnonzero(table.y == undersampling.majority_class)
        kept = rng.permutation(majority)[: int(len(majority) * undersampling.rate)]
        index = np.sort(np.concatenate([np.flatnonzero(table.y != undersampling.majority_class), kept]))
    train_index, test_index = train_test_split(index, test_size=test_fraction, random_state=seed)
    return _take(table, train_index), _take(table, test_index)


def recode(table: Table, source: Schema, target: Schema) -> Table:
    """The same rows with every categorical code renumbered from ``source``'s category order to
    ``target``'s (the same names in another order)."""
    x = table.x.copy()
    for j, (old, new) in enumerate(zip(source.columns, target.columns)):
        if old.categories:
            rank = {name: code for code, name in enumerate(new.categories)}
            x[:, j] = np.asarray([rank[name] for name in old.categories])[table.x[:, j].astype(int)]
    return Table(x, table.y)
