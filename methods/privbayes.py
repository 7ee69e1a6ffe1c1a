"""``privbayes``: PrivBayes (Zhang, Cormode, Procopiuc, Srivastava & Xiao, TODS 2017), the seeds'
Table 1 baseline, on discretized data. Pure ε-DP.

1. Structure (β·ε): the first attribute is drawn uniformly (no data used); each further
   attribute and its parent set is chosen greedily by the exponential mechanism on the mutual
   information I(X; Π), ε₁/(d − 1) per step. Sensitivity of I (in bits) under replace-one, the
   paper's Lemma 4.1: (1/n)·log₂ n + ((n−1)/n)·log₂(n/(n−1)) when X or Π is binary, else
   (2/n)·log₂((n+1)/2) + ((n−1)/n)·log₂((n+1)/(n−1)); each step uses the largest over its
   candidates.
2. Parameters ((1 − β)·ε): the joint counts of every attribute with its parents, Laplace noise
   with ε₂/d each at L1 sensitivity 2 (replace-one); negatives clipped, rows normalised into
   conditionals (uniform where a parent configuration has no mass).
3. Rows are drawn ancestrally along the network.

Parent sets follow θ-usefulness (the paper's §4.3, θ = 4): a candidate (X, Π) is allowed only if
|dom X|·|dom Π| ≤ n·ε₂ / (2·d·θ), so each noisy table keeps signal above its noise; the empty
parent set is always allowed. The number of rows n is the schema's public row count. Deviation:
parent sets are all allowed subsets of at most ``max_parents`` chosen attributes (the paper
enumerates maximal ones).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from bench.privacy.private_data import CountQuery, PrivateData
from bench.core.params import HyperParameters, Setting
from bench.core.data import DataKind, LabelledData, Schema
from bench.api.contracts import FitContext
from bench.api.declare import method


@dataclass(frozen=True)
class PrivBayesParams:
    structure_share: float
    theta: float
    max_parents: int


HYPERPARAMETERS = HyperParameters(
    PrivBayesParams,
    defaults={
        "structure_share": Setting(0.3, "PrivBayes (Zhang et al. 2017) §6: β = 0.3 of ε learns the network"),
        "theta": Setting(4.0, "PrivBayes §4.3/§6: θ-usefulness, θ = 4"),
        "max_parents": Setting(3, "documented cap on |Π| (θ-usefulness binds first on these domains)"),
    },
    profiles={"smoke": {"max_parents": 1}},
)


def joint_query(sizes: np.ndarray, columns: tuple[int, ...]) -> CountQuery:
    """The joint histogram of ``columns`` (row-major over their full domains) as a handle query."""
    shape = tuple(int(sizes[j]) for j in columns)

    def cells(rows: LabelledData) -> np.ndarray:
        return np.ravel_multi_index(tuple(rows.x[:, j].astype(np.int64) for j in columns), shape)

    return CountQuery("×".join(map(str, columns)), cells, int(np.prod(shape)))


@dataclass
class BayesianNetworkSampler:
    order: list[tuple[int, tuple[int, ...]]]  # (attribute, parents) in sampling order
    conditionals: dict[int, np.ndarray]  # attribute → P(X | Π), X on the last axis
    schema: Schema
    seed: int

    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        if labels is not None and (np.asarray(labels) != 0).any():
            raise ValueError("a PrivBayes model of a discretized table has a single class")
        rng = np.random.default_rng(self.seed)
        x = np.zeros((n, len(self.schema.columns)), dtype=np.int64)
        for attribute, parents in self.order:
            table = self.conditionals[attribute]
            rows = table[tuple(x[:, j] for j in parents)] if parents else np.broadcast_to(table, (n, table.shape[-1]))
            cumulative = np.cumsum(rows, axis=1)
            draws = rng.random((n, 1)) * cumulative[:, -1:]
            x[:, attribute] = np.minimum((cumulative < draws).sum(axis=1), table.shape[-1] - 1)
        return LabelledData(x.astype(np.float32), np.zeros(n, dtype=np.int64), self.schema)


@method(
    "privbayes",
    "PrivBayes (Zhang et al. 2017): private Bayesian network, pure ε-DP (seeds' Table 1 baseline)",
    kinds={DataKind.DISCRETE},
    hyperparameters=HYPERPARAMETERS,
)
def privbayes(data: PrivateData, context: FitContext[PrivBayesParams]) -> BayesianNetworkSampler:
    p = context.params
    rng = context.rng("network-and-counts")  # the first attribute, the selections, the counts' noise
    schema = data.schema
    sizes = np.array([len(c.categories) for c in schema.columns], dtype=np.int64)
    n, d = data.n_rows, len(sizes)
    context.ledger.use_public_fact("n_train", n, "the dataset's published row count (schema fact published_rows)")
    epsilon = context.budget.epsilon
    structure_epsilon = p.structure_share * epsilon
    parameter_epsilon = epsilon - structure_epsilon if context.budget.is_private else math.inf
    useful_cells = math.inf if math.isinf(epsilon) else n * parameter_epsilon / (2 * d * p.theta)

    first = int(rng.integers(d))
    order: list[tuple[int, tuple[int, ...]]] = [(first, ())]
    chosen = [first]
    step_epsilon = structure_epsilon / max(d - 1, 1)
    for step in range(d - 1):
        candidates = []
        for attribute in (a for a in range(d) if a not in chosen):
            for size in range(min(p.max_parents, len(chosen)) + 1):
                for parents in itertools.combinations(sorted(chosen), size):
                    if sizes[attribute] * np.prod(sizes[list(parents)]) > useful_cells and parents:
                        continue
                    candidates.append((attribute, parents))
        pick = data.select_by_mutual_information(
            "network structure step (exponential mechanism on mutual information)",
            [(joint_query(sizes, (attribute, *parents)), int(sizes[attribute])) for attribute, parents in candidates],
            epsilon=step_epsilon,
            rng=rng,
        )
        order.append(candidates[pick])
        chosen.append(candidates[pick][0])
        context.progress(step + 1, d)
    flat_counts = data.laplace_counts(
        [joint_query(sizes, (*parents, attribute)) for attribute, parents in order],
        epsilon=parameter_epsilon / d,
        rng=rng,
        what="joint counts of each attribute with its parents",
    )
    noisy_counts = [
        counts.reshape(tuple(int(sizes[j]) for j in (*parents, attribute)))
        for (attribute, parents), counts in zip(order, flat_counts)
    ]
    conditionals = {}
    for (attribute, parents), counts in zip(order, noisy_counts):
        counts = np.clip(counts, 0, None)
        mass = counts.sum(axis=-1, keepdims=True)
        conditionals[attribute] = np.where(mass > 0, counts / np.where(mass > 0, mass, 1), 1.0 / counts.shape[-1])
    return BayesianNetworkSampler(order, conditionals, schema, context.stream_seed("synthetic-rows"))
