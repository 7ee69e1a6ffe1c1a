"""The replace-one DP-SGD accountant, the independent recomputation of every ledger, the one door
for noise, and the empirical audit — including a deliberately broken mechanism that must be caught."""

from __future__ import annotations

from dataclasses import replace
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import norm

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant

from bench.core.encoding import SchemaError, TabularEncoder
from bench.harness.auditing import AuditTarget, audit_dp_sgd, audit_method
from bench.privacy.audit import clopper_pearson, epsilon_lower_bound
from bench.privacy.budget import PrivacyBudget
from bench.privacy.independent import PrivacyClaimMismatch, check_claim, independent_epsilon
from bench.privacy.ledger import PrivacyLedger
from bench.privacy.noise import secure_standard_laplace
from bench.privacy.noise import secure_standard_normal
from bench.privacy.releases import GaussianRelease, PureRelease
from bench.privacy.replace_one import ReplaceOneSubsampledGaussianPRV, prv_epsilon, renyi_divergence

ROOT = Path(__file__).resolve().parents[1]


def dp_accounting_replace_one(q: float, sigma: float, steps: int, delta: float) -> float:
    accountant = pld_privacy_accountant.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE)
    event = (
        dp_accounting.GaussianDpEvent(sigma)
        if q == 1
        else dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    )
    accountant.compose(event, steps)
    return accountant.get_epsilon(delta)


@pytest.mark.parametrize("q,sigma,steps", [(1.0, 2.0, 1), (0.01, 1.8, 1000), (1 / 180, 1.5, 1800), (0.05, 1.0, 200)])
def test_replace_one_prv_agrees_with_dp_accounting(q, sigma, steps):
    ours = prv_epsilon([(ReplaceOneSubsampledGaussianPRV(q, sigma), steps)], 1e-5)
    theirs = dp_accounting_replace_one(q, sigma, steps, 1e-5)
    assert theirs <= ours <= theirs + 0.02  # ours is a certified upper bound (+ its ε error 0.01)


def test_replace_one_pair_inverts_its_privacy_loss_and_is_the_gaussian_at_q_1():
    prv = ReplaceOneSubsampledGaussianPRV(0.3, 1.5)
    x = np.linspace(-6, 6, 25)
    np.testing.assert_allclose(prv._x_of_loss(prv.loss(x)), x, atol=1e-9)
    assert renyi_divergence(1.0, 2.0, 3.0) == pytest.approx(2 * 3 / 4)
    assert renyi_divergence(0.999999, 2.0, 3.0) == pytest.approx(1.5, rel=1e-4)  # quadrature path
    # the substitution pair is less private than add/remove's: its Rényi divergence is larger
    add_remove = dp_accounting.rdp.rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(0.05, 1.0, [4.0])[0]
    assert renyi_divergence(0.05, 1.0, 4.0) > add_remove


def test_independent_accountant_agrees_with_every_kind_of_ledger():
    budget = PrivacyBudget(10.0, 1e-5)
    gaussian = [GaussianRelease("a", 0.1, 6.0), GaussianRelease("b", 2.0, 9.0, compositions=3)]
    subsampled = [GaussianRelease("dp-sgd", 2.0, 0.9, compositions=500, sampling_rate=0.01)]
    mixed = [PureRelease("pick", 0.2, 2.0, "exponential", compositions=3), GaussianRelease("m", math.sqrt(2), 10.0, 4)]
    pure = [PureRelease("pick", 0.1, 1.0, "exponential", 4), PureRelease("counts", 0.2, 2.0, "laplace", 3)]
    for releases in (gaussian, subsampled, gaussian[:1] + subsampled, mixed, pure):
        ledger = PrivacyLedger(budget, releases=list(releases))
        check = ledger.independent_check()
        assert check.epsilon <= ledger.epsilon_spent * 1.01, (releases, check)
        assert check.epsilon >= ledger.epsilon_spent * 0.9, (releases, check)  # and not trivially small


