"""Pure-DP and zCDP accounting in the ledger, and the marginal-based adapters' budgets."""

from __future__ import annotations

import math
import os
from collections import Counter

import numpy as np
import pytest
import torch
from autodp import converter

from bench.privacy.private_data import PrivateData
from bench.privacy.budget import PrivacyBudget
from bench.core.data import DataKind
from bench.api.contracts import FitContext
from bench.privacy.ledger import GaussianRelease, PrivacyLedger, PureRelease, epsilon_to_zcdp, zcdp_to_epsilon
from bench.privacy.subsampled import PrivacyBudgetExceeded
from bench.api.registry import METHODS
from datasets.adult_discrete import ADULT_DISCRETE
from methods.mst import spanning_tree


@pytest.mark.parametrize("rho,delta", [(0.0005, 1e-5), (0.01, 1e-5), (1.0, 1e-6)])
def test_zcdp_conversion_matches_autodp(rho, delta):
    # autodp's RDP→(ε, δ) conversion (improved, BBGHS) of the ρ-zCDP curve ε(α) = αρ
    independent = converter.rdp_to_approxdp(lambda alpha: alpha * rho, BBGHS_conversion=True)(delta)
    assert zcdp_to_epsilon(rho, delta) == pytest.approx(independent, rel=1e-6)
    assert zcdp_to_epsilon(epsilon_to_zcdp(0.3, delta), delta) == pytest.approx(0.3, rel=1e-9)


def test_pure_releases_compose_by_addition_and_spend_no_delta():
    ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
    ledger.record(PureRelease("structure", 0.4, 1.0, "exponential", compositions=1))
    ledger.record(PureRelease("counts", 0.3, 2.0, "laplace", compositions=2))
    assert ledger.epsilon_spent == pytest.approx(1.0)
    assert ledger.delta_spent == 0
    with pytest.raises(PrivacyBudgetExceeded):
        ledger.record(PureRelease("one more", 0.01, 1.0, "laplace"))


def test_mixed_releases_are_accounted_in_zcdp():
    ledger = PrivacyLedger(PrivacyBudget(2.0, 1e-5))
    ledger.record(PureRelease("selection", 0.2, 2.0, "exponential", compositions=3))  # ρ = 3·0.04/8
    ledger.record(GaussianRelease("marginals", math.sqrt(2), 10.0, compositions=4))  # ρ = 4/(2·100)
    rho = 3 * 0.2**2 / 8 + 4 / 200
    assert ledger.zcdp_rho_of(ledger.releases) == pytest.approx(rho)
    assert ledger.epsilon_spent == pytest.approx(zcdp_to_epsilon(rho, 1e-5))
    assert "zCDP" in ledger.accountant
    assert ledger.to_dict()["zcdp_rho"] == pytest.approx(rho)


@pytest.mark.parametrize("source", ["method rng", "noise source", "secure"])
def test_exponential_mechanism_frequencies(source):
    rng = np.random.default_rng(0)
    ledger = PrivacyLedger(
        PrivacyBudget(1e9, 1e-5),
        noise_source=np.random.default_rng(1) if source == "noise source" else None,
        secure_noise=source == "secure",
    )
    scores = np.array([0.0, 2.0, 4.0])
    draws = Counter(
        ledger.exponential(scores, epsilon=1.0, sensitivity=1.0, what="pick", rng=rng) for _ in range(6_000)
    )
    weights = np.exp(scores / 2)
    for i, w in enumerate(weights / weights.sum()):
        assert draws[i] / 6_000 == pytest.approx(w, abs=0.025)  # 4 standard errors at most
    assert len(ledger.releases) == 6_000 and ledger.releases[0].mechanism == "exponential"


