"""Shared machinery of the marginal-based methods (MST, AIM): noisy marginal measurements,
the exponential mechanism, and Private-PGM estimation and sampling through ``mbi``.

``mbi`` (Ryan McKenna's maintained continuation of private-pgm, Apache-2.0) estimates a graphical
model from noisy marginals; it is post-processing and touches no private data. The mechanisms
(what to measure, how much noise, which marginals to select) are ours, so every release goes
through the run's ledger.

Neighbouring relation: replace-one, as everywhere in this harness. A count marginal then moves
by 2 in L1 and √2 in L2 (the papers state add/remove, where both are 1), so Gaussian
measurements use L2 sensitivity √2 and selection scores built from L1 errors have sensitivity 2
(times their weight).
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import Sequence

import jax

from bench.core.paths import cache_dir

JAX_CACHE_VARIABLE = "DPBENCH_JAX_CACHE"  # set (e.g. 1): keep compiled programs across cells

jax.config.update("jax_enable_x64", True)  # mbi warns that float32 stalls estimation on N > 100K
# Private-PGM compiles ≈ 200 small XLA programs a fit, ≈ 14 of an MST cell's ≈ 40 s on adult-discrete,
# again in every cell's fresh process. With $DPBENCH_JAX_CACHE set, they are kept on disk in the grid's
# shared cache and a later cell loads those it shares: the same executables, bit-identical samples.
# Measured (docs/performance.md, "JAX's compilation cache"): MST ≈ 33% faster at a new seed, but AIM,
# whose every seed compiles ≈ 700 programs of its own, was slower at two new seeds of three (writing
# them costs more than it saves), so it is not on by default.
if os.environ.get(JAX_CACHE_VARIABLE):
    jax.config.update("jax_compilation_cache_dir", str(cache_dir() / "jax"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_compilation_cache_max_size", 2**30)  # bytes; the least recently used go first
else:
    jax.config.update("jax_enable_compilation_cache", False)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import mbi  # noqa: E402
    from mbi import estimation  # noqa: E402

import numpy as np

from bench.core.data import LabelledData, Schema
from bench.privacy.private_data import CountQuery, PrivateData
from bench.privacy.releases import COUNT_L2_SENSITIVITY

Clique = tuple[str, ...]


def domain_of(schema: Schema) -> mbi.Domain:
    """The public domain: every column's full code range from the schema."""
    return mbi.Domain([c.name for c in schema.columns], [len(c.categories) for c in schema.columns])


def column_index(schema: Schema) -> dict[str, int]:
    return {column.name: j for j, column in enumerate(schema.columns)}


def marginal(codes: np.ndarray, domain: mbi.Domain, index: dict[str, int], clique: Clique) -> np.ndarray:
    """The count vector of ``clique`` (cells in row-major order of the clique's attributes)."""
    shape = domain.project(clique).shape
    flat = np.ravel_multi_index(tuple(codes[:, index[a]] for a in clique), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).astype(np.float64)


def clique_query(domain: mbi.Domain, index: dict[str, int], clique: Clique) -> CountQuery:
    """The marginal of ``clique`` as the handle's count query: one cell index per row (row-major
    over the clique's attributes, as :func:`marginal`)."""
    shape = domain.project(clique).shape

    def cells(rows: LabelledData) -> np.ndarray:
        return np.ravel_multi_index(tuple(rows.x[:, index[a]].astype(np.int64) for a in clique), shape)

    return CountQuery("×".join(clique), cells, int(np.prod(shape)))


