"""The conformance kit (bench.testing.check_method) passes a sound method and catches broken ones by
a named check. The broken variants are the issue-29 attacker's: each releases Gaussian 1-way
histograms through the ledger, plus one bug that the ledger's own arithmetic cannot see."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from bench.core.data import DataKind, LabelledData
from bench.core.params import HyperParameters, NoParameters, Setting
from bench.privacy.releases import COUNT_L1_SENSITIVITY, COUNT_L2_SENSITIVITY
from bench.privacy.private_data import CountQuery, PrivateData
from bench.testing import CHECKS, ConformanceError, adversarial_neighbour, check_method, redrawn_from_public_domain

DATA_DIR = os.environ.get("DPBENCH_DATA_DIR")
ONLY_DISCRETE = {DataKind.DISCRETE: "adult-discrete"}
ROWS = 1500


@dataclass
class HistogramSampler:
    histograms: list[np.ndarray]
    schema: object
    rng: np.random.Generator
    global_numpy: bool = False

    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        rng = np.random if self.global_numpy else self.rng
        draws = [rng.choice(len(h), size=n, p=h / h.sum()) for h in self.histograms]
        y = draws[-1] if labels is None else labels
        return LabelledData(np.stack(draws[:-1], 1).astype(np.float32), y, self.schema)


def _queries(schema) -> list[CountQuery]:
    """The 1-way histograms of every column and the label, as handle queries."""
    columns = [
        CountQuery(f"1-way histogram of {c.name}", lambda rows, j=j: rows.x[:, j].astype(int), len(c.categories))
        for j, c in enumerate(schema.columns)
    ]
    return columns + [CountQuery("1-way histogram of the label", lambda rows: rows.y, schema.n_classes)]


def _counts(train: LabelledData) -> list[np.ndarray]:
    sizes = [len(c.categories) for c in train.schema.columns] + [train.schema.n_classes]
    columns = [*train.x.T.astype(int), train.y]
    return [np.bincount(c, minlength=k).astype(float) for c, k in zip(columns, sizes)]


def _sampler(histograms, schema, context, global_numpy=False) -> HistogramSampler:
    return HistogramSampler(
        [np.clip(h, 0, None) + 1e-9 for h in histograms], schema, context.rng("sampling"), global_numpy
    )


BROKEN = "a deliberately broken variant for the kit's tests"


@dataclass(frozen=True)
class LaplaceHistograms:
    """Laplace-noised 1-way histograms through the handle; ``breakage`` switches on one deliberate bug."""

    name: str = "test-laplace"
    data_kinds: frozenset = frozenset({DataKind.DISCRETE})
    private: bool = True
    hyperparameters: HyperParameters = field(default_factory=lambda: HyperParameters(NoParameters))
    breakage: str = ""

    def fit(self, data: PrivateData, context) -> HistogramSampler:
        queries = _queries(data.schema)
        epsilon = context.budget.epsilon / len(queries) * (3 if self.breakage == "overspend" else 1)
        rng = context.rng("noise")
        noisy = data.laplace_counts(queries, epsilon=epsilon, rng=rng)
        if self.breakage == "own-noise":  # records the releases, then adds noise the ledger never drew
            noisy = [
                c + rng.laplace(0, COUNT_L1_SENSITIVITY / epsilon, c.shape) for c in _counts(data.rows(trusted=BROKEN))
            ]
        if self.breakage == "ignores-release":
            noisy = [np.ones_like(c) for c in noisy]
        if self.breakage == "unseeded":
            return HistogramSampler([np.clip(h, 0, None) + 1e-9 for h in noisy], data.schema, np.random.default_rng())
        return _sampler(noisy, data.schema, context)


@dataclass(frozen=True)
class GaussianHistograms:
    """Gaussian-noised 1-way histograms (L2 sensitivity √2 each under replace-one) through the
    handle, with the attacker's bugs of issue 29 as ``breakage``: each needs the raw rows
    (``data.rows``), since the handle's queries derive the sensitivity and return only noisy values."""

    name: str = "test-gaussian"
    data_kinds: frozenset = frozenset({DataKind.DISCRETE})
    private: bool = True
    hyperparameters: HyperParameters = field(default_factory=lambda: HyperParameters(NoParameters))
    data_independent: bool = False
    breakage: str = ""

    def fit(self, data: PrivateData, context) -> HistogramSampler:
        queries = _queries(data.schema)
        sigma = context.ledger.calibrate_gaussian(len(queries))
        if self.breakage == "loads-its-own-rows":  # another door: the registry (issue 56, kind 1)
            from bench.api.registry import DATASETS

            DATASETS.get("adult-discrete").load(None, context.seed)
        if self.breakage == "recognises-the-kit":  # honest only when its ledger looks instrumented (kind 4)
            ledger = context.ledger
            checked = any(getattr(ledger, name, None) for name in ("observers", "replay", "noise_source"))
            breakage = "" if checked else "one-column-from-its-exact-histogram"
        elif self.breakage == "half-sensitivity-above-eps-5":  # misbehaves only at a large ε (kind 3)
            breakage = "half-sensitivity" if context.budget.epsilon > 5 else ""
        elif self.breakage == "half-sensitivity-above-5000-rows":  # misbehaves only on more rows (kind 3)
            breakage = "half-sensitivity" if data.n_rows > 5000 else ""
        else:
            breakage = self.breakage
        if breakage in ("", "numpy-global-generator", "loads-its-own-rows"):
            noisy = data.counts(queries, noise_multiplier=sigma, rng=context.rng("noise"))
            return _sampler(noisy, data.schema, context, global_numpy=breakage == "numpy-global-generator")
        rows = data.rows(trusted=BROKEN)
        counts = _counts(rows)
        if breakage == "reads-rows-records-nothing":
            return _sampler(counts, data.schema, context)
        if breakage == "first-column-shifted-by-a-statistic-of-all-rows-but-the-first":  # kind 2
            k = len(counts[0])
            shift = int(round(rows.x[1:, 0].mean() * 1000))  # row 0 alone never moves it
            counts[0] = np.roll(np.bincount(rows.x[:, 0].astype(int), minlength=k).astype(float), shift)
        declared = COUNT_L2_SENSITIVITY / 2 if breakage == "half-sensitivity" else COUNT_L2_SENSITIVITY
        noisy = context.ledger.gaussian_each(
            counts, sensitivity=declared, noise_multiplier=sigma, what="1-way histograms", rng=context.rng("noise")
        )
        if breakage == "halved-noise-after-the-door":
            noisy = [c + (h - c) / 2 for c, h in zip(counts, noisy)]
        if breakage == "extra-table-own-torch-noise":
            extra = torch.as_tensor(counts[0]) + torch.randn(
                len(counts[0]), generator=context.torch_rng("extra"), dtype=torch.float64
            )
            noisy = [extra.numpy(), *noisy[1:]]
        if breakage == "one-column-from-its-exact-histogram":
            noisy = [counts[0], *noisy[1:]]
        if breakage == "hands-back-training-rows":  # its sample is its training rows (the output check)
            return TrainingRows(rows)
        return _sampler(noisy, data.schema, context)


