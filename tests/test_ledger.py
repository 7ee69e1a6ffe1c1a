"""The privacy ledger against independent closed forms, and its refusal to overspend."""

from __future__ import annotations

import math

import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from bench.privacy.budget import BudgetError, Delta, PrivacyBudget, parse_epsilons
from bench.privacy.ledger import GaussianRelease, PrivacyLedger, calibrate_gaussian_multiplier
from bench.privacy.subsampled import PrivacyBudgetExceeded


def analytic_gaussian_delta(epsilon: float, sigma: float) -> float:
    """Balle & Wang (2018), Thm. 8: δ(ε) of the Gaussian mechanism with noise multiplier σ."""
    return norm.cdf(0.5 / sigma - epsilon * sigma) - math.exp(epsilon) * norm.cdf(-0.5 / sigma - epsilon * sigma)


def analytic_gaussian_epsilon(sigma: float, delta: float) -> float:
    return brentq(lambda eps: analytic_gaussian_delta(eps, sigma) - delta, 0.0, 500.0)


def classical_rdp_epsilon(sigma: float, compositions: int, delta: float) -> float:
    """min over α of kα/(2σ²) + log(1/δ)/(α−1), in closed form."""
    return compositions / (2 * sigma**2) + math.sqrt(2 * compositions * math.log(1 / delta)) / sigma


def test_tight_calibration_matches_the_issue_and_is_tighter_than_the_seeds():
    tight = calibrate_gaussian_multiplier(1.0, 1e-5, 1, "tight")
    paper = calibrate_gaussian_multiplier(1.0, 1e-5, 1, "paper")
    assert tight == pytest.approx(3.73, abs=0.01)
    assert paper == pytest.approx(4.90, abs=0.01)
    assert tight < paper


@pytest.mark.parametrize("epsilon,compositions", [(0.1, 1), (0.3, 2), (1.0, 1), (1.0, 2), (5.0, 30)])
def test_tight_calibration_is_valid_and_tight_against_the_analytic_gaussian(epsilon, compositions):
    sigma = calibrate_gaussian_multiplier(epsilon, 1e-5, compositions, "tight")
    effective = sigma / math.sqrt(compositions)  # k Gaussian releases = one with σ/√k
    assert analytic_gaussian_delta(epsilon, effective) <= 1e-5 * (1 + 1e-6)
    assert analytic_gaussian_delta(epsilon, effective * 0.999) > 1e-5  # no slack left


@pytest.mark.parametrize(
    "epsilon,compositions,expected",  # DP-MERF (arXiv:2002.11603) Sec. 2.3 (σ from autodp), autodp 0.2.3.1 values
    [(1.0, 2, 6.9304), (1.0, 1, 4.9006), (0.2, 1, 24.096), (0.3, 2, 22.767), (0.1, 2, 68.008)],
)
def test_paper_calibrator_reproduces_the_seeds_sigmas(epsilon, compositions, expected):
    assert calibrate_gaussian_multiplier(epsilon, 1e-5, compositions, "paper") == pytest.approx(expected, rel=1e-4)


def test_ledger_composition_against_independent_accountants():
    releases = [GaussianRelease("a", 0.1, 6.0), GaussianRelease("b", 2.0, 9.0, compositions=3)]
    tight = PrivacyLedger(PrivacyBudget(100.0, 1e-5), "tight")
    paper = PrivacyLedger(PrivacyBudget(100.0, 1e-5), "paper")
    for release in releases:
        tight.record(release)
        paper.record(release)
    effective = (1 / 6.0**2 + 3 / 9.0**2) ** -0.5
    assert tight.epsilon_spent == pytest.approx(analytic_gaussian_epsilon(effective, 1e-5), rel=1e-4)
    # RDP of Gaussians adds up: k1/σ1² + k2/σ2² = 1/σ_eff², so one closed form covers the sum
    assert paper.epsilon_spent == pytest.approx(classical_rdp_epsilon(effective, 1, 1e-5), rel=1e-5)
    assert tight.epsilon_spent < paper.epsilon_spent


