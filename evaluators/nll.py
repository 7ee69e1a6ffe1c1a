"""``nll``: negative log-likelihood of the generated (x, y) under the true generating density.

Needs a dataset whose schema declares its ``true_density`` (``gmm2d``). This scores sample
quality, not coverage: it is −log p(x̃, ỹ) of the *generated* rows (DP-HP (arXiv:2106.05042) Sec. 5.1, footnote 7).

* ``mean`` (default, sound): mean over samples of −log p with the correct 2-D Gaussian density.
* ``paper_sum``: the authors' code's convention, a *sum* over the samples with a 1-D normaliser,
  which gives Fig. 2's ≈ 3.1×10⁵ for 90,000 real points. Only comparable at equal sample counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from bench.core.data import DataKind, LabelledData, Schema
from bench.api.contracts import Direction, EvalContext, Evaluation, MetricSpec


@dataclass(frozen=True)
class NegativeLogLikelihood:
    name: str = "nll"
    description: str = "NLL of generated samples under the true density (gmm2d); lower is better"
    data_kinds: frozenset[DataKind] = frozenset({DataKind.TWO_D})
    metrics: Mapping[str, MetricSpec] = field(
        default_factory=lambda: {
            "mean": MetricSpec.quality(Direction.LOWER, "mean −log p(x, y), correct 2-D density", heavy_tailed=True),
            "paper_sum": MetricSpec.quality(
                Direction.LOWER, "Σ −log p(x, y) with the seeds' 1-D normaliser (Fig. 2 convention)", heavy_tailed=True
            ),
        }
    )

    def applies_to(self, schema: Schema) -> bool:
        return schema.true_density is not None

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        """Both conventions are always reported (the protocol does not change the density)."""
        density = synthetic.schema.true_density
        if density is None:
            raise ValueError("nll needs a dataset with a known density (e.g. gmm2d)")
        return Evaluation(
            {
                "mean": float(-np.mean(density.log_prob(synthetic.x, synthetic.y))),
                "paper_sum": float(-np.sum(density.log_prob_paper(synthetic.x, synthetic.y))),
            }
        )


NLL = NegativeLogLikelihood()