@dataclass
class TrainingRows:
    rows: LabelledData

    def sample(self, n: int, labels: np.ndarray | None = None) -> LabelledData:
        index = np.arange(n) % len(self.rows)
        return LabelledData(self.rows.x[index], self.rows.y[index], self.rows.schema)


def check(method, **kwargs):
    return check_method(method, data_dir=DATA_DIR, datasets=ONLY_DISCRETE, rows=ROWS, **kwargs)


pytestmark = pytest.mark.skipif(not DATA_DIR, reason="needs DPBENCH_DATA_DIR (adult-discrete)")


@pytest.mark.parametrize("method", [LaplaceHistograms(), GaussianHistograms()], ids=["laplace", "gaussian"])
def test_a_sound_method_passes_every_check(method):
    report = check(method)
    assert report.passed == ["adult-discrete"]
    assert set(report.checks["adult-discrete"]) == set(CHECKS) - {
        "declaration",
        "data_independence",
        "audit",
        "thread_invariance",
    }


@dataclass(frozen=True)
class ThreadCountHistograms(GaussianHistograms):
    """Declares its fits thread-invariant, but its sample depends on torch's thread count (as a
    fused batch norm or a thread-split reduction would, in the last bits)."""

    name: str = "test-thread-count"
    thread_invariant_kinds: frozenset = frozenset({DataKind.DISCRETE})

    def fit(self, data: PrivateData, context) -> HistogramSampler:
        noisy = data.counts(
            _queries(data.schema),
            noise_multiplier=context.ledger.calibrate_gaussian(len(_queries(data.schema))),
            rng=context.rng("noise"),
        )
        return _sampler([h + np.eye(len(h))[0] * 50 * torch.get_num_threads() for h in noisy], data.schema, context)


