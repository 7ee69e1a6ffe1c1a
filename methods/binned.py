"""``mst-binned``, ``aim-binned``, ``privbayes-binned``: the marginal-based generators on tables
with numerical columns (the classification tables), through a public binning.

MST, AIM and PrivBayes model a table of small integer domains. Here a tabular schema is recoded
column by column from its public schema alone, never from the rows (:func:`binning`):

- a coded column (binary, categorical, ordinal) keeps its codes;
- a numerical column gets ``bins`` bins of equal width over its public bounds, on the column's own
  scale, or on a log scale (equal widths of log(1 + x − low)) when its public range spans more
  than ``LOG_SCALE_RANGE`` (heavy-tailed money and byte counts, where equal widths would put
  nearly every row in the first bin); a value outside the bounds falls in the end bin;
- the label becomes one more column, so the joint of features and label is modelled (as the
  seeds' discretized Adult does, github.com/ParkLabML/DP-HP dp_mehp/discretized_datasets.py).

The rows reach the inner method through :meth:`PrivateData.recoded` (a row-wise public map:
replace-one neighbours stay neighbours, so each release keeps its sensitivity and the ledger is
the inner method's own). A sampled row is decoded back: codes as they are, a numerical value
drawn uniformly within its bin (on the bin's scale), the label from its column. This binning is a
documented choice of ours (issue 59: MST and AIM beside the kernel methods on the classification
tables); the seeds run neither there.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from bench.api.contracts import DeclaredMethod, FitContext
from bench.api.declare import method
from bench.core.data import Column, ColumnKind, DataKind, LabelledData, Schema, discrete_schema
from bench.core.params import HyperParameters, Setting
from bench.privacy.private_data import PrivateData

from methods.aim import aim
from methods.mst import mst
from methods.privbayes import privbayes

LOG_SCALE_RANGE = 1000.0  # a public range (high − low) wider than this is binned on log(1 + x − low)
BINS = Setting(
    16,
    "ours: equal-width bins per numerical column over its public bounds, ≈ the seeds' discretized "
    "Adult (at most 17 codes a column, github.com/ParkLabML/DP-HP dp_mehp/discretized_datasets.py)",
)
LABEL_COLUMN = "label"


@dataclass(frozen=True)
class Binning:
    """A tabular schema (``source``) recoded to a discrete one (``schema``, the label last):
    per source column its bin edges on the binning scale (None: a coded column kept as it is) and
    whether that scale is log(1 + x − low)."""

    source: Schema
    schema: Schema
    edges: tuple[np.ndarray | None, ...]
    log_scale: tuple[bool, ...]

    def encode(self, rows: LabelledData) -> LabelledData:
        """Each row on its own: codes kept, numbers to their bin, the label as the last column."""
        columns = []
        for j, (column, edges, log) in enumerate(zip(self.source.columns, self.edges, self.log_scale)):
            values = rows.x[:, j].astype(np.float64)
            if edges is None:
                columns.append(values)
                continue
            scaled = _to_scale(values, column, log)
            columns.append(np.clip(np.searchsorted(edges, scaled, side="right") - 1, 0, len(edges) - 2))
        columns.append(rows.y.astype(np.float64))
        return LabelledData(np.column_stack(columns).astype(np.float32), np.zeros(len(rows), np.int64), self.schema)

    def decode(self, coded: LabelledData, rng: np.random.Generator) -> LabelledData:
        """Codes back to the source schema: a numerical value uniform within its bin."""
        x = np.empty((len(coded), self.source.n_features), dtype=np.float32)
        for j, (column, edges, log) in enumerate(zip(self.source.columns, self.edges, self.log_scale)):
            codes = coded.x[:, j].astype(np.int64)
            if edges is None:
                x[:, j] = codes
                continue
            scaled = rng.uniform(edges[codes], edges[codes + 1])
            x[:, j] = _from_scale(scaled, column, log)
        return LabelledData(x, coded.x[:, -1].astype(np.int64), self.source)


def _to_scale(values: np.ndarray, column: Column, log: bool) -> np.ndarray:
    low, _ = column.public_bounds()
    return np.log1p(np.maximum(values - low, 0.0)) if log else values


def _from_scale(scaled: np.ndarray, column: Column, log: bool) -> np.ndarray:
    low, _ = column.public_bounds()
    return np.expm1(scaled) + low if log else scaled


def binning(schema: Schema, bins: int) -> Binning:
    """The public recoding of ``schema`` (module docstring); depends on the schema alone."""
    if bins < 2:
        raise ValueError(f"bins must be at least 2 (got {bins})")
    columns, edges, logs = [], [], []
    for column in schema.columns:
        if column.kind != ColumnKind.NUMERICAL:
            size = column.domain_size()
            labels = column.categories if column.categories else tuple(str(code) for code in range(size))
            columns.append(Column(column.name, ColumnKind.CATEGORICAL, categories=tuple(labels)))
            edges.append(None)
            logs.append(False)
            continue
        low, high = column.public_bounds()
        log = high - low > LOG_SCALE_RANGE
        top = math.log1p(high - low) if log else high
        column_edges = np.linspace(0.0 if log else low, top, bins + 1)
        shown = [(math.expm1(e) + low if log else e) for e in column_edges]
        columns.append(
            Column(
                column.name,
                ColumnKind.ORDINAL,
                categories=tuple(f"[{shown[i]:.4g}, {shown[i + 1]:.4g})" for i in range(bins)),
            )
        )
        edges.append(column_edges)
        logs.append(log)
    columns.append(Column(LABEL_COLUMN, ColumnKind.CATEGORICAL, categories=tuple(schema.classes)))
    return Binning(schema, discrete_schema(tuple(columns)), tuple(edges), tuple(logs))


@dataclass
class BinnedSampler:
    """The inner method's fitted model, its rows decoded to the source schema."""

    inner: object
    binning: Binning
    seed: int

    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        if labels is not None:
            raise ValueError("a binned marginal model draws rows with their labels; it takes no labels")
        coded = self.inner.sample(n)
        return self.binning.decode(coded, np.random.default_rng(self.seed))


