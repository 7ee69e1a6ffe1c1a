"""The run's privacy ledger: the one door through which DP noise is drawn.

A method never adds noise on its own authority. It plans its noise with ``calibrate_gaussian`` /
``calibrate_shares`` / ``zcdp_budget``, then asks the ledger to release a value:
``gaussian(value, …)``, ``laplace(value, …)``, ``exponential(scores, …)``, or, for DP-SGD,
``subsampled_phase(…)`` whose ``privatise`` noises each step's summed clipped gradients. Each
call records the release and draws its noise in one place, so a release the ledger did not see
cannot exist. The ledger composes all releases (``bench.privacy.accountants``); one that would
take the run past its target is refused with ``PrivacyBudgetExceeded``. Under ε = ∞ the same
calls record noiseless releases.

Noise comes from the generator the method passes (seeded: reproducible from the logged seed —
right for a benchmark, not for a release), or, with ``secure_noise``, from the operating
system's cryptographic source. Three instruments, given to the constructor only: ``observers``
see every release with its clean and noisy value (the privacy audit, the conformance kit);
``noise_source`` replaces the method's generator (the audit's fresh noise per run); ``replay``
returns the noisy values another fit released, in order, instead of fresh ones (the conformance
kit's release replay: an honest method fitted on any other dataset of the same size then gives
the same synthetic data, since the releases are all it saw). They are kept out of the ledger's
attributes (``ledger.observers`` is None in every run), so that a fit cannot tell a checked run
from a production one by reading its ledger's public face; code that pries into the ledger's
private state is outside the kit's threat model (docs/privacy.md).

Data-dependent facts a method uses for free must be public (declared by the dataset schema)
and are listed with ``use_public_fact``; uncharged uses of private data are ``caveats``.
"""

from __future__ import annotations

import json
import math
from dataclasses import InitVar, asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from scipy import special

from bench.privacy.accountants import (  # noqa: F401 (re-exported: the ledger's public names)
    ACCOUNTANTS,
    Calibrator,
    calibrate_gaussian_multiplier,
    compose_epsilon,
    describe_accountant,
    epsilon_to_zcdp,
    prv_error,
    rdp_gaussian_epsilon,
    subsampled_epsilon,
    zcdp_rho,
    zcdp_to_epsilon,
)
from bench.privacy.budget import CALIBRATORS, PrivacyBudget
from bench.privacy.independent import IndependentCheck, check_claim
from bench.privacy.releases import NEIGHBOURING, ClaimedRelease, GaussianRelease, PureRelease, Release
from bench.privacy.noise import _is_torch, secure_standard_laplace, secure_standard_normal
from bench.privacy.replay import ReleaseReplay
from bench.privacy.subsampled import PrivacyBudgetExceeded, SubsampledPhase, calibrate_subsampled_multiplier

_SLACK = 1e-9  # relative tolerance on ε for floating-point round-off


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


@dataclass(frozen=True)
class ReleaseEvent:
    """What an observer sees: the release, the clean value and the value released. ``each``:
    ``clean`` is a list of values released separately, each with the release's sensitivity
    (``gaussian_each``, ``laplace_each``); False: one value, a list of its parts (a DP-SGD step's
    per-parameter gradients) that together have that sensitivity."""

    release: Release
    clean: Any
    noisy: Any
    each: bool = True