def test_spanning_tree_spans_every_attribute(data_dir):
    """Each edge is one handle selection at the given ε (scores against all-zero estimates)."""
    from methods.pgm import Measurer, column_index, domain_of

    rng = np.random.default_rng(0)
    data = small_discrete(data_dir, columns=6, rows=500)
    ledger = PrivacyLedger(PrivacyBudget(10.0, 1e-5))
    handle = PrivateData(data, ledger)
    domain, index = domain_of(data.schema), column_index(data.schema)
    attributes = list(domain.attributes)
    estimated = {
        (x, y): np.zeros(int(np.prod(domain.project((x, y)).shape)))
        for i, x in enumerate(attributes)
        for y in attributes[i + 1 :]
    }
    tree = spanning_tree(handle, Measurer(handle, domain, index, rng), estimated, attributes, 0.5, rng)
    assert [r.epsilon for r in ledger.releases] == [0.5] * (len(attributes) - 1)
    assert ledger.trusted_reads == []
    assert len(tree) == len(attributes) - 1
    reached, frontier = {attributes[0]}, [attributes[0]]
    while frontier:
        node = frontier.pop()
        for x, y in tree:
            for u, v in ((x, y), (y, x)):
                if u == node and v not in reached:
                    reached.add(v)
                    frontier.append(v)
    assert reached == set(attributes)


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_mst_spends_exactly_its_target(data_dir, epsilon):
    split = ADULT_DISCRETE.load(data_dir, seed=0)
    train = split.train
    small = type(train)(train.x[:2000], train.y[:2000], train.schema)
    ledger = PrivacyLedger(PrivacyBudget(epsilon, 1e-5))
    method = METHODS.get("mst")
    params = method.hyperparameters.resolve("adult-discrete", "smoke").params
    context = FitContext(
        PrivacyBudget(epsilon, 1e-5), ledger, params, 0, torch.device("cpu"), data_kind=DataKind.DISCRETE
    )
    model = method.fit(PrivateData(small, context.ledger), context)
    assert ledger.epsilon_spent == pytest.approx(epsilon, rel=1e-6)
    assert [r.what.split(":")[0] for r in ledger.releases] == [
        "1-way marginals",
        *["spanning-tree edge (exponential mechanism on 2-way L1 errors)"] * 14,
        "2-way marginals of the tree",
    ]
    assert ledger.independent_check().epsilon <= epsilon * 1.01
    sample = model.sample(500)
    assert (
        sample.x.shape == (500, 15) and (sample.x.max(axis=0) < [len(c.categories) for c in train.schema.columns]).all()
    )


def test_fits_looped_in_one_process_keep_their_memory_maps_bounded(data_dir, monkeypatch):
    """A black-box audit fits MST hundreds of times in one process; JAX's compiled programs used to
    pile up ≈ 1,000 memory maps a fit until the kernel's vm.max_map_count refused the 40th fit
    ("LLVM compilation error: Cannot allocate memory"). Here the guard is set to clear at any
    count: two fits in a row must end holding no more maps than after the first, and the
    dropped programs, recompiled, must give the same sample."""
    from methods import pgm

    if pgm.memory_maps() is None:
        pytest.skip("memory maps are counted from /proc (Linux)")
    train = ADULT_DISCRETE.load(data_dir, seed=0).train
    small = type(train)(train.x[:500], train.y[:500], train.schema)
    method = METHODS.get("mst")
    params = method.hyperparameters.resolve("adult-discrete", "smoke").params

    def fit_and_count(seed: int):
        ledger = PrivacyLedger(PrivacyBudget(1.0, 1e-5))
        context = FitContext(
            PrivacyBudget(1.0, 1e-5), ledger, params, seed, torch.device("cpu"), data_kind=DataKind.DISCRETE
        )
        sample = method.fit(PrivateData(small, ledger), context).sample(200)
        return sample.x, pgm.memory_maps()[0]

    first, _ = fit_and_count(1)  # compiles what any fit compiles, whatever the guard
    monkeypatch.setattr(pgm, "CROWDED_SHARE_OF_MAPS", 0.0)
    counts = [fit_and_count(seed)[1] for seed in (2, 3)]
    again, _ = fit_and_count(1)
    assert counts[-1] <= counts[0] + 100, counts  # unguarded: ≈ 1,000 more a fit
    np.testing.assert_array_equal(again, first)
    assert not pgm.make_room_for_compiled_programs(crowded_share=1.0)


def small_discrete(data_dir, columns: int, rows: int):
    from bench.core.data import LabelledData
    from datasets.discrete import discrete_schema

    train = ADULT_DISCRETE.load(data_dir, seed=0).train
    schema = discrete_schema(train.schema.columns[:columns])
    return LabelledData(train.x[:rows, :columns], train.y[:rows], schema)


@pytest.mark.parametrize("name", ["aim", "privbayes"])
def test_adaptive_methods_spend_exactly_their_target(data_dir, name):
    train = small_discrete(data_dir, columns=4, rows=3000)
    ledger = PrivacyLedger(PrivacyBudget(0.5, 1e-5))
    method = METHODS.get(name)
    params = method.hyperparameters.resolve("adult-discrete", "smoke").params
    context = FitContext(PrivacyBudget(0.5, 1e-5), ledger, params, 0, torch.device("cpu"), data_kind=DataKind.DISCRETE)
    model = method.fit(PrivateData(train, context.ledger), context)
    assert ledger.epsilon_spent == pytest.approx(0.5, rel=1e-6)
    assert ledger.delta_spent == (0 if name == "privbayes" else 1e-5)
    assert ledger.independent_check().epsilon <= 0.5 * 1.01
    sample = model.sample(300)
    assert sample.x.shape == (300, 4)
    assert (sample.x.max(axis=0) < [len(c.categories) for c in train.schema.columns]).all()