def test_a_wrong_thread_invariance_declaration_is_caught_and_a_true_one_passes():
    with pytest.raises(ConformanceError, match=r"\[thread_invariance\]"):
        check(ThreadCountHistograms())
    honest = type("HonestThreads", (GaussianHistograms,), {"thread_invariant_kinds": frozenset({DataKind.DISCRETE})})
    report = check(honest())
    assert "thread_invariance" in report.checks["adult-discrete"]


def test_every_broken_variant_that_reads_raw_rows_is_also_caught_by_queries_only():
    """The handle's queries cannot express the attacker's bugs (their sensitivity is derived, their
    values come back noisy): each broken variant has to ask for the raw rows, which the named check
    queries_only reports whatever the bug."""
    for breakage in (
        "halved-noise-after-the-door",
        "extra-table-own-torch-noise",
        "half-sensitivity",
        "one-column-from-its-exact-histogram",
    ):
        with pytest.raises(ConformanceError, match=r"\[queries_only\].*deliberately broken"):
            check(GaussianHistograms(breakage=breakage))


@pytest.mark.parametrize(
    "method,check_name",
    [
        (GaussianHistograms(breakage="halved-noise-after-the-door"), "release_replay"),
        (GaussianHistograms(breakage="extra-table-own-torch-noise"), "release_replay"),
        (GaussianHistograms(breakage="half-sensitivity"), "sensitivity_probe"),
        (GaussianHistograms(breakage="one-column-from-its-exact-histogram"), "release_replay"),
        (GaussianHistograms(breakage="reads-rows-records-nothing", data_independent=True), "data_independence"),
        (GaussianHistograms(breakage="numpy-global-generator"), "global_seed_independence"),
        (LaplaceHistograms(breakage="own-noise"), "release_replay"),
        (LaplaceHistograms(breakage="ignores-release"), "noise_reaches_output"),
        (LaplaceHistograms(breakage="unseeded"), "global_seed_independence"),
        (LaplaceHistograms(breakage="overspend"), "grid_cell"),
    ],
    ids=lambda v: v if isinstance(v, str) else v.breakage,
)
def test_each_broken_variant_is_caught_by_its_named_check(method, check_name):
    with pytest.raises(ConformanceError, match=rf"\[{check_name}\]"):
        check(method)


QUERIES_ONLY = {"queries_only": "it reads the raw rows for its own accounting (the bug is elsewhere)"}


@pytest.mark.parametrize(
    "breakage,check_name,expected",
    [
        (
            "first-column-shifted-by-a-statistic-of-all-rows-but-the-first",
            r"sensitivity_probe\] adult-discrete: .*row 1499 replaced",
            QUERIES_ONLY,
        ),
        ("recognises-the-kit", r"release_replay", QUERIES_ONLY),
        ("half-sensitivity-above-eps-5", r"sensitivity_probe\] adult-discrete at ε = 8", QUERIES_ONLY),
        ("half-sensitivity-above-5000-rows", r"sensitivity_probe\] adult-discrete, all [\d,]+ rows", QUERIES_ONLY),
        (
            "hands-back-training-rows",
            r"no_training_copies\] adult-discrete: the synthetic sample copies training rows",
            {**QUERIES_ONLY, "release_replay": "it copies rows", "sensitivity_probe": "it copies rows"},
        ),
        ("loads-its-own-rows", r"DataWallError: .*the data wall refuses it", {}),
    ],
)
def test_issue_56_plugins_that_hid_from_the_kit_are_caught(breakage, check_name, expected):
    """Issue 56: each plugin passed the kit of e5ccc90 — a dependence that skips row 0 (the only
    row the probe replaced), a method honest only while its ledger shows the kit's instruments, one
    that misbehaves only above the kit's ε = 1, one whose output is its training rows, one that
    loads its rows through the registry (the kit ran fits outside the data wall)."""
    with pytest.raises(ConformanceError, match=check_name):
        check(GaussianHistograms(breakage=breakage), expected_failures=expected)