def test_grouping_one_mechanism_s_releases_gives_dp_accounting_s_release_by_release_composition():
    """The independent accountant self-composes the releases of one mechanism (one noise
    multiplier and sampling rate, whatever Δ) instead of composing them one by one; on ledgers
    shaped like the record's (per-column marginals, DP-HP's per-epoch releases of varying Δ,
    DP-SGD beside a Gaussian, pure releases) the two agree, and a release of another multiplier
    is not merged into a group."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    def one_by_one(releases, delta):
        total = None
        for r in releases:
            for _ in range(r.compositions):
                if isinstance(r, PureRelease):
                    one = pld.from_laplace_mechanism(r.sensitivity / r.epsilon, sensitivity=r.sensitivity)
                elif r.subsampled:
                    one = pld.from_gaussian_mechanism(
                        r.noise_std / (r.sensitivity / 2),
                        sampling_prob=r.sampling_rate,
                        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
                    )
                else:
                    one = pld.from_gaussian_mechanism(r.noise_std, sensitivity=r.sensitivity)
                total = one if total is None else total.compose(one)
        return total.get_epsilon_for_delta(delta)

    marginals = [GaussianRelease(f"column {i}", math.sqrt(2), 12.4) for i in range(40)]
    per_epoch = [GaussianRelease(f"epoch {i}", 2.5e-5 * (1 + i % 3), 0.9127) for i in range(20)]
    per_epoch += [GaussianRelease("sum kernel", math.sqrt(2), 0.9127), GaussianRelease("other", 1.0, 3.0, 2)]
    dp_sgd = [GaussianRelease("dp-sgd", 2.0, 0.9, compositions=30, sampling_rate=0.02), *marginals[:3]]
    laplace = [PureRelease("counts", 0.2, 2.0, "laplace", 3), *marginals[:5]]
    for releases in (marginals, per_epoch, dp_sgd, laplace):
        grouped = independent_epsilon(releases, 1e-5).epsilon
        assert grouped == pytest.approx(one_by_one(releases, 1e-5), rel=1e-4), releases[0].what
    # a single release of a smaller multiplier among many is composed as itself
    leaky = [*marginals, GaussianRelease("leak", math.sqrt(2), 1.0)]
    assert independent_epsilon(leaky, 1e-5).epsilon > independent_epsilon(marginals, 1e-5).epsilon + 0.5


@pytest.mark.parametrize("broken", ["sensitivity halved", "add/remove DP-SGD"])
def test_a_mis_accounted_release_fails_the_independent_check(broken):
    """The independent accountant, given the mechanism as it really ran, refuses the claim made for
    it. It reads what the ledger records, so a method that records a wrong sensitivity gets the
    same ε from both accountants: real fits with a broken mechanism are caught by the audits
    (test_the_audit_verdict_refutes_an_understated_sensitivity_by_the_fitted_mu,
    test_dp_sgd_step_audit_catches_add_remove_accounting), not here."""
    if broken == "sensitivity halved":  # the release really had sensitivity 2, recorded as 1
        claimed = PrivacyLedger(PrivacyBudget(5.0, 1e-5)).epsilon_of([GaussianRelease("x", 1.0, 4.0)])
        real = [GaussianRelease("x", 2.0, 2.0)]  # same noise std (4): what was really released
    else:  # σ from Opacus' add/remove accountant, claimed as its ε
        from opacus.accountants.utils import get_noise_multiplier

        sigma = get_noise_multiplier(
            target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, steps=1000, accountant="prv"
        )
        claimed = 1.0
        real = [GaussianRelease("dp-sgd", 2.0, sigma / 2, compositions=1000, sampling_rate=0.01)]
    with pytest.raises(PrivacyClaimMismatch, match="privacy claim is wrong"):
        check_claim(claimed, real, 1e-5)


def test_pure_ledgers_are_recomputed_at_delta_zero():
    releases = [PureRelease("e", 0.3 / 14, 0.01, "exponential") for _ in range(14)] + [
        PureRelease("l", 0.7 / 15, 2.0, "laplace", 15)
    ]
    assert independent_epsilon(releases, 0.0).epsilon == pytest.approx(1.0, abs=0.005)


@pytest.mark.parametrize("total", [1.0, 0.1, 0.03])
def test_pure_composition_is_recomputed_within_a_tenth_of_a_percent_at_small_epsilon(total):
    """PrivBayes at ε = 0.1 makes ≈ 30 pure releases; basic composition is exact for pure DP, so
    the independent value must land on the sum (it once exceeded it by 1.3% through the PLD's
    fixed rounding and failed honest runs), and a real overspend of 2% must still fail."""
    releases = [PureRelease("e", 0.3 * total / 14, 0.01, "exponential") for _ in range(14)] + [
        PureRelease("l", 0.7 * total / 15, 2.0, "laplace", 15)
    ]
    found = independent_epsilon(releases, 0.0).epsilon
    assert total <= found <= total * 1.001
    check_claim(total, releases, 0.0)
    with pytest.raises(PrivacyClaimMismatch, match="privacy claim is wrong"):
        check_claim(total / 1.02, releases, 0.0)


@pytest.mark.parametrize("total", [0.3, 0.1])
def test_many_pure_releases_compose_to_their_sum_not_to_infinity(total):
    """PrivBayes on census-discrete (41 columns) makes 40 exponential selections and 41 Laplace
    conditionals; composed with dp-accounting's default tail truncation, the mass cut from the
    tails became infinite loss and the independent check read ε = inf at δ = 0 for an exact claim
    (every run refused). The same ledger must land on its sum, and 2% more must still fail."""
    releases = [PureRelease("e", 0.3 * total / 40, 1.0, "exponential") for _ in range(40)] + [
        PureRelease("l", 0.7 * total / 41, 1.0, "laplace", 41)
    ]
    assert total <= independent_epsilon(releases, 0.0).epsilon <= total * 1.001
    check_claim(total, releases, 0.0)
    with pytest.raises(PrivacyClaimMismatch, match="privacy claim is wrong"):
        check_claim(total / 1.02, releases, 0.0)


def test_clopper_pearson_and_the_lower_bound_on_known_gaussians():
    lower, upper = clopper_pearson(50, 100, 0.025)
    assert lower == pytest.approx(0.398, abs=0.002) and upper == pytest.approx(0.602, abs=0.002)
    rng = np.random.default_rng(0)
    for mu in (0.5, 2.0):
        d, d_prime = rng.normal(0, 1, 20_000), rng.normal(mu, 1, 20_000)
        bound = epsilon_lower_bound(d, d_prime, 1e-5)
        # the true ε of μ-GDP at δ = 1e-5 bounds it from above; a strong signal gives a real bound
        true = next(
            e
            for e in np.arange(0.01, 20, 0.01)
            if norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2) <= 1e-5
        )
        assert bound.epsilon <= true
        if mu == 2.0:
            assert bound.epsilon > 2.0


class AddRemoveLedger(PrivacyLedger):
    """The bug this harness shipped: DP-SGD noise calibrated as if a row moved the clipped sum by
    C (add/remove), labelled replace-one."""

    def subsampled_phase(self, what, clipping_norm, sampling_rate, steps):
        return super().subsampled_phase(what, clipping_norm / 2, sampling_rate, steps)


class HalfNoiseLedger(PrivacyLedger):
    """A broken noise door: half the noise it records."""

    def _add_gaussian(self, value, std, rng):
        return super()._add_gaussian(value, std / 2, rng)


@pytest.mark.parametrize("ledger", [PrivacyLedger, AddRemoveLedger])
def test_dp_sgd_step_audit_catches_add_remove_accounting(data_dir, ledger):
    full_batch = {"batch_size": "1000", "epochs": "1"}  # one full-batch step (q = 1)
    target = AuditTarget("dp-gan", "cervical", 2.0, 0.05, runs=2000, rows=300, data_dir=data_dir, overrides=full_batch)
    result = audit_dp_sgd(target, ledger_factory=ledger)
    assert result.claimed_epsilon == pytest.approx(2.0, abs=0.01)
    if ledger is PrivacyLedger:
        assert result.lower_bound <= result.claimed_epsilon
    else:
        assert result.lower_bound > result.claimed_epsilon, result.summary()


@pytest.mark.parametrize(
    "method,dataset",
    [
        ("dp-merf", "gmm2d"),
        ("dp-hp", "cervical"),
        ("mst", "adult-discrete"),
        ("aim", "adult-discrete"),
        ("dp-gan", "cervical"),
    ],
)
def test_audit_stays_below_the_claim_for_built_in_methods(data_dir, method, dataset):
    torch.set_num_threads(1)
    result = audit_method(AuditTarget(method, dataset, 4.0, 0.05, runs=100, rows=100, data_dir=data_dir), candidates=4)
    assert 0 < result.claimed_epsilon <= 4.0 * (1 + 1e-6)
    assert result.lower_bound <= result.claimed_epsilon and not result.violated, result.summary()
    assert result.mu_fitted > 0


@pytest.mark.slow
def test_release_audit_catches_halved_noise(data_dir):
    """The method-level audit through MST's real fit: halved noise is caught, the real one not."""
    target = AuditTarget("mst", "adult-discrete", 4.0, 0.05, runs=2000, rows=300, data_dir=data_dir)
    honest = audit_method(target)
    broken = audit_method(target, ledger_factory=HalfNoiseLedger)
    assert honest.lower_bound <= honest.claimed_epsilon
    assert broken.lower_bound > broken.claimed_epsilon, broken.summary()


