"""One declaration per plugin method: a ``fit`` function and its listing facts become a complete,
registered method adapter (:class:`bench.core.contracts.MethodAdapter`), validated when it is
declared — an incomplete declaration is refused with one line, not a failing cell later.

    @method("laplace-marginals", "1-way Laplace histograms, columns drawn independently", kinds={DataKind.DISCRETE})
    def laplace_marginals(data, context):  # data: PrivateData, context: FitContext
        ...
        return fitted  # anything with sample(n, labels=None) -> LabelledData

``laplace_marginals`` is then the adapter itself (``check_method(laplace_marginals)``, ``--methods
laplace-marginals`` once its module is imported, e.g. through ``DPBENCH_PLUGINS``). A method with
hyperparameters passes ``hyperparameters=HyperParameters(MyParams, defaults={...})``; one that
releases nothing from its rows declares ``private=False``. Classes remain the way for adapters
that need more (an ``audit`` spec, ``thread_invariant_kinds``); both meet the same contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from bench.core.contracts import DataKind, FitContext, method_problems
from bench.core.params import HyperParameters, NoParameters
from bench.core.registry import METHODS, RegistryError

FitFunction = Callable[[Any, FitContext], Any]


@dataclass(frozen=True)
class DeclaredMethod:
    """A method adapter made from a ``fit`` function by :func:`method`."""

    name: str
    description: str
    data_kinds: frozenset[DataKind]
    fit_function: FitFunction = field(repr=False)
    private: bool = True
    hyperparameters: HyperParameters = field(default_factory=lambda: HyperParameters(NoParameters))

    def fit(self, data: Any, context: FitContext) -> Any:
        return self.fit_function(data, context)


def method(name: str, description: str, *, kinds: Iterable[DataKind | str], private: bool = True,
           hyperparameters: HyperParameters | None = None, register: bool = True) -> Callable[[FitFunction], DeclaredMethod]:
    """Declares (and, with ``register``, registers) the decorated ``fit(data, context)`` as the
    method adapter ``name`` (module docstring)."""

    def declare(fit: FitFunction) -> DeclaredMethod:
        try:
            data_kinds = frozenset(DataKind(kind) for kind in kinds)
        except ValueError as error:
            raise RegistryError(f"method {name!r}: {error}; valid kinds: {', '.join(k.value for k in DataKind)}") from None
        adapter = DeclaredMethod(name, description, data_kinds, fit, private,
                                 hyperparameters if hyperparameters is not None else HyperParameters(NoParameters))
        problems = method_problems(adapter)
        if problems:
            raise RegistryError(f"method {name!r} is incomplete: {'; '.join(problems)}")
        if register:
            METHODS.register(adapter)
        return adapter

    return declare


__all__ = ["DeclaredMethod", "method"]