def test_a_release_that_overspends_is_refused_and_not_recorded():
    ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    sigma = ledger.calibrate_gaussian(compositions=1)
    ledger.record(GaussianRelease("embedding", 0.01, sigma))
    assert ledger.epsilon_spent == pytest.approx(1.0, rel=1e-6)
    with pytest.raises(PrivacyBudgetExceeded, match="would spend"):
        ledger.record(GaussianRelease("second embedding", 0.01, sigma))
    assert len(ledger.releases) == 1


def test_split_budget_releases_fit_the_target():
    ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    sigma = ledger.calibrate_gaussian(compositions=2)
    ledger.record(GaussianRelease("counts", math.sqrt(2), sigma))
    ledger.record(GaussianRelease("embedding", 0.002, sigma))
    assert ledger.epsilon_spent == pytest.approx(1.0, rel=1e-5)
    assert ledger.epsilon_spent <= 1.0 * (1 + 1e-9)


def test_ledger_serialises_every_release_and_public_fact():
    ledger = PrivacyLedger(PrivacyBudget(0.5, 1e-6), "paper")
    ledger.record(GaussianRelease("embedding", 0.2, ledger.calibrate_gaussian()))
    ledger.use_public_fact("class_proportions", (0.5, 0.5), "balanced by design")
    record = ledger.to_dict()
    assert record["target"] == {"epsilon": 0.5, "delta": 1e-6}
    assert record["calibrator"] == "paper"
    assert record["releases"][0]["neighbouring"] == "replace-one"
    assert record["releases"][0]["noise_std"] == pytest.approx(0.2 * record["releases"][0]["noise_multiplier"])
    assert record["public_facts"][0]["name"] == "class_proportions"


@pytest.mark.parametrize("epsilon", [0.0, -1.0, float("nan")])
def test_budget_rejects_non_positive_epsilon(epsilon):
    with pytest.raises(BudgetError, match="ε must be > 0"):
        PrivacyBudget(epsilon, 1e-5)


@pytest.mark.parametrize("delta", [0.0, 1.0, 2.0, -1e-5])
def test_budget_rejects_delta_outside_the_unit_interval(delta):
    with pytest.raises(BudgetError, match="δ must lie in"):
        PrivacyBudget(1.0, delta)


def test_epsilon_list_parsing():
    assert parse_epsilons("0.1, 0.3,inf") == [0.1, 0.3, math.inf]
    with pytest.raises(BudgetError):
        parse_epsilons("0.1,abc")


def test_delta_auto_uses_a_tenth_of_one_over_n_and_warns_when_delta_is_large():
    assert Delta.parse("auto").resolve(1000) == pytest.approx(1e-4)
    with pytest.warns(UserWarning, match="not below 1/n_train"):
        Delta.parse("0.01").resolve(1000)


def test_the_accountants_are_objects_named_as_the_calibrator_choices():
    from bench.privacy.accountants import ACCOUNTANTS
    from bench.privacy.budget import CALIBRATORS

    assert tuple(ACCOUNTANTS) == CALIBRATORS
    for name, accountant in ACCOUNTANTS.items():
        assert accountant.name == name
        # both split a budget so that the groups compose to at most the target
        ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5), name)
        for sigma, k in zip(accountant.split([(0.6, 1), (0.4, 3)], 1.0, 1e-5), (1, 3)):
            ledger.record(GaussianRelease("share", 1.0, sigma, k))
        assert ledger.epsilon_spent <= 1.0 * (1 + 1e-6)


def test_delta_is_typed_with_one_text_codec():
    from bench.privacy.budget import DeltaKind

    for text, kind in (("1e-05", DeltaKind.FIXED), ("auto", DeltaKind.AUTO), ("none", DeltaKind.NOT_APPLICABLE)):
        delta = Delta.parse(text)
        assert delta.kind is kind and delta.text == text and Delta.parse(delta.text) == delta
    assert Delta.parse("1e-5") == Delta.fixed(1e-5) and Delta.parse(1e-5).text == "1e-05"
    assert Delta.not_applicable().resolve(100) == 0.0
    for bad in ("0", "1", "-1e-5", "x"):
        with pytest.raises(BudgetError):
            Delta.parse(bad)