@dataclass(frozen=True)
class Careful:
    careful: bool


@dataclass(frozen=True)
class CarefulOnlyWhenSmoke(GaussianHistograms):
    """Half the sensitivity at its real (paper) settings, the right one at the smoke profile the
    kit fits at by default (issue 56, kind 3: the real profile as well as smoke)."""

    name: str = "test-careful-when-smoke"
    hyperparameters: HyperParameters = field(
        default_factory=lambda: HyperParameters(
            Careful, defaults={"careful": Setting(False, "test")}, profiles={"smoke": {"careful": True}}
        )
    )

    def fit(self, data: PrivateData, context) -> HistogramSampler:
        breakage = "" if context.params.careful else "half-sensitivity"
        return GaussianHistograms(breakage=breakage).fit(data, context)


def test_a_method_that_misbehaves_only_at_its_real_profile_is_caught_when_the_kit_tries_it():
    check(CarefulOnlyWhenSmoke())  # at smoke alone it hides
    with pytest.raises(ConformanceError, match=r"\[sensitivity_probe\] adult-discrete at the paper profile"):
        check(CarefulOnlyWhenSmoke(), profiles=("paper",))


def test_a_private_cell_whose_sample_copies_training_rows_is_warned_of_and_tagged():
    from bench.api.registry import METHODS
    from bench.harness.api import run_cell

    for breakage, tagged in (("hands-back-training-rows", True), ("", False)):
        method = GaussianHistograms(name=f"test-copies-{breakage or 'honest'}", breakage=breakage)
        METHODS.register(method)
        try:
            with pytest.warns(UserWarning, match="copies training rows") if tagged else contextlib.nullcontext():
                result = run_cell(method.name, "adult-discrete", evaluators=(), profile="smoke", data_dir=DATA_DIR)
        finally:
            METHODS.unregister(method.name)
        assert result.ok, result.error
        assert ("warning.training_copies" in result.tags) == tagged, result.tags


def test_the_probe_replaces_rows_across_the_table():
    from bench.api.registry import DATASETS
    from bench.testing.method import probed_rows

    train = DATASETS.get("adult-discrete").load(DATA_DIR, 0).train
    head = LabelledData(train.x[:ROWS], train.y[:ROWS], train.schema)
    rows = probed_rows(head)
    assert rows[0] == ROWS - 1 and 0 in rows and len(rows) >= 3


def test_the_kit_s_small_audit_refutes_the_understated_sensitivity_and_passes_the_honest_release():
    broken = GaussianHistograms(name="test-gaussian-half", breakage="half-sensitivity")
    with pytest.raises(ConformanceError, match=r"\[audit\] adult-discrete: .*VIOLATION"):
        check(broken, audit_runs=300, expected_failures={"sensitivity_probe": "caught here by the audit instead"})
    assert "audit" in check(GaussianHistograms(), audit_runs=300).checks["adult-discrete"]


def test_an_expected_failure_is_noted_and_an_unexpected_pass_is_not_allowed():
    broken = GaussianHistograms(breakage="half-sensitivity")
    report = check(
        broken,
        expected_failures={
            "sensitivity_probe": "a known understatement, for the test",
            "queries_only": "it reads the raw rows to declare its own sensitivity",
        },
    )
    assert any(note.startswith("[sensitivity_probe]") for note in report.notes)
    with pytest.raises(ConformanceError, match=r"\[release_replay\] expected to fail"):
        check(GaussianHistograms(), expected_failures={"release_replay": "it does not"})