def binned_method(inner: DeclaredMethod, name: str, description: str) -> DeclaredMethod:
    """``inner`` (a method of discretized tables) declared for tabular data through
    :func:`binning`: its hyperparameters plus ``bins``, the same sources."""
    inner_hp = inner.hyperparameters
    fields = [(f.name, inner_hp.types[f.name]) for f in dataclasses.fields(inner_hp.params)]
    params = dataclasses.make_dataclass(f"{inner_hp.params.__name__}Binned", [*fields, ("bins", int)], frozen=True)
    hyperparameters = HyperParameters(
        params,
        defaults={**inner_hp.defaults, "bins": BINS},
        profiles={profile: dict(values) for profile, values in inner_hp.profiles.items()},
    )

    def fit(data: PrivateData, context: FitContext) -> BinnedSampler:
        recoding = binning(data.schema, context.params.bins)
        coded = data.recoded(
            f"{context.params.bins} public bins per numerical column, the label as a column", recoding.encode
        )
        inner_params = inner_hp.params(**{f: getattr(context.params, f) for f, _ in fields})
        inner_context = dataclasses.replace(context, params=inner_params, data_kind=DataKind.DISCRETE)
        return BinnedSampler(inner.fit(coded, inner_context), recoding, context.stream_seed("values-within-bins"))

    fit.__module__ = __name__
    return method(name, description, kinds={DataKind.TABULAR}, hyperparameters=hyperparameters, audit=inner.audit)(fit)


mst_binned = binned_method(mst, "mst-binned", "MST on the table through public equal-width bins (methods/binned.py)")
aim_binned = binned_method(aim, "aim-binned", "AIM on the table through public equal-width bins (methods/binned.py)")
privbayes_binned = binned_method(
    privbayes, "privbayes-binned", "PrivBayes on the table through public equal-width bins (methods/binned.py)"
)
