"""Trivial baselines: what a generator must beat to have learned anything from the rows.

* ``uniform`` — every column uniform over its public domain (numerical columns uniform within
  their documented bounds, ordinal/categorical/binary columns uniform over their categories),
  labels uniform over the classes. It reads no row: its fit ignores the training data, so it is
  0-DP. It is registered as private (``private = True``) and marked ``data_independent``: the grid
  runs it at every ε like any private method, its ledger holds no release and the run logs
  ``privacy.epsilon_spent = 0`` — honest, where a "non-private" (ε = ∞) label would claim it used
  the data without protection. Only the number of rows to draw comes from the harness, as for
  every method.
* ``independent`` — the DP 1-way marginals of every column and of the label, released with the
  Gaussian mechanism through the ledger, then columns sampled independently of each other (and
  of the label). Each marginal is a histogram of counts: under replace-one a row leaves one bin
  and enters another, so its L2 sensitivity is √2; the k histograms are k Gaussian releases,
  calibrated together (``calibrate_gaussian(compositions=k)``). Numerical columns are
  histogrammed on ``n_bins`` equal-width bins of their public bounds (values outside are clipped
  into the end bins, so the sensitivity holds) and sampled uniformly within the drawn bin.
  Class proportions a schema declares public (a discretized table's single class) are used
  without charge and listed in the ledger. Post-processing: negative noisy counts are set to 0
  and the rest normalised; a histogram whose noisy counts are all ≤ 0 becomes uniform (a
  data-independent fallback, still post-processing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.core.data import ColumnKind, DataKind
from bench.api.contracts import FitContext
from bench.api.declare import method
from bench.api.blocks import ColumnSampler, one_way_queries, probabilities, uniform_probabilities
from bench.privacy.private_data import PrivateData  # counts: replace-one moves one −1, another +1
from bench.core.params import COUNT, HyperParameters, NoParameters, Setting


@method(
    "uniform",
    "Trivial baseline: every column and the label uniform over its public domain; reads no row (0-DP)",
    kinds={DataKind.TABULAR, DataKind.DISCRETE},
    data_independent=True,  # never reads a row: runs at every ε and spends ε = 0
)
def uniform(data: PrivateData, context: FitContext[NoParameters]) -> ColumnSampler:
    schema = data.schema  # the public schema only: no query is made
    context.ledger.use_public_fact(
        "column domains",
        "schema bounds and category lists",
        "documented public domains (the dataset module cites each); this baseline reads no row",
    )
    probabilities = [
        uniform_probabilities(
            1 if c.kind == ColumnKind.NUMERICAL else c.domain_size()
        )  # one bin: its whole public range
        for c in schema.columns
    ]
    for column in schema.columns:
        if column.kind == ColumnKind.NUMERICAL:
            column.public_bounds()  # fail with a clear message when a bound is missing
    return ColumnSampler(schema, probabilities, uniform_probabilities(schema.n_classes), context.rng("synthetic-rows"))


@dataclass(frozen=True)
class IndependentParams:
    n_bins: int


@method(
    "independent",
    "Trivial baseline: DP 1-way marginals (Gaussian, every column and the label), columns sampled independently",
    kinds={DataKind.TABULAR, DataKind.DISCRETE},
    hyperparameters=HyperParameters(
        IndependentParams,
        defaults={
            "n_bins": Setting(
                20,
                "documented choice: 20 equal-width bins of each numerical column's public bounds, a "
                "conventional histogram resolution (no seed defines this baseline); --set independent.n_bins=K",
                rule=COUNT,
            ),
        },
    ),
)
def independent(data: PrivateData, context: FitContext[IndependentParams]) -> ColumnSampler:
    schema = data.schema
    n_bins = context.params.n_bins
    public_labels = schema.public_fact("class_proportions")
    histograms = one_way_queries(schema, n_bins, label=public_labels is None)
    if public_labels is not None:
        context.ledger.use_public_fact(public_labels.name, public_labels.value, public_labels.why)
    context.ledger.use_public_fact(
        "column domains",
        "schema bounds and category lists",
        f"documented public domains (the dataset module cites each); numerical columns in {n_bins} equal-width bins",
    )

    sigma = context.ledger.calibrate_gaussian(compositions=len(histograms))
    column_probabilities = [
        probabilities(noisy)
        for noisy in data.counts(histograms, noise_multiplier=sigma, rng=context.rng("marginal-noise"))
    ]
    label_probabilities = (
        column_probabilities.pop() if public_labels is None else np.asarray(public_labels.value, float)
    )
    return ColumnSampler(
        schema, column_probabilities, label_probabilities / label_probabilities.sum(), context.rng("synthetic-rows")
    )
