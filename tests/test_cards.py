"""Issue 57: built-ins come through the users' door — every built-in method is a ``@method``
declaration, a class written by hand is held in the same form, and the cards that list the plugins
without importing them are generated from the declarations, never restated."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from bench.api.cards import CARDS_FILE, cards_text, declared_cards, read_cards, write_cards
from bench.api.contracts import AuditSpec, DeclaredMethod
from bench.api.registry import METHODS, Plugin, Registry, RegistryError
from bench.core.data import DataKind
from bench.core.params import HyperParameters, NoParameters

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("package", ["methods", "datasets", "evaluators"])
def test_the_committed_cards_are_what_the_declarations_give(package):
    """Change a built-in's name, description or kinds and this fails until
    ``python -m bench list --write-cards methods,datasets,evaluators`` is run."""
    assert (REPO / package / CARDS_FILE).read_text(encoding="utf-8") == cards_text(declared_cards(package))


def test_every_builtin_method_is_a_method_declaration_in_the_module_its_card_names():
    for card in METHODS.cards():
        made = METHODS.get(card.name)
        assert isinstance(made, DeclaredMethod), card.name
        assert made.declared_in == card.target.partition(":")[0], card.name


def test_the_declared_facts_reach_the_code_that_reads_them():
    assert METHODS.get("uniform").data_independent and not METHODS.get("independent").data_independent
    assert METHODS.get("dp-merf").thread_invariant_kinds == {DataKind.TWO_D}
    assert METHODS.get("dp-hp").thread_invariant_kinds == {DataKind.TABULAR}
    assert METHODS.get("dp-mepf").label_params == ("encoder",)
    assert METHODS.get("mst").audit == AuditSpec(stop_after_events=1)
    assert METHODS.get("dp-cgan").audit.dp_sgd_gradients is not None
    assert METHODS.get("dp-merf").audit.dp_sgd_gradients is None  # no DP-SGD phase: no step-level audit


class HandWritten:
    """A method adapter written as a class, the way every built-in was before issue 57."""

    name = "hand-written"
    description = "a class with optional facts"
    data_kinds = frozenset({DataKind.TABULAR})
    private = True
    hyperparameters = HyperParameters(NoParameters)
    audit = AuditSpec({"epochs": "1"})
    thread_invariant_kinds = frozenset({DataKind.TABULAR})

    def fit(self, data, context):
        return ("fitted", data)


def test_a_class_written_by_hand_is_held_as_a_declaration_with_its_facts():
    registry: Registry = Registry("method", "dpbench.test-none", None, DeclaredMethod.of)
    registry.register(HandWritten())
    held = registry.get("hand-written")
    assert isinstance(held, DeclaredMethod)
    assert held.audit == AuditSpec({"epochs": "1"}) and held.thread_invariant_kinds == {DataKind.TABULAR}
    assert not held.data_independent and held.label_params == ()  # not declared: the defaults
    assert held.fit("rows", None) == ("fitted", "rows")


PACKAGE = {
    "__init__.py": "",
    "tallies.py": """
        from bench.api import DataKind, method


        @method("tally", "a declared test method", kinds={DataKind.TABULAR}, data_independent=True)
        def tally(data, context):
            return None
    """,
    "reexport.py": """
        from cardpkg.tallies import tally  # the same object again: its card must name tallies
    """,
}


def _package(root: Path, files: dict[str, str], name: str = "cardpkg") -> str:
    folder = root / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_text(textwrap.dedent(text))
    return name


@pytest.fixture
def importable(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for module in [m for m in sys.modules if m.startswith("cardpkg")]:
        del sys.modules[module]
    METHODS.unregister("tally")


def test_cards_are_written_from_the_declarations_and_read_back(importable):
    package = _package(importable, PACKAGE)
    path = write_cards(package)
    assert path == importable / package / CARDS_FILE
    (card,) = read_cards(str(importable / package / "__init__.py"), "dpbench.methods")
    assert card == Plugin(
        "tally", "cardpkg.tallies:tally", "a declared test method", ("tabular",), ("data-independent",)
    )
    # listed from the card, loaded on first use: the declaration registers itself as its module loads
    registry: Registry = Registry("method", "dpbench.test-none", None, DeclaredMethod.of)
    registry.register(card)
    assert registry.get("tally").data_independent


def test_an_object_reachable_from_two_modules_is_named_where_it_was_declared(importable):
    package = _package(importable, {**PACKAGE, "again.py": "from cardpkg.tallies import tally\n"})
    (card,) = declared_cards(package)["dpbench.methods"]
    assert card.target == "cardpkg.tallies:tally"


def test_an_object_imported_into_two_modules_neither_its_own_is_refused(importable):
    (importable / "cardhome.py").write_text(textwrap.dedent(PACKAGE["tallies.py"]))
    imported = "from cardhome import tally\n"
    package = _package(importable, {"__init__.py": "", "one.py": imported, "two.py": imported})
    try:
        with pytest.raises(RegistryError, match="reachable as cardpkg.one:tally, cardpkg.two:tally"):
            declared_cards(package)
    finally:
        sys.modules.pop("cardhome", None)


def test_a_card_cannot_be_taken_by_an_object_declared_elsewhere():
    registry: Registry = Registry("method", "dpbench.test-none", None, DeclaredMethod.of)
    registry.register(Plugin("real", "methods.real:real", "the card of the built-in"))
    impostor = DeclaredMethod("real", "not the built-in", frozenset({DataKind.TABULAR}), lambda d, c: None)
    with pytest.raises(RegistryError, match="'real' is already registered"):
        registry.register(impostor)


def test_an_unreadable_cards_file_is_one_line(tmp_path):
    (tmp_path / CARDS_FILE).write_text("{not json")
    with pytest.raises(RegistryError, match="--write-cards") as refused:
        read_cards(str(tmp_path / "__init__.py"), "dpbench.methods")
    assert "\n" not in str(refused.value)
