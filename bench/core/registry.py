"""Name → object registries for methods, datasets and evaluators.

Built-ins register themselves when their package is imported. Third-party packages add entries
through the entry-point groups ``dpbench.methods``, ``dpbench.datasets`` and ``dpbench.evaluators``
(each entry point names an object, e.g. ``my_pkg.my_method:ADAPTER``), or, without packaging, by
listing modules in ``DPBENCH_PLUGINS`` (comma-separated; each module calls ``register`` itself).
No edit in ``bench/`` is needed to add a method.
"""

from __future__ import annotations

import importlib
import os
from importlib.metadata import entry_points
from typing import Generic, Iterator, TypeVar

from bench.core.contracts import Dataset, Evaluator, MethodAdapter

T = TypeVar("T")

PLUGINS_VARIABLE = "DPBENCH_PLUGINS"


class RegistryError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; show it plainly
        return str(self.args[0])


class Registry(Generic[T]):
    def __init__(self, kind: str, entry_point_group: str) -> None:
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._entries: dict[str, T] = {}

    def register(self, entry: T) -> T:
        name = getattr(entry, "name", None)
        if not isinstance(name, str) or not name:
            raise RegistryError(f"a {self.kind} needs a non-empty string attribute 'name'")
        if name in self._entries:
            raise RegistryError(f"{self.kind} {name!r} is already registered; choose another name")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        _load_all()
        try:
            return self._entries[name]
        except KeyError:
            raise RegistryError(
                f"unknown {self.kind} {name!r}; valid: {', '.join(sorted(self._entries))}"
            ) from None

    def names(self) -> list[str]:
        _load_all()
        return sorted(self._entries)

    def __iter__(self) -> Iterator[T]:
        return iter(self._entries[name] for name in self.names())

    def __contains__(self, name: str) -> bool:
        _load_all()
        return name in self._entries

    def unregister(self, name: str) -> None:
        """For tests that register temporary entries."""
        self._entries.pop(name, None)

    def load_entry_points(self) -> None:
        """Register the object each installed entry point of this registry's group names."""
        for entry_point in entry_points(group=self.entry_point_group):
            try:
                entry = entry_point.load()
            except Exception as error:
                raise RegistryError(
                    f"entry point {entry_point.name!r} ({entry_point.value}) of group "
                    f"{self.entry_point_group} failed to load: {error}"
                ) from error
            self.register(entry)


METHODS: Registry[MethodAdapter] = Registry("method", "dpbench.methods")
DATASETS: Registry[Dataset] = Registry("dataset", "dpbench.datasets")
EVALUATORS: Registry[Evaluator] = Registry("evaluator", "dpbench.evaluators")

_loaded = False


def _load_all() -> None:
    """Import built-ins, entry points and ``DPBENCH_PLUGINS`` once, on first lookup."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for package in ("methods", "datasets", "evaluators"):
        importlib.import_module(package)
    for registry in (METHODS, DATASETS, EVALUATORS):
        registry.load_entry_points()
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_VARIABLE, "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise RegistryError(
                f"{PLUGINS_VARIABLE} names module {module!r}, which cannot be imported ({error}); "
                "check PYTHONPATH"
            ) from None
