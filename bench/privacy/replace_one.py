"""The Poisson-subsampled Gaussian mechanism under the replace-one neighbouring relation.

DP-SGD clips every row's gradient to norm C, sums a Poisson sample of rows (rate q) and adds
N(0, s²). Replacing one row changes its clipped gradient from g to g′ with ‖g‖, ‖g′‖ ≤ C, so
the row can move the sum by up to 2C — not C, as under add/remove. Along the direction of
g − g′ (worst case g = −g′, ‖g‖ = C; units of C) the two output distributions are

    P = (1 − q)·N(0, σ²) + q·N(+1, σ²)   against   Q = (1 − q)·N(0, σ²) + q·N(−1, σ²),

σ = s / C. (Opacus' and most accountants' subsampled Gaussian is the add/remove pair N(0, σ²)
against (1 − q)N(0, σ²) + qN(1, σ²), which is strictly more private; autodp refuses Poisson
amplification for replace-one for this reason.) At q = 1 the pair is N(+1, σ²) against
N(−1, σ²): a Gaussian mechanism with sensitivity 2C, as it must be.

The privacy loss L(x) = log P(x)/Q(x) is odd and increasing in x, so its distribution under P
(the privacy random variable, PRV) has a closed-form CDF: L(x) = t solves a quadratic in
u = exp(x/σ²). :class:`ReplaceOneSubsampledGaussianPRV` exposes that PRV in the form Opacus'
numerical composition (Gopi, Lee & Wutschitz 2021) takes, and :func:`prv_epsilon` composes any
list of such releases with Opacus' discretisation and FFT; the domain is sized from this pair's
own Rényi divergences, computed by quadrature (:func:`renyi_divergence`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import integrate, special

# Rényi orders for bracketing and domain sizing only (the ε reported comes from the PRV)
ORDERS = np.array(
    [1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256]
)


@dataclass(frozen=True)
class ReplaceOneSubsampledGaussianPRV:
    """Privacy random variable of one step: Poisson rate ``q``, noise std ``sigma`` in units of
    the per-row norm bound C (so the replace-one sensitivity is 2 in these units)."""

    q: float
    sigma: float

    def __post_init__(self) -> None:
        if not 0 < self.q <= 1:
            raise ValueError(f"sampling rate must lie in (0, 1] (got {self.q})")
        if not self.sigma > 0:
            raise ValueError(f"noise std must be > 0 (got {self.sigma})")

    def loss(self, x: np.ndarray) -> np.ndarray:
        """L(x) = log P(x)/Q(x), computed stably in log space."""
        x = np.asarray(x, dtype=float)
        s2 = self.sigma**2
        if self.q == 1:
            return 2 * x / s2
        log_q, log_1mq = math.log(self.q), math.log1p(-self.q)
        upper = np.logaddexp(log_1mq, log_q + (2 * x - 1) / (2 * s2))
        lower = np.logaddexp(log_1mq, log_q + (-2 * x - 1) / (2 * s2))
        return upper - lower

    def _x_of_loss(self, t: np.ndarray) -> np.ndarray:
        """The x with L(x) = t (L is odd, so solve for |t| and restore the sign)."""
        t = np.asarray(t, dtype=float)
        s2 = self.sigma**2
        if self.q == 1:
            return t * s2 / 2
        a = np.abs(t)
        q, log_qa = self.q, math.log(self.q) - 1 / (2 * s2)
        # q·a·u² − (1−q)(eᵗ − 1)·u − eᵗ·q·a = 0, a = exp(−1/(2σ²)), u = exp(x/σ²), root u > 0:
        # log u = log(c + √(c² + 4q²a²eᵗ)) − log(2qa), c = (1−q)(eᵗ − 1) ≥ 0 for t ≥ 0
        with np.errstate(divide="ignore"):
            log_c = math.log1p(-q) + np.log(np.expm1(a))
        log_root = 0.5 * np.logaddexp(2 * log_c, math.log(4) + 2 * log_qa + a)
        log_u = np.logaddexp(log_c, log_root) - math.log(2) - log_qa
        return np.sign(t) * log_u * s2

    def cdf(self, t: np.ndarray) -> np.ndarray:
        """Pr_{x∼P}[L(x) ≤ t]."""
        x = self._x_of_loss(t)
        s = self.sigma
        return (1 - self.q) * special.ndtr(x / s) + self.q * special.ndtr((x - 1) / s)

    def rdp(self, alpha: float) -> float:
        """D_α(P‖Q) by quadrature (the pair is symmetric: D_α(Q‖P) is the same)."""
        return renyi_divergence(self.q, self.sigma, alpha)


@functools.lru_cache(maxsize=65536)
def renyi_divergence(q: float, sigma: float, alpha: float) -> float:
    """D_α(P‖Q) = 1/(α−1)·log ∫ P^α Q^{1−α} of the replace-one pair, by quadrature in log space.
    At q = 1 it is the Gaussian's 2α/σ² (checked in the tests)."""
    if q == 1:
        return 2 * alpha / sigma**2
    prv = ReplaceOneSubsampledGaussianPRV(q, sigma)
    # the integrand's mass sits between the modes and, for large α, near x ≈ 2α − 1
    low, high = -1 - 12 * sigma, max(1.0, 2 * alpha) + 12 * sigma
    x = np.linspace(low, high, 8_001)  # the integrand is a smooth bump of width ≈ σ
    log_q = np.logaddexp(math.log1p(-q) + _log_normal(x, 0, sigma), math.log(q) + _log_normal(x, -1, sigma))
    log_integrand = alpha * prv.loss(x) + log_q
    peak = log_integrand.max()
    integral = integrate.trapezoid(np.exp(log_integrand - peak), x)
    return float((peak + math.log(integral)) / (alpha - 1))