def test_the_neighbour_replaces_exactly_one_row_and_the_redraw_keeps_only_the_public_size():
    from bench.api.registry import DATASETS

    train = DATASETS.get("adult-discrete").load(DATA_DIR, 0).train
    head = LabelledData(train.x[:500], train.y[:500], train.schema)
    neighbour = adversarial_neighbour(head, row=0)
    changed = np.flatnonzero((neighbour.x != head.x).any(1) | (neighbour.y != head.y))
    assert changed.tolist() == [0]
    assert neighbour.y[0] != head.y[0] or train.schema.n_classes == 1
    redrawn = redrawn_from_public_domain(head, np.random.default_rng(0))
    assert len(redrawn) == len(head) and (redrawn.x != head.x).any(1).mean() > 0.9
    for j, column in enumerate(train.schema.columns):
        assert 0 <= redrawn.x[:, j].min() and redrawn.x[:, j].max() < len(column.categories)


def test_a_bad_declaration_is_named():
    with pytest.raises(ConformanceError, match=r"\[declaration\] data_kinds must be a non-empty set"):
        check_method(dataclasses.replace(LaplaceHistograms(), data_kinds=frozenset()))


def test_run_cell_is_the_python_api_of_one_cell(tmp_path):
    import bench

    private = bench.run_cell(
        "independent", "adult-discrete", epsilon=0.5, evaluators=(), data_dir=DATA_DIR, out=tmp_path
    )
    assert private.ok, private.error
    assert private.metrics["privacy.epsilon_spent"] <= 0.5 * (1 + 1e-9)
    assert private.ledger["releases"] and (tmp_path / "synthetic_sample.csv").exists()
    assert not any(key.startswith("marginals.") for key in private.metrics)  # evaluators=(): none
    assert private.folder == tmp_path
    evaluated = bench.run_cell("real", "gmm2d", evaluators=("nll",))
    assert evaluated.ok and evaluated.metrics["nll.mean"] > 0
    from bench.api.registry import RegistryError

    with pytest.raises(RegistryError, match="unknown method 'no-such-method'"):
        bench.run_cell("no-such-method", "adult-discrete")


def test_run_cell_without_a_folder_leaves_nothing_in_the_temporary_directory(tmp_path, monkeypatch):
    """Issue 61: every call left a dpbench-cell-* folder holding its synthetic sample — for
    ``real``, the training rows — in $TMPDIR."""
    import tempfile

    import bench

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = bench.run_cell("real", "cervical", evaluators=(), data_dir=DATA_DIR)
    assert result.ok and result.folder is None and result.ledger is not None
    assert list(tmp_path.iterdir()) == []


# ---- registration, datasets, evaluators -------------------------------------------------------------


def test_an_incomplete_entry_is_refused_at_registration_with_one_line():
    from bench.api.registry import DATASETS, EVALUATORS, METHODS, RegistryError

    @dataclass(frozen=True)
    class NoFit:
        name: str = "test-no-fit"
        description: str = ""
        data_kinds: frozenset = frozenset({DataKind.DISCRETE})
        private: bool = True
        hyperparameters: HyperParameters = field(default_factory=lambda: HyperParameters(NoParameters))

    for registry, entry, complaint in [
        (METHODS, NoFit(), "needs a method fit"),
        (METHODS, dataclasses.replace(LaplaceHistograms(), private="yes"), "boolean attribute 'private'"),
        (EVALUATORS, NoFit(), "metrics must be a mapping"),
        (DATASETS, NoFit(), "kind must be a bench.core.data.DataKind"),
    ]:
        with pytest.raises(RegistryError, match=complaint) as refused:
            registry.register(entry)
        assert "\n" not in str(refused.value) and "is incomplete" in str(refused.value)
        assert entry.name not in registry


@pytest.mark.parametrize("name", ["gmm2d", "cervical", "adult-discrete"])
def test_builtin_datasets_pass_check_dataset(name):
    from bench.api.registry import DATASETS
    from bench.testing import check_dataset

    report = check_dataset(DATASETS.get(name), data_dir=DATA_DIR)
    assert report.passed == [name] and len(report.checks[name]) == 5