def test_privbayes_sensitivity_is_the_papers_lemma():
    from bench.privacy.releases import mutual_information_bits as mutual_information, mutual_information_sensitivity

    n = 1000
    worst = 0.0
    rng = np.random.default_rng(0)
    for _ in range(300):  # replace one row of a random binary table: I moves by at most the bound
        x = rng.integers(0, 2, (n, 2))
        y = x.copy()
        y[0] = 1 - x[0] if rng.random() < 0.5 else rng.integers(0, 2, 2)
        tables = [np.histogram2d(a[:, 0], a[:, 1], bins=2)[0] for a in (x, y)]
        worst = max(worst, abs(mutual_information(tables[0]) - mutual_information(tables[1])))
    assert worst <= mutual_information_sensitivity(n, binary=True)
    # adversarial: all rows equal except the replaced one, the lemma's extreme case
    x = np.zeros((n, 2), dtype=int)
    y = x.copy()
    y[0] = [1, 1]
    tables = [np.histogram2d(a[:, 0], a[:, 1], bins=2, range=[[0, 1], [0, 1]])[0] for a in (x, y)]
    change = abs(mutual_information(tables[0]) - mutual_information(tables[1]))
    assert change <= mutual_information_sensitivity(n, binary=True) * (1 + 1e-12)
    assert change > 0.5 * mutual_information_sensitivity(n, binary=True)


def test_independent_pair_tables_equal_mbi_projection(data_dir):
    """MST's pair scores use the product form of a 1-way-only model; it must equal mbi's own
    projection of the same model."""
    from methods.mst import independent_pair_tables
    from methods.pgm import Measurer, column_index, domain_of, estimate

    data = small_discrete(data_dir, columns=6, rows=1500)
    ledger = PrivacyLedger(PrivacyBudget(100.0, 1e-5))  # room for both test measurements
    domain, index = domain_of(data.schema), column_index(data.schema)
    measurer = Measurer(PrivateData(data, ledger), domain, index, np.random.default_rng(0))
    model = estimate(domain, measurer.measure([(a,) for a in domain.attributes], 3.0, "1-way marginals"), 200)
    pairs = [
        ("age", "workclass"),
        (domain.attributes[2], domain.attributes[5]),
        (domain.attributes[4], domain.attributes[1]),
    ]
    tables = independent_pair_tables(model, pairs)
    for pair in pairs:
        np.testing.assert_allclose(tables[pair], np.asarray(model.project(pair).datavector()), rtol=1e-6, atol=1e-6)
    two_way = estimate(domain, measurer.measure([pairs[0]], 3.0, "a 2-way marginal"), 20)
    with pytest.raises(ValueError, match="1-way cliques only"):
        independent_pair_tables(two_way, pairs)


def test_junction_tree_sizes_are_mbis_on_random_and_aim_sized_models():
    """AIM's model-size filter (methods.pgm.JunctionTreeSizes) is mbi's hypothetical_model_size,
    number for number: random domains with ties in the attribute sizes, trees (mbi's depth-first
    branch), isolated attributes, and a 36-column model of 1-way and 3-way cliques as AIM builds it.
    Each of these breaks it: taking the last of equal-cost attributes, dropping the tree branch,
    keeping non-maximal cliques."""
    import random
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
        from mbi.junction_tree import hypothetical_model_size

    from methods.pgm import JunctionTreeSizes

    rng = random.Random(0)
    cases = []
    for _ in range(150):
        names = [f"a{i}" for i in range(rng.randint(1, 12))]
        domain = mbi.Domain(names, [rng.choice([1, 2, 2, 3, 5, 10, 16, 50]) for _ in names])
        if rng.random() < 0.3:
            order = rng.sample(names, len(names))
            cliques = [(order[i], order[rng.randrange(i)]) for i in range(1, len(order))]
        else:
            cliques = [tuple(rng.sample(names, rng.randint(1, min(3, len(names))))) for _ in range(rng.randint(0, 20))]
        cases.append((domain, cliques))
    names = [f"c{i}" for i in range(36)]
    wide = mbi.Domain(names, [rng.choice([2, 3, 4, 8, 10]) for _ in names])
    cases.append((wide, [(a,) for a in names] + [tuple(rng.sample(names, 3)) for _ in range(12)]))
    for domain, cliques in cases:
        sizes = JunctionTreeSizes(domain, cliques)
        attributes = list(domain.attributes)
        extras = [None] + [tuple(rng.sample(attributes, min(len(attributes), rng.randint(1, 3)))) for _ in range(4)]
        for extra in extras:
            want = hypothetical_model_size(domain, cliques + ([extra] if extra else []))
            assert sizes.size_mb(extra) == want, (domain, cliques, extra)


