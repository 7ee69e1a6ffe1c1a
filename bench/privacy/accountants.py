"""The ledger's accountants: ε at δ of a list of releases, and noise calibration.

* Full-data Gaussian releases compose exactly into one Gaussian mechanism with noise multiplier
  (Σ kᵢ/σᵢ²)^(-1/2), whose (ε, δ) curve is the analytic one of Balle & Wang (2018, Thm. 8),
  evaluated with autodp's ``ExactGaussianMechanism`` (``tight`` calibrator), or autodp's RDP
  accountant as the seeds' code does (``paper`` calibrator; DP-MERF arXiv 2002.11603 §2).
* Poisson-subsampled Gaussian releases (DP-SGD) under replace-one: the numerical PRV
  composition of ``bench.privacy.replace_one`` (``tight``) or its Rényi bound (``paper``).
* Pure releases alone: basic composition (δ = 0). Mixed with Gaussian ones: zCDP composition
  (Bun & Steinke 2016), ρ → (ε, δ) by Canonne, Kamath & Steinke (2020, Prop. 12).

Every ledger is also recomputed by an independent library at the end of a run
(``bench.privacy.independent``).
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Literal, Protocol, Sequence

from bench.privacy.releases import ClaimedRelease, GaussianRelease, PureRelease, Release
from bench.privacy.replace_one import ReplaceOneSubsampledGaussianPRV, prv_epsilon, rdp_epsilon

Calibrator = Literal["tight", "paper"]


def _autodp():
    # autodp quirk: importing privacy_calibrator first fails on a circular import
    from autodp import rdp_acct  # noqa: F401
    from autodp import privacy_calibrator, rdp_bank
    from autodp.mechanism_zoo import ExactGaussianMechanism

    return rdp_acct, privacy_calibrator, rdp_bank, ExactGaussianMechanism


def gaussian_zcdp_rho(release: GaussianRelease) -> float:
    if release.subsampled:
        raise ValueError(f"{release.what!r} is Poisson-subsampled; zCDP accounting does not cover it here")
    if release.noise_multiplier == 0:
        return math.inf
    return release.compositions / (2 * release.noise_multiplier**2)


def zcdp_rho(releases: Sequence[Release]) -> float:
    if _claim(releases):
        raise ValueError("a library's claimed (ε, δ) has no zCDP ρ here")
    return sum(r.zcdp_rho if isinstance(r, PureRelease) else gaussian_zcdp_rho(r) for r in releases)


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """ε at δ of a ρ-zCDP mechanism: Canonne, Kamath & Steinke (2020), Prop. 12,
    ε = min over α > 1 of αρ + (log(1/δ) + (α−1)·log(1−1/α) − log α)/(α − 1)."""
    if rho == 0:
        return 0.0
    if math.isinf(rho):
        return math.inf

    def epsilon(alpha: float) -> float:
        return alpha * rho + (math.log(1 / delta) + (alpha - 1) * math.log1p(-1 / alpha) - math.log(alpha)) / (
            alpha - 1
        )

    # ε(α) is unimodal in α; golden-section search on log α over a wide bracket
    low, high = math.log(1 + 1e-9), math.log(1e7)
    golden = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        a = high - golden * (high - low)
        b = low + golden * (high - low)
        if epsilon(math.exp(a)) < epsilon(math.exp(b)):
            high = b
        else:
            low = a
    return max(0.0, min(epsilon(math.exp(low)), epsilon(math.exp(high))))


def epsilon_to_zcdp(epsilon: float, delta: float) -> float:
    """The largest ρ whose ``zcdp_to_epsilon(ρ, δ)`` is at most ε (bisection)."""
    low, high = 0.0, max(epsilon, 1.0)
    while zcdp_to_epsilon(high, delta) <= epsilon:
        low, high = high, 2 * high
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if zcdp_to_epsilon(mid, delta) <= epsilon else (low, mid)
    return low


def effective_gaussian_multiplier(releases: Sequence[GaussianRelease]) -> float:
    """Noise multiplier of the single Gaussian mechanism equivalent to all ``releases``."""
    if any(r.noise_multiplier == 0 for r in releases):
        return 0.0
    precision = sum(r.compositions / r.noise_multiplier**2 for r in releases)
    return math.inf if precision == 0 else 1.0 / math.sqrt(precision)


@functools.lru_cache(maxsize=4096)
def exact_gaussian_epsilon(noise_multiplier: float, delta: float) -> float:
    """ε at δ of one Gaussian mechanism with this noise multiplier (analytic, tight)."""
    if math.isinf(noise_multiplier):
        return 0.0
    if noise_multiplier == 0:
        return math.inf
    return float(_autodp()[3](noise_multiplier).get_approxDP(delta))


def rdp_gaussian_epsilon(releases: Sequence[GaussianRelease], delta: float) -> float:
    """ε at δ of full-data releases composed with autodp's RDP accountant (the seeds' accounting)."""
    if any(r.noise_multiplier == 0 for r in releases):
        return math.inf
    if not releases:
        return 0.0
    rdp_acct, _, rdp_bank, _ = _autodp()
    accountant = rdp_acct.anaRDPacct()
    for r in releases:
        accountant.compose_mechanism(
            lambda alpha, s=r.noise_multiplier: rdp_bank.RDP_gaussian({"sigma": s}, alpha),
            coeff=r.compositions,
        )
    return float(accountant.get_eps(delta))


def replace_one_steps(releases: Sequence[GaussianRelease]) -> list[tuple[ReplaceOneSubsampledGaussianPRV, int]]:
    """Each release as the replace-one pair in units of the per-row bound Δ/2 (std 2σ)."""
    return [
        (ReplaceOneSubsampledGaussianPRV(r.sampling_rate, 2 * r.noise_multiplier), r.compositions) for r in releases
    ]


def prv_error(epsilon_target: float) -> float:
    """The PRV accountant's ε error: 1% of the target, within [0.001, 0.01]."""
    return min(0.01, max(0.001, 0.01 * epsilon_target)) if math.isfinite(epsilon_target) else 0.01


