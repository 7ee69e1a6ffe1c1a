"""Name → object registries for methods, datasets, evaluators and encoder pretrainers, loaded lazily.

Every entry, built-in or third-party, arrives through the same door: an installed entry point of
the group ``dpbench.methods`` (``dpbench.datasets``, ``dpbench.evaluators``,
``dpbench.pretrainers``) naming either a :class:`Plugin` card, a sequence of cards, or the object
itself (``my_pkg.my_method:ADAPTER``). A card carries what listing needs (name, description, data
kinds, tags) and names its implementation as ``"module:attribute"``; the implementation module is
imported only when the entry is first used by name, so ``python -m bench list`` and ``--help``
import neither torch nor jax. The built-ins advertise their cards from ``methods/__init__.py``
(and the other packages' ``__init__``) through this project's own ``pyproject.toml``; the cards
are generated from the declarations into each package's ``cards.json`` (``bench.api.cards``). Modules
named in ``DPBENCH_PLUGINS`` (comma-separated) are imported too and call :meth:`Registry.register`
themselves. No edit in ``bench/`` is needed to add an entry, and nothing here names a plugin
package.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Callable, Generic, Iterator, TypeVar

from bench.core.errors import UsageError
from bench.api.contracts import (
    Dataset,
    DeclaredMethod,
    Evaluator,
    dataset_problems,
    evaluator_problems,
    method_problems,
)

T = TypeVar("T")

PLUGINS_VARIABLE = "DPBENCH_PLUGINS"


class RegistryError(UsageError, KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; show it plainly
        return str(self.args[0])


@dataclass(frozen=True)
class Plugin:
    """A registry entry that can be listed without importing its implementation.

    ``target`` is ``"module:attribute"``; the attribute is the object itself, or a class or
    function that makes it when called with no arguments. ``kinds`` are the data kinds it handles
    and ``tags`` short facts shown by ``bench list`` (``private``, ``named-only``…); the
    conformance check (:func:`bench.testing.check_method`) verifies both against the object."""

    name: str
    target: str
    description: str
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def load(self) -> Any:
        module_name, _, attribute = self.target.partition(":")
        try:
            made = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as error:
            raise RegistryError(f"{self.name!r}: cannot load {self.target} ({error})") from error
        is_factory = isinstance(made, type) or (callable(made) and not hasattr(made, "name"))
        return made() if is_factory else made


class Registry(Generic[T]):
    def __init__(
        self,
        kind: str,
        entry_point_group: str,
        problems: Callable[[Any], list[str]] | None = None,
        held_as: Callable[[Any], T] | None = None,
    ) -> None:
        self.kind = kind
        self.problems = problems  # what an entry lacks of its contract: refused at registration
        self.held_as = held_as  # the one form every entry is held in (methods: DeclaredMethod.of)
        self.entry_point_group = entry_point_group
        self._plugins: dict[str, Plugin] = {}
        self._objects: dict[str, T] = {}
        self._discovered = False

    def register(self, entry: T | Plugin) -> T | Plugin:
        """Add a card (loaded on first use) or a ready object under its ``name``."""
        name = getattr(entry, "name", None)
        if not isinstance(name, str) or not name:
            raise RegistryError(f"a {self.kind} needs a non-empty string attribute 'name'")
        if name in self._plugins:
            held = self._objects.get(name)
            if entry == self._plugins[name] or entry is held:
                return entry  # the same entry advertised again (entry points loaded twice)
            # a declaration registers itself when its module is imported, before or after its card
            if isinstance(entry, Plugin) and held is not None and _implements(entry, held):
                self._plugins[name] = entry
                return entry
            if not isinstance(entry, Plugin) and held is None and _implements(self._plugins[name], entry):
                self._hold(name, entry)
                return entry
            raise RegistryError(f"{self.kind} {name!r} is already registered; choose another name")
        if isinstance(entry, Plugin):
            self._plugins[name] = entry
        else:
            self._hold(name, entry)
            self._plugins[name] = card_of(entry)
        return entry

    def _hold(self, name: str, entry: Any) -> None:
        self._check_complete(entry)
        self._objects[name] = self.held_as(entry) if self.held_as else entry

    def get(self, name: str) -> T:
        self._discover()
        if name not in self._objects:
            card = self._plugins.get(name)
            if card is None:
                raise RegistryError(f"unknown {self.kind} {name!r}; valid: {', '.join(sorted(self._plugins))}")
            made = card.load()
            if getattr(made, "name", None) != name:
                raise RegistryError(
                    f"{card.target} made a {self.kind} named {getattr(made, 'name', None)!r}, but its card says {name!r}"
                )
            if name not in self._objects:  # a declaration has registered itself while its module loaded
                self._hold(name, made)
        return self._objects[name]

    def _check_complete(self, entry: Any) -> None:
        problems = self.problems(entry) if self.problems else []
        if problems:
            raise RegistryError(f"{self.kind} {getattr(entry, 'name', entry)!r} is incomplete: {'; '.join(problems)}")

    def card(self, name: str) -> Plugin:
        self._discover()
        if name not in self._plugins:
            raise RegistryError(f"unknown {self.kind} {name!r}; valid: {', '.join(sorted(self._plugins))}")
        return self._plugins[name]

    def cards(self) -> list[Plugin]:
        """Every entry's card, by name, without importing any implementation."""
        self._discover()
        return [self._plugins[name] for name in sorted(self._plugins)]

    def names(self) -> list[str]:
        self._discover()
        return sorted(self._plugins)

    def __iter__(self) -> Iterator[T]:
        return iter([self.get(name) for name in self.names()])

    def __contains__(self, name: str) -> bool:
        self._discover()
        return name in self._plugins

    def unregister(self, name: str) -> None:
        """For tests that register temporary entries."""
        self._plugins.pop(name, None)
        self._objects.pop(name, None)

    def load_entry_points(self) -> None:
        """Register what each installed entry point of this registry's group names: a card, a
        sequence of cards, or an object."""
        for entry_point in entry_points(group=self.entry_point_group):
            try:
                advertised = entry_point.load()
            except Exception as error:
                raise RegistryError(
                    f"entry point {entry_point.name!r} ({entry_point.value}) of group "
                    f"{self.entry_point_group} failed to load: {error}"
                ) from error
            for entry in advertised if isinstance(advertised, (tuple, list)) else (advertised,):
                self.register(entry)

    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        self.load_entry_points()
        _import_plugin_modules()


