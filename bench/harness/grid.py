"""Expanding ``--methods × --datasets × --eps × --seeds`` into cells, each with a stable key."""

from __future__ import annotations

import dataclasses
import math
import shlex
from dataclasses import dataclass, field
from typing import Any

from pathlib import Path

from bench.core.data import DataKind, RunProtocol
from bench.core.errors import UsageError
from bench.core.params import PROFILES, HyperParameterError, ResolvedParams, parse_like
from bench.api.registry import DATASETS, EVALUATORS, METHODS
from bench.harness.cell import Cell
from bench.privacy.budget import DEFAULT_DELTA_TARGET, Calibrator, Delta, epsilon_argument


class GridError(UsageError, ValueError):
    pass


# More seeds than any table needs, and few enough to list the grid at once (a typo such as
# 0-99999999 would otherwise build 10⁸ cells before running one).
MAX_SEEDS = 1000
MAX_SEED = 2**32 - 1


def parse_seeds(text: str) -> list[int]:
    """``0-4`` or ``0,2,5`` or ``1-3,7``."""
    seeds: list[int] = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            span = range(int(first), int(last) + 1) if dash else range(int(first), int(first) + 1)
        except ValueError:
            raise GridError(f"--seeds {text!r}: expected e.g. 0-4 or 0,1,2") from None
        if len(seeds) + len(span) > MAX_SEEDS:
            raise GridError(f"--seeds {text!r}: more than {MAX_SEEDS} seeds in one grid; run the seeds in parts")
        seeds.extend(span)
    if not seeds or min(seeds) < 0:
        raise GridError(f"--seeds {text!r}: expected non-negative integers, e.g. 0-4")
    if max(seeds) > MAX_SEED:
        raise GridError(
            f"--seeds {text!r}: a seed must be at most {MAX_SEED} (2³² − 1, what NumPy and torch seed with)"
        )
    return sorted(set(seeds))


def seeds_argument(seeds: list[int]) -> str:
    """``--seeds``' text for these seeds, runs of consecutive seeds as ranges: [0, 1, 2, 7] → ``0-2,7``."""
    parts: list[str] = []
    ordered = sorted(set(seeds))
    start = 0
    for i in range(1, len(ordered) + 1):
        if i == len(ordered) or ordered[i] != ordered[i - 1] + 1:
            first, last = ordered[start], ordered[i - 1]
            parts.append(str(first) if first == last else f"{first}-{last}")
            start = i
    return ",".join(parts)


NO_EVALUATORS = "none"  # --evaluators none: fit and store the sample only (one fit per setup: score it later)


def split_names(text: str, option: str = "the list") -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise GridError(
            f"{option} {text!r} names nothing: give comma-separated names (`python -m bench list` shows them)"
        )
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise GridError(f"{option} {text!r} names {', '.join(twice)} twice; list each once")
    return names


