"""Hyperparameters as data: one declaration per method, with a cited source for every value.

Resolution order (later wins): method defaults → the dataset's paper values → the dataset's
non-private paper values (only for ε = ∞ runs, where a seed tabulates them separately) → the
profile (``paper`` adds nothing; ``smoke`` shrinks the run to seconds; ``cpu`` — where a method
declares it — fits a cell on a 2-core CPU, each value naming its deviation) → ``--set METHOD.PARAM=VALUE``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from bench.core.errors import UsageError

PROFILES: tuple[str, ...] = ("paper", "smoke", "cpu")


class HyperParameterError(UsageError, ValueError):
    pass


@dataclass(frozen=True)
class Rule:
    """What values a parameter accepts, checked when a grid is expanded (before any data loads),
    so that ``--set dp-merf.epochs=-1`` is refused at the command line instead of failing (or,
    worse, silently training nothing) inside a cell."""

    minimum: float | None = None
    exclusive: bool = False  # minimum itself is not allowed (lr > 0)
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    pattern: str | None = None  # a full-match regular expression for strings
    meaning: str = ""  # how to write a valid value, shown in the error

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is refused, or None."""
        if self.choices is not None and str(value) not in self.choices:
            return f"must be one of {', '.join(self.choices)}"
        if self.pattern is not None and not re.fullmatch(self.pattern, str(value)):
            return f"must look like {self.meaning or self.pattern}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):
                return "must be a finite number"
            if self.minimum is not None and (value < self.minimum or (self.exclusive and value == self.minimum)):
                bound = f"> {self.minimum:g}" if self.exclusive else f"≥ {self.minimum:g}"
                upper = f" and ≤ {self.maximum:g}" if self.maximum is not None else ""
                return f"must be {bound}{upper}" + (f" ({self.meaning})" if self.meaning else "")
            if self.maximum is not None and value > self.maximum:
                return f"must be ≤ {self.maximum:g}" + (f" ({self.meaning})" if self.meaning else "")
        return None


COUNT = Rule(minimum=1)
COUNT_OR_AUTO = Rule(minimum=0, meaning="0 = derived from the data size")
POSITIVE = Rule(minimum=0, exclusive=True)
NON_NEGATIVE = Rule(minimum=0)
SHARE = Rule(minimum=0, exclusive=True, maximum=1, meaning="a share of the budget")
FRACTION_OR_AUTO = Rule(minimum=0, maximum=1, meaning="a fraction of the rows; 0 = use batch_size")
WIDTHS = Rule(pattern=r"[1-9][0-9]*[cd]?(-[1-9][0-9]*[cd]?)*", meaning="200-500-500-200, 4d-2d or 4c-2c (positive widths)")

# The methods share parameter names with one meaning (epochs, n_features, lr, …), so one table
# gives every method its limits without repeating them in each declaration; a ``Setting`` may
# carry its own ``rule`` where a method uses a name differently. Names not listed are only
# type-checked (``parse_like``).
NAMED_RULES: dict[str, Rule] = {
    **{name: COUNT for name in (
        "epochs", "n_features", "noise_dim", "prod_order", "sum_order", "prod_dims", "iterations",
        "final_iterations", "rounds_per_column", "workload_degree", "max_parents", "conv_kernel",
    )},
    "batch_size": COUNT_OR_AUTO,
    "steps_per_epoch": COUNT_OR_AUTO,
    **{name: POSITIVE for name in (
        "lr", "lr_discriminator", "lr_generator", "max_grad_norm", "max_model_size_mb", "theta",
    )},
    **{name: NON_NEGATIVE for name in ("gamma", "length_scale", "sum_length_sq", "prod_length_sq")},
    "lr_decay": Rule(minimum=0, exclusive=True, maximum=1, meaning="a multiplicative decay per epoch"),
    "batch_fraction": FRACTION_OR_AUTO,
    **{name: SHARE for name in ("label_share", "structure_share", "sum_share")},
    # generator architectures (methods/nets.py ARCHITECTURES, GAMMA_PLACEMENTS, LABEL_MODES; the
    # core layer imports no method code, so the names are repeated here and tested to agree)
    "architecture": Rule(choices=("fc", "conv")),
    "gamma_on": Rule(choices=("prod", "sum")),
    "labels": Rule(choices=("released", "uniform")),
    **{name: WIDTHS for name in ("hidden", "discriminator_hidden", "conv_channels")},
}


@dataclass(frozen=True)
class Setting:
    """A value and where it comes from (a table or equation of a seed, or a documented choice).
    ``rule`` limits the values the parameter accepts; without one, ``NAMED_RULES`` applies."""

    value: Any
    source: str
    rule: Rule | None = None


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
        for name, value in values.items():
            rule = self.rule(name)
            why = rule.problem(value) if rule is not None else None
            if why is not None:
                where = f"--set {name}={(overrides or {})[name]}" if sources[name] == "--set" else f"{name} = {value!r} ({sources[name]})"
                raise HyperParameterError(f"{where}: {name} {why}")
        return ResolvedParams(values, sources)

    def rule(self, name: str) -> Rule | None:
        declared = self.defaults.get(name)
        return (declared.rule if declared is not None else None) or NAMED_RULES.get(name)


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
            value = float(text)
            if not math.isfinite(value):  # no float setting means anything with nan or inf
                raise ValueError
            return value
    except ValueError:
        raise HyperParameterError(
            f"--set {name}={text}: expected {'an' if isinstance(example, int) else 'a'} {type(example).__name__} like {example!r}"
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