@dataclass(frozen=True)
class BrokenDataset:
    """adult-discrete with one bug."""

    breakage: str
    name: str = "test-broken-dataset"
    description: str = ""
    kind: DataKind = DataKind.DISCRETE

    @property
    def schema(self):
        from bench.api.registry import DATASETS

        return DATASETS.get("adult-discrete").schema

    def load(self, data_dir, seed, protocol="sound"):
        from bench.core.data import Split
        from bench.api.registry import DATASETS

        split = DATASETS.get("adult-discrete").load(data_dir, seed, protocol)
        train = split.train
        if self.breakage == "unseeded-split":
            keep = np.random.default_rng().permutation(len(train))
            train = LabelledData(train.x[keep], train.y[keep], train.schema)
        if self.breakage == "code-outside-domain":
            x = train.x.copy()
            x[0, 0] = len(train.schema.columns[0].categories)
            train = LabelledData(x, train.y, train.schema)
        if self.breakage == "seed-dependent-size":
            train = LabelledData(train.x[seed:], train.y[seed:], train.schema)
        return Split(train, split.test, split.caveats)


@pytest.mark.parametrize(
    "breakage,check_name",
    [
        ("unseeded-split", "deterministic_split"),
        ("code-outside-domain", "public_domain"),
        ("seed-dependent-size", "public_size"),
    ],
)
def test_a_broken_dataset_is_caught_by_its_named_check(breakage, check_name):
    from bench.testing import check_dataset

    with pytest.raises(ConformanceError, match=rf"\[{check_name}\]"):
        check_dataset(BrokenDataset(breakage), data_dir=DATA_DIR)


class PlainMarginalGap:
    """An evaluator that is not a dataclass (it used to fail every cell with a TypeError), with
    optional bugs: an undeclared metric, or state carried between evaluations."""

    name = "test-plain-evaluator"
    description = "mean absolute gap of 1-way marginals"
    data_kinds = frozenset({DataKind.DISCRETE})

    def __init__(self, breakage: str = "") -> None:
        from bench.api.contracts import Direction, MetricSpec

        self.metrics = {"gap": MetricSpec.quality(Direction.LOWER, "mean |p_syn − p_real| of 1-way marginals")}
        self.breakage, self.calls = breakage, 0

    def applies_to(self, schema) -> bool:
        return True

    def evaluate(self, synthetic, real_train, real_test, context):
        from bench.api.contracts import Evaluation

        self.calls += 1
        gaps = [
            abs(
                np.bincount(synthetic.x[:, j].astype(int), minlength=len(c.categories)) / len(synthetic)
                - np.bincount(real_test.x[:, j].astype(int), minlength=len(c.categories)) / len(real_test)
            ).mean()
            for j, c in enumerate(synthetic.schema.columns)
        ]
        metrics = {"gap": float(np.mean(gaps)) + (self.calls if self.breakage == "stateful" else 0)}
        if self.breakage == "undeclared":
            metrics["surprise"] = 1.0
        return Evaluation(metrics)


def test_a_plain_class_evaluator_passes_the_kit_and_runs_in_a_cell():
    import bench
    from bench.api.registry import EVALUATORS
    from bench.testing import check_evaluator

    assert check_evaluator(PlainMarginalGap(), data_dir=DATA_DIR).passed == ["adult-discrete"]
    EVALUATORS.register(PlainMarginalGap())
    try:
        result = bench.run_cell("uniform", "adult-discrete", evaluators=("test-plain-evaluator",), data_dir=DATA_DIR)
    finally:
        EVALUATORS.unregister("test-plain-evaluator")
    assert result.ok, result.error
    assert result.metrics["test-plain-evaluator.gap"] > 0


@pytest.mark.parametrize("breakage,check_name", [("undeclared", "declared_metrics"), ("stateful", "stateless")])
def test_a_broken_evaluator_is_caught_by_its_named_check(breakage, check_name):
    from bench.testing import check_evaluator

    with pytest.raises(ConformanceError, match=rf"\[{check_name}\]"):
        check_evaluator(PlainMarginalGap(breakage), data_dir=DATA_DIR)


@pytest.mark.parametrize("name", ["downstream", "marginals", "nll"])
def test_builtin_evaluators_pass_check_evaluator(name):
    from bench.api.registry import EVALUATORS
    from bench.testing import check_evaluator

    report = check_evaluator(EVALUATORS.get(name), data_dir=DATA_DIR, rows=300)
    assert report.passed and all(len(checks) == 3 for checks in report.checks.values())
