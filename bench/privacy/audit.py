"""`bench audit`: an empirical lower bound on ε, from a canary attack on a method's releases.

For a method M and a dataset D, D′ is D with one row replaced by a canary (the row taken across
the table — first, last, random — by ``bench.harness.auditing.neighbours``; the candidate
row whose clean releases move furthest, in units of their noise). The method's real ``fit`` runs
on D and on D′ many times, with the method's seed fixed (same features, same coordinates) and
FRESH noise each run: the ledger's ``noise_source`` replaces the seeded generators. The ledger's
observers capture every release; the fit is stopped after its releases (at its first training
step, or after ``AuditSpec.stop_after_events`` releases), so a run costs the releases only.

Each run's releases are scored with the log-likelihood-ratio statistic of the audited releases
(Gaussian: Σ⟨y − (c+c′)/2, c′ − c⟩/s², Laplace: Σ(|y − c| − |y − c′|)/b, with c, c′ the clean
values on D and D′), half of the runs choose a threshold, the other half give Clopper–Pearson
95% bounds on the false-positive rate (upper) and true-positive rate (lower), and

    ε_lb = log((TPR_lb − δ) / FPR_ub)          (either direction; Bonferroni over the two rates)

is a lower bound on the ε of the audited releases with 95% confidence (Jagielski, Ullman &
Oprea 2020; Nasr et al. 2021). Any statistic gives a valid bound; a good one gives a high bound.
For Gaussian releases the fitted μ-GDP (mean shift / pooled std of the statistic) is reported
beside the claimed μ = (Σ kᵢ/σᵢ²)^½.

The step-level DP-SGD audit (:func:`audit_dp_sgd_step`) uses a gradient canary: the real
discriminator and Opacus' per-sample clipping, one step, and a canary row whose per-sample
gradient is the opposite of the replaced row's — the worst case of replace-one.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from scipy import stats

from bench.core.errors import UsageError
from bench.privacy.private_data import PrivateData
from bench.privacy.budget import PrivacyBudget
from bench.privacy.ledger import PrivacyLedger, ReleaseEvent
from bench.privacy.releases import GaussianRelease, PureRelease

CONFIDENCE = 0.95


class StopAudit(Exception):
    """Raised inside a fit once its releases are captured."""


class NothingToAudit(UsageError, RuntimeError):
    """The audited fit released nothing before its first training step: a usage error (the
    release-level audit has nothing to test), not a crash."""


@dataclass(frozen=True)
class Bound:
    epsilon: float
    threshold: float
    false_positive_upper: float
    true_positive_lower: float


@dataclass(frozen=True)
class AuditResult:
    method: str
    dataset: str
    runs_per_side: int
    claimed_epsilon: float  # of the audited releases
    delta: float
    lower_bound: float
    mu_fitted: float
    mu_claimed: float | None
    wall_s: float
    releases: tuple[str, ...]
    mu_lower: float = 0.0  # one-sided 95% lower confidence bound on the fitted μ
    runs_resumed: int = 0  # of runs_per_side, read back from an earlier call's checkpoint (black-box)

    @property
    def violated(self) -> bool:
        """The claim is refuted: the ε lower bound exceeds the claimed ε, or (Gaussian releases)
        the fitted μ's lower confidence bound exceeds the claimed μ — the sharper test of the two
        for an understated sensitivity, whose ε bound is weak at practical run counts."""
        mu_refuted = self.mu_claimed is not None and self.mu_lower > self.mu_claimed * (1 + 1e-9)
        return self.lower_bound > self.claimed_epsilon or mu_refuted

    @property
    def attainable(self) -> float:
        """The highest ε lower bound these runs could give (:func:`attainable_bound`)."""
        return attainable_bound(self.runs_per_side, self.delta)

    @property
    def powerless(self) -> bool:
        """Not refuted, and unable to be: no outcome of these runs bounds ε above the claim, and no
        μ test stands beside the bound (a black-box audit's case). Its "consistent" is no evidence."""
        return not self.violated and self.mu_claimed is None and self.attainable <= self.claimed_epsilon

    @property
    def verdict(self) -> str:
        return "violation" if self.violated else "inconclusive" if self.powerless else "consistent"

    @property
    def verdict_confidence(self) -> float:
        """The verdict's level: each test is one-sided at 95%, so a claim that holds with nothing to
        spare is called a violation with probability up to 5% by one test, 10% by the two (Bonferroni)."""
        return 1 - 2 * (1 - CONFIDENCE) if self.mu_claimed is not None else CONFIDENCE

    def summary(self) -> str:
        mu = (
            ""
            if math.isnan(self.mu_fitted)  # the black-box audit fits no μ
            else f"; fitted μ-GDP {self.mu_fitted:.3f} (≥ {self.mu_lower:.3f} at 95%)"
            + (f" against the claimed μ {self.mu_claimed:.3f}" if self.mu_claimed else "")
        )
        verdict = (
            f"VIOLATION: the claim is wrong (at {self.verdict_confidence:.0%} confidence)"
            if self.violated
            else f"INCONCLUSIVE: {self.runs_per_side} runs per side can show at most ε ≥ {self.attainable:.3f}, not "
            "above the claim, whatever the method does (more runs would be needed to refute it)"
            if self.powerless
            else "consistent with the claim"
        )
        return (
            f"{self.method} on {self.dataset}: audited ε ≥ {self.lower_bound:.3f} (95% CI, {self.runs_per_side} runs "
            f"per side) against the claimed ε = {self.claimed_epsilon:.4g} at δ = {self.delta:g}{mu} — {verdict}; "
            f"{self.wall_s:.1f} s"
            + (f" ({self.runs_resumed} runs read back from its checkpoint)" if self.runs_resumed else "")
        )


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """One-sided (lower, upper) bounds at level 1 − alpha each."""
    lower = 0.0 if successes == 0 else float(stats.beta.ppf(alpha, successes, trials - successes + 1))
    upper = 1.0 if successes == trials else float(stats.beta.ppf(1 - alpha, successes + 1, trials - successes))
    return lower, upper


def attainable_bound(runs_per_side: int, delta: float, confidence: float = CONFIDENCE) -> float:
    """The ε lower bound :func:`epsilon_lower_bound` gives at a perfect separation — every test
    run of D′ above the threshold, none of D's — the most ``runs_per_side`` runs a side can show:
    a claim at or above it cannot be refuted by the ε bound, whatever the method does."""
    tested = runs_per_side - runs_per_side // 2  # the second halves bound the rates
    alpha = (1 - confidence) / 4
    return _bound_at(np.zeros(tested), np.ones(tested), 0.5, delta, alpha).epsilon


def _bound_at(null: np.ndarray, alternative: np.ndarray, threshold: float, delta: float, alpha: float) -> Bound:
    false_positives = int((null >= threshold).sum())
    true_positives = int((alternative >= threshold).sum())
    _, fpr_upper = clopper_pearson(false_positives, len(null), alpha)
    tpr_lower, _ = clopper_pearson(true_positives, len(alternative), alpha)
    epsilon = math.log((tpr_lower - delta) / fpr_upper) if tpr_lower > delta else 0.0
    return Bound(max(0.0, epsilon), threshold, fpr_upper, tpr_lower)


def epsilon_lower_bound(
    scores_d: np.ndarray, scores_d_prime: np.ndarray, delta: float, confidence: float = CONFIDENCE
) -> Bound:
    """ε lower bound from scores of runs on D and D′: thresholds chosen on the first half of
    each, rates bounded on the second half; both directions of the test are tried, and the
    confidence split over the two rates of each and the two directions (Bonferroni)."""
    scores_d, scores_d_prime = np.asarray(scores_d, float), np.asarray(scores_d_prime, float)
    half_d, half_p = len(scores_d) // 2, len(scores_d_prime) // 2
    alpha = (1 - confidence) / 4
    best = Bound(0.0, math.nan, 1.0, 0.0)
    for sign in (1.0, -1.0):  # D′ scores higher, or lower
        null_fit, alt_fit = sign * scores_d[:half_d], sign * scores_d_prime[:half_p]
        null_test, alt_test = sign * scores_d[half_d:], sign * scores_d_prime[half_p:]
        candidates = np.unique(np.quantile(np.concatenate([null_fit, alt_fit]), np.linspace(0.5, 0.999, 200)))
        chosen = max(candidates, key=lambda t: _bound_at(null_fit, alt_fit, t, delta, alpha).epsilon)
        bound = _bound_at(null_test, alt_test, chosen, delta, alpha)
        if bound.epsilon > best.epsilon:
            best = bound
    return best


def fitted_mu(scores_d: np.ndarray, scores_d_prime: np.ndarray) -> float:
    pooled = math.sqrt(0.5 * (np.var(scores_d) + np.var(scores_d_prime)))
    return abs(float(np.mean(scores_d_prime) - np.mean(scores_d))) / pooled if pooled > 0 else math.inf


def fitted_mu_lower(scores_d: np.ndarray, scores_d_prime: np.ndarray, confidence: float = CONFIDENCE) -> float:
    """A one-sided lower confidence bound on the fitted μ (a standardised mean difference), by
    its large-sample standard error √((n₁+n₂)/(n₁n₂) + μ²/(2(n₁+n₂))) (Hedges & Olkin 1985,
    eq. 5.14); the normal approximation is close at the audit's hundreds of runs per side."""
    mu = fitted_mu(scores_d, scores_d_prime)
    n1, n2 = len(scores_d), len(scores_d_prime)
    if not math.isfinite(mu) or min(n1, n2) < 2:
        return 0.0
    standard_error = math.sqrt((n1 + n2) / (n1 * n2) + mu**2 / (2 * (n1 + n2)))
    return max(0.0, mu - float(stats.norm.ppf(confidence)) * standard_error)


def _flat(value: Any) -> np.ndarray:
    if isinstance(value, (list, tuple)):
        return np.concatenate([_flat(v) for v in value]) if value else np.zeros(0)
    if type(value).__module__.startswith("torch"):
        return value.detach().cpu().double().numpy().ravel()
    return np.asarray(value, dtype=float).ravel()


@dataclass(frozen=True)
class ReleaseTrace:
    """The audited releases of one run: the recorded release, its clean and noisy values."""

    release: Any
    clean: np.ndarray
    noisy: np.ndarray | int


def _trace(event: ReleaseEvent) -> ReleaseTrace:
    if isinstance(event.release, PureRelease) and event.release.mechanism == "exponential":
        return ReleaseTrace(event.release, _flat(event.clean), int(event.noisy))
    return ReleaseTrace(event.release, _flat(event.clean), _flat(event.noisy))


def _noise_scale(release: Any) -> float:
    if isinstance(release, GaussianRelease):
        return release.noise_std
    return release.sensitivity / release.epsilon  # Laplace scale b


def llr_statistic(
    run: Sequence[ReleaseTrace], reference: Sequence[ReleaseTrace], canary: Sequence[ReleaseTrace]
) -> float:
    """Σ over Gaussian and Laplace releases of the log-likelihood ratio of D′ against D at the
    reference clean values (exponential-mechanism choices are not scored)."""
    total = 0.0
    for observed, c, c_prime in zip(run, reference, canary):
        release = observed.release
        if isinstance(release, PureRelease) and release.mechanism == "exponential":
            continue
        scale = _noise_scale(release)
        if not scale or not math.isfinite(scale):
            continue
        y = observed.noisy
        if isinstance(release, GaussianRelease):
            total += float(np.dot(y - 0.5 * (c.clean + c_prime.clean), c_prime.clean - c.clean)) / scale**2
        else:
            total += float((np.abs(y - c.clean) - np.abs(y - c_prime.clean)).sum()) / scale
    return total


def separation(reference: Sequence[ReleaseTrace], canary: Sequence[ReleaseTrace]) -> float:
    """μ² of the Gaussian releases between D and D′ (how far the canary moves them)."""
    return sum(
        float(np.sum((c_prime.clean - c.clean) ** 2)) / _noise_scale(c.release) ** 2
        for c, c_prime in zip(reference, canary)
        if isinstance(c.release, GaussianRelease) and _noise_scale(c.release) > 0
    )


def claimed_mu(releases: Sequence[Any]) -> float | None:
    gaussians = [r for r in releases if isinstance(r, GaussianRelease)]
    if len(gaussians) != len(releases) or any(r.subsampled or r.noise_multiplier == 0 for r in gaussians):
        return None
    return math.sqrt(sum(r.compositions / r.noise_multiplier**2 for r in gaussians))


RunReleases = Callable[[Any, np.random.Generator | None], tuple[list[ReleaseTrace], PrivacyLedger]]


def capture_releases(
    method: Any,
    train: Any,
    budget: PrivacyBudget,
    make_context: Callable[[PrivacyLedger, Callable[[], bool]], Any],
    noise: np.random.Generator | None,
    stop_after_events: int | None,
    ledger_factory: Callable[..., PrivacyLedger] = PrivacyLedger,
) -> tuple[list[ReleaseTrace], PrivacyLedger]:
    """Run ``method.fit`` until its releases are made; return them and the ledger."""
    events: list[ReleaseTrace] = []

    def observe(event: ReleaseEvent) -> None:
        events.append(_trace(event))
        observe.seen = True
        if stop_after_events is not None and len(events) >= stop_after_events:
            raise StopAudit

    observe.seen = False
    ledger = ledger_factory(budget, noise_source=noise, observers=[observe])
    try:
        method.fit(PrivateData(train, ledger), make_context(ledger, lambda: observe.seen))
    except StopAudit:
        pass
    if not events:
        raise NothingToAudit(
            f"{method.name} made no release before its first training step, so the release-level audit has "
            "nothing to test; a method whose DP-SGD phase is its release takes --level step"
        )
    return events, ledger


def audit_releases(
    name: str,
    dataset: str,
    run: RunReleases,
    rows: Any,
    candidates: Sequence[Any],
    runs: int,
    delta: float,
    seed: int = 0,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> AuditResult:
    """The audit of :mod:`bench.privacy.audit`'s docstring, for a ``run(train, noise)`` that
    returns one run's releases: ``rows`` is D, ``candidates`` the D′s to choose the canary from."""
    started = time.perf_counter()
    reference, ledger = run(rows, None)
    scored = []
    for candidate in candidates:
        canary, _ = run(candidate, None)
        if len(canary) == len(reference):
            scored.append((separation(reference, canary), candidate, canary))
    if not scored:
        raise RuntimeError("no canary gave the same releases as D; nothing to compare")
    _, neighbour, canary_reference = max(scored, key=lambda item: item[0])

    total = 2 * runs
    scores = {}
    for side, data in (("d", rows), ("d_prime", neighbour)):
        values = []
        for index in range(runs):
            noise = np.random.default_rng([seed, 7919, 0 if side == "d" else 1, index])
            observed, _ = run(data, noise)
            values.append(llr_statistic(observed, reference, canary_reference))
            progress(len(values) + (runs if side == "d_prime" else 0), total)
        scores[side] = np.array(values)
    bound = epsilon_lower_bound(scores["d"], scores["d_prime"], delta)
    return AuditResult(
        method=name,
        dataset=dataset,
        runs_per_side=runs,
        claimed_epsilon=ledger.epsilon_spent,
        delta=delta,
        lower_bound=bound.epsilon,
        mu_fitted=fitted_mu(scores["d"], scores["d_prime"]),
        mu_claimed=claimed_mu(ledger.releases),
        wall_s=time.perf_counter() - started,
        releases=tuple(r.what for r in ledger.releases),
        mu_lower=fitted_mu_lower(scores["d"], scores["d_prime"]),
    )


def audit_dp_sgd_step(
    per_sample_gradients: Sequence[Any],
    release: GaussianRelease,
    clipping_norm: float,
    budget: PrivacyBudget,
    runs: int,
    seed: int = 0,
    ledger_factory: Callable[..., PrivacyLedger] = PrivacyLedger,
) -> AuditResult:
    """Step-level DP-SGD audit with a gradient canary (module docstring).

    ``per_sample_gradients`` holds, per parameter, the real rows' gradients (rows × shape); row 0
    is the replaced row and the canary's gradient is its opposite. Each run draws the Poisson
    inclusion of that row (rate q of ``release``, fresh), clips every row to C as Opacus does,
    sums, and lets a ``SubsampledPhase`` of ``release`` add the ledger's noise. The claim
    compared is ε of ONE such step, by the ledger's accountant."""
    import torch

    from bench.privacy.subsampled import SubsampledPhase

    started = time.perf_counter()
    step = GaussianRelease(
        release.what, release.sensitivity, release.noise_multiplier, 1, release.sampling_rate, release.mechanism
    )
    norms = torch.stack([g.flatten(1).norm(dim=1) for g in per_sample_gradients]).norm(dim=0)
    factors = (clipping_norm / (norms + 1e-6)).clamp(max=1.0)  # Opacus' per-sample clipping factor
    clipped = [g * factors.view(-1, *[1] * (g.dim() - 1)) for g in per_sample_gradients]
    others = [c[1:].sum(0) for c in clipped]
    replaced = [c[0] for c in clipped]
    direction = np.concatenate([r.detach().double().numpy().ravel() for r in replaced])
    scores = {}
    for side, sign in (("d", 1.0), ("d_prime", -1.0)):
        values = []
        for index in range(runs):
            rng = np.random.default_rng([seed, 104729, 0 if sign > 0 else 1, index])
            phase = SubsampledPhase(ledger_factory(budget, noise_source=rng), step, clipping_norm)
            included = rng.random() < step.sampling_rate
            summed = [o + (sign * r if included else 0 * r) for o, r in zip(others, replaced)]
            noisy = phase.privatise(summed, torch.Generator())
            y = np.concatenate([(n - o).detach().double().numpy().ravel() for n, o in zip(noisy, others)])
            values.append(-float(np.dot(y, direction)))  # large when the canary (−g) is in
        scores[side] = np.array(values)
    bound = epsilon_lower_bound(scores["d"], scores["d_prime"], budget.delta)
    claimed = PrivacyLedger(budget).epsilon_of([step])
    return AuditResult(
        method="dp-sgd step",
        dataset="gradient canary",
        runs_per_side=runs,
        claimed_epsilon=claimed,
        delta=budget.delta,
        lower_bound=bound.epsilon,
        mu_fitted=fitted_mu(scores["d"], scores["d_prime"]),
        mu_claimed=None,
        wall_s=time.perf_counter() - started,
        releases=(step.what,),
        mu_lower=fitted_mu_lower(scores["d"], scores["d_prime"]),
    )
