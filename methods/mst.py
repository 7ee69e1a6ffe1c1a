"""``mst``: MST (McKenna, Miklau & Sheldon 2021, "Winning the NIST Contest"), on discretized data.

The zCDP budget ρ of the run's (ε, δ) is split in thirds (Alg. 1 of the paper):
1. all 1-way marginals measured with the Gaussian mechanism (ρ/3);
2. a maximum spanning tree of the column graph chosen privately (ρ/3): Kruskal's algorithm in
   which each of the D − 1 edges is drawn by the exponential mechanism, scored by the L1 error
   of the pair's marginal under the model estimated from step 1;
3. the D − 1 selected 2-way marginals measured with the Gaussian mechanism (ρ/3);
then Private-PGM (``mbi`` mirror descent) fits a graphical model to all measurements and the
synthetic rows are drawn from it. The domain is the public schema's.

Deviation: the paper's step 0 merges rare values of the 1-way marginals into one (domain
compression); the discretized domains here have at most 17 values, so it is omitted.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from bench.privacy.private_data import PrivateData
from bench.core.params import HyperParameters, Setting
from bench.api.contracts import AuditSpec
from bench.core.data import DataKind
from bench.api.contracts import FitContext
from bench.api.declare import method
from methods.pgm import GraphicalModelSampler, Measurer, column_index, domain_of, estimate, mbi


@dataclass(frozen=True)
class MSTParams:
    iterations: int


HYPERPARAMETERS = HyperParameters(
    MSTParams,
    defaults={
        "iterations": Setting(1000, "mirror-descent iterations of each Private-PGM estimate (mbi's default)"),
    },
    profiles={"smoke": {"iterations": 50}},
)


def spanning_tree(
    data: PrivateData,
    measurer: Measurer,
    estimated: dict[tuple[str, str], np.ndarray],
    attributes: list[str],
    epsilon: float,
    rng: np.random.Generator,
) -> list[tuple[str, str]]:
    """Kruskal's algorithm with each edge drawn by the handle's exponential mechanism among the
    edges joining two components, scored by the L1 error of the pair's true marginal against its
    ``estimated`` one (the handle derives the sensitivity: 2 under replace-one)."""
    component = {a: a for a in attributes}

    def root(a: str) -> str:
        while component[a] != a:
            a = component[a]
        return a

    tree = []
    for _ in range(len(attributes) - 1):
        candidates = [e for e in estimated if root(e[0]) != root(e[1])]
        chosen = candidates[
            data.select(
                "spanning-tree edge (exponential mechanism on 2-way L1 errors)",
                [measurer.query(e) for e in candidates],
                [estimated[e] for e in candidates],
                epsilon=epsilon,
                rng=rng,
            )
        ]
        tree.append(chosen)
        component[root(chosen[0])] = root(chosen[1])
    return tree


def independent_pair_tables(
    model: mbi.MarkovRandomField, pairs: list[tuple[str, str]]
) -> dict[tuple[str, str], np.ndarray]:
    """Each pair's count vector under a model fitted to 1-way marginals only, which is a product
    distribution: total × p_a ⊗ p_b, exactly what ``model.project(pair)`` returns. mbi compiles
    one JAX program per projected pair; on census-discrete's 820 pairs that took tens of minutes
    and once crashed the worker (SIGSEGV)."""
    factors = list(model.marginals.tables.values())
    cliques = [tuple(factor.domain.attributes) for factor in factors]
    if any(len(clique) != 1 for clique in cliques):
        raise ValueError(f"the model has cliques {cliques}; the product form needs 1-way cliques only")
    one_way = {clique[0]: np.asarray(factor.values, dtype=np.float64) for clique, factor in zip(cliques, factors)}
    total = float(model.total)
    return {(a, b): np.outer(one_way[a], one_way[b]).reshape(-1) / total for a, b in pairs}


@method(
    "mst",
    "MST (McKenna et al. 2021): private max spanning tree of 2-way marginals + Private-PGM",
    kinds={DataKind.DISCRETE},
    hyperparameters=HYPERPARAMETERS,
    audit=AuditSpec(stop_after_events=1),  # audited: the 1-way marginals
)
def mst(data: PrivateData, context: FitContext[MSTParams]) -> GraphicalModelSampler:
    rng = context.rng("measurements-and-selection")
    iterations = context.params.iterations
    domain, index = domain_of(data.schema), column_index(data.schema)
    attributes = list(domain.attributes)
    d = len(attributes)
    measurer = Measurer(data, domain, index, rng)
    third = context.ledger.zcdp_budget() / 3

    def gaussian_multiplier(count: int) -> float:  # count marginals sharing ρ/3: count/(2σ²) = ρ/3
        return 0.0 if math.isinf(third) else math.sqrt(count / (2 * third))

    one_way = measurer.measure([(a,) for a in attributes], gaussian_multiplier(d), "1-way marginals")
    model = estimate(domain, one_way, iterations)
    context.progress(1, 3)

    pairs = list(itertools.combinations(attributes, 2))
    estimated = independent_pair_tables(model, pairs)
    edge_epsilon = math.inf if math.isinf(third) else math.sqrt(8 * third / (d - 1))
    tree = spanning_tree(data, measurer, estimated, attributes, edge_epsilon, rng)
    context.progress(2, 3)

    two_way = measurer.measure(tree, gaussian_multiplier(d - 1), "2-way marginals of the tree")
    model = estimate(domain, one_way + two_way, iterations)
    context.progress(3, 3)
    return GraphicalModelSampler(model, data.schema, context.stream_seed("synthetic-rows"))