@dataclass
class Measurer:
    """Measures marginals through the private-data handle's counts (Gaussian, L2 √2 each), one
    ledger release per call; each clique's query is built once, so the handle counts it once."""

    data: PrivateData
    domain: mbi.Domain
    index: dict[str, int]
    rng: np.random.Generator

    def __post_init__(self) -> None:
        self.queries: dict[Clique, CountQuery] = {}

    def query(self, clique: Clique) -> CountQuery:
        if clique not in self.queries:
            self.queries[clique] = clique_query(self.domain, self.index, clique)
        return self.queries[clique]

    def measure(self, cliques: Sequence[Clique], noise_multiplier: float, what: str) -> list[mbi.LinearMeasurement]:
        noisy = self.data.counts(
            [self.query(clique) for clique in cliques],
            noise_multiplier=noise_multiplier,
            rng=self.rng,
            what=f"{what}: {len(cliques)} marginal(s) {', '.join('×'.join(c) for c in cliques[:3])}"
            + (" …" if len(cliques) > 3 else ""),
        )
        std = noise_multiplier * COUNT_L2_SENSITIVITY
        # a noiseless (ε = ∞) measurement still needs a positive weight in mbi's loss
        return [mbi.LinearMeasurement(v, c, stddev=std if std > 0 else 1.0) for v, c in zip(noisy, cliques)]


# JAX keeps every program it compiles for the life of the process, and mbi compiles new ones in every
# fit (≈ 1,000 memory maps a fit of MST on adult-discrete). The kernel lets a process hold
# vm.max_map_count maps (65,530 by default), so fits looped in one process (a black-box audit's) died
# at about the 40th with "LLVM compilation error: Cannot allocate memory" whatever the free memory.
# A grid cell runs in a fresh process and never comes near; a loop pays a recompile every ~30 fits.
CROWDED_SHARE_OF_MAPS = 0.5


def memory_maps() -> tuple[int, int] | None:
    """(memory maps this process holds, the most the kernel lets it hold); None off Linux."""
    try:
        with open("/proc/self/maps", "rb") as held, open("/proc/sys/vm/max_map_count") as allowed:
            return sum(1 for _ in held), int(allowed.read())
    except (OSError, ValueError):
        return None


def make_room_for_compiled_programs(crowded_share: float | None = None) -> bool:
    """Drop JAX's compiled programs (and their maps) once the process holds more than
    ``crowded_share`` of its allowed maps (default :data:`CROWDED_SHARE_OF_MAPS`); True when it did.
    What is dropped is recompiled on its next use: the same programs, the same numbers."""
    import gc

    share = CROWDED_SHARE_OF_MAPS if crowded_share is None else crowded_share
    maps = memory_maps()
    if maps is None or maps[0] <= share * maps[1]:
        return False
    jax.clear_caches()
    gc.collect()  # the executables go with their last Python reference
    return True


def estimate(
    domain: mbi.Domain,
    measurements: list[mbi.LinearMeasurement],
    iterations: int,
    warm_start: mbi.MarkovRandomField | None = None,
) -> mbi.MarkovRandomField:
    make_room_for_compiled_programs()
    return estimation.MirrorDescent().estimate(domain, measurements, iters=iterations, warm_start=warm_start)


