"""Registries (built-ins, duplicates, unknown names, entry points) and hyperparameter resolution."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import pytest

from bench.core.params import HyperParameterError, HyperParameters, Setting, parse_overrides
from bench.api.registry import DATASETS, EVALUATORS, METHODS, Registry, RegistryError


def test_builtins_are_registered():
    assert {"real", "dp-merf"} <= set(METHODS.names())
    assert "gmm2d" in DATASETS.names()
    assert "nll" in EVALUATORS.names()


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(RegistryError) as error:
        METHODS.get("dp-nope")
    assert "unknown method 'dp-nope'" in str(error.value)
    assert "dp-merf" in str(error.value) and "real" in str(error.value)


@dataclass(frozen=True)
class Named:
    name: str


def test_duplicate_names_are_rejected():
    registry: Registry[Named] = Registry("thing", "dpbench.test-things")
    registry.register(Named("a"))
    with pytest.raises(RegistryError, match="already registered"):
        registry.register(Named("a"))
    with pytest.raises(RegistryError, match="non-empty string attribute 'name'"):
        registry.register(Named(""))


def test_entry_points_register_third_party_objects(tmp_path, monkeypatch):
    """An installed distribution advertising an object in the group gets registered."""
    (tmp_path / "thirdparty_method.py").write_text(
        "from dataclasses import dataclass\n"
        "@dataclass(frozen=True)\nclass M:\n    name: str = 'third-party'\n"
        "ADAPTER = M()\n"
    )
    dist = tmp_path / "thirdparty_method-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-method\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        textwrap.dedent(
            """
            [dpbench.test-methods]
            third-party = thirdparty_method:ADAPTER
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry: Registry = Registry("method", "dpbench.test-methods")
    registry.load_entry_points()
    assert registry.get("third-party").name == "third-party"


@dataclass(frozen=True)
class Params:
    width: int
    rate: float
    flag: bool


PARAMS = HyperParameters(
    Params,
    defaults={"width": Setting(10, "default"), "rate": Setting(0.5, "default"), "flag": Setting(False, "d")},
    per_dataset={"adult": {"width": Setting(99, "Table 4")}},
    profiles={"smoke": {"rate": 0.1}},
)


def test_resolution_order_and_provenance():
    resolved = PARAMS.resolve("adult", "smoke", {"flag": "true"})
    assert resolved.values == {"width": 99, "rate": 0.1, "flag": True}
    assert resolved.params == Params(width=99, rate=0.1, flag=True)
    assert resolved.sources == {"width": "Table 4", "rate": "profile smoke", "flag": "--set"}
    assert PARAMS.resolve("census").values["width"] == 10


def test_overrides_are_typed_and_validated():
    assert PARAMS.resolve("x", overrides={"width": "1e3"}).values["width"] == 1000
    with pytest.raises(HyperParameterError, match="expected an int"):
        PARAMS.resolve("x", overrides={"width": "wide"})
    with pytest.raises(HyperParameterError, match="unknown parameter 'depth'"):
        PARAMS.resolve("x", overrides={"depth": "3"})
    with pytest.raises(HyperParameterError, match="unknown profile"):
        PARAMS.resolve("x", profile="huge")


def test_per_dataset_values_must_have_defaults():
    with pytest.raises(HyperParameterError, match="have no default"):
        HyperParameters(Params, defaults=PARAMS.defaults, per_dataset={"adult": {"x": Setting(1, "s")}})


def test_set_items_are_split_by_method():
    assert parse_overrides(["dp-merf.lr=0.1"], ["dp-merf"]) == {"dp-merf": {"lr": "0.1"}}
    with pytest.raises(HyperParameterError, match="METHOD.PARAM=VALUE"):
        parse_overrides(["lr=0.1"], ["dp-merf"])
    with pytest.raises(HyperParameterError, match="not in --methods"):
        parse_overrides(["dp-hp.lr=0.1"], ["dp-merf"])


def test_every_method_cites_a_source_for_every_value():
    for method in METHODS:
        assert set(method.hyperparameters.defaults) == set(method.hyperparameters.types), method.name
        for name, setting in method.hyperparameters.defaults.items():
            assert setting.source, f"{method.name}.{name} has no source"
        for dataset, values in method.hyperparameters.per_dataset.items():
            assert all(s.source for s in values.values()), f"{method.name}/{dataset}"
