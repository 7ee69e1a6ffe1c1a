"""Hyperparameters as data: one typed declaration per method, with a cited source for every value.

A method declares its parameters twice, on purpose: a frozen dataclass says what each one IS (its
name and type; ``X | None`` where None means "derived", e.g. from the data size), and a
``HyperParameters`` table says what it is SET TO and why (a ``Setting(value, source)`` per field,
per dataset and per profile)::

    @dataclass(frozen=True)
    class MyParams:
        epochs: int
        lr: float
        batch_size: int | None  # None: the whole data set

    HYPERPARAMETERS = HyperParameters(
        MyParams,
        defaults={"epochs": Setting(10, "Paper (arXiv:…) Table 3"), "lr": Setting(1e-3, "…"),
                  "batch_size": Setting(None, "None = all rows, as the paper")},
        per_dataset={"adult": {"epochs": Setting(20, "Paper Table 4")}},
        profiles={"smoke": {"epochs": 1}},
    )

``defaults`` must name exactly the dataclass's fields; every value is type-checked against the
field's annotation when the table is built. A method's ``fit`` then gets an instance of its
dataclass as ``context.params`` (``context.params.epochs`` is an ``int``; no casts).

Resolution order (later wins): method defaults → the dataset's paper values → the dataset's
non-private paper values (only for ε = ∞ runs, where a seed tabulates them separately) → the
profile (``paper`` adds nothing; ``smoke`` shrinks the run to seconds; ``cpu`` — where a method
declares it — fits a cell on a 2-core CPU, each value naming its deviation) → ``--set METHOD.PARAM=VALUE``,
parsed by the field's annotation (``none`` sets an ``X | None`` field to None; a tuple field takes
``a,b,c``). ``Rule``s limit the values and are checked at the end, at grid expansion.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, Mapping, TypeVar

from bench.core.errors import UsageError

PROFILES: tuple[str, ...] = ("paper", "smoke", "cpu")


class HyperParameterError(UsageError, ValueError):
    pass


@dataclass(frozen=True)
class Rule:
    """What values a parameter accepts, checked when a grid is expanded (before any data loads),
    so that ``--set dp-merf.epochs=-1`` is refused at the command line instead of failing (or,
    worse, silently training nothing) inside a cell. None (an ``X | None`` field left to be
    derived) passes every rule."""

    minimum: float | None = None
    exclusive: bool = False  # minimum itself is not allowed (lr > 0)
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    pattern: str | None = None  # a full-match regular expression for strings
    meaning: str = ""  # how to write a valid value, shown in the error
    multiple_of: int | None = None  # whole numbers only: e.g. 2 for cos/sin feature pairs
    below_maximum: bool = False  # maximum itself is not allowed (a share < 1 leaves budget for the rest)
    # values whose privacy is not accounted (the authors' heuristics): allowed at ε = ∞ only, why
    non_private_only: tuple[str, ...] = ()
    non_private_reason: str = ""

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is refused, or None."""
        if value is None:
            return None
        if self.choices is not None and str(value) not in self.choices:
            return f"must be one of {', '.join(self.choices)}"
        if self.pattern is not None and not re.fullmatch(self.pattern, str(value)):
            return f"must look like {self.meaning or self.pattern}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):
                return "must be a finite number"
            if self.minimum is not None and (value < self.minimum or (self.exclusive and value == self.minimum)):
                bound = f"> {self.minimum:g}" if self.exclusive else f"≥ {self.minimum:g}"
                upper = (
                    f" and {'<' if self.below_maximum else '≤'} {self.maximum:g}" if self.maximum is not None else ""
                )
                return f"must be {bound}{upper}" + (f" ({self.meaning})" if self.meaning else "")
            if self.maximum is not None and (value > self.maximum or (self.below_maximum and value == self.maximum)):
                bound = f"< {self.maximum:g}" if self.below_maximum else f"≤ {self.maximum:g}"
                return f"must be {bound}" + (f" ({self.meaning})" if self.meaning else "")
            if self.multiple_of is not None and value % self.multiple_of:
                return f"must be a multiple of {self.multiple_of}" + (f" ({self.meaning})" if self.meaning else "")
        return None


