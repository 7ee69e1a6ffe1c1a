"""The run's privacy target (ε, δ): the one place both numbers are parsed and validated."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from bench.core.errors import UsageError

# How σ is calibrated to (ε, δ): tight (exact analysis) or paper (the seeds' RDP calibrator);
# bench/privacy/accountants.py implements both.
CALIBRATORS: tuple[str, ...] = ("tight", "paper")
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
        values.append(value)
    if not values:
        raise BudgetError("no ε given; pass e.g. --eps 1")
    return values


@dataclass(frozen=True)
class DeltaChoice:
    """``--delta``: a fixed value, or ``auto`` = 1/(10·n_train), resolved per dataset."""

    value: float | None  # None means auto

    @staticmethod
    def parse(text: str) -> "DeltaChoice":
        if text.strip().lower() == "auto":
            return DeltaChoice(None)
        try:
            value = float(text)
        except ValueError:
            raise BudgetError(f"δ {text!r} is not a number; pass e.g. --delta 1e-5 or --delta auto") from None
        if not 0 < value < 1:
            raise BudgetError(f"δ must lie in (0, 1) (got {text}); pass e.g. --delta 1e-5 or --delta auto")
        return DeltaChoice(value)

    def resolve(self, n_train: int) -> float:
        delta = 1.0 / (10 * n_train) if self.value is None else self.value
        if delta >= 1.0 / n_train:
            warnings.warn(
                f"δ = {delta:g} is not below 1/n_train = {1 / n_train:g}: such a δ allows releasing "
                "a whole record; use --delta auto or a smaller value",
                stacklevel=2,
            )
        return delta

    def __str__(self) -> str:
        return "auto" if self.value is None else f"{self.value:g}"