def _implements(card: Plugin, entry: Any) -> bool:
    """Whether ``entry`` was declared in the module its card names (a built-in ``@method`` registers
    itself when the card loads its module; any other object under a taken name is refused)."""
    module = card.target.partition(":")[0]
    return bool(module) and getattr(entry, "declared_in", None) == module


def card_of(entry: Any) -> Plugin:
    """The card of an object registered directly (``DPBENCH_PLUGINS`` modules, tests)."""
    kinds = getattr(entry, "data_kinds", None) or (getattr(entry, "kind", None),)
    values = tuple(sorted(str(getattr(k, "value", k)) for k in kinds if k is not None))
    return Plugin(
        entry.name, target="", description=str(getattr(entry, "description", "")), kinds=values, tags=_tags_of(entry)
    )


def _tags_of(entry: Any) -> tuple[str, ...]:
    """The tags a built-in card declares, read off the object: a method's privacy (as ``bench list``
    shows it) and an evaluator that runs only when named."""
    tags: list[str] = []
    if getattr(entry, "external", ""):
        tags.append("external")
    if getattr(entry, "data_independent", False):
        tags.append("data-independent")
    elif hasattr(entry, "private"):
        tags.append("private" if entry.private else "non-private")
    if not getattr(entry, "run_by_default", True):
        tags.append("named-only")
    return tuple(tags)


_plugin_modules_imported = False


def _import_plugin_modules() -> None:
    global _plugin_modules_imported
    if _plugin_modules_imported:
        return
    _plugin_modules_imported = True
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_VARIABLE, "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise RegistryError(
                f"{PLUGINS_VARIABLE} names module {module!r}, which cannot be imported ({error}); check PYTHONPATH"
            ) from None
        except Exception as error:  # the plugin's own code failed: name it, not "unexpected"
            raise RegistryError(
                f"{PLUGINS_VARIABLE} module {module!r} failed while importing ({type(error).__name__}: {error}); "
                f"fix it, or remove it from {PLUGINS_VARIABLE} (DPBENCH_DEBUG=1 python -c 'import {module}' shows where)"
            ) from None


METHODS: Registry[DeclaredMethod] = Registry("method", "dpbench.methods", method_problems, DeclaredMethod.of)
DATASETS: Registry[Dataset] = Registry("dataset", "dpbench.datasets", dataset_problems)
EVALUATORS: Registry[Evaluator] = Registry("evaluator", "dpbench.evaluators", evaluator_problems)


def pretrainer_problems(entry: Any) -> list[str]:
    """What an encoder pretrainer lacks: ``name``, ``description``, ``data_kinds`` and
    ``pretrain(public, data_dir, out, epochs, limit, device) -> accuracy``."""
    problems = [] if isinstance(getattr(entry, "name", None), str) and entry.name else ["needs a string 'name'"]
    if not isinstance(getattr(entry, "description", None), str):
        problems.append("needs a string 'description'")
    if not callable(getattr(entry, "pretrain", None)):
        problems.append("needs a method pretrain(public, data_dir, out, epochs, limit, device)")
    return problems


# Encoders the harness trains itself on a declared public dataset (``bench pretrain-encoder``).
PRETRAINERS: Registry[Any] = Registry("encoder architecture", "dpbench.pretrainers", pretrainer_problems)
