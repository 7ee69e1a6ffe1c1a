"""The run's privacy ledger: every release of private information, composed by an accountant.

A method never adds noise on its own authority. It asks the ledger for a noise multiplier
(``calibrate_gaussian``), adds the noise, and records the release (``record``). The ledger
composes all releases; a release that would take the run past its target is refused with
``PrivacyBudgetExceeded``, so an overspending run is an error, not a result. Data-dependent
facts a method uses for free must be public (declared by the dataset schema) and are listed
with ``use_public_fact``.

Two calibrators:

* ``tight`` (default): Gaussian releases on the full data compose exactly into one Gaussian
  mechanism with noise multiplier (Σ σᵢ⁻²)^(-1/2), whose (ε, δ) curve is the analytic one of
  Balle & Wang (2018), evaluated with autodp's ``ExactGaussianMechanism``. One release at
  (1, 1e-5) needs σ = 3.73.
* ``paper``: the seeds' ``autodp.privacy_calibrator.gaussian_mech`` (RDP of k Gaussians and the
  classical RDP → (ε, δ) conversion), σ = 4.90 for the same release; accounted with autodp's RDP
  accountant, as the seeds' code does (seed-dpmerf.md §2).
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Sequence

# autodp quirk: importing privacy_calibrator first fails on a circular import.
from autodp import rdp_acct  # noqa: F401  (must precede the next imports)
from autodp import privacy_calibrator, rdp_bank
from autodp.mechanism_zoo import ExactGaussianMechanism
import numpy as np
from opacus.accountants import PRVAccountant, RDPAccountant

from bench.privacy.budget import PrivacyBudget

Calibrator = Literal["tight", "paper"]
CALIBRATORS: tuple[str, ...] = ("tight", "paper")
NEIGHBOURING = "replace-one"  # the seeds' relation (seed-dpmerf.md §2, seed-dphp.md §2.1)
_SLACK = 1e-9  # relative tolerance on ε for floating-point round-off


class PrivacyBudgetExceeded(RuntimeError):
    """A release would take the run past its (ε, δ) target."""


@dataclass(frozen=True)
class GaussianRelease:
    """``compositions`` releases of a statistic with L2 ``sensitivity`` (replace-one), each with
    Gaussian noise of standard deviation ``noise_multiplier × sensitivity``. With
    ``sampling_rate`` q < 1 each release sees a Poisson sample of the rows (each row kept with
    probability q): DP-SGD's steps, with the clipping norm as the sensitivity."""

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

    @property
    def subsampled(self) -> bool:
        return self.sampling_rate < 1

    @property
    def noise_std(self) -> float:
        return self.noise_multiplier * self.sensitivity


@dataclass(frozen=True)
class PureRelease:
    """``compositions`` ε₀-DP releases: ``laplace`` (noise scale sensitivity/ε₀ on an L1
    ``sensitivity`` statistic) or ``exponential`` (a selection whose score has ``sensitivity``)."""

    what: str
    epsilon: float
    sensitivity: float
    mechanism: Literal["laplace", "exponential"]
    compositions: int = 1
    neighbouring: str = NEIGHBOURING

    def __post_init__(self) -> None:
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"ε of {self.what!r} must be finite and > 0")
        if self.sensitivity <= 0 or not math.isfinite(self.sensitivity):
            raise ValueError(f"sensitivity of {self.what!r} must be finite and > 0")
        if self.mechanism not in ("laplace", "exponential"):
            raise ValueError(f"unknown pure mechanism {self.mechanism!r}")
        if self.compositions < 1:
            raise ValueError(f"compositions of {self.what!r} must be >= 1")

    @property
    def zcdp_rho(self) -> float:
        per_release = self.epsilon**2 / (8 if self.mechanism == "exponential" else 2)
        return self.compositions * per_release


Release = GaussianRelease | PureRelease