# non-DP randomness the methods may draw themselves: generator latents, label sampling, random
# features and coordinates, Kruskal's start — each line is checked by hand once and listed here
ALLOWED_DRAWS = {
    "methods/nets.py": 3,  # latent codes z of the three conditional generators (fc, conv, ResNet)
    "methods/dp_gan.py": 1,  # latent codes z of the GAN generator
    "methods/dp_merf.py": 1,  # random Fourier frequencies (data-independent)
}


def test_no_method_draws_dp_noise_outside_the_ledger():
    """Every Gaussian/Laplace draw in methods/ is either the ledger's or a listed non-DP one."""
    draw = re.compile(r"torch\.randn\(|\.normal\(|\.laplace\(|\.standard_normal\(|torch\.normal\(")
    found = {}
    for path in sorted((ROOT / "methods").glob("*.py")):
        count = sum(
            1 for line in path.read_text().splitlines() if draw.search(line) and not line.strip().startswith("#")
        )
        if count:
            found[str(path.relative_to(ROOT))] = count
    assert found == ALLOWED_DRAWS


def test_zero_noise_from_the_door_leaves_every_release_clean(data_dir):
    """Monkeypatch the door's noise to zero: every observed release then equals its clean
    value, so nothing is added to a release after the ledger's door. The clean value is what
    reached the door: noise a method drew *before* it would be in both, which this test cannot
    see — test_no_method_draws_dp_noise_outside_the_ledger (a grep of methods/) covers that side."""

    class Zeros:
        def standard_normal(self, shape):
            return np.zeros(shape)

        def laplace(self, loc, scale, shape):
            return np.zeros(shape)

        def random(self, n):
            return np.full(n, 0.5)

    for method, dataset in (
        ("dp-merf", "cervical"),
        ("dp-hp", "cervical"),
        ("mst", "adult-discrete"),
        ("dp-mepf", "mnist"),
    ):
        seen = []

        def zero_ledger(budget, **kwargs):
            kwargs.update(noise_source=Zeros())
            observers = kwargs.pop("observers", [])
            return PrivacyLedger(budget, observers=[seen.append] + observers, **kwargs)

        target = AuditTarget(method, dataset, 1.0, 1e-5, runs=10, rows=80, data_dir=data_dir)
        audit_method(target, candidates=1, ledger_factory=zero_ledger)
        assert seen
        for event in seen:
            clean = [event.clean] if not isinstance(event.clean, list) else event.clean
            noisy = [event.noisy] if not isinstance(event.noisy, list) else event.noisy
            for c, n in zip(clean, noisy):
                np.testing.assert_array_equal(np.asarray(torch.as_tensor(c)), np.asarray(torch.as_tensor(n)))