def subsampled_epsilon(
    releases: Sequence[GaussianRelease], delta: float, calibrator: Calibrator, eps_error: float = 0.01
) -> float:
    """ε at δ of Gaussian releases some of which are Poisson-subsampled, under replace-one."""
    if any(r.noise_multiplier == 0 for r in releases):
        return math.inf
    return ACCOUNTANTS[calibrator].subsampled_epsilon(replace_one_steps(releases), delta, eps_error)


def compose_epsilon(
    releases: Sequence[Release], delta: float, calibrator: Calibrator, eps_error: float = 0.01
) -> float:
    """ε at δ of ``releases`` composed by the accountant that fits them (module docstring); the
    Gaussian-only cases go to the calibrator's accountant object."""
    if not releases:
        return 0.0
    if claimed := _claim(releases):
        return claimed.epsilon
    pure = [r for r in releases if isinstance(r, PureRelease)]
    if any(math.isinf(r.epsilon) for r in pure):
        return math.inf
    if pure and len(pure) == len(releases):
        return sum(r.compositions * r.epsilon for r in pure)
    if pure:
        return zcdp_to_epsilon(zcdp_rho(releases), delta)
    gaussian = [r for r in releases if isinstance(r, GaussianRelease)]
    if any(r.subsampled for r in gaussian):
        return subsampled_epsilon(gaussian, delta, calibrator, eps_error)
    return ACCOUNTANTS[calibrator].gaussian_epsilon(gaussian, delta)


def _claim(releases: Sequence[Release]) -> ClaimedRelease | None:
    """A library's claim, when that is what the releases are (then their only one)."""
    claims = [r for r in releases if isinstance(r, ClaimedRelease)]
    if claims and len(releases) > 1:
        raise ValueError("a library's claimed release is a run's only release; it cannot be composed with others")
    return claims[0] if claims else None


def describe_accountant(releases: Sequence[Release], calibrator: Calibrator) -> str:
    if claimed := _claim(releases):
        return f"claimed by {claimed.library} (its own accounting; not independently verified)"
    pure = [r for r in releases if isinstance(r, PureRelease)]
    if pure and len(pure) == len(releases):
        return "pure ε-DP, basic composition (δ = 0)"
    if pure:
        return "zCDP composition (Bun & Steinke 2016), ρ→(ε,δ) by Canonne, Kamath & Steinke 2020"
    accountant = ACCOUNTANTS[calibrator]
    if any(r.subsampled for r in releases if isinstance(r, GaussianRelease)):
        return accountant.subsampled_description
    return accountant.gaussian_description


@functools.lru_cache(maxsize=1024)
def calibrate_gaussian_multiplier(epsilon: float, delta: float, compositions: int, calibrator: Calibrator) -> float:
    """Noise multiplier σ such that ``compositions`` full-data Gaussian releases, each with
    noise std σ × sensitivity, are (ε, δ)-DP under the chosen calibrator."""
    if math.isinf(epsilon):
        return 0.0
    return ACCOUNTANTS[calibrator].calibrate_gaussian(epsilon, delta, compositions)