@dataclass(frozen=True)
class GridSpec:
    """The typed run spec: what ``run`` is asked to do, built once at each edge (the command line,
    a preset's grid, the Python API) and turned into cells by ``expand``. Plain values given to
    the constructor (δ as text, a protocol name, a data folder as a string) are typed here, so
    every edge ends in the same types; ``to_argv`` prints the ``run`` arguments that build the
    same spec again (tested over every preset's grid)."""

    methods: list[str]
    datasets: list[str]
    epsilons: list[float]
    seeds: list[int]
    delta: Delta = DEFAULT_DELTA_TARGET
    evaluators: list[str] | None = None  # None: every applicable evaluator; []: none (a fit to score later)
    profile: str = "paper"
    calibrator: Calibrator = Calibrator.TIGHT
    protocol: RunProtocol = RunProtocol.SOUND
    overrides: dict[str, dict[str, str]] = field(default_factory=dict)
    device: str = "auto"  # as ``run --device``: cuda when present
    data_dir: Path | None = None
    evaluator_overrides: dict[str, dict[str, str]] = field(default_factory=dict)  # --eval-set
    secure_noise: bool = False
    threads: int = 1

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise GridError(f"unknown profile {self.profile!r}; choose one of {', '.join(PROFILES)}")
        try:
            object.__setattr__(self, "calibrator", Calibrator(self.calibrator))
        except ValueError:
            raise GridError(f"unknown calibrator {self.calibrator!r}; choose one of {', '.join(Calibrator)}") from None
        try:
            object.__setattr__(self, "protocol", RunProtocol(self.protocol))
        except ValueError:
            raise GridError(f"unknown protocol {self.protocol!r}; choose one of {', '.join(RunProtocol)}") from None
        object.__setattr__(self, "delta", Delta.parse(self.delta))
        object.__setattr__(self, "epsilons", [float(e) for e in self.epsilons])
        object.__setattr__(self, "methods", list(self.methods))  # a literal may give tuples
        object.__setattr__(self, "datasets", list(self.datasets))
        object.__setattr__(self, "seeds", sorted(set(self.seeds)))
        if self.evaluators is not None:
            object.__setattr__(self, "evaluators", list(self.evaluators))
        object.__setattr__(self, "data_dir", Path(self.data_dir).resolve() if self.data_dir else None)

    def narrowed(
        self,
        *,
        methods: list[str] | None = None,
        datasets: list[str] | None = None,
        epsilons: list[float] | None = None,
        seeds: list[int] | None = None,
    ) -> "GridSpec":
        """This spec on fewer cells (e.g. a report's missing ones); the --set values of methods
        left out are dropped."""
        methods = list(methods or self.methods)
        return dataclasses.replace(
            self,
            methods=methods,
            datasets=list(datasets or self.datasets),
            epsilons=list(epsilons or self.epsilons),
            seeds=list(seeds or self.seeds),
            overrides={m: v for m, v in self.overrides.items() if m in methods},
        )

    def set_items(self) -> tuple[str, ...]:
        """The spec's method settings as ``--set`` items, ``METHOD.PARAM=VALUE``."""
        return tuple(
            f"{owner}.{name}={value}" for owner, values in self.overrides.items() for name, value in values.items()
        )

    def command(self, experiment: str) -> str:
        """The ``python -m bench run`` command line of this spec into ``experiment`` (printed, e.g.
        for the report's missing cells; never parsed back by the harness)."""
        return "python -m bench run " + shlex.join([*self.to_argv(), "--experiment", experiment])

    def to_argv(self) -> list[str]:
        """``python -m bench run``'s arguments for this spec (without --experiment and the execution
        options), as a user would type them to build the same spec."""
        argv = [
            "--methods",
            ",".join(self.methods),
            "--datasets",
            ",".join(self.datasets),
            "--eps",
            epsilon_argument(self.epsilons),
            "--seeds",
            seeds_argument(self.seeds),
        ]
        defaults = GridSpec([], [], [], [])
        for option, value in (
            ("--delta", self.delta.text),
            ("--profile", self.profile),
            ("--calibrator", self.calibrator.value),
            ("--protocol", self.protocol.value),
        ):
            if value != str(getattr(defaults, option[2:])):
                argv += [option, value]
        if self.evaluators is not None:
            argv += ["--evaluators", ",".join(self.evaluators) or NO_EVALUATORS]
        argv += [a for item in self.set_items() for a in ("--set", item)]
        for owner, values in self.evaluator_overrides.items():
            argv += [a for name, value in values.items() for a in ("--eval-set", f"{owner}.{name}={value}")]
        if self.secure_noise:
            argv.append("--secure-noise")
        if self.threads != 1:
            argv += ["--threads", str(self.threads)]
        if self.device != "auto":
            argv += ["--device", self.device]
        if self.data_dir is not None:
            argv += ["--data-dir", str(self.data_dir)]
        return argv


def configured(evaluator: Any, settings: dict[str, Any]) -> Any:
    """The evaluator with ``--eval-set`` settings applied (a dataclass's fields); unchanged when
    none are given, so an evaluator need not be a dataclass."""
    return dataclasses.replace(evaluator, **settings) if settings else evaluator


def settable_fields(evaluator: Any) -> dict[str, Any]:
    """An evaluator's plain settings (numbers, strings, booleans, tuples of numbers) and their
    current values; not its name or description, nor the ``last_*`` results it keeps of its
    latest evaluation. An evaluator that is not a dataclass has none."""
    if not dataclasses.is_dataclass(evaluator):
        return {}

    def plain(value: Any) -> bool:
        if isinstance(value, tuple):
            return bool(value) and all(isinstance(v, (int, float)) for v in value)
        return isinstance(value, (int, float, str, bool))

    return {
        f.name: getattr(evaluator, f.name)
        for f in dataclasses.fields(evaluator)
        if plain(getattr(evaluator, f.name))
        and f.name not in ("name", "description", "run_by_default")
        and not f.name.startswith("last_")
    }


def evaluator_settings(overrides: dict[str, dict[str, str]]) -> dict[str, dict[str, Any]]:
    """``--eval-set EVALUATOR.FIELD=VALUE`` parsed into each field's type. Only plain settings
    (numbers, strings, booleans) of a registered evaluator can be set."""
    settings: dict[str, dict[str, Any]] = {}
    for name, fields in overrides.items():
        current = settable_fields(EVALUATORS.get(name))
        for field_name, text in fields.items():
            if field_name not in current:
                raise GridError(
                    f"--eval-set {name}.{field_name}: no such setting; {name} has {', '.join(sorted(current)) or 'none'}"
                )
            try:
                value = parse_like(text, current[field_name], f"{name}.{field_name}")
            except HyperParameterError as error:
                raise GridError(str(error).replace("--set", "--eval-set")) from None
            settings.setdefault(name, {})[field_name] = value
        try:  # the evaluator's own checks (a negative timeout, an unknown scaling) before any cell runs
            configured(EVALUATORS.get(name), settings.get(name, {}))
        except (ValueError, TypeError) as error:
            raise GridError(f"--eval-set {name}: {error}") from None
    return settings