COUNT = Rule(minimum=1)
COUNT_OR_NONE = Rule(minimum=1, meaning="none = derived from the data size")
POSITIVE = Rule(minimum=0, exclusive=True)
POSITIVE_OR_NONE = Rule(minimum=0, exclusive=True, meaning="none = derived from the public bounds")
NON_NEGATIVE = Rule(minimum=0)
SHARE = Rule(
    minimum=0,
    exclusive=True,
    maximum=1,
    below_maximum=True,
    meaning="a share of the budget; the rest pays for the other releases",
)
FRACTION_OR_NONE = Rule(minimum=0, exclusive=True, maximum=1, meaning="a fraction of the rows; none = use batch_size")
WIDTHS = Rule(
    pattern=r"[1-9][0-9]*[cd]?(-[1-9][0-9]*[cd]?)*", meaning="200-500-500-200, 4d-2d or 4c-2c (positive widths)"
)

# The methods share parameter names with one meaning (epochs, n_features, lr, …), so one table
# gives every method its limits without repeating them in each declaration; a ``Setting`` may
# carry its own ``rule`` where a method uses a name differently. Names not listed are only
# type-checked (by their dataclass annotation).
NAMED_RULES: dict[str, Rule] = {
    **{
        name: COUNT
        for name in (
            "epochs",
            "n_features",
            "noise_dim",
            "prod_order",
            "sum_order",
            "prod_dims",
            "iterations",
            "final_iterations",
            "rounds_per_column",
            "workload_degree",
            "max_parents",
            "conv_kernel",
        )
    },
    "batch_size": COUNT_OR_NONE,
    "steps_per_epoch": COUNT_OR_NONE,
    **{
        name: POSITIVE
        for name in (
            "lr",
            "lr_discriminator",
            "lr_generator",
            "max_grad_norm",
            "max_model_size_mb",
            "theta",
        )
    },
    "gamma": NON_NEGATIVE,
    **{name: POSITIVE_OR_NONE for name in ("length_scale", "sum_length_sq", "prod_length_sq")},
    "lr_decay": Rule(minimum=0, exclusive=True, maximum=1, meaning="a multiplicative decay per epoch"),
    "batch_fraction": FRACTION_OR_NONE,
    **{name: SHARE for name in ("label_share", "structure_share", "sum_share")},
    # generator architectures (methods/nets.py ARCHITECTURES, GAMMA_PLACEMENTS, LABEL_MODES; the
    # core layer imports no method code, so the names are repeated here and tested to agree)
    "architecture": Rule(choices=("fc", "conv")),
    "gamma_on": Rule(choices=("prod", "sum")),
    "labels": Rule(choices=("released", "uniform")),
    **{name: WIDTHS for name in ("hidden", "discriminator_hidden", "conv_channels")},
}


def batch_rows(n_rows: int, batch_size: int | None, batch_fraction: float | None, *, real_rows: bool) -> int:
    """The one batch-size rule of the built-in methods.

    ``batch_fraction``, when set, wins: max(2, round(batch_fraction · n_rows)) rows (BatchNorm
    needs two); otherwise ``batch_size``. One of them must be set. With ``real_rows`` the batch
    is drawn from the ``n_rows`` private rows (DP-GAN's Poisson batches, full-MMD's slices), so
    it is at most ``n_rows``; a batch of generated rows (DP-MERF, DP-HP, DP-MEPF) is not capped.
    ``HyperParameters.resolve`` refuses a ``--set batch_size`` that a set ``batch_fraction``
    would silently override."""
    if batch_fraction is not None:
        batch = max(2, round(batch_fraction * n_rows))
    elif batch_size is not None:
        batch = batch_size
    else:
        raise HyperParameterError("batch_size and batch_fraction are both none; set one of them")
    return min(batch, n_rows) if real_rows else batch


@dataclass(frozen=True)
class Setting:
    """A value and where it comes from (a table or equation of a paper, or a documented choice).
    ``rule`` limits the values the parameter accepts; without one, ``NAMED_RULES`` applies."""

    value: Any
    source: str
    rule: Rule | None = None


