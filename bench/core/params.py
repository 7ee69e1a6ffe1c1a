"""Hyperparameters as data: one declaration per method, with a cited source for every value.

Resolution order (later wins): method defaults → the dataset's paper values → the dataset's
non-private paper values (only for ε = ∞ runs, where a seed tabulates them separately) → the
profile (``paper`` adds nothing; ``smoke`` shrinks the run to seconds; ``cpu`` — where a method
declares it — fits a cell on a 2-core CPU, each value naming its deviation) → ``--set METHOD.PARAM=VALUE``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

PROFILES: tuple[str, ...] = ("paper", "smoke", "cpu")


class HyperParameterError(ValueError):
    pass


@dataclass(frozen=True)
class Setting:
    """A value and where it comes from (a table or equation of a seed, or a documented choice)."""

    value: Any
    source: str


@dataclass(frozen=True)
class HyperParameters:
    defaults: Mapping[str, Setting]
    per_dataset: Mapping[str, Mapping[str, Setting]] = field(default_factory=dict)
    per_dataset_non_private: Mapping[str, Mapping[str, Setting]] = field(default_factory=dict)
    profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tables = [*self.per_dataset.items(), *self.per_dataset_non_private.items(), *self.profiles.items()]
        for where, values in tables:
            unknown = set(values) - set(self.defaults)
            if unknown:
                raise HyperParameterError(f"{where}: parameters {sorted(unknown)} have no default")

    def resolve(
        self,
        dataset: str,
        profile: str = "paper",
        overrides: Mapping[str, str] | None = None,
        private: bool = True,
    ) -> "ResolvedParams":
        if profile not in PROFILES:
            raise HyperParameterError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
        values = {name: s.value for name, s in self.defaults.items()}
        sources = {name: s.source for name, s in self.defaults.items()}
        layers = [self.per_dataset.get(dataset, {})]
        if not private:
            layers.append(self.per_dataset_non_private.get(dataset, {}))
        for layer in layers:
            for name, setting in layer.items():
                values[name], sources[name] = setting.value, setting.source
        for name, value in self.profiles.get(profile, {}).items():
            if isinstance(value, Setting):  # a profile value that names its deviation
                values[name], sources[name] = value.value, f"profile {profile}: {value.source}"
            else:
                values[name], sources[name] = value, f"profile {profile}"
        for name, text in (overrides or {}).items():
            if name not in values:
                raise HyperParameterError(
                    f"unknown parameter {name!r}; valid: {', '.join(sorted(values))}"
                )
            values[name], sources[name] = parse_like(text, values[name], name), "--set"
        return ResolvedParams(values, sources)


@dataclass(frozen=True)
class ResolvedParams:
    values: dict[str, Any]
    sources: dict[str, str]

    def to_json(self) -> str:
        return json.dumps(
            {name: {"value": self.values[name], "source": self.sources[name]} for name in sorted(self.values)},
            indent=2,
        )


def parse_like(text: str, example: Any, name: str) -> Any:
    """Parse a command-line string into the type of the parameter's default value; for a tuple
    of plain values, a comma-separated list of the tuple's element type (``0.1,0.05``)."""
    if isinstance(example, tuple) and example and isinstance(example[0], (int, float, str)):
        return tuple(parse_like(part.strip(), example[0], name) for part in text.split(",") if part.strip())
    try:
        if isinstance(example, bool):
            lowered = text.lower()
            if lowered not in {"true", "false", "1", "0", "yes", "no"}:
                raise ValueError
            return lowered in {"true", "1", "yes"}
        if isinstance(example, int):
            return int(float(text)) if float(text).is_integer() else int(text)
        if isinstance(example, float):
            return float(text)
    except ValueError:
        raise HyperParameterError(
            f"--set {name}={text}: expected a {type(example).__name__} like {example!r}"
        ) from None
    return text


def parse_overrides(
    items: list[str], names: list[str], option: str = "--set", listed_in: str = "--methods"
) -> dict[str, dict[str, str]]:
    """Split ``--set METHOD.PARAM=VALUE`` (or ``--eval-set EVALUATOR.SETTING=VALUE``) items into
    {name: {param: value}}; each name must be one of ``names`` (those in ``listed_in``)."""
    by_name: dict[str, dict[str, str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        name, dot, param = key.partition(".")
        if not sep or not dot or not param:
            shape, example = (
                ("METHOD.PARAM=VALUE", "dp-merf.n_features=1000") if option == "--set"
                else ("EVALUATOR.SETTING=VALUE", "fid.n_samples=1000")
            )
            raise HyperParameterError(f"{option} {item!r}: expected {shape}, e.g. {example}")
        if name not in names:
            raise HyperParameterError(f"{option} {item!r}: {name!r} is not in {listed_in} ({', '.join(names)})")
        by_name.setdefault(name, {})[param] = value
    return by_name
