"""Hyperparameters as data: one declaration per method, with a cited source for every value.

Resolution order (later wins): method defaults → the dataset's paper values → the profile
(``paper`` adds nothing; ``smoke`` shrinks the run to seconds) → ``--set METHOD.PARAM=VALUE``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

PROFILES: tuple[str, ...] = ("paper", "smoke")


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
    profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for where, values in [*self.per_dataset.items(), *self.profiles.items()]:
            unknown = set(values) - set(self.defaults)
            if unknown:
                raise HyperParameterError(f"{where}: parameters {sorted(unknown)} have no default")

    def resolve(
        self, dataset: str, profile: str = "paper", overrides: Mapping[str, str] | None = None
    ) -> "ResolvedParams":
        if profile not in PROFILES:
            raise HyperParameterError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
        values = {name: s.value for name, s in self.defaults.items()}
        sources = {name: s.source for name, s in self.defaults.items()}
        for name, setting in self.per_dataset.get(dataset, {}).items():
            values[name], sources[name] = setting.value, setting.source
        for name, value in self.profiles.get(profile, {}).items():
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
    """Parse a command-line string into the type of the parameter's default value."""
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


def parse_overrides(items: list[str], method_names: list[str]) -> dict[str, dict[str, str]]:
    """Split ``--set METHOD.PARAM=VALUE`` items into {method: {param: value}}."""
    by_method: dict[str, dict[str, str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        method, dot, param = key.partition(".")
        if not sep or not dot or not param:
            raise HyperParameterError(f"--set {item!r}: expected METHOD.PARAM=VALUE, e.g. dp-merf.n_features=1000")
        if method not in method_names:
            raise HyperParameterError(
                f"--set {item!r}: method {method!r} is not in --methods ({', '.join(method_names)})"
            )
        by_method.setdefault(method, {})[param] = value
    return by_method