def _string_hash() -> int:
    return hash("marital-status")


def test_every_cell_interpreter_hashes_strings_alike_whatever_the_runner_s_seed(monkeypatch):
    """The local executor starts each cell's interpreter with PYTHONHASHSEED = HASH_SEED (the
    end-to-end consequence for AIM is the slow test below)."""
    from concurrent.futures import ProcessPoolExecutor

    from bench.harness.executors import LocalExecutor
    from bench.harness.worker import HASH_SEED

    hashes = []
    for runner_seed in ("random", "7"):
        monkeypatch.setenv("PYTHONHASHSEED", runner_seed)
        executor = LocalExecutor()
        with ProcessPoolExecutor(1, mp_context=executor.context) as pool:
            hashes.append(pool.submit(_string_hash).result())
        executor.close()
    assert os.environ["PYTHONHASHSEED"] == HASH_SEED and hashes[0] == hashes[1]


@pytest.mark.slow
def test_a_marginal_method_s_cell_draws_the_same_rows_whatever_hash_seed_its_runner_has(workdir, data_dir):
    """mbi's sampler iterates a set of column names, whose order follows Python's per-process
    string hashing: the same AIM cell drew other rows in every process until each cell's
    interpreter got a fixed PYTHONHASHSEED (bench.harness.worker.HASH_SEED)."""
    import hashlib

    from tests.conftest import run_cli

    digests = []
    for seed in ("1", "2"):
        before = set(workdir.glob("mlartifacts/*/artifacts/synthetic.npz"))
        done = run_cli(
            "run", "--methods", "aim", "--datasets", "adult-discrete", "--eps", "1", "--profile", "paper",
            "--evaluators", "none", "--data-dir", str(data_dir), "--no-progress", "--set", "aim.iterations=20", "--set", "aim.final_iterations=50",
            "--experiment", f"hash-seed-{seed}", env={"PYTHONHASHSEED": seed},
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        (sample,) = set(workdir.glob("mlartifacts/*/artifacts/synthetic.npz")) - before
        digests.append(hashlib.sha256(sample.read_bytes()).hexdigest())
    assert digests[0] == digests[1]


@pytest.mark.slow
def test_a_later_process_loads_private_pgm_s_compiled_programs_and_samples_the_same(tmp_path, data_dir):
    """With $DPBENCH_JAX_CACHE, methods/pgm.py keeps mbi's compiled XLA programs in the grid's shared cache: a second cell in
    a fresh process compiles (almost) nothing new, and its sample is the one a process without the
    cache draws (≈ 1 min: three MST smoke fits, each in its own interpreter)."""
    import subprocess
    import sys

    from bench.harness.samples import SAMPLE_FILE

    fit = (
        "import sys, bench; r = bench.run_cell('mst', 'adult-discrete', epsilon=1.0, evaluators=(), "
        "profile='smoke', data_dir=sys.argv[1], out=sys.argv[2]); assert r.ok, r.error"
    )
    cache = tmp_path / "cache"
    env = {**os.environ, "DPBENCH_CACHE_DIR": str(cache), "DPBENCH_JAX_CACHE": "1"}
    counts = []
    for name, extra in (("first", {}), ("second", {}), ("uncached", {"JAX_ENABLE_COMPILATION_CACHE": "false"})):
        subprocess.run(
            [sys.executable, "-c", fit, str(data_dir), str(tmp_path / name)], env={**env, **extra}, check=True
        )
        counts.append(len(list((cache / "jax").iterdir())))
    assert counts[0] > 100, counts  # ≈ 200 programs written by the first fit
    assert counts[1] - counts[0] <= 0.05 * counts[0], counts  # the second loaded them
    samples = [np.load(tmp_path / name / SAMPLE_FILE) for name in ("first", "second", "uncached")]
    for other in samples[1:]:
        assert sorted(other.files) == sorted(samples[0].files)
        for key in samples[0].files:
            np.testing.assert_array_equal(other[key], samples[0][key])