@dataclass
class PrivacyLedger:
    budget: PrivacyBudget
    calibrator: Calibrator = "tight"
    releases: list[Release] = field(default_factory=list)
    public_facts: list[PublicFactUse] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)  # uncharged uses of private data, stated
    # why a method read raw rows outside the metered queries (PrivateData.rows); none for a method
    # that reaches its data only through them
    trusted_reads: list[str] = field(default_factory=list)
    secure_noise: bool = False
    # the instruments (module docstring): constructor arguments, not attributes
    observers: InitVar[Sequence[Callable[[ReleaseEvent], None]] | None] = None
    noise_source: InitVar[np.random.Generator | None] = None  # replaces methods' generators (the audit)
    replay: InitVar[ReleaseReplay | None] = None  # returns another fit's released values (the conformance kit)

    def __post_init__(
        self,
        observers: Sequence[Callable[[ReleaseEvent], None]] | None,
        noise_source: np.random.Generator | None,
        replay: ReleaseReplay | None,
    ) -> None:
        if self.calibrator not in CALIBRATORS:
            raise ValueError(f"unknown calibrator {self.calibrator!r}; choose one of {CALIBRATORS}")
        self.__observers = list(observers or [])
        self.__noise_source = noise_source
        self.__replay = replay

    def observe(self, observer: Callable[[ReleaseEvent], None]) -> None:
        """Adds an observer of every later release (its clean and noisy value)."""
        self.__observers.append(observer)

    # ---- planning ---------------------------------------------------------------------------

    @property
    def accountant(self) -> str:
        return describe_accountant(self.releases, self.calibrator)

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
        """Noise multipliers for several groups of releases that split the run's budget, by the
        calibrator's accountant (``Accountant.split``: basic composition for ``paper``, a split of
        the exact composition's precision for ``tight``)."""
        if abs(sum(s.fraction for s in shares) - 1) > 1e-9 or min(s.fraction for s in shares) <= 0:
            raise ValueError(f"budget fractions must be > 0 and sum to 1 (got {[s.fraction for s in shares]})")
        if not self.budget.is_private:
            return [0.0 for _ in shares]
        return ACCOUNTANTS[self.calibrator].split(
            [(s.fraction, s.compositions) for s in shares], self.budget.epsilon, self.budget.delta
        )

    def zcdp_budget(self) -> float:
        """ρ of the whole target: mechanisms planned in zCDP (MST, AIM) split this."""
        if not self.budget.is_private:
            return math.inf
        return epsilon_to_zcdp(self.budget.epsilon, self.budget.delta)

    @staticmethod
    def zcdp_rho_of(releases: Sequence[Release]) -> float:
        return zcdp_rho(releases)

    def zcdp_remaining(self) -> float:
        return self.zcdp_budget() - zcdp_rho(self.releases)

    # ---- accounting -------------------------------------------------------------------------

    def epsilon_of(self, releases: Sequence[Release]) -> float:
        """ε at the target δ of ``releases`` composed (inf for a non-private run's releases)."""
        if not releases:
            return 0.0
        if not self.budget.is_private:
            return math.inf
        return compose_epsilon(releases, self.budget.delta, self.calibrator, prv_error(self.budget.epsilon))

    def record(self, release: Release) -> None:
        """Add a release; refuse it if the composed total would exceed the target. A library's
        claimed release is the run's only one, within the target ε and δ."""
        claims = [r for r in [*self.releases, release] if isinstance(r, ClaimedRelease)]
        if claims and self.releases:
            raise ValueError(f"{release.what!r}: a library's claimed release is a run's only release")
        if claims and self.budget.is_private and release.delta > self.budget.delta * (1 + _SLACK):
            raise PrivacyBudgetExceeded(
                f"{release.library} claims δ = {release.delta:g} > target δ = {self.budget.delta:g}"
            )
        if self.budget.is_private:
            total = self.epsilon_of(self.releases + [release])
            if total > self.budget.epsilon * (1 + _SLACK):
                raise PrivacyBudgetExceeded(
                    f"releasing {release.what!r} would spend "
                    f"ε = {total:.4g} > target ε = {self.budget.epsilon:g} at δ = {self.budget.delta:g}"
                )
        self.releases.append(release)

    def use_public_fact(self, name: str, value: Any, why: str) -> None:
        self.public_facts.append(PublicFactUse(name, value, why))

    @property
    def epsilon_spent(self) -> float:
        return self.epsilon_of(self.releases)

    @property
    def delta_spent(self) -> float:
        if not self.releases or not self.budget.is_private:
            return 0.0
        if isinstance(self.releases[0], ClaimedRelease):
            return self.releases[0].delta
        if all(isinstance(r, PureRelease) for r in self.releases):
            return 0.0
        return self.budget.delta

    def independent_check(self) -> IndependentCheck:
        """ε recomputed by dp-accounting from the releases alone; raises
        ``PrivacyClaimMismatch`` when it exceeds the claim by more than 1%."""
        if not self.budget.is_private:
            return IndependentCheck(math.inf, "non-private run")
        return check_claim(self.epsilon_spent, self.releases, self.delta_spent)

    # ---- the noise door ---------------------------------------------------------------------

    def _standard_normal(self, shape: tuple[int, ...], rng: Any) -> np.ndarray | Any:
        if self.__noise_source is not None:
            return self.__noise_source.standard_normal(shape)
        if self.secure_noise:
            return secure_standard_normal(shape)
        if _is_torch(rng):
            import torch

            return torch.randn(shape, generator=rng, dtype=torch.float64)
        return rng.standard_normal(shape)

    def _add_gaussian(self, value: Any, std: float, rng: Any) -> Any:
        if std == 0:
            return value
        if _is_torch(value):
            import torch

            noise = torch.as_tensor(self._standard_normal(tuple(value.shape), rng), dtype=torch.float64)
            return value + (noise * std).to(device=value.device, dtype=value.dtype)
        value = np.asarray(value)
        return value + np.asarray(self._standard_normal(value.shape, rng)) * std

    def _replayed(self, release: Release, noisy: Any) -> Any:
        return noisy if self.__replay is None else self.__replay.next(release.what, noisy)

    def _notify(self, release: Release, clean: Any, noisy: Any, each: bool = True) -> None:
        for observer in self.__observers:
            observer(ReleaseEvent(release, clean, noisy, each))

    def gaussian(self, value: Any, *, sensitivity: float, noise_multiplier: float, what: str, rng: Any) -> Any:
        """Record one Gaussian release of ``value`` (a torch tensor or numpy array with
        replace-one L2 ``sensitivity``) and return value + N(0, (σ·Δ)²) elementwise. A torch
        value takes a CPU ``torch.Generator`` (noise drawn in float64 on CPU, then moved); a
        numpy value a ``numpy.random.Generator``."""
        return self.gaussian_each(
            [value], sensitivity=sensitivity, noise_multiplier=noise_multiplier, what=what, rng=rng
        )[0]

    def gaussian_each(
        self, values: Sequence[Any], *, sensitivity: float, noise_multiplier: float, what: str, rng: Any
    ) -> list[Any]:
        """``len(values)`` Gaussian releases of statistics with the same sensitivity and noise,
        recorded as one entry with that many compositions."""
        release = GaussianRelease(
            what, sensitivity=sensitivity, noise_multiplier=noise_multiplier, compositions=len(values)
        )
        self.record(release)
        noisy = self._replayed(release, [self._add_gaussian(v, release.noise_std, rng) for v in values])
        self._notify(release, list(values), noisy)
        return noisy

    def laplace(
        self, value: np.ndarray, *, l1_sensitivity: float, epsilon: float, what: str, rng: np.random.Generator
    ) -> np.ndarray:
        """Record one ε₀-DP Laplace release of ``value`` and return value + Lap(Δ₁/ε₀)."""
        return self.laplace_each([value], l1_sensitivity=l1_sensitivity, epsilon=epsilon, what=what, rng=rng)[0]

    def laplace_each(
        self,
        values: Sequence[np.ndarray],
        *,
        l1_sensitivity: float,
        epsilon: float,
        what: str,
        rng: np.random.Generator,
    ) -> list[np.ndarray]:
        release = PureRelease(what, epsilon, l1_sensitivity, "laplace", compositions=len(values))
        self.record(release)
        if math.isinf(epsilon):
            noisy = [np.asarray(v) for v in values]
        else:
            scale = l1_sensitivity / epsilon
            noisy = [np.asarray(v) + self._standard_laplace(np.shape(v), rng) * scale for v in values]
        noisy = self._replayed(release, noisy)
        self._notify(release, list(values), noisy)
        return noisy

    def _standard_laplace(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        if self.__noise_source is not None:
            return self.__noise_source.laplace(0.0, 1.0, shape)
        if self.secure_noise:
            return secure_standard_laplace(shape)
        return rng.laplace(0.0, 1.0, shape)

    def exponential(
        self, scores: np.ndarray, *, epsilon: float, sensitivity: float, what: str, rng: np.random.Generator
    ) -> int:
        """Record one ε₀-DP exponential-mechanism selection and return the index drawn with
        probability ∝ exp(ε₀·score / (2·sensitivity)); ε₀ = ∞ takes the argmax."""
        release = PureRelease(what, epsilon, sensitivity, "exponential")
        self.record(release)
        scores = np.asarray(scores, dtype=float)
        if math.isinf(epsilon):
            choice = int(np.argmax(scores))
        else:
            logits = epsilon * (scores - scores.max()) / (2 * sensitivity)
            if self.__noise_source is not None or self.secure_noise:
                # Gumbel-max: the same distribution, driven by the replacement source
                uniform = (
                    self.__noise_source.random(len(scores))
                    if self.__noise_source is not None
                    else special.ndtr(secure_standard_normal((len(scores),)))
                )
                choice = int(np.argmax(logits - np.log(-np.log(np.clip(uniform, 1e-300, 1 - 1e-16)))))
            else:
                p = np.exp(logits)
                choice = int(rng.choice(len(scores), p=p / p.sum()))
        choice = self._replayed(release, choice)
        self._notify(release, scores, choice)
        return choice

    def subsampled_phase(self, what: str, clipping_norm: float, sampling_rate: float, steps: int) -> SubsampledPhase:
        """Charge a DP-SGD phase — ``steps`` Poisson-subsampled steps at rate q of summed
        gradients clipped to ``clipping_norm`` — with the smallest noise (to 0.1%) that,
        composed with every release so far, meets the target under replace-one."""
        if any(isinstance(r, PureRelease) for r in self.releases):
            raise ValueError("a DP-SGD phase after pure-DP releases is not accounted here")
        multiplier = 0.0
        if self.budget.is_private:
            prior = tuple(r for r in self.releases if isinstance(r, GaussianRelease))
            multiplier = calibrate_subsampled_multiplier(
                prior,
                2.0 * clipping_norm,
                sampling_rate,
                steps,
                self.budget.epsilon,
                self.budget.delta,
                self.calibrator,
            )
        release = GaussianRelease(
            what, 2.0 * clipping_norm, multiplier, steps, sampling_rate, "subsampled gaussian (DP-SGD)"
        )
        self.record(release)
        return SubsampledPhase(self, release, clipping_norm)

    # ---- reporting --------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": {"epsilon": self.budget.epsilon, "delta": self.budget.delta},
            # an outside library's claim holds under the relation it documents, not necessarily ours
            "neighbouring": next(
                (r.neighbouring for r in self.releases if isinstance(r, ClaimedRelease)), NEIGHBOURING
            ),
            "calibrator": self.calibrator,
            "accountant": self.accountant,
            "spent": {"epsilon": self.epsilon_spent, "delta": self.delta_spent},
            "noise": (
                "cryptographically secure (os.urandom)"
                if self.secure_noise
                else "seeded: reproducible from the logged seed (right for a benchmark; use --secure-noise to release data)"
            ),
            "zcdp_rho": (
                zcdp_rho(self.releases)
                if self.budget.is_private
                and any(isinstance(r, PureRelease) for r in self.releases)
                and not all(isinstance(r, PureRelease) for r in self.releases)
                else None
            ),
            "releases": [_release_dict(r) for r in self.releases],
            "public_facts": [asdict(f) for f in self.public_facts],
            "caveats": list(self.caveats),
            "trusted_reads": list(dict.fromkeys(self.trusted_reads)),
        }

    def to_json(self, extra: dict[str, Any] | None = None) -> str:
        return json.dumps(self.to_dict() | (extra or {}), indent=2, default=str, allow_nan=True)


def _release_dict(release: Release) -> dict[str, Any]:
    if isinstance(release, ClaimedRelease):
        return asdict(release) | {"kind": "claimed"}
    if isinstance(release, PureRelease):
        return asdict(release) | {"kind": "pure", "zcdp_rho": release.zcdp_rho}
    extra = {"kind": "gaussian", "noise_std": release.noise_std}
    if release.subsampled:
        extra["opacus_noise_multiplier"] = 2 * release.noise_multiplier
    return asdict(release) | extra