def test_secure_noise_is_standard():
    normal, laplace = secure_standard_normal((200_000,)), secure_standard_laplace((200_000,))
    assert abs(normal.mean()) < 0.01 and normal.std() == pytest.approx(1.0, abs=0.01)
    assert abs(laplace.mean()) < 0.02 and np.abs(laplace).mean() == pytest.approx(1.0, abs=0.01)
    ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5), secure_noise=True)
    a = ledger.gaussian(np.zeros(5), sensitivity=1.0, noise_multiplier=4.0, what="x", rng=np.random.default_rng(0))
    assert not np.array_equal(a, np.random.default_rng(0).standard_normal(5))  # not the seeded stream
    assert "secure" in ledger.to_dict()["noise"]


def test_encoder_refuses_codes_outside_the_public_domain(data_dir):
    from datasets.cervical import CERVICAL

    train = CERVICAL.load(data_dir, seed=0).train
    encoder = TabularEncoder(train.schema)
    binary = next(i for i, c in enumerate(train.schema.columns) if c.kind.value == "binary")
    x = train.x.copy()
    x[0, binary] = 5  # ‖h(x)‖ would exceed the bound the sensitivity assumes
    with pytest.raises(SchemaError, match="outside its public domain"):
        encoder.encode(x)


@pytest.mark.parametrize("breakage", ["", "half-sensitivity"])
def test_the_audit_verdict_refutes_an_understated_sensitivity_by_the_fitted_mu(data_dir, breakage):
    """Issue 29's attacker: a release recorded at half its true sensitivity left the ε lower bound
    near 0 while the fitted μ sat at 1.7–2.0× the claim. The verdict now also fails a claim whose
    μ the fitted μ's lower confidence bound exceeds; the honest release stays consistent."""
    from bench.api.registry import METHODS
    from bench.privacy.audit import fitted_mu_lower
    from tests.test_conformance import GaussianHistograms

    method = GaussianHistograms(name=f"audit-gaussian{'-' + breakage if breakage else ''}", breakage=breakage)
    METHODS.register(method)
    try:
        target = AuditTarget(method.name, "adult-discrete", 1.0, 1e-5, runs=400, rows=100, data_dir=data_dir)
        result = audit_method(target, candidates=4)
    finally:
        METHODS.unregister(method.name)
    assert result.mu_lower <= result.mu_fitted
    assert result.violated == bool(breakage), result.summary()
    assert ("VIOLATION" in result.summary()) == bool(breakage)
    # two one-sided tests at 95% each: the verdict's own level is 90%, and the summary says so
    assert result.verdict_confidence == pytest.approx(0.90)
    assert ("at 90% confidence" in result.summary()) == bool(breakage)
    rng = np.random.default_rng(3)  # the bound's coverage on known Gaussians: below the truth, close at n = 5,000
    d, d_prime = rng.normal(0, 1, 5000), rng.normal(1.0, 1, 5000)
    assert 0.93 < fitted_mu_lower(d, d_prime) < 1.0