class Accountant(Protocol):
    """How full-data and Poisson-subsampled Gaussian releases are composed and calibrated.
    (Pure and mixed ledgers compose the same way under every accountant: ``compose_epsilon``.)"""

    name: str
    gaussian_description: str
    subsampled_description: str

    def gaussian_epsilon(self, releases: Sequence[GaussianRelease], delta: float) -> float: ...

    def subsampled_epsilon(
        self, steps: list[tuple[ReplaceOneSubsampledGaussianPRV, int]], delta: float, eps_error: float
    ) -> float: ...

    def calibrate_gaussian(self, epsilon: float, delta: float, compositions: int) -> float: ...

    def split(
        self, fractions_and_compositions: Sequence[tuple[float, int]], epsilon: float, delta: float
    ) -> list[float]:
        """Noise multipliers of groups of releases that split (ε, δ) by the given fractions."""
        ...


@dataclass(frozen=True)
class TightAccountant:
    """Exact: full-data Gaussian releases compose into one Gaussian mechanism, evaluated on the
    analytic curve; subsampled ones by the numerical PRV composition of the replace-one pair."""

    name: str = "tight"
    gaussian_description: str = (
        "exact Gaussian composition, analytic Gaussian mechanism (autodp ExactGaussianMechanism)"
    )
    subsampled_description: str = "PRV composition of the replace-one Poisson-subsampled Gaussian pair (Opacus' discretisation; certified upper bound)"

    def gaussian_epsilon(self, releases: Sequence[GaussianRelease], delta: float) -> float:
        return exact_gaussian_epsilon(effective_gaussian_multiplier(releases), delta)

    def subsampled_epsilon(self, steps, delta: float, eps_error: float) -> float:
        return prv_epsilon(steps, delta, eps_error)

    def calibrate_gaussian(self, epsilon: float, delta: float, compositions: int) -> float:
        """Smallest noise multiplier (to 1e-7 relative) for which ``compositions`` Gaussian
        releases satisfy (ε, δ), found by bisection on the exact curve; rounded up, never down."""
        low, high = 1e-3, 1.0
        while exact_gaussian_epsilon(high / math.sqrt(compositions), delta) > epsilon:
            low, high = high, high * 2
        while (high - low) / high > 1e-7:
            mid = 0.5 * (low + high)
            if exact_gaussian_epsilon(mid / math.sqrt(compositions), delta) > epsilon:
                low = mid
            else:
                high = mid
        return high

    def split(self, fractions_and_compositions, epsilon: float, delta: float) -> list[float]:
        """The releases compose exactly, so the fractions split the total precision Σ kᵢ/σᵢ² = 1/σ²
        of the one Gaussian mechanism that meets (ε, δ): σᵢ = σ·√(kᵢ/fractionᵢ); no budget is lost
        to basic composition. Rounded up by a hair so that round-off never tips the total over ε."""
        sigma = calibrate_gaussian_multiplier(epsilon, delta, 1, self.name)
        return [sigma * math.sqrt(k / fraction) * (1 + 1e-9) for fraction, k in fractions_and_compositions]


@dataclass(frozen=True)
class PaperAccountant:
    """The seeds' accounting: autodp's RDP accountant and calibrator (DP-MERF arXiv:2002.11603
    Sec. 2.3), and the Rényi bound of the replace-one subsampled pair for DP-SGD."""

    name: str = "paper"
    gaussian_description: str = "autodp RDP (rdp_acct), RDP→(ε,δ) by autodp"
    subsampled_description: str = "Rényi DP of the replace-one Poisson-subsampled Gaussian pair (numerical quadrature)"

    def gaussian_epsilon(self, releases: Sequence[GaussianRelease], delta: float) -> float:
        return rdp_gaussian_epsilon(releases, delta)

    def subsampled_epsilon(self, steps, delta: float, eps_error: float) -> float:
        return rdp_epsilon(steps, delta)

    def calibrate_gaussian(self, epsilon: float, delta: float, compositions: int) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return float(_autodp()[1].gaussian_mech(epsilon, delta, k=compositions)["sigma"])

    def split(self, fractions_and_compositions, epsilon: float, delta: float) -> list[float]:
        """Group i gets (fractionᵢ·ε, δ/len(groups)) and the seeds' calibrator with its own number
        of compositions — the split of DP-HP's code (arXiv:2106.05042, Alg. 1), whose total is
        (ε, δ) by basic composition."""
        share_delta = delta / len(fractions_and_compositions)
        return [
            calibrate_gaussian_multiplier(fraction * epsilon, share_delta, k, self.name)
            for fraction, k in fractions_and_compositions
        ]


# The accountants by name: the ``--calibrator`` choices (bench.privacy.budget.CALIBRATORS, kept light
# for the command line; a test checks the two agree).
ACCOUNTANTS: dict[str, Accountant] = {a.name: a for a in (TightAccountant(), PaperAccountant())}