class JunctionTreeSizes:
    """The size in MB of the junction tree ``mbi`` builds for a model's cliques plus one more:
    ``sizes.size_mb(extra)`` equals ``mbi.junction_tree.hypothetical_model_size(domain, cliques +
    [extra])`` (same elimination order, same maximal cliques, same arithmetic; tested against it),
    ≈ 10× faster. AIM asks it of every candidate in every round (AIM Alg. 1's model-size filter),
    where mbi's version (networkx graphs and a Domain per cost) was 85% of a 36-column fit.

    The same steps on bitmasks: mbi's greedy order eliminates, first in the domain's order, the
    attribute whose cliques' union is smallest; eliminating a merges its cliques into that union
    less a, so each remaining attribute's union is updated in place (b in a's union: (b's ∪ a's)
    − a; others unchanged). The graph of the cliques, triangulated in that order, has as maximal
    cliques the maximal sets {v} ∪ (v's union) at v's elimination; when that graph is a tree, mbi
    eliminates in depth-first postorder and its maximal cliques are the edges."""

    def __init__(self, domain: mbi.Domain, cliques: Sequence[Clique]) -> None:
        self.index = {a: i for i, a in enumerate(domain.attributes)}
        self.shape = [int(domain.config[a]) for a in domain.attributes]
        self.unions = [0] * len(self.shape)
        for clique in cliques:
            self._merge(self.unions, self.mask(clique))
        self._products: dict[int, int] = {}

    def mask(self, clique: Clique) -> int:
        return sum(1 << self.index[a] for a in set(clique))

    @staticmethod
    def _merge(unions: list[int], mask: int) -> None:
        for i in _bits(mask):
            unions[i] |= mask

    def _product(self, mask: int) -> int:
        if mask not in self._products:
            self._products[mask] = math.prod(self.shape[i] for i in _bits(mask))
        return self._products[mask]

    def size_mb(self, extra: Clique | None = None) -> float:
        unions = list(self.unions)
        if extra is not None:
            self._merge(unions, self.mask(extra))
        n = len(unions)
        edges = sum((u & ~(1 << i)).bit_count() for i, u in enumerate(unions)) // 2
        if edges and edges == n - 1 and self._connected(unions):
            cells = sum(self.shape[i] * self.shape[j] for i in range(n) for j in _bits(unions[i]) if j > i)
            return cells * 8 / 2**20
        remaining, eliminated = list(range(n)), []
        while remaining:
            best = min(remaining, key=lambda i: self._product(unions[i]))
            union = unions[best] | (1 << best)
            eliminated.append(union)
            for j in _bits(union & ~(1 << best)):
                unions[j] = (unions[j] | union) & ~(1 << best)
            remaining.remove(best)
        maximal = [c for k, c in enumerate(eliminated) if not any(c & d == c for d in eliminated[:k])]
        return sum(self._product(c) for c in maximal) * 8 / 2**20

    @staticmethod
    def _connected(unions: list[int]) -> bool:
        seen, frontier = 1, 1
        while frontier:
            reached = 0
            for i in _bits(frontier):
                reached |= unions[i]
            frontier = reached & ~seen
            seen |= reached
        return seen == (1 << len(unions)) - 1


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


@dataclass
class GraphicalModelSampler:
    """A fitted marginal-based model: rows drawn from the Private-PGM graphical model."""

    model: mbi.MarkovRandomField
    schema: Schema
    seed: int

    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        if labels is not None and (np.asarray(labels) != 0).any():
            raise ValueError("a marginal-based model of a discretized table has a single class")
        state = np.random.get_state()
        np.random.seed(self.seed)  # mbi's rounding draws from numpy's global generator
        try:
            data = self.model.synthetic_data(rows=n)
        finally:
            np.random.set_state(state)
        x = np.stack([np.asarray(data.data[c.name]) for c in self.schema.columns], axis=1).astype(np.float32)
        return LabelledData(x, np.zeros(n, dtype=np.int64), self.schema)


def model_marginals(
    model: mbi.MarkovRandomField, cliques: Sequence[Clique], index: dict[str, int], sample_rows: int, seed: int
) -> dict[Clique, np.ndarray]:
    """The model's count vectors of ``cliques``: exact (a sum over the model's own clique
    marginals) for a clique inside one of the model's cliques, else a Monte Carlo estimate from
    ``sample_rows`` rows drawn from the model. ``mbi``'s exact projection of an uncovered clique
    compiles a new JAX program per clique (≈ 1.6 s each on 2 cores), which would make scoring
    hundreds of candidates per round take minutes."""
    tables = {tuple(factor.domain.attributes): np.asarray(factor.values) for factor in model.marginals.tables.values()}
    domain = model.domain
    out: dict[Clique, np.ndarray] = {}
    sample = None
    for clique in cliques:
        home = next((k for k in tables if set(clique) <= set(k)), None)
        if home is not None:
            summed = tables[home].sum(axis=tuple(i for i, a in enumerate(home) if a not in clique))
            kept = [a for a in home if a in clique]
            out[clique] = np.transpose(summed, [kept.index(a) for a in clique]).reshape(-1)
            continue
        if sample is None:
            state = np.random.get_state()
            np.random.seed(seed)
            try:
                drawn = model.synthetic_data(rows=sample_rows)
            finally:
                np.random.set_state(state)
            sample = np.stack([np.asarray(drawn.data[a]) for a in domain.attributes], axis=1)
        out[clique] = marginal(sample, domain, index, clique) * float(model.total) / sample_rows
    return out