def test_a_killed_black_box_audit_resumes_from_its_checkpoint_to_the_same_bound(tmp_path):
    """The black-box audit fits whole generators (minutes each for an outside library): each
    finished run is kept, so an audit killed after 7 of 20 runs fits only the other 13 when run
    again, and its runs' scores are those of an audit never stopped, run for run; a line cut short
    by the kill, or bytes that are no run, are fitted again; other settings name another file."""
    import json
    import os

    from bench.harness.auditing import audit_black_box, black_box_checkpoint, finished_runs

    data_dir = os.environ.get("DPBENCH_DATA_DIR")
    target = AuditTarget("independent", "adult-discrete", 1.0, 1e-5, 20, 200, data_dir=data_dir)
    checkpoint = black_box_checkpoint(tmp_path / "audits", target)
    assert checkpoint != black_box_checkpoint(tmp_path / "audits", replace(target, epsilon=3.0))
    assert checkpoint == black_box_checkpoint(tmp_path / "audits", replace(target, runs=50))  # more runs extend these

    def killed_after(runs):
        def progress(done, total):
            if done == runs:
                raise KeyboardInterrupt

        return progress

    with pytest.raises(KeyboardInterrupt):
        audit_black_box(target, checkpoint=checkpoint, progress=killed_after(7))
    assert len(checkpoint.read_text().splitlines()) == 7
    with checkpoint.open("a") as out:  # the kill cut the 8th run's line short
        out.write('{"run": 7, "d": 1')
    fitted = []
    resumed = audit_black_box(target, checkpoint=checkpoint, progress=lambda done, total: fitted.append(done))
    assert fitted == [7, *range(8, 21)] and resumed.runs_resumed == 7  # 0–6 read back (reported once), 7–19 fitted
    never_stopped = tmp_path / "never-stopped.jsonl"
    uninterrupted = audit_black_box(target, checkpoint=never_stopped)
    assert resumed.lower_bound == uninterrupted.lower_bound and resumed.claimed_epsilon == uninterrupted.claimed_epsilon

    def scores(path):
        return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in path.read_text().splitlines()]

    assert scores(checkpoint) == scores(never_stopped) and len(scores(checkpoint)) == 20
    assert len({run["d_prime"] for run in scores(checkpoint)}) > 1  # scores that vary: a swap would show
    # a file that holds no runs past its 3rd line (a list, a run without scores, bytes): fitted again from there
    lines = never_stopped.read_text().splitlines()
    for junk in ("[1, 2]", '{"run": 3}', "\udcff\udcfe"):
        never_stopped.write_text("\n".join([*lines[:3], junk, *lines[4:]]) + "\n", errors="surrogateescape")
        fitted.clear()
        again = audit_black_box(target, checkpoint=never_stopped, progress=lambda done, total: fitted.append(done))
        assert fitted == [3, *range(4, 21)] and again.lower_bound == uninterrupted.lower_bound
        assert scores(never_stopped) == scores(checkpoint)
    # one audit claims one ε: a line claiming another (another run's file, a rebuilt library) and all after it are refitted
    lines = never_stopped.read_text().splitlines()
    other = json.loads(lines[5]) | {"claimed": 3.0}
    never_stopped.write_text("\n".join([*lines[:5], json.dumps(other), *lines[6:]]) + "\n")
    assert [run["run"] for run in finished_runs(never_stopped)] == [0, 1, 2, 3, 4]