def gaussian_zcdp_rho(release: GaussianRelease) -> float:
    if release.subsampled:
        raise ValueError(f"{release.what!r} is Poisson-subsampled; zCDP accounting does not cover it here")
    if release.noise_multiplier == 0:
        return math.inf
    return release.compositions / (2 * release.noise_multiplier**2)


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """ε at δ of a ρ-zCDP mechanism: Canonne, Kamath & Steinke (2020), Prop. 12,
    ε = min over α > 1 of αρ + (log(1/δ) + (α−1)·log(1−1/α) − log α)/(α − 1)."""
    if rho == 0:
        return 0.0
    if math.isinf(rho):
        return math.inf

    def epsilon(alpha: float) -> float:
        return alpha * rho + (math.log(1 / delta) + (alpha - 1) * math.log1p(-1 / alpha) - math.log(alpha)) / (alpha - 1)

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


@dataclass(frozen=True)
class BudgetShare:
    """A group of ``compositions`` releases that together get ``fraction`` of the budget."""

    fraction: float
    compositions: int = 1


@dataclass(frozen=True)
class PublicFactUse:
    name: str
    value: Any
    why: str


def _effective_gaussian_multiplier(releases: list[GaussianRelease]) -> float:
    """Noise multiplier of the single Gaussian mechanism equivalent to all ``releases``."""
    if any(r.noise_multiplier == 0 for r in releases):
        return 0.0
    precision = sum(r.compositions / r.noise_multiplier**2 for r in releases)
    return math.inf if precision == 0 else 1.0 / math.sqrt(precision)


def exact_gaussian_epsilon(noise_multiplier: float, delta: float) -> float:
    """ε at δ of one Gaussian mechanism with this noise multiplier (analytic, tight)."""
    if math.isinf(noise_multiplier):
        return 0.0
    if noise_multiplier == 0:
        return math.inf
    return float(ExactGaussianMechanism(noise_multiplier).get_approxDP(delta))


def rdp_gaussian_epsilon(releases: list[GaussianRelease], delta: float) -> float:
    """ε at δ of the releases composed with autodp's RDP accountant (the seeds' accounting)."""
    if any(r.noise_multiplier == 0 for r in releases):
        return math.inf
    if not releases:
        return 0.0
    accountant = rdp_acct.anaRDPacct()
    for r in releases:
        accountant.compose_mechanism(
            lambda alpha, s=r.noise_multiplier: rdp_bank.RDP_gaussian({"sigma": s}, alpha),
            coeff=r.compositions,
        )
    return float(accountant.get_eps(delta))


# Opacus' default orders stop at 63; a lightly noised full-data release needs larger ones
_RDP_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)) + [2**k for k in range(6, 16)]


def subsampled_epsilon(releases: list[GaussianRelease], delta: float, accountant: str) -> float:
    """ε at δ of releases some of which are Poisson-subsampled, composed by Opacus' ``prv``
    accountant (numerical, returns its certified upper bound) or ``rdp`` accountant."""
    if any(r.noise_multiplier == 0 for r in releases):
        return math.inf
    history = [(r.noise_multiplier, r.sampling_rate, r.compositions) for r in releases]
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0) for q = 1 entries, harmless
        # raised for nearly noiseless trial σ during calibration; the bound is still valid
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")
        if accountant == "prv":
            engine = PRVAccountant()
            engine.history = history
            return float(engine.get_epsilon(delta))
        engine = RDPAccountant()
        engine.history = history
        return float(engine.get_epsilon(delta, alphas=_RDP_ORDERS))


def _calibrate_tight(epsilon: float, delta: float, compositions: int) -> float:
    """Smallest noise multiplier (to 1e-6 relative) for which ``compositions`` Gaussian releases
    satisfy (ε, δ), found by bisection on the exact curve; rounded up, never down."""
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


def calibrate_gaussian_multiplier(
    epsilon: float, delta: float, compositions: int, calibrator: Calibrator
) -> float:
    """Noise multiplier σ such that ``compositions`` full-data Gaussian releases, each with
    noise std σ × sensitivity, are (ε, δ)-DP under the chosen calibrator."""
    if math.isinf(epsilon):
        return 0.0
    if calibrator == "paper":
        return float(privacy_calibrator.gaussian_mech(epsilon, delta, k=compositions)["sigma"])
    return _calibrate_tight(epsilon, delta, compositions)