@dataclass(frozen=True)
class NoParameters:
    """The parameters of a method that has none."""


P = TypeVar("P")


@dataclass(frozen=True)
class HyperParameters(Generic[P]):
    """``params``: the method's frozen dataclass (names and types); ``defaults``: a ``Setting``
    for each of its fields; the other tables override some of them (see the module docstring)."""

    params: type[P]
    defaults: Mapping[str, Setting] = field(default_factory=dict)
    per_dataset: Mapping[str, Mapping[str, Setting]] = field(default_factory=dict)
    per_dataset_non_private: Mapping[str, Mapping[str, Setting]] = field(default_factory=dict)
    profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (dataclasses.is_dataclass(self.params) and self.params.__dataclass_params__.frozen):
            raise HyperParameterError(f"{self.params!r} must be a frozen dataclass")
        missing = set(self.types) - set(self.defaults)
        if missing:
            raise HyperParameterError(f"{self.params.__name__}: fields {sorted(missing)} have no default Setting")
        tables = [
            ("defaults", self.defaults),
            *self.per_dataset.items(),
            *self.per_dataset_non_private.items(),
            *(((f"profile {name}"), values) for name, values in self.profiles.items()),
        ]
        for where, values in tables:
            unknown = set(values) - set(self.types)
            if unknown:
                raise HyperParameterError(f"{where}: parameters {sorted(unknown)} have no default")
            for name, value in values.items():  # a wrong type in a preset fails at import
                typed_value(value.value if isinstance(value, Setting) else value, self.types[name], f"{where}: {name}")

    @cached_property
    def types(self) -> dict[str, Any]:
        """Each field's annotation, evaluated (``int | None``, ``tuple[float, ...]``…)."""
        hints = typing.get_type_hints(self.params)
        return {f.name: hints[f.name] for f in dataclasses.fields(self.params)}

    def resolve(
        self,
        dataset: str,
        profile: str = "paper",
        overrides: Mapping[str, str] | None = None,
        private: bool = True,
    ) -> "ResolvedParams[P]":
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
                raise HyperParameterError(f"unknown parameter {name!r}; valid: {', '.join(sorted(values))}")
            values[name], sources[name] = parse_value(text, self.types[name], name, values[name]), "--set"
        for name, value in values.items():
            rule = self.rule(name)
            why = rule.problem(value) if rule is not None else None
            if why is None and private and rule is not None and str(value) in rule.non_private_only:
                why = f"= {value} is an ablation for --eps inf only: {rule.non_private_reason}"
            if why is not None:
                where = (
                    f"--set {name}={(overrides or {})[name]}"
                    if sources[name] == "--set"
                    else f"{name} = {value!r} ({sources[name]})"
                )
                raise HyperParameterError(f"{where}: {name} {why}")
        if sources.get("batch_size") == "--set" and values.get("batch_fraction") is not None:
            raise HyperParameterError(
                f"--set batch_size={(overrides or {})['batch_size']}: batch_fraction = {values['batch_fraction']!r} "
                f"({sources['batch_fraction']}) takes precedence (bench.core.params.batch_rows); "
                "add --set METHOD.batch_fraction=none"
            )
        return ResolvedParams(self.build(values), sources)

    def build(self, values: Mapping[str, Any]) -> P:
        """The typed instance of resolved ``values`` (e.g. a grid cell's, read back from JSON,
        where tuples arrive as lists); every field must be given."""
        missing, unknown = set(self.types) - set(values), set(values) - set(self.types)
        if missing or unknown:
            raise HyperParameterError(f"{self.params.__name__}: missing {sorted(missing)}, unknown {sorted(unknown)}")
        return self.params(**{name: typed_value(values[name], hint, name) for name, hint in self.types.items()})

    def rule(self, name: str) -> Rule | None:
        declared = self.defaults.get(name)
        return (declared.rule if declared is not None else None) or NAMED_RULES.get(name)