def _log_normal(x: np.ndarray, mean: float, sigma: float) -> np.ndarray:
    return -0.5 * ((x - mean) / sigma) ** 2 - math.log(sigma * math.sqrt(2 * math.pi))


def rdp_epsilon(steps: Sequence[tuple[ReplaceOneSubsampledGaussianPRV, int]], delta: float) -> float:
    """ε at δ from the composed Rényi divergences (the conversion of Canonne, Kamath & Steinke
    2020, Prop. 12, minimised over the order grid): a valid, looser bound used to bracket the
    noise search and to size the PRV domain."""
    if not steps:
        return 0.0
    total = sum(count * np.array([prv.rdp(a) for a in ORDERS]) for prv, count in steps)
    eps = total + (np.log(1 / delta) + (ORDERS - 1) * np.log1p(-1 / ORDERS) - np.log(ORDERS)) / (ORDERS - 1)
    return float(max(0.0, np.min(eps)))


def prv_epsilon(
    steps: Sequence[tuple[ReplaceOneSubsampledGaussianPRV, int]], delta: float, eps_error: float = 0.01
) -> float:
    """Certified upper bound on ε at δ of the composition (each PRV repeated ``count`` times),
    by Opacus' PRV discretisation and FFT composition with this module's PRVs."""
    from opacus.accountants.analysis.prv import (
        Domain,
        TruncatedPrivacyRandomVariable,
        compose_heterogeneous,
        discretize,
    )

    if not steps:
        return 0.0
    delta_error = delta / 1000
    counts = [count for _, count in steps]
    total = sum(counts)
    # domain size: Gopi et al. remark 5.6, as Opacus' compute_safe_domain_size, with this pair's RDP
    bound = rdp_epsilon(steps, delta_error / 4)
    for prv, _ in steps:
        bound = max(bound, rdp_epsilon([(prv, 1)], delta_error / (8 * total)))
    half_width = max(bound, eps_error) + 3
    mesh = eps_error / math.sqrt(total * math.log(12 / delta_error) / 2)
    domain = Domain.create_aligned(-half_width, half_width, mesh)
    discrete = [discretize(TruncatedPrivacyRandomVariable(prv, domain.t_min, domain.t_max), domain) for prv, _ in steps]
    composed = compose_heterogeneous(dprvs=discrete, num_self_compositions=counts)
    _, _, upper = composed.compute_epsilon(delta, delta_error, eps_error)
    return float(upper)