@dataclass
class PrivacyLedger:
    budget: PrivacyBudget
    calibrator: Calibrator = "tight"
    releases: list[Release] = field(default_factory=list)
    public_facts: list[PublicFactUse] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)  # uncharged uses of private data, stated

    def __post_init__(self) -> None:
        if self.calibrator not in CALIBRATORS:
            raise ValueError(f"unknown calibrator {self.calibrator!r}; choose one of {CALIBRATORS}")

    @property
    def accountant(self) -> str:
        pure = [r for r in self.releases if isinstance(r, PureRelease)]
        if pure and len(pure) == len(self.releases):
            return "pure ε-DP, basic composition (δ = 0)"
        if pure:
            return "zCDP composition (Bun & Steinke 2016), ρ→(ε,δ) by Canonne, Kamath & Steinke 2020"
        if any(r.subsampled for r in self.releases):
            if self.calibrator == "paper":
                return "Opacus RDP accountant (Poisson-subsampled Gaussian)"
            return "Opacus PRV accountant (Poisson-subsampled Gaussian; certified upper bound on ε)"
        if self.calibrator == "paper":
            return "autodp RDP (rdp_acct), RDP→(ε,δ) by autodp"
        return "exact Gaussian composition, analytic Gaussian mechanism (autodp ExactGaussianMechanism)"

    def calibrate_gaussian(
        self, compositions: int = 1, epsilon: float | None = None, delta: float | None = None
    ) -> float:
        """Noise multiplier for ``compositions`` Gaussian releases at (ε, δ), by default the run's
        whole target. Methods that split the budget pass their share."""
        return calibrate_gaussian_multiplier(
            self.budget.epsilon if epsilon is None else epsilon,
            self.budget.delta if delta is None else delta,
            compositions,
            self.calibrator,
        )

    def calibrate_shares(self, shares: Sequence[BudgetShare]) -> list[float]:
        """Noise multipliers for several groups of releases that split the run's budget.

        ``paper``: group i gets (fraction_i·ε, δ/len(shares)) and the seeds' calibrator with its
        own number of compositions — the split of DP-HP's code (seed-dphp.md §2.3–2.4), whose
        total is (ε, δ) by basic composition. ``tight``: the releases compose exactly, so the
        fractions split the total precision Σ kᵢ/σᵢ² = 1/σ² of the one Gaussian mechanism that
        meets (ε, δ) — σᵢ = σ·√(kᵢ/fractionᵢ) — and no budget is lost to basic composition."""
        if abs(sum(s.fraction for s in shares) - 1) > 1e-9 or min(s.fraction for s in shares) <= 0:
            raise ValueError(f"budget fractions must be > 0 and sum to 1 (got {[s.fraction for s in shares]})")
        if not self.budget.is_private:
            return [0.0 for _ in shares]
        if self.calibrator == "paper":
            delta = self.budget.delta / len(shares)
            return [
                calibrate_gaussian_multiplier(s.fraction * self.budget.epsilon, delta, s.compositions, "paper")
                for s in shares
            ]
        sigma = self.calibrate_gaussian(compositions=1)
        # rounded up by a hair so that round-off in Σ kᵢ/σᵢ² never tips the total over ε
        return [sigma * math.sqrt(s.compositions / s.fraction) * (1 + 1e-9) for s in shares]

    def epsilon_of(self, releases: list[Release]) -> float:
        """ε at the target δ of ``releases`` composed (inf for a non-private run's releases)."""
        if not releases:
            return 0.0
        if not self.budget.is_private:
            return math.inf
        delta = self.budget.delta
        pure = [r for r in releases if isinstance(r, PureRelease)]
        if pure and len(pure) == len(releases):
            return sum(r.compositions * r.epsilon for r in pure)
        if pure:
            return zcdp_to_epsilon(self.zcdp_rho_of(releases), delta)
        if any(r.subsampled for r in releases):
            return subsampled_epsilon(releases, delta, "rdp" if self.calibrator == "paper" else "prv")
        if self.calibrator == "paper":
            return rdp_gaussian_epsilon(releases, delta)
        return exact_gaussian_epsilon(_effective_gaussian_multiplier(releases), delta)

    @staticmethod
    def zcdp_rho_of(releases: list[Release]) -> float:
        return sum(r.zcdp_rho if isinstance(r, PureRelease) else gaussian_zcdp_rho(r) for r in releases)

    def zcdp_budget(self) -> float:
        """ρ of the whole target: mechanisms planned in zCDP (MST, AIM) split this."""
        if not self.budget.is_private:
            return math.inf
        return epsilon_to_zcdp(self.budget.epsilon, self.budget.delta)

    def zcdp_remaining(self) -> float:
        return self.zcdp_budget() - self.zcdp_rho_of(self.releases)

    def calibrate_subsampled(self, what: str, sensitivity: float, sampling_rate: float, steps: int) -> GaussianRelease:
        """The DP-SGD phase with the smallest noise multiplier (to 0.1%) that, composed with
        every release recorded so far, meets the target; returned, not yet recorded."""

        def release(sigma: float) -> GaussianRelease:
            return GaussianRelease(what, sensitivity, sigma, steps, sampling_rate, "subsampled gaussian (DP-SGD)")

        if not self.budget.is_private:
            return release(0.0)

        def fits(sigma: float, accountant: str) -> bool:
            releases = self.releases + [release(sigma)]
            return subsampled_epsilon(releases, self.budget.delta, accountant) <= self.budget.epsilon

        # RDP first (milliseconds per evaluation); the tighter PRV answer lies below it
        low, high = 0.05, 1.0
        while not fits(high, "rdp"):
            low, high = high, high * 2
            if high > 1e6:
                raise PrivacyBudgetExceeded(f"{what}: no noise multiplier meets the remaining budget")
        accountant = "rdp" if self.calibrator == "paper" else "prv"
        if accountant == "prv":
            low = low / 2
            while not fits(high, "prv"):  # not expected; keeps the answer valid regardless
                low, high = high, high * 2
        while (high - low) / high > 1e-3:
            mid = 0.5 * (low + high)
            low, high = (low, mid) if fits(mid, accountant) else (mid, high)
        return release(high)

    def record(self, release: Release) -> None:
        """Add a release; refuse it if the composed total would exceed the target."""
        if self.budget.is_private:
            total = self.epsilon_of(self.releases + [release])
            if total > self.budget.epsilon * (1 + _SLACK):
                raise PrivacyBudgetExceeded(
                    f"releasing {release.what!r} would spend "
                    f"ε = {total:.4g} > target ε = {self.budget.epsilon:g} at δ = {self.budget.delta:g}"
                )
        self.releases.append(release)

    def gaussian(self, value: Any, *, sensitivity: float, noise_multiplier: float, what: str, rng: Any) -> Any:
        """TEMPORARY shim of main's ``gaussian`` (same signature), replaced at merge: records the
        release, then returns value + N(0, (noise_multiplier·sensitivity)²) elementwise; a torch
        value takes CPU float64 noise from ``rng`` (a torch.Generator) moved to its device/dtype."""
        self.record(GaussianRelease(what, sensitivity=sensitivity, noise_multiplier=noise_multiplier))
        if noise_multiplier == 0:
            return value
        std = noise_multiplier * sensitivity
        if type(value).__module__.startswith("torch"):
            import torch

            noise = torch.randn(tuple(value.shape), generator=rng, dtype=torch.float64) * std
            return value + noise.to(device=value.device, dtype=value.dtype)
        return value + rng.normal(0.0, std, np.shape(value))

    def use_public_fact(self, name: str, value: Any, why: str) -> None:
        self.public_facts.append(PublicFactUse(name, value, why))

    @property
    def epsilon_spent(self) -> float:
        return self.epsilon_of(self.releases)

    @property
    def delta_spent(self) -> float:
        if not self.releases or not self.budget.is_private:
            return 0.0
        if all(isinstance(r, PureRelease) for r in self.releases):
            return 0.0
        return self.budget.delta

    def to_dict(self) -> dict[str, Any]:
        private_releases = [r for r in self.releases if isinstance(r, GaussianRelease) and r.noise_multiplier > 0]
        gaussian_only = len(private_releases) == len(self.releases)
        return {
            "target": {"epsilon": self.budget.epsilon, "delta": self.budget.delta},
            "neighbouring": NEIGHBOURING,
            "calibrator": self.calibrator,
            "accountant": self.accountant,
            "spent": {"epsilon": self.epsilon_spent, "delta": self.delta_spent},
            "rdp_epsilon_for_comparison": (
                (
                    subsampled_epsilon(private_releases, self.budget.delta, "rdp")
                    if any(r.subsampled for r in private_releases)
                    else rdp_gaussian_epsilon(private_releases, self.budget.delta)
                )
                if self.budget.is_private and private_releases and gaussian_only
                else None
            ),
            "zcdp_rho": (
                self.zcdp_rho_of(self.releases)
                if self.budget.is_private and self.releases and not gaussian_only
                else None
            ),
            "releases": [_release_dict(r) for r in self.releases],
            "public_facts": [asdict(f) for f in self.public_facts],
            "caveats": list(self.caveats),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str, allow_nan=True)