@dataclass(frozen=True)
class ResolvedParams(Generic[P]):
    """A method's resolved parameters (``params``, its typed dataclass) and the source of each."""

    params: P
    sources: dict[str, str]

    @property
    def values(self) -> dict[str, Any]:
        """{name: value} in field order (what a grid cell stores and the tracking logs)."""
        return {f.name: getattr(self.params, f.name) for f in dataclasses.fields(self.params)}

    def to_json(self) -> str:
        values = self.values
        return json.dumps(
            {name: {"value": values[name], "source": self.sources[name]} for name in sorted(values)},
            indent=2,
        )


def _optional(hint: Any) -> Any | None:
    """X for an ``X | None`` annotation, else None."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0]
        raise HyperParameterError(f"unsupported parameter type {hint!r}: use X or X | None")
    return None


def typed_value(value: Any, hint: Any, name: str) -> Any:
    """``value`` checked against a field annotation: int, float (an int is widened), str, bool,
    ``tuple[X, ...]`` (a list is accepted, from JSON) and ``X | None``."""
    inner = _optional(hint)
    if inner is not None:
        return None if value is None else typed_value(value, inner, name)
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise HyperParameterError(f"{name}: unsupported parameter type {hint!r}: use tuple[X, ...]")
        if not isinstance(value, (tuple, list)):
            raise HyperParameterError(f"{name} = {value!r}: expected a tuple")
        return tuple(typed_value(item, args[0], name) for item in value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint in (int, float, str, bool):
        if isinstance(value, hint) and not (hint is int and isinstance(value, bool)):
            return value
        raise HyperParameterError(f"{name} = {value!r}: expected {hint.__name__}")
    raise HyperParameterError(f"{name}: unsupported parameter type {hint!r}")


def parse_value(text: str, hint: Any, name: str, like: Any = None) -> Any:
    """Parse a command-line string by a field annotation: ``none`` for an ``X | None`` field;
    a comma-separated list for ``tuple[X, ...]`` (``0.1,0.05``); numbers must be finite; an int
    may be written ``1e3``; a bool is true/false/1/0/yes/no. ``like`` (the value being replaced)
    is shown in the error."""
    inner = _optional(hint)
    if inner is not None:
        return None if text.strip().lower() == "none" else parse_value(text, inner, name, like)
    if typing.get_origin(hint) is tuple:
        (item, _) = typing.get_args(hint)
        return tuple(parse_value(part.strip(), item, name, like) for part in text.split(",") if part.strip())
    try:
        if hint is bool:
            lowered = text.lower()
            if lowered not in {"true", "false", "1", "0", "yes", "no"}:
                raise ValueError
            return lowered in {"true", "1", "yes"}
        if hint is int:
            return int(float(text)) if float(text).is_integer() else int(text)
        if hint is float:
            value = float(text)
            if not math.isfinite(value):  # no float setting means anything with nan or inf
                raise ValueError
            return value
    except ValueError:
        article = "an" if hint is int else "a"
        example = f" like {like!r}" if like is not None else ""
        raise HyperParameterError(f"--set {name}={text}: expected {article} {hint.__name__}{example}") from None
    if hint is str:
        return text
    raise HyperParameterError(f"{name}: unsupported parameter type {hint!r}")


def parse_like(text: str, example: Any, name: str) -> Any:
    """Parse a command-line string into the type of an example value (``--eval-set``, whose
    settings are the evaluators' dataclass fields); a tuple example takes its first item's type."""
    if isinstance(example, tuple) and example and isinstance(example[0], (int, float, str)):
        return parse_value(text, tuple[type(example[0]), ...], name, example)
    if isinstance(example, (bool, int, float, str)):
        return parse_value(text, type(example), name, example)
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
                ("METHOD.PARAM=VALUE", "dp-merf.n_features=1000")
                if option == "--set"
                else ("EVALUATOR.SETTING=VALUE", "fid.n_samples=1000")
            )
            raise HyperParameterError(f"{option} {item!r}: expected {shape}, e.g. {example}")
        if name not in names:
            raise HyperParameterError(f"{option} {item!r}: {name!r} is not in {listed_in} ({', '.join(names)})")
        given = by_name.setdefault(name, {})
        if param in given and given[param] != value:
            raise HyperParameterError(
                f"{option} {name}.{param} given twice ({given[param]!r} and {value!r}); keep the one you mean"
            )
        given[param] = value
    return by_name
