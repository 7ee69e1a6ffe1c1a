"""Cards generated from the declarations: a plugin package's ``cards.json``, which lists its
entries without importing them (``bench list``, ``--help``), is written from the objects its
modules declare — never by hand — by ``python -m bench list --write-cards PACKAGE``; a test
keeps the committed file equal to what the declarations give.

A package's ``__init__.py`` advertises the file through its entry points::

    METHOD_PLUGINS = read_cards(__file__, "dpbench.methods")

An entry is any module-level object of the package that meets a registry's contract (a
``@method`` declaration, an evaluator or dataset instance, an encoder pretrainer); its card
names it as ``"module:attribute"``.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.api.registry import DATASETS, EVALUATORS, METHODS, PRETRAINERS, Plugin, Registry, RegistryError, card_of

CARDS_FILE = "cards.json"
REGISTRIES = (METHODS, EVALUATORS, DATASETS, PRETRAINERS)


def read_cards(package_file: str, group: str) -> tuple[Plugin, ...]:
    """The cards of entry-point ``group`` in the ``cards.json`` beside ``package_file`` (a
    package's ``__init__.py``); light: reads one small file."""
    path = Path(package_file).with_name(CARDS_FILE)
    try:
        listed = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RegistryError(
            f"cannot read the plugin cards {path} ({error}); rewrite it: python -m bench list --write-cards"
        ) from None
    return tuple(
        Plugin(c["name"], c["target"], c["description"], tuple(c["kinds"]), tuple(c["tags"]))
        for c in listed.get(group, [])
    )


def _registry_of(value: Any) -> Registry | None:
    if isinstance(value, (type, ModuleType)) or not isinstance(getattr(value, "name", None), str):
        return None
    return next((r for r in REGISTRIES if r.problems is not None and not r.problems(value)), None)


def _package(package: str) -> ModuleType:
    try:
        root = importlib.import_module(package)
    except ImportError as error:
        raise RegistryError(
            f"cannot import the plugin package {package!r} ({error}); check its name and PYTHONPATH"
        ) from None
    if not hasattr(root, "__path__"):
        raise RegistryError(f"{package!r} is a module, not a package: cards are written beside a package's __init__.py")
    return root


def _modules(package: str) -> list[ModuleType]:
    root = _package(package)
    return [
        importlib.import_module(f"{package}.{info.name}")
        for info in sorted(pkgutil.iter_modules(root.__path__), key=lambda info: info.name)
    ]


def declared_cards(package: str) -> dict[str, list[Plugin]]:
    """The cards of every entry ``package``'s modules declare, by entry-point group and name. An
    object reachable from several modules is named where it was declared (its ``declared_in``, or
    its class's module); one imported into several modules, none of them its own, is refused."""
    places: dict[int, list[tuple[str, str]]] = {}
    entries: dict[int, tuple[Any, Registry]] = {}
    for module in _modules(package):
        for attribute, value in vars(module).items():
            registry = None if attribute.startswith("_") else _registry_of(value)
            if registry is not None:
                places.setdefault(id(value), []).append((module.__name__, attribute))
                entries[id(value)] = (value, registry)
    cards: dict[str, list[Plugin]] = {}
    for key, (value, registry) in entries.items():
        module, attribute = _home(value, places[key])
        card = card_of(value)
        made = Plugin(card.name, f"{module}:{attribute}", card.description, card.kinds, card.tags)
        cards.setdefault(registry.entry_point_group, []).append(made)
    for group, listed in cards.items():
        names = [card.name for card in listed]
        doubled = sorted({name for name in names if names.count(name) > 1})
        if doubled:
            raise RegistryError(f"{package}: two entries of {group} are named {', '.join(doubled)}")
        listed.sort(key=lambda card: card.name)
    return dict(sorted(cards.items()))


def _home(value: Any, places: list[tuple[str, str]]) -> tuple[str, str]:
    if len(places) == 1:
        return places[0]
    own = getattr(value, "declared_in", "") or type(value).__module__
    at_home = [place for place in places if place[0] == own]
    if len(at_home) != 1:
        raise RegistryError(
            f"{value.name!r} is reachable as {', '.join(':'.join(p) for p in places)}; import its module "
            "instead of the object, so that its card names one place"
        )
    return at_home[0]


def cards_text(cards: dict[str, list[Plugin]]) -> str:
    """The ``cards.json`` text of ``cards`` (stable: sorted, one key order)."""
    plain = {
        group: [
            {
                "name": c.name,
                "target": c.target,
                "description": c.description,
                "kinds": list(c.kinds),
                "tags": list(c.tags),
            }
            for c in listed
        ]
        for group, listed in cards.items()
    }
    return json.dumps(plain, indent=1, ensure_ascii=False) + "\n"


def write_cards(package: str) -> Path:
    """Writes ``package``'s ``cards.json`` from its declarations; returns its path."""
    path = Path(_package(package).__file__).with_name(CARDS_FILE)
    path.write_text(cards_text(declared_cards(package)), encoding="utf-8")
    return path