def _release_dict(release: Release) -> dict[str, Any]:
    if isinstance(release, PureRelease):
        return asdict(release) | {"kind": "pure", "zcdp_rho": release.zcdp_rho}
    return asdict(release) | {"kind": "gaussian", "noise_std": release.noise_std}


def _format_release(r: dict[str, Any]) -> str:
    if r.get("kind") == "pure":
        return (
            f"  - {r['what']}: {r['mechanism']} mechanism, ε₀ = {r['epsilon']:.6g} each, "
            f"sensitivity {r['sensitivity']:.4g}, ×{r['compositions']}, {r['neighbouring']}"
        )
    return (
        f"  - {r['what']}: {r['mechanism']}, L2 sensitivity {r['sensitivity']:.4g}, "
        f"σ = {r['noise_multiplier']:.6g} (noise std {r['noise_std']:.4g}), "
        f"×{r['compositions']}"
        + (f", Poisson sampling rate {r['sampling_rate']:.4g}" if r.get("sampling_rate", 1.0) < 1 else "")
        + f", {r['neighbouring']}"
    )


def format_ledger(ledger: dict[str, Any]) -> str:
    """Human-readable ledger (from ``PrivacyLedger.to_dict`` or its JSON artifact)."""
    target, spent = ledger["target"], ledger["spent"]
    lines = [
        f"target      ε = {target['epsilon']:g}, δ = {target['delta']:g}  ({ledger['neighbouring']})",
        f"spent       ε = {spent['epsilon']:.6g}, δ = {spent['delta']:g}",
        f"calibrator  {ledger['calibrator']}",
        f"accountant  {ledger['accountant']}",
    ]
    if ledger.get("rdp_epsilon_for_comparison") is not None:
        lines.append(f"RDP ε       {ledger['rdp_epsilon_for_comparison']:.6g} (looser accounting, for comparison)")
    if ledger.get("zcdp_rho") is not None:
        lines.append(f"zCDP ρ      {ledger['zcdp_rho']:.6g}")
    lines.append(f"releases ({len(ledger['releases'])}):")
    lines.extend(_format_release(r) for r in ledger["releases"])
    lines.append(f"public facts used without charge ({len(ledger['public_facts'])}):")
    for f in ledger["public_facts"]:
        lines.append(f"  - {f['name']} = {f['value']}: {f['why']}")
    for caveat in ledger.get("caveats", []):
        lines.append(f"CAVEAT: {caveat}")
    return "\n".join(lines)