def test_a_black_box_checkpoint_is_named_by_the_calibrator_the_packages_and_the_plugins_sources(tmp_path, monkeypatch):
    """Everything a black-box audit's scores depend on names its checkpoint: the calibrator its fits
    calibrate with, and the code — here a plugin module outside the repository, edited between two
    audits, whose old runs must not be read back."""
    from bench.harness import provenance
    from bench.harness.auditing import black_box_checkpoint

    settings = AuditTarget("independent", "adult-discrete", 1.0, 1e-5, runs=20, rows=200)
    tight = black_box_checkpoint(tmp_path, replace(settings, calibrator="tight"))
    assert tight != black_box_checkpoint(tmp_path, replace(settings, calibrator="paper"))
    assert tight != black_box_checkpoint(tmp_path, replace(settings, seed=1))
    plugin = tmp_path / "plugins" / "audited_plugin.py"
    plugin.parent.mkdir()
    plugin.write_text("NOISE_SCALE = 1.0\n")
    monkeypatch.syspath_prepend(str(plugin.parent))
    monkeypatch.setenv("DPBENCH_PLUGINS", "audited_plugin")
    before = black_box_checkpoint(tmp_path, settings)
    plugin.write_text("NOISE_SCALE = 0.5\n")
    assert black_box_checkpoint(tmp_path, settings) != before
    assert provenance.plugin_sources()["audited_plugin"] != "not found"
    assert any(entry.startswith("numpy==") for entry in provenance.installed_distributions())


