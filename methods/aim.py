"""``aim``: AIM (McKenna, Mullins, Sheldon & Miklau 2022), workload-aware adaptive selection of
marginals with Private-PGM, on discretized data. zCDP, converted to the run's (ε, δ).

Algorithm 1 of the paper, with the workload of all 3-way marginals (its experiments' default):
- ρ from the run's (ε, δ); T = 16·d rounds planned; a fraction α = 0.9 of each round's ρ for the
  measurement, 0.1 for the selection.
- All 1-way marginals are measured first. Each round then selects, by the exponential mechanism,
  the candidate (a subset of a workload marginal) whose weighted L1 error under the current
  model, minus its expected noise √(2/π)·σ·cells, is largest, among candidates that keep the
  model under a size limit growing with the budget used; measures it with the Gaussian
  mechanism; re-estimates the model (warm-started mirror descent). When a measurement barely
  moved the model, σ halves and the selection ε doubles (annealing). The last round spends
  exactly what is left.

Replace-one sensitivities (``methods.pgm``): measurements √2 in L2, scores 2·weight.

Deviation: a candidate's model marginal is exact when the candidate lies inside one of the
model's cliques, else estimated from 10·n rows drawn from the model (``methods.pgm.
model_marginals``; mbi's exact projection costs ≈ 1.6 s per clique here). The Monte Carlo error
is far below the noise term √(2/π)·σ·cells the score subtracts. Selection is post-processing of
the model either way; privacy is unaffected.
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
from bench.privacy.releases import COUNT_L2_SENSITIVITY
from methods.pgm import (
    GraphicalModelSampler,
    JunctionTreeSizes,
    Measurer,
    column_index,
    domain_of,
    estimate,
    model_marginals,
)


@dataclass(frozen=True)
class AIMParams:
    workload_degree: int
    rounds_per_column: int
    max_model_size_mb: float
    iterations: int
    final_iterations: int


HYPERPARAMETERS = HyperParameters(
    AIMParams,
    defaults={
        "workload_degree": Setting(3, "AIM (McKenna et al. 2022) §6: workload of all 3-way marginals"),
        "rounds_per_column": Setting(16, "AIM Alg. 1: T = 16·d planned rounds"),
        "max_model_size_mb": Setting(80.0, "AIM Alg. 1: maximum model size 80 MB"),
        "iterations": Setting(100, "mirror-descent iterations per round (warm-started)"),
        "final_iterations": Setting(1000, "mirror-descent iterations of the final estimate"),
    },
    profiles={"smoke": {"workload_degree": 2, "rounds_per_column": 1, "iterations": 20, "final_iterations": 50}},
)
MEASUREMENT_SHARE = 0.9  # AIM Alg. 1: α
SAMPLE_FACTOR = 10  # rows drawn per real row to estimate model marginals outside its cliques


def workload_candidates(attributes: list[str], degree: int) -> dict[tuple[str, ...], float]:
    """Every subset of a workload marginal, weighted by Σ_workload |candidate ∩ marginal|."""
    workload = list(itertools.combinations(attributes, degree))
    candidates = {c for w in workload for k in range(1, degree + 1) for c in itertools.combinations(w, k)}
    return {c: float(sum(len(set(c) & set(w)) for w in workload)) for c in sorted(candidates)}


@method(
    "aim",
    "AIM (McKenna et al. 2022): adaptive workload-aware marginal selection + Private-PGM",
    kinds={DataKind.DISCRETE},
    hyperparameters=HYPERPARAMETERS,
    audit=AuditSpec(stop_after_events=1),  # audited: the 1-way marginals
)
def aim(data: PrivateData, context: FitContext[AIMParams]) -> GraphicalModelSampler:
    p = context.params
    rng = context.rng("measurements-and-selection")
    domain, index = domain_of(data.schema), column_index(data.schema)
    attributes = list(domain.attributes)
    ledger = context.ledger
    rho = ledger.zcdp_budget()
    if math.isinf(rho):
        raise ValueError("aim needs a finite ε: its rounds are planned from the privacy budget")
    rounds = p.rounds_per_column * len(attributes)
    multiplier = math.sqrt(rounds / (2 * MEASUREMENT_SHARE * rho))  # ρ per measurement = 1/(2σ²)
    selection_epsilon = math.sqrt(8 * (1 - MEASUREMENT_SHARE) * rho / rounds)
    measurer = Measurer(data, domain, index, rng)
    candidates = workload_candidates(attributes, p.workload_degree)
    sizes = {c: int(np.prod(domain.project(c).shape)) for c in candidates}  # public: cells of each marginal

    measurements = measurer.measure([(a,) for a in attributes], multiplier, "1-way marginals")
    model = estimate(domain, measurements, p.iterations)
    cliques = [m.clique for m in measurements]
    final_round = False
    while not final_round:
        remaining = ledger.zcdp_remaining()  # of rho, the ledger's whole zCDP budget
        if remaining < 2 * (1 / (2 * multiplier**2) + selection_epsilon**2 / 8):
            multiplier = math.sqrt(1 / (2 * MEASUREMENT_SHARE * remaining))
            selection_epsilon = math.sqrt(8 * (1 - MEASUREMENT_SHARE) * remaining) * (1 - 1e-9)
            final_round = True
        used = rho - remaining + 1 / (2 * multiplier**2) + selection_epsilon**2 / 8
        size_limit = p.max_model_size_mb * used / rho
        model_size = JunctionTreeSizes(domain, cliques)  # mbi's hypothetical_model_size, ≈ 10× faster
        eligible = [c for c in candidates if model_size.size_mb(c) <= size_limit]
        noise_std = multiplier * COUNT_L2_SENSITIVITY
        estimates = model_marginals(
            model,
            eligible,
            index,
            SAMPLE_FACTOR * data.n_rows,
            context.stream_seed(f"model-marginals-round-{len(cliques)}"),
        )
        # score wᵣ (‖Mᵣ(D) − Mᵣ(model)‖₁ − √(2/π) σ nᵣ), AIM (McKenna et al. 2022) Alg. 2;
        # the handle derives its sensitivity, 2 · max wᵣ
        chosen = eligible[
            data.select(
                "round selection (exponential mechanism on weighted L1 errors)",
                [measurer.query(c) for c in eligible],
                [estimates[c] for c in eligible],
                epsilon=selection_epsilon,
                rng=rng,
                weights=[candidates[c] for c in eligible],
                offsets=[math.sqrt(2 / math.pi) * noise_std * sizes[c] for c in eligible],
            )
        ]
        measurements += measurer.measure([chosen], multiplier, "selected marginal")
        cliques.append(chosen)
        before = estimates[chosen]
        model = estimate(domain, measurements, p.iterations, warm_start=model)
        after = model_marginals(model, [chosen], index, 0, 0)[chosen]  # measured: a model clique
        if np.abs(after - before).sum() <= math.sqrt(2 / math.pi) * noise_std * sizes[chosen]:
            multiplier, selection_epsilon = multiplier / 2, selection_epsilon * 2
        context.progress(len(cliques) - len(attributes), rounds)
    model = estimate(domain, measurements, p.final_iterations, warm_start=model)
    return GraphicalModelSampler(model, data.schema, context.stream_seed("synthetic-rows"))
