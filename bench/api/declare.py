"""One declaration per plugin: a function and its listing facts become a complete, registered
method adapter (``@method``), evaluator (``@evaluator``) or dataset (``@dataset``), validated when it
is declared — an incomplete declaration is refused with one line, not a failing cell later.

    @method("laplace-marginals", "1-way Laplace histograms, columns drawn independently", kinds={DataKind.DISCRETE})
    def laplace_marginals(data, context):  # data: PrivateData, context: FitContext
        ...
        return fitted  # anything with sample(n, labels=None) -> LabelledData

``laplace_marginals`` is then the adapter itself (``check_method(laplace_marginals)``, ``--methods
laplace-marginals`` once its module is imported, e.g. through ``DPBENCH_PLUGINS``). A method with
hyperparameters passes ``hyperparameters=HyperParameters(MyParams, defaults={...})``; one that
releases nothing from its rows declares ``private=False``; ``audit=``, ``thread_invariant_kinds=``,
``data_independent=`` and ``label_params=`` carry the rest (:class:`DeclaredMethod`). Every
built-in method is declared this way too (``methods/``).

    @evaluator("mean-gap", "largest gap between real and synthetic column means",
               kinds={DataKind.TABULAR}, metrics={"gap": MetricSpec.quality(Direction.LOWER, "…")})
    def mean_gap(synthetic, real_train, real_test, context):
        return {"gap": float(abs(synthetic.x.mean(0) - real_test.x.mean(0)).max())}

    @dataset("noisy-xor", "label: the two features' signs differ", schema=SCHEMA)
    def noisy_xor(data_dir, seed, protocol):  # all rows as (x, y), or a Split
        ...

An evaluator may return the metrics as a dict or a full :class:`Evaluation`; ``applies_to``
(a function of the schema) narrows it beyond its data kinds, ``run_by_default=False`` makes it run
only when ``--evaluators`` names it. ``bench.testing.check_evaluator`` and ``check_dataset`` check
declared ones like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from bench.core.data import DataKind, LabelledData, RunProtocol, Schema, Split, stream_seed_sequence
from bench.api.contracts import (
    AuditSpec,
    DeclaredMethod,
    EvalContext,
    Evaluation,
    MetricSpec,
    dataset_problems,
    FitFunction,
    evaluator_problems,
    method_problems,
)
from bench.core.params import HyperParameters, NoParameters
from bench.api.registry import DATASETS, EVALUATORS, METHODS, RegistryError
from bench.core.walls import refuse_inside_fit


def _kinds(what: str, name: str, kinds: Iterable[DataKind | str]) -> frozenset[DataKind]:
    try:
        return frozenset(DataKind(kind) for kind in kinds)
    except ValueError as error:
        raise RegistryError(f"{what} {name!r}: {error}; valid kinds: {', '.join(k.value for k in DataKind)}") from None


def _checked(what: str, declared: Any, problems: list[str], registry: Any, register: bool) -> Any:
    if problems:
        raise RegistryError(f"{what} {declared.name!r} is incomplete: {'; '.join(problems)}")
    if register:
        registry.register(declared)
    return declared


def method(
    name: str,
    description: str,
    *,
    kinds: Iterable[DataKind | str],
    private: bool = True,
    hyperparameters: HyperParameters | None = None,
    audit: AuditSpec | None = None,
    thread_invariant_kinds: Iterable[DataKind | str] = (),
    data_independent: bool = False,
    label_params: tuple[str, ...] = (),
    external: str = "",
    prepare: Callable[[], Any] | None = None,
    register: bool = True,
) -> Callable[[FitFunction], DeclaredMethod]:
    """Declares (and, with ``register``, registers) the decorated ``fit(data, context)`` as the
    method adapter ``name`` (module docstring; the optional facts: :class:`DeclaredMethod`)."""

    def declare(fit: FitFunction) -> DeclaredMethod:
        adapter = DeclaredMethod(
            name,
            description,
            _kinds("method", name, kinds),
            fit,
            private,
            hyperparameters if hyperparameters is not None else HyperParameters(NoParameters),
            audit if audit is not None else AuditSpec(),
            _kinds("method", name, thread_invariant_kinds) if thread_invariant_kinds else frozenset(),
            data_independent,
            tuple(label_params),
            declared_in=fit.__module__,
            external=external,
            prepare=prepare,
        )
        return _checked("method", adapter, method_problems(adapter), METHODS, register)

    return declare


EvaluateFunction = Callable[[LabelledData, LabelledData, LabelledData, EvalContext], "Evaluation | dict[str, float]"]


def _applies_everywhere(schema: Schema) -> bool:
    return True


@dataclass(frozen=True)
class DeclaredEvaluator:
    """An evaluator made from an ``evaluate`` function by :func:`evaluator`."""

    name: str
    description: str
    data_kinds: frozenset[DataKind]
    metrics: dict[str, MetricSpec]
    evaluate_function: EvaluateFunction = field(repr=False)
    schema_test: Callable[[Schema], bool] = field(default=_applies_everywhere, repr=False)
    run_by_default: bool = True
    declared_in: str = field(default="", compare=False, repr=False)

    def applies_to(self, schema: Schema) -> bool:
        return self.schema_test(schema)

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        result = self.evaluate_function(synthetic, real_train, real_test, context)
        return result if isinstance(result, Evaluation) else Evaluation(metrics=dict(result))


def evaluator(
    name: str,
    description: str,
    *,
    kinds: Iterable[DataKind | str],
    metrics: dict[str, MetricSpec],
    applies_to: Callable[[Schema], bool] | None = None,
    run_by_default: bool = True,
    register: bool = True,
) -> Callable[[EvaluateFunction], DeclaredEvaluator]:
    """Declares (and, with ``register``, registers) ``evaluate(synthetic, real_train, real_test,
    context)`` — returning its metrics as a dict or an :class:`Evaluation` — as the evaluator ``name``."""

    def declare(evaluate: EvaluateFunction) -> DeclaredEvaluator:
        declared = DeclaredEvaluator(
            name,
            description,
            _kinds("evaluator", name, kinds),
            dict(metrics),
            evaluate,
            applies_to or _applies_everywhere,
            run_by_default,
            declared_in=evaluate.__module__,
        )
        return _checked("evaluator", declared, evaluator_problems(declared), EVALUATORS, register)

    return declare


LoadFunction = Callable[[Any, int, str], "Split | tuple[Any, Any]"]


def split_by_seed(x: Any, y: Any, schema: Schema, seed: int, test_share: float) -> Split:
    """All rows split into train and test by a permutation drawn from the seed's ``split`` stream
    (the same on every machine); the sizes depend only on the row count, which is public."""
    features, labels = np.asarray(x, dtype=np.float32), np.asarray(y).astype(np.int64)
    order = np.random.default_rng(stream_seed_sequence(seed, "split")).permutation(len(labels))
    n_test = round(test_share * len(labels))
    test, train = order[:n_test], order[n_test:]
    return Split(
        LabelledData(features[train], labels[train], schema), LabelledData(features[test], labels[test], schema)
    )


@dataclass(frozen=True)
class DeclaredDataset:
    """A dataset made from a ``load`` function by :func:`dataset`."""

    name: str
    description: str
    kind: DataKind
    schema: Schema
    load_function: LoadFunction = field(repr=False)
    test_share: float = 0.2
    declared_in: str = field(default="", compare=False, repr=False)

    def load(self, data_dir: Any, seed: int, protocol: RunProtocol = RunProtocol.SOUND) -> Split:
        refuse_inside_fit(f"loading the dataset {self.name}")
        loaded = self.load_function(data_dir, seed, protocol)
        if isinstance(loaded, Split):
            return loaded
        x, y = loaded
        return split_by_seed(x, y, self.schema, seed, self.test_share)


def dataset(
    name: str,
    description: str,
    *,
    schema: Schema,
    kind: DataKind | str = DataKind.TABULAR,
    test_share: float = 0.2,
    register: bool = True,
) -> Callable[[LoadFunction], DeclaredDataset]:
    """Declares (and, with ``register``, registers) ``load(data_dir, seed, protocol)`` as the dataset
    ``name`` with its public ``schema``. ``load`` returns a :class:`Split`, or all rows as ``(x, y)``
    (features in the schema's column order, integer labels): then the seed's permutation holds out
    ``test_share`` of them as the test split (``split_by_seed``)."""

    def declare(load: LoadFunction) -> DeclaredDataset:
        (data_kind,) = _kinds("dataset", name, [kind])
        if not 0 < test_share < 1:
            raise RegistryError(f"dataset {name!r}: test_share must lie in (0, 1), got {test_share}")
        declared = DeclaredDataset(name, description, data_kind, schema, load, test_share, declared_in=load.__module__)
        return _checked("dataset", declared, dataset_problems(declared), DATASETS, register)

    return declare


__all__ = ["DeclaredDataset", "DeclaredEvaluator", "DeclaredMethod", "dataset", "evaluator", "method"]