def test_a_black_box_checkpoint_is_named_after_the_outside_environment_is_built(tmp_path, monkeypatch):
    """An outside library's first audit on a machine builds its environment as it starts; the
    checkpoint's name holds what that environment holds, so one named before that build was never
    read back by the next session's same command (a smartnoise-MST audit restarted from zero that
    way). Another library's environment is not in the name: building synthcity's must not orphan
    a smartnoise audit's runs. A rebuild that installs other versions is a new name."""
    import types

    from bench.cli.audit import resumable

    monkeypatch.setenv("DPBENCH_ENV_DIR", str(tmp_path / "envs"))
    monkeypatch.setenv("DPBENCH_CACHE_DIR", str(tmp_path / "cache"))

    def builder(name: str, installed: str):
        def build() -> Path:  # what Environment.prepare leaves behind: the folder with its ready.json
            folder = tmp_path / "envs" / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "ready.json").write_text(f'{{"installed": ["{installed}"]}}')
            return folder

        return build

    settings = AuditTarget("outside", "adult-discrete", 1.0, 1e-5, runs=20, rows=200)
    outside = types.SimpleNamespace(prepare=builder("library-0123", "library==1.0"))
    first = resumable(outside, settings)
    again = resumable(outside, settings)  # the next session's same command
    assert first == again
    builder("other-4567", "other==2.0")()  # another library's environment, built in between
    assert resumable(outside, settings) == first
    rebuilt = types.SimpleNamespace(prepare=builder("library-0123", "library==1.1"))
    assert resumable(rebuilt, settings) != first
    assert resumable(types.SimpleNamespace(prepare=None), settings) != first  # a built-in: no environment


def test_the_audit_command_resumes_a_black_box_audit_and_logs_its_code(tmp_path, monkeypatch, capsys):
    from bench.cli import main
    from bench.harness import tracking

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("DPBENCH_CACHE_DIR", str(tmp_path / "cache"))
    command = ["audit", "--method", "independent", "--dataset", "adult-discrete", "--black-box", "--no-progress"]
    command += ["--runs", "20", "--rows", "100"]
    assert main(command) == 0 and "resuming" not in capsys.readouterr().err
    assert main(command) == 0
    assert "resuming: 20 of 20 run(s) of this audit" in capsys.readouterr().err
    client = tracking.client()
    runs = list(tracking.iter_runs(client, tracking.experiment_id(client, "audit", create=False)))
    assert [len(run.data.tags["git_commit"]) >= 40 for run in runs] == [True, True]
    (bound,) = {run.data.metrics["audit.epsilon_lower_bound"] for run in runs}  # the same scores, read back


def test_an_audit_too_small_to_refute_its_claim_says_so_instead_of_consistent():
    """20 runs a side bound ε at ≈ 0.60 at best — a perfect separation, as a generator that prints
    its canary would give — so a black-box audit of a claimed ε = 1 at 20 runs cannot refute it and
    its "consistent" is no evidence (the smartnoise-MST audit's case). The attainable bound is the
    bound of perfectly separated scores, and no scores bound above it."""
    from bench.privacy.audit import AuditResult, attainable_bound, epsilon_lower_bound

    rng = np.random.default_rng(0)
    for runs in (20, 28, 100, 1000):
        best = attainable_bound(runs, 1e-5)
        assert best == pytest.approx(epsilon_lower_bound(np.zeros(runs), np.ones(runs), 1e-5).epsilon)
        shifted = epsilon_lower_bound(rng.normal(0, 1, runs), rng.normal(3, 1, runs), 1e-5).epsilon
        assert shifted <= best + 1e-12
    assert attainable_bound(20, 1e-5) < 1 < attainable_bound(28, 1e-5)

    def result(runs: int, bound: float = 0.0, mu_claimed: float | None = None) -> AuditResult:
        return AuditResult("m", "d", runs, 1.0, 1e-5, bound, float("nan"), mu_claimed, 1.0, ())

    assert result(20).verdict == "inconclusive" and "INCONCLUSIVE: 20 runs per side" in result(20).summary()
    assert result(100).verdict == "consistent"
    assert result(20, mu_claimed=1.0).verdict == "consistent"  # the μ test has power of its own
    assert result(100, bound=1.5).verdict == "violation"
