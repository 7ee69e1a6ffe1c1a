"""The plugin-facing API, above the privacy floor: what a method, evaluator or dataset author
imports — the data types, the contracts, the one declaration per kind and the public building
blocks — from one place::

    from bench.api import DataKind, Direction, MetricSpec, evaluator

The modules: ``contracts`` (the protocols, ``FitContext``, ``EvalContext``, ``Evaluation``,
``MetricSpec``), ``declare`` (``@method``, ``@evaluator``, ``@dataset``), ``registry`` (the lazy
registries) and ``blocks`` (1-way count queries, an independent-columns sampler). Nothing inside
``bench`` imports this package's names; they are the door for plugins."""

from bench.api.blocks import ColumnSampler, one_way_queries
from bench.api.contracts import AuditSpec, Direction, EvalContext, Evaluation, FitContext, MetricKind, MetricSpec
from bench.api.declare import dataset, evaluator, method
from bench.core.data import Column, ColumnKind, DataKind, LabelledData, Schema
from bench.privacy.private_data import CountQuery, PrivateData

__all__ = [
    "AuditSpec",
    "Column",
    "ColumnKind",
    "ColumnSampler",
    "CountQuery",
    "DataKind",
    "Direction",
    "EvalContext",
    "Evaluation",
    "FitContext",
    "LabelledData",
    "MetricKind",
    "MetricSpec",
    "PrivateData",
    "Schema",
    "dataset",
    "evaluator",
    "method",
    "one_way_queries",
]