def _cell_evaluator_settings(
    chosen: list[Any], applied: tuple[str, ...], profile: str, given: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each applied evaluator's settings: its own for the profile (``profiles``, e.g. fewer FID
    samples under ``smoke``), then ``--eval-set``."""
    settings = {}
    for evaluator in chosen:
        if evaluator.name in applied:
            merged = {**getattr(evaluator, "profiles", {}).get(profile, {}), **given.get(evaluator.name, {})}
            if merged:
                settings[evaluator.name] = merged
    return settings


def default_evaluators(kinds: set[DataKind]) -> list:
    """The evaluators a grid of these data kinds may run unnamed, read off their cards first, so
    that a tabular grid does not import the image evaluators (and torch) to learn they do not apply:
    a card without kinds or tags is loaded and asked (the conformance check holds built-ins' cards
    to their objects)."""
    wanted = {kind.value for kind in kinds}
    return [
        EVALUATORS.get(card.name)
        for card in EVALUATORS.cards()
        if not card.kinds or (wanted & set(card.kinds) and "named-only" not in card.tags)
    ]


def expand(spec: GridSpec) -> tuple[list[Cell], list[str]]:
    """The grid's cells and notes on skipped combinations. Unknown names raise RegistryError."""
    methods = [METHODS.get(name) for name in spec.methods]
    datasets = [DATASETS.get(name) for name in spec.datasets]
    chosen_evaluators = (
        [EVALUATORS.get(name) for name in spec.evaluators]
        if spec.evaluators is not None
        else [e for e in default_evaluators({d.kind for d in datasets}) if getattr(e, "run_by_default", True)]
    )
    settings = evaluator_settings(spec.evaluator_overrides)
    cells: list[Cell] = []
    notes: list[str] = []
    for method in methods:
        if (
            spec.profile != "paper"
            and spec.profile not in method.hyperparameters.profiles
            and method.hyperparameters.types
        ):
            notes.append(
                f"{method.name} declares no {spec.profile} settings: --profile {spec.profile} runs its paper settings"
            )
        for dataset in datasets:
            if dataset.kind not in method.data_kinds:
                notes.append(f"skipped {method.name} on {dataset.name}: it does not support {dataset.kind.value} data")
                continue
            evaluators = tuple(
                e.name for e in chosen_evaluators if dataset.kind in e.data_kinds and e.applies_to(dataset.schema)
            )
            if spec.evaluators:
                for name in sorted(set(spec.evaluators) - set(evaluators)):
                    notes.append(f"evaluator {name} does not apply to {dataset.name}")
            epsilons = spec.epsilons if method.private else [math.inf]
            for epsilon in epsilons:
                try:
                    resolved: ResolvedParams = method.hyperparameters.resolve(
                        dataset.name, spec.profile, spec.overrides.get(method.name), private=math.isfinite(epsilon)
                    )
                except HyperParameterError as error:
                    raise GridError(f"{method.name}: {error}") from None
                for seed in spec.seeds:
                    cells.append(
                        Cell(
                            method=method.name,
                            dataset=dataset.name,
                            epsilon=epsilon,
                            delta=spec.delta if method.private and math.isfinite(epsilon) else Delta.not_applicable(),
                            seed=seed,
                            params=dict(resolved.values),
                            param_sources=dict(resolved.sources),
                            evaluators=evaluators,
                            profile=spec.profile,
                            calibrator=spec.calibrator,
                            secure_noise=spec.secure_noise,
                            protocol=spec.protocol,
                            device=spec.device,
                            data_dir=str(spec.data_dir) if spec.data_dir else None,
                            evaluator_settings=_cell_evaluator_settings(
                                chosen_evaluators, evaluators, spec.profile, settings
                            ),
                            threads=spec.threads,
                            lendable=dataset.kind in method.thread_invariant_kinds,
                        )
                    )
    if not cells:
        raise GridError("the grid is empty: " + ("; ".join(notes) or "no method supports these datasets"))
    running = {name for cell in cells for name in cell.evaluators}
    if spec.evaluators and not running:
        raise GridError(
            f"--evaluators {','.join(spec.evaluators)}: none applies to any cell of this grid ("
            + "; ".join(n for n in notes if n.startswith("evaluator "))
            + "); see `python -m bench list evaluators`"
        )
    for name in sorted(set(settings) - running):
        raise GridError(
            f"--eval-set {name}.…: {name} does not run on any cell of this grid "
            f"(it runs: {', '.join(sorted(running)) or 'no evaluator'}); drop the setting or add --evaluators {name}"
        )
    return cells, notes
