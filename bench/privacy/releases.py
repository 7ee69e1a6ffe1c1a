"""What a ledger records: releases of private information, and the neighbouring relation's
sensitivities — the one place the relation and its constants are defined.

Every sensitivity in this harness is the largest change of the released statistic when ONE ROW
IS REPLACED by another (the seeds' relation: DP-MERF arXiv 2002.11603 §2, DP-HP arXiv 2106.05042
§2). The helpers below turn a per-row bound into that change, so a method never writes 2 or √2
by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

NEIGHBOURING = "replace-one"

# A histogram of counts: replacing a row moves one count down by 1 and another up by 1.
COUNT_L1_SENSITIVITY = 2.0
COUNT_L2_SENSITIVITY = math.sqrt(2.0)


def replace_one_l2(norm_bound: float, rows: int = 1) -> float:
    """L2 change of Σᵢ f(xᵢ) / rows when one row is replaced and ‖f(x)‖ ≤ norm_bound: the
    row's term can flip from f(x) to f(x′) = −f(x), a distance of 2·norm_bound."""
    return 2.0 * norm_bound / rows


def replace_one_nonnegative_l2(norm_bound: float, rows: int = 1) -> float:
    """L2 change of Σᵢ f(xᵢ) / rows (or of its per-class sums) when one row is replaced and f is
    non-negative with ‖f(x)‖ ≤ norm_bound (e.g. normalised post-ReLU features): ⟨a, b⟩ ≥ 0 gives
    ‖a − b‖² ≤ ‖a‖² + ‖b‖² ≤ 2·norm_bound², and across classes the change is (−a, +b) in two
    rows, of the same norm bound: √2·norm_bound."""
    return math.sqrt(2.0) * norm_bound / rows


def mutual_information_bits(joint: np.ndarray) -> float:
    """I(X; Π) in bits from joint counts with X on the first axis (Π: the rest, flattened)."""
    if joint.ndim == 1 or joint[0].size == 1:
        return 0.0
    p = joint.reshape(joint.shape[0], -1) / joint.sum()
    px, pp = p.sum(axis=1, keepdims=True), p.sum(axis=0, keepdims=True)
    nonzero = p > 0
    return float((p[nonzero] * np.log2(p[nonzero] / (px @ pp)[nonzero])).sum())


def mutual_information_sensitivity(n: int, binary: bool) -> float:
    """Largest change of I(X; Π) (bits) over n rows when one row is replaced: PrivBayes (Zhang et
    al., TODS 2017) Lemma 4.1, the smaller form when X or Π has a domain of 2 values."""
    if binary:
        return math.log2(n) / n + (n - 1) / n * math.log2(n / (n - 1))
    return 2 / n * math.log2((n + 1) / 2) + (n - 1) / n * math.log2((n + 1) / (n - 1))


@dataclass(frozen=True)
class GaussianRelease:
    """``compositions`` releases of a statistic with replace-one L2 ``sensitivity`` Δ, each with
    Gaussian noise of standard deviation ``noise_multiplier × Δ``.

    With ``sampling_rate`` q < 1 each release sees a Poisson sample of the rows (DP-SGD): a row's
    clipped contribution has norm ≤ Δ/2 (the clipping norm C, Δ = 2C) and the mechanism is the
    replace-one pair of ``bench.privacy.replace_one``. Opacus' noise multiplier (std / C) is then
    ``2 × noise_multiplier``."""

    what: str
    sensitivity: float
    noise_multiplier: float
    compositions: int = 1
    sampling_rate: float = 1.0
    mechanism: str = "gaussian"
    neighbouring: str = NEIGHBOURING

    def __post_init__(self) -> None:
        if self.sensitivity <= 0 or not math.isfinite(self.sensitivity):
            raise ValueError(f"sensitivity of {self.what!r} must be finite and > 0")
        if self.noise_multiplier < 0:
            raise ValueError(f"noise multiplier of {self.what!r} must be >= 0")
        if self.compositions < 1:
            raise ValueError(f"compositions of {self.what!r} must be >= 1")
        if not 0 < self.sampling_rate <= 1:
            raise ValueError(f"sampling rate of {self.what!r} must lie in (0, 1]")
        if self.neighbouring != NEIGHBOURING:
            raise ValueError(f"{self.what!r}: only the {NEIGHBOURING} relation is accounted here")

    @property
    def subsampled(self) -> bool:
        return self.sampling_rate < 1

    @property
    def noise_std(self) -> float:
        return self.noise_multiplier * self.sensitivity


@dataclass(frozen=True)
class PureRelease:
    """``compositions`` ε₀-DP releases: ``laplace`` (noise scale sensitivity/ε₀ on an L1
    ``sensitivity`` statistic) or ``exponential`` (a selection whose score has ``sensitivity``).
    ε₀ = inf records a noiseless release of a non-private run."""

    what: str
    epsilon: float
    sensitivity: float
    mechanism: Literal["laplace", "exponential"]
    compositions: int = 1
    neighbouring: str = NEIGHBOURING

    def __post_init__(self) -> None:
        if not self.epsilon > 0:
            raise ValueError(f"ε of {self.what!r} must be > 0")
        if self.sensitivity <= 0 or not math.isfinite(self.sensitivity):
            raise ValueError(f"sensitivity of {self.what!r} must be finite and > 0")
        if self.mechanism not in ("laplace", "exponential"):
            raise ValueError(f"unknown pure mechanism {self.mechanism!r}")
        if self.compositions < 1:
            raise ValueError(f"compositions of {self.what!r} must be >= 1")
        if self.neighbouring != NEIGHBOURING:
            raise ValueError(f"{self.what!r}: only the {NEIGHBOURING} relation is accounted here")

    @property
    def zcdp_rho(self) -> float:
        """ρ-zCDP of the releases: ε₀²/2 for Laplace (pure DP), ε₀²/8 for the exponential
        mechanism (ε₀-bounded range; Cesar & Rogers 2021)."""
        per_release = self.epsilon**2 / (8 if self.mechanism == "exponential" else 2)
        return self.compositions * per_release


@dataclass(frozen=True)
class ClaimedRelease:
    """Everything an outside library released, as that library accounts it: its own claim of
    (ε, δ) — preprocessing included — for the whole fit, which this harness cannot recompute
    (the library's mechanisms are not in the ledger) and so marks as not independently verified.
    A run's only release (``PrivacyLedger.record`` refuses a mix). ``library``: name and version;
    ``neighbouring``: the relation the library's own documentation states its guarantee under."""

    what: str
    epsilon: float
    delta: float
    library: str
    neighbouring: str = "as the library documents it (not checked here)"
    verified: bool = False

    def __post_init__(self) -> None:
        if not self.epsilon > 0 or not math.isfinite(self.epsilon):
            raise ValueError(f"claimed ε of {self.what!r} must be finite and > 0")
        if not 0 <= self.delta < 1:
            raise ValueError(f"claimed δ of {self.what!r} must lie in [0, 1)")
        if not self.library:
            raise ValueError(f"a claimed release ({self.what!r}) names the library that claims it")


Release = GaussianRelease | PureRelease | ClaimedRelease


def release_from_dict(data: dict) -> Release:
    """A release back from its ledger entry (``ledger.json``, a results record): only the recorded
    fields of the release itself are read, never derived ones (noise std, zCDP ρ), so a check
    built on it recomputes those."""
    from dataclasses import fields

    kinds = {"gaussian": GaussianRelease, "pure": PureRelease, "claimed": ClaimedRelease}
    kind = kinds[data.get("kind", "gaussian")]
    return kind(**{f.name: data[f.name] for f in fields(kind) if f.name in data})
