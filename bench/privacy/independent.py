"""An independent recomputation of a ledger's ε, by a second library: Google's
``dp-accounting`` (privacy-loss distributions; Rényi DP where a release needs it).

It sees only the recorded releases — not the calibrators or the accountants of
``bench.privacy.accountants`` — and encodes each one under the replace-one relation itself:

* a full-data Gaussian release with sensitivity Δ and noise std s: the Gaussian PLD with
  sensitivity Δ (the worst pair of any relation whose L2 change is at most Δ);
* a Poisson-subsampled Gaussian release: dp-accounting's REPLACE_ONE PLD of the subsampled
  Gaussian with per-row bound 1 and noise std s/(Δ/2) — its own derivation of the pair
  (1−q)N(0,σ²)+qN(±1,σ²);
* a Laplace release: the Laplace PLD with its L1 sensitivity (at δ = 0, the PLD of a generic
  ε₀-DP mechanism, whose loss is bounded);
* an exponential-mechanism release: two valid bounds, the smaller taken — the PLD of a generic
  ε₀-DP mechanism (no bounded-range assumption), and Rényi DP with ρ = ε₀²/8 (ε₀-bounded range,
  Cesar & Rogers 2021) composed and converted by dp-accounting's RDP accountant on a dense
  order grid.

Releases of one mechanism (a Gaussian's noise multiplier std/Δ and sampling rate; any other
release's parameters) are composed by dp-accounting's self-composition, not one by one: the same
privacy loss distribution, far faster on ledgers of hundreds of per-column releases
(``tests/test_privacy_audit.py`` compares the two).

A run fails when this value exceeds the claimed ε by more than ``TOLERANCE`` (worker).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from bench.privacy.releases import ClaimedRelease, GaussianRelease, PureRelease, Release

TOLERANCE = 0.01  # relative: independent ε may exceed the claimed ε by at most 1%
_DISCRETISATION = 1e-4
_ORDERS = np.unique(np.concatenate([1 + np.geomspace(1e-3, 1e4, 600)]))


class PrivacyClaimMismatch(RuntimeError):
    """The independent accountant finds a larger ε than the ledger claims."""


@dataclass(frozen=True)
class IndependentCheck:
    epsilon: float
    method: str


def _pld_epsilon(
    releases: Sequence[Release],
    delta: float,
    exponential_as_pure: bool,
    laplace_as_pure: bool = False,
    discretisation: float = _DISCRETISATION,
) -> float:
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld

    total = None
    for r, compositions in _grouped(releases):
        if isinstance(r, GaussianRelease):
            if r.subsampled:  # a row moves the clipped sum by ≤ Δ/2: std / (Δ/2) per unit bound
                one = pld.from_gaussian_mechanism(
                    standard_deviation=2 * r.noise_multiplier,
                    sensitivity=1.0,
                    sampling_prob=r.sampling_rate,
                    value_discretization_interval=discretisation,
                    neighboring_relation=NeighboringRelation.REPLACE_ONE,
                )
            else:  # std / Δ per unit sensitivity
                one = pld.from_gaussian_mechanism(
                    standard_deviation=r.noise_multiplier,
                    sensitivity=1.0,
                    value_discretization_interval=discretisation,
                )
        elif r.mechanism == "laplace" and not laplace_as_pure:
            one = pld.from_laplace_mechanism(
                parameter=r.sensitivity / r.epsilon,
                sensitivity=r.sensitivity,
                value_discretization_interval=discretisation,
            )
        elif exponential_as_pure or r.mechanism == "laplace":
            one = pld.from_privacy_parameters(
                pld.common.DifferentialPrivacyParameters(r.epsilon, 0.0),
                value_discretization_interval=discretisation,
            )
        else:
            raise ValueError("exponential releases are not encoded in this PLD")
        if delta == 0:
            # compose and self_compose truncate tail mass (1e-15 by default) into infinite loss,
            # which at δ = 0 reads as ε = inf once enough releases compose (PrivBayes on
            # census-discrete: 81); pure PLDs have finite support, so compose them untruncated
            for _ in range(compositions):
                total = one if total is None else total.compose(one, tail_mass_truncation=0.0)
            continue
        one = one.self_compose(compositions) if compositions > 1 else one
        total = one if total is None else total.compose(one)
    return float(total.get_epsilon_for_delta(delta))


def _mechanism(release: Release) -> tuple:
    """What a release's privacy loss depends on. A Gaussian release's loss depends on Δ and its
    std only through their ratio, the recorded noise multiplier (std = multiplier × Δ): releases
    of one multiplier and sampling rate are one mechanism, whatever they are of."""
    if isinstance(release, GaussianRelease):
        return ("gaussian", release.noise_multiplier, release.sampling_rate)
    return (type(release).__name__, *(v for k, v in vars(release).items() if k not in ("what", "compositions")))


def _grouped(releases: Sequence[Release]) -> list[tuple[Release, int]]:
    """The releases as (one of a mechanism, how many times it composes): dp-accounting then
    composes each mechanism with one self-composition instead of one composition per release (a
    ledger of 618 per-column marginals took 29 s, one group 0.7 s)."""
    groups: dict[tuple, list] = {}
    for r in releases:
        groups.setdefault(_mechanism(r), [r, 0])[1] += getattr(r, "compositions", 1)  # a claim is one
    return [(r, count) for r, count in groups.values()]


def loss_signature(releases: Sequence[Release]) -> tuple:
    """Everything :func:`independent_epsilon` reads of ``releases``: two ledgers with one
    signature have one independent ε (a cache key)."""
    return tuple(sorted((repr(_mechanism(r)), count) for r, count in _grouped(releases)))


def _rdp_epsilon(releases: Sequence[Release], delta: float) -> float:
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    accountant = rdp.RdpAccountant(list(_ORDERS), dp_accounting.NeighboringRelation.REPLACE_ONE)
    for r in releases:
        if isinstance(r, GaussianRelease):
            if r.subsampled:
                raise ValueError("subsampled releases are accounted by the PLD")
            # the Gaussian event's noise multiplier is relative to an L2 change of 1
            event = dp_accounting.GaussianDpEvent(r.noise_std / r.sensitivity)
        elif r.mechanism == "exponential":
            event = dp_accounting.ZCDpEvent(rho=r.epsilon**2 / 8)
        else:
            event = dp_accounting.ZCDpEvent(rho=r.epsilon**2 / 2)  # pure ε₀-DP ⇒ ε₀²/2-zCDP
        accountant.compose(event, r.compositions)
    return float(accountant.get_epsilon(delta))


def independent_epsilon(releases: Sequence[Release], delta: float) -> IndependentCheck:
    """ε at δ of ``releases`` by dp-accounting (module docstring). δ = 0 is the pure case. A
    library's claimed release cannot be recomputed: its ε is returned as claimed, labelled so."""
    claims = [r for r in releases if isinstance(r, ClaimedRelease)]
    if claims:
        return IndependentCheck(
            sum(r.epsilon for r in claims), f"not recomputed: ε as claimed by {', '.join(r.library for r in claims)}"
        )
    private = [r for r in releases if not (isinstance(r, PureRelease) and math.isinf(r.epsilon))]
    if len(private) < len(releases) or any(
        isinstance(r, GaussianRelease) and r.noise_multiplier == 0 for r in releases
    ):
        return IndependentCheck(math.inf, "noiseless release")
    if not releases:
        return IndependentCheck(0.0, "no release")
    if all(isinstance(r, PureRelease) for r in releases) and delta == 0:
        # at δ = 0 only the generic ε₀-DP PLD has no truncated (infinite-loss) mass. Its pessimistic
        # rounding adds up to one interval per composition: with an interval of ε₀/1000 for the
        # smallest ε₀, that is at most 0.1% of the total, where a fixed 1e-4 added 1.3% to
        # PrivBayes' ≈ 30 releases at ε = 0.1 and failed an exact claim
        smallest = min(r.epsilon for r in releases)
        epsilon = _pld_epsilon(
            releases,
            0.0,
            exponential_as_pure=True,
            laplace_as_pure=True,
            discretisation=min(_DISCRETISATION, smallest / 1000),
        )
        return IndependentCheck(epsilon, "dp-accounting PLD (pure ε₀-DP releases)")
    candidates = [(_pld_epsilon(releases, delta, exponential_as_pure=True), "dp-accounting PLD (replace-one)")]
    if any(isinstance(r, PureRelease) and r.mechanism == "exponential" for r in releases):
        if not any(isinstance(r, GaussianRelease) and r.subsampled for r in releases):
            candidates.append(
                (_rdp_epsilon(releases, delta), "dp-accounting RDP (exponential mechanism as ε₀²/8-zCDP)")
            )
    epsilon, method = min(candidates)
    return IndependentCheck(epsilon, method)


def check_claim(claimed: float, releases: Sequence[Release], delta: float) -> IndependentCheck:
    """The independent value; raises ``PrivacyClaimMismatch`` when it exceeds the claim by
    more than ``TOLERANCE``."""
    check = independent_epsilon(releases, delta)
    if check.epsilon > claimed * (1 + TOLERANCE) + 1e-9:
        raise PrivacyClaimMismatch(
            f"the ledger claims ε = {claimed:.4g} but {check.method} finds ε = {check.epsilon:.4g} "
            f"at δ = {delta:g} for the same releases; the run's privacy claim is wrong"
        )
    return check
