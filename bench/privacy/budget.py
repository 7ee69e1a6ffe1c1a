"""The run's privacy target (ε, δ): the one place both numbers are parsed and validated."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from enum import StrEnum

from bench.core.errors import UsageError


# How σ is calibrated to (ε, δ): tight (exact analysis) or paper (the seeds' RDP calibrator);
# bench/privacy/accountants.py implements both.
class Calibrator(StrEnum):
    TIGHT = "tight"
    PAPER = "paper"


CALIBRATORS: tuple[str, ...] = tuple(c.value for c in Calibrator)
DEFAULT_DELTA = 1e-5  # every experiment of the seeds uses δ = 1e-5 (DP-MERF (arXiv:2002.11603)
# Tables 1 and 3, DP-HP (arXiv:2106.05042) Tables 1 and 2)


class BudgetError(UsageError, ValueError):
    """An invalid privacy target; the message says how to fix it."""


@dataclass(frozen=True)
class PrivacyBudget:
    """Target (ε, δ) under the replace-one neighbouring relation. ε = inf means non-private."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        if math.isnan(self.epsilon) or self.epsilon <= 0:
            raise BudgetError(f"ε must be > 0 (got {self.epsilon}); pass e.g. --eps 1 or --eps inf")
        if self.is_private and not 0 < self.delta < 1:
            raise BudgetError(f"δ must lie in (0, 1) (got {self.delta}); pass e.g. --delta 1e-5")

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon)

    @staticmethod
    def non_private() -> "PrivacyBudget":
        return PrivacyBudget(math.inf, 0.0)


MIN_EPSILON = 1e-4  # below any published setting (the seeds' smallest is 0.01)


def parse_epsilons(text: str) -> list[float]:
    """Parse ``--eps 0.1,0.3,inf``."""
    values = []
    for item in text.split(","):
        item = item.strip()
        try:
            value = float(item)
        except ValueError:
            raise BudgetError(f"ε value {item!r} is not a number; pass e.g. --eps 0.1,0.3,1") from None
        if math.isnan(value) or value <= 0:
            raise BudgetError(f"ε must be > 0 (got {item}); pass e.g. --eps 0.1,0.3,1")
        if math.isinf(value) and item.lower().lstrip("+") not in ("inf", "infinity"):
            # float('1e400') overflows to inf: a typo must not turn a private run into a non-private one
            raise BudgetError(f"ε {item} overflows to infinity; write inf for a run without noise, or a finite ε")
        if value < MIN_EPSILON:
            raise BudgetError(
                f"ε = {item} is below {MIN_EPSILON:g}: the noise calibrators lose their precision there and no "
                "mechanism gives a usable sample; pass e.g. --eps 0.01"
            )
        if value in values:
            raise BudgetError(f"ε {item} is given twice in --eps {text!r}; list each ε once")
        values.append(value)
    if not values:
        raise BudgetError("no ε given; pass e.g. --eps 1")
    return values


class DeltaKind(StrEnum):
    FIXED = "fixed"  # the value given
    AUTO = "auto"  # 1/(10·n_train), resolved per dataset when its rows are loaded
    NOT_APPLICABLE = "none"  # a non-private run (ε = ∞, or a method without a privacy claim)


@dataclass(frozen=True)
class Delta:
    """A run's δ target, typed: ``Delta.fixed(1e-5)``, ``Delta.auto()`` or ``Delta.not_applicable()``.

    ``text`` is its one codec — the cell key, the run's JSON config and its MLflow ``delta`` param
    all hold it ("1e-05", "auto", "none"), and ``Delta.parse`` reads it back (and ``--delta``)."""

    kind: DeltaKind
    value: float | None = None

    def __post_init__(self) -> None:
        if (self.kind is DeltaKind.FIXED) != (self.value is not None):
            raise BudgetError("a fixed δ needs a value, and only a fixed δ has one")
        if self.value is not None and not 0 < self.value < 1:
            raise BudgetError(f"δ must lie in (0, 1) (got {self.value:g}); pass e.g. --delta 1e-5 or --delta auto")

    @staticmethod
    def fixed(value: float) -> "Delta":
        return Delta(DeltaKind.FIXED, float(value))

    @staticmethod
    def auto() -> "Delta":
        return Delta(DeltaKind.AUTO)

    @staticmethod
    def not_applicable() -> "Delta":
        return Delta(DeltaKind.NOT_APPLICABLE)

    @staticmethod
    def parse(text: "str | float | Delta") -> "Delta":
        """``--delta``'s text (a number in (0, 1) or ``auto``), or a stored ``text`` (also ``none``)."""
        if isinstance(text, Delta):
            return text
        if isinstance(text, (int, float)):
            return Delta.fixed(text)
        word = text.strip().lower()
        if word in ("auto", "none"):
            return Delta(DeltaKind(word))
        try:
            value = float(text)
        except ValueError:
            raise BudgetError(f"δ {text!r} is not a number; pass e.g. --delta 1e-5 or --delta auto") from None
        if not 0 < value < 1:
            raise BudgetError(f"δ must lie in (0, 1) (got {text}); pass e.g. --delta 1e-5 or --delta auto")
        return Delta.fixed(value)

    @property
    def text(self) -> str:
        return f"{self.value:g}" if self.kind is DeltaKind.FIXED else self.kind.value

    def __str__(self) -> str:
        return self.text

    def resolve(self, n_train: int) -> float:
        """The δ of a run on ``n_train`` training rows (0 for a non-private run)."""
        if self.kind is DeltaKind.NOT_APPLICABLE:
            return 0.0
        delta = 1.0 / (10 * n_train) if self.kind is DeltaKind.AUTO else self.value
        if delta >= 1.0 / n_train:
            warnings.warn(
                f"δ = {delta:g} is not below 1/n_train = {1 / n_train:g}: such a δ allows releasing "
                "a whole record; use --delta auto or a smaller value",
                stacklevel=2,
            )
        return delta


DEFAULT_DELTA_TARGET = Delta.fixed(DEFAULT_DELTA)


def epsilon_key(epsilon: float) -> str:
    """ε as the cell key and the stored config hold it: ``inf`` or the float's repr."""
    return "inf" if math.isinf(epsilon) else repr(float(epsilon))


def epsilon_text(epsilon: float) -> str:
    """ε as tables, labels and messages print it: ∞ or the shortest %g form."""
    return "∞" if math.isinf(epsilon) else f"{epsilon:g}"


def epsilon_argument(epsilons: "list[float] | tuple[float, ...]") -> str:
    """``--eps``'s text for these ε (``inf`` for ∞), which ``parse_epsilons`` reads back exactly."""
    return ",".join("inf" if math.isinf(e) else repr(float(e)).removesuffix(".0") for e in epsilons)
