"""The conformance kit: ``check_method(adapter)`` runs a method adapter through named checks every
method must pass (like scikit-learn's ``check_estimator``). The registry-wide test calls it for
every built-in; a plugin author calls it in their own tests::

    from bench.testing import check_method
    check_method(MyMethod(), data_dir="path/to/data")

The checks (``CHECKS``, each a small function of a :class:`Subject`):

- ``declaration``: name, data kinds, ``private``, hyperparameters, ``fit``.
- ``grid_cell``: one cell through the grid's worker (fit, the independent accountant's
  recomputation of the ledger, sampling), within the target ε.
- ``sample_schema``: ``sample(n)`` gives n rows in the training schema.
- ``global_seed_independence``: the same run seed under different *global* seeds (``random``,
  NumPy's and torch's global generators) gives the same synthetic data.
- ``infinite_epsilon_noiseless``: at ε = ∞ no release adds noise.
- ``noise_reaches_output``: other ledger noise gives other synthetic data.
- ``release_replay``: fit on a different dataset of the same size (every row drawn afresh from
  the public domain) with the ledger handing back the first fit's noisy values: a method whose
  only window on the rows is its releases must give the same synthetic data. This catches a
  clean value used after the noise door, noise drawn outside it, rows read without a release.
- ``sensitivity_probe``: the same replay on a neighbour under replace-one (row 0 replaced by an
  adversarial row), comparing each release's *clean* value between the two fits: a difference
  beyond the declared sensitivity (L2 for Gaussian and DP-SGD, L1 for Laplace, the largest score
  change for the exponential mechanism) proves the declaration understated. Replay keeps both
  fits on the same trajectory, so the clean values are comparable release by release.
- ``data_independence`` (``data_independent`` methods): no release, and the same synthetic data
  on a different dataset.
- ``queries_only`` (private methods): the method reached its rows only through the handle's
  metered queries (``PrivateData.counts``, ``PrivateData.sum``), never ``data.rows(trusted=…)``,
  whose uses only the method's own arithmetic vouches for.
- ``thread_invariance`` (data kinds the method lists in ``thread_invariant_kinds``): the same
  synthetic data at 1 and at 2 torch threads, so the runner may lend the fit idle cores.
- ``audit`` (only with ``audit_runs`` > 0): ``bench audit``'s canary attack on the method's
  releases, ``audit_runs`` fits per side at ε = 4, δ = 0.05 on 100 rows; fails on a VIOLATION — an ε
  lower bound above the claim, or a fitted μ whose lower confidence bound exceeds the claimed μ.

A failing check raises :class:`ConformanceError` naming it (``[release_replay] …``); pass
``expected_failures={"check": "why"}`` to record a known failure instead (an unexpected pass of
it is a failure too). A kind whose test dataset cannot be loaded (files missing) is skipped and
named in the returned report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from bench.core.data import ColumnKind, DataError, DataKind, LabelledData, Split
from bench.api.contracts import FitContext, dataset_problems, evaluator_problems, method_problems
from bench.api.registry import DATASETS, METHODS
from bench.harness.api import run_cell
from bench.privacy.budget import PrivacyBudget
from bench.privacy.ledger import PrivacyLedger, ReleaseEvent, ReleaseReplay, ReplayDiverged, snapshot
from bench.privacy.private_data import PrivateData
from bench.privacy.releases import GaussianRelease

# A small dataset of each kind (their rows cap the cost: the checks fit each method several times).
TEST_DATASETS: dict[DataKind, str] = {
    DataKind.TWO_D: "gmm2d",
    DataKind.TABULAR: "cervical",
    DataKind.DISCRETE: "adult-discrete",
}
ROWS = 3000
SAMPLE = 200
EPSILON = 1.0
GLOBAL_SEEDS = (0, 918_273)  # two global seeds under one run seed
SENSITIVITY_SLACK = 1e-3  # relative: float32 sums of thousands of rows round


class ConformanceError(AssertionError):
    pass


@dataclass
class ConformanceReport:
    passed: list[str] = field(default_factory=list)  # datasets on which every check passed
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checks: dict[str, list[str]] = field(default_factory=dict)  # dataset → the checks it passed


@dataclass
class Fit:
    sample: LabelledData
    events: list[ReleaseEvent]
    trusted_reads: list[str] = field(default_factory=list)  # why the method read raw rows (PrivateData.rows)


def _recorded(events: list[ReleaseEvent]) -> Callable[[ReleaseEvent], None]:
    def observe(event: ReleaseEvent) -> None:  # copies: a method may change its values in place later
        events.append(ReleaseEvent(event.release, snapshot(event.clean), snapshot(event.noisy), event.each))

    return observe


@dataclass
class Subject:
    """One method on one test dataset, with the fits the checks share (each made at most once)."""

    adapter: Any
    dataset: str
    split: Split
    overrides: Mapping[str, str] | None

    @property
    def private(self) -> bool:
        return bool(self.adapter.private)

    @property
    def data_independent(self) -> bool:
        return bool(getattr(self.adapter, "data_independent", False))

    def fit(
        self,
        train: LabelledData,
        *,
        epsilon: float = EPSILON,
        global_seed: int = GLOBAL_SEEDS[0],
        noise_source: Any = None,
        replay: ReleaseReplay | None = None,
    ) -> Fit:
        """Fit as the worker would (run seed 0, CPU, smoke profile) and sample SAMPLE rows."""

        from bench.harness.worker import seed_everything

        seed_everything(global_seed)
        private = math.isfinite(epsilon) and self.private
        resolved = self.adapter.hyperparameters.resolve(self.dataset, "smoke", self.overrides, private=private)
        budget = PrivacyBudget(epsilon, 1e-5) if private else PrivacyBudget.non_private()
        events: list[ReleaseEvent] = []
        ledger = PrivacyLedger(budget, noise_source=noise_source, replay=replay, observers=[_recorded(events)])
        context = FitContext.of(DATASETS.get(self.dataset), resolved.params, 0, ledger)
        fitted = self.adapter.fit(PrivateData(train, ledger), context)
        return Fit(fitted.sample(SAMPLE), events, list(ledger.trusted_reads))

    @cached_property
    def first(self) -> Fit:
        return self.fit(self.split.train)

    def replayed_on(self, train: LabelledData) -> Fit:
        outputs = [(event.release.what, event.noisy) for event in self.first.events]
        return self.fit(train, replay=ReleaseReplay(outputs))

    @cached_property
    def far_dataset(self) -> LabelledData:
        return redrawn_from_public_domain(self.split.train, np.random.default_rng(20261125))

    @cached_property
    def neighbour(self) -> LabelledData:
        return adversarial_neighbour(self.split.train, row=0)


# ---- the named checks: each returns its problems (empty: passed) -----------------------------------


def check_sample_schema(subject: Subject) -> list[str]:
    sample = subject.first.sample
    if sample.schema != subject.split.train.schema or len(sample) != SAMPLE:
        return ["sample(n) must return n rows in the training data's schema"]
    return []


def check_global_seed_independence(subject: Subject) -> list[str]:
    again = subject.fit(subject.split.train, global_seed=GLOBAL_SEEDS[1])
    if not _same(subject.first.sample, again.sample):
        return [
            "the same run seed under another global seed gave different synthetic data "
            "(draw randomness from the context's streams: context.rng(name), context.torch_rng(name))"
        ]
    return []


def check_infinite_epsilon_noiseless(subject: Subject, notes: list[str]) -> list[str]:
    try:
        infinite = subject.fit(subject.split.train, epsilon=math.inf)
    except ValueError as refusal:  # a method planned from a finite budget may refuse ε = ∞, saying so
        notes.append(f"{subject.dataset}: refuses ε = ∞ ({refusal})")
        return []
    if any(_is_additive(e) and not _close(e.clean, e.noisy) for e in infinite.events):
        return ["the ε = ∞ fit added noise"]
    return []


def check_noise_reaches_output(subject: Subject) -> list[str]:
    if not subject.first.events:
        return [
            "private, but recorded no release through the ledger (gaussian, laplace, exponential, subsampled_phase)"
        ]
    other = subject.fit(subject.split.train, noise_source=np.random.default_rng(1))
    if _same(subject.first.sample, other.sample):
        return ["other ledger noise gave the same synthetic data: the released noise does not reach the output"]
    return []


def check_release_replay(subject: Subject) -> list[str]:
    try:
        replayed = subject.replayed_on(subject.far_dataset)
    except ReplayDiverged as error:
        return [str(error)]
    if not _same(subject.first.sample, replayed.sample):
        return [
            "given the same released values, a fit on other rows gave other synthetic data: the method reads "
            "the rows outside its releases (a clean value used after the noise door, noise drawn outside the "
            "ledger, or rows used directly)"
        ]
    return []


def check_sensitivity_probe(subject: Subject) -> list[str]:
    try:
        probe = subject.replayed_on(subject.neighbour)
    except ReplayDiverged as error:
        return [str(error)]
    problems = []
    for index, (mine, theirs) in enumerate(zip(subject.first.events, probe.events)):
        declared, moved = mine.release.sensitivity, clean_distance(mine, theirs)
        if moved > declared * (1 + SENSITIVITY_SLACK) + 1e-9:
            problems.append(
                f"release {index + 1} {mine.release.what!r} moved by {moved:.4g} between neighbours "
                f"(one row replaced) but declares sensitivity {declared:.4g}"
            )
    return problems[:3]


def check_queries_only(subject: Subject) -> list[str]:
    """A private method reaches its rows only through the handle's metered queries: every raw read
    (``data.rows(trusted=…)``) is a computation on private rows that no check can bound."""
    reads = list(dict.fromkeys(subject.first.trusted_reads))
    if reads:
        return [f"read the raw rows outside the metered queries (data.rows): {reads[0]}"]
    return []


def check_thread_invariance(subject: Subject) -> list[str]:
    """A method that declares this data kind in ``thread_invariant_kinds`` gives the same synthetic
    data at 1 and 2 torch threads (fit and sample), so the runner may lend it idle cores."""
    import torch

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = subject.fit(subject.split.train)
        torch.set_num_threads(2)
        two = subject.fit(subject.split.train)
    finally:
        torch.set_num_threads(before)
    if not _same(one.sample, two.sample):
        return [
            f"declares {DATASETS.get(subject.dataset).kind.value} data in thread_invariant_kinds, but gave other "
            "synthetic data at 2 torch threads than at 1 (the runner would lend it idle cores and change its results)"
        ]
    return []


def check_data_independence(subject: Subject) -> list[str]:
    if subject.first.events:
        return ["declared data_independent, but recorded releases"]
    other = subject.fit(subject.far_dataset)
    if not _same(subject.first.sample, other.sample):
        return ["declared data_independent, but other rows gave other synthetic data"]
    return []


def _applicable(subject: Subject) -> list[tuple[str, Callable[[Subject, list[str]], list[str]]]]:
    checks: list[tuple[str, Callable[[Subject, list[str]], list[str]]]] = [
        ("sample_schema", lambda s, notes: check_sample_schema(s)),
        ("global_seed_independence", lambda s, notes: check_global_seed_independence(s)),
    ]
    if DATASETS.get(subject.dataset).kind in getattr(subject.adapter, "thread_invariant_kinds", frozenset()):
        checks.append(("thread_invariance", lambda s, notes: check_thread_invariance(s)))
    if not subject.private:
        return checks
    checks.append(("infinite_epsilon_noiseless", check_infinite_epsilon_noiseless))
    checks.append(("queries_only", lambda s, notes: check_queries_only(s)))
    if subject.data_independent:
        return checks + [("data_independence", lambda s, notes: check_data_independence(s))]
    return checks + [
        ("noise_reaches_output", lambda s, notes: check_noise_reaches_output(s)),
        ("release_replay", lambda s, notes: check_release_replay(s)),
        ("sensitivity_probe", lambda s, notes: check_sensitivity_probe(s)),
    ]


CHECKS: tuple[str, ...] = (
    "declaration",
    "grid_cell",
    "sample_schema",
    "global_seed_independence",
    "infinite_epsilon_noiseless",
    "noise_reaches_output",
    "release_replay",
    "sensitivity_probe",
    "data_independence",
    "queries_only",
    "audit",
    "thread_invariance",
)


def check_method(
    adapter: Any,
    *,
    data_dir: str | Path | None = None,
    datasets: Mapping[DataKind, str] | None = None,
    overrides: Mapping[str, str] | None = None,
    expected_failures: Mapping[str, str] | None = None,
    rows: int = ROWS,
    audit_runs: int = 0,
) -> ConformanceReport:
    """Run every applicable check (see the module's docstring) on the first ``rows`` rows of a
    test dataset of each supported kind, ``smoke`` profile, ``overrides`` as ``--set`` values;
    the ``grid_cell`` check on the smallest of them. Raises :class:`ConformanceError` naming each
    failed check not in ``expected_failures``."""
    expected = dict(expected_failures or {})
    unknown = sorted(set(expected) - set(CHECKS))
    if unknown:
        raise ValueError(f"unknown checks in expected_failures: {', '.join(unknown)}; valid: {', '.join(CHECKS)}")
    declaration = method_problems(adapter)
    if declaration:
        raise ConformanceError(f"{getattr(adapter, 'name', adapter)!r}: [declaration] " + "; ".join(declaration))
    report = ConformanceReport()
    failures: list[str] = []
    outcomes: dict[str, bool] = {}

    def record(dataset: str, check: str, problems: list[str]) -> None:
        outcomes[check] = outcomes.get(check, True) and not problems
        if problems and check not in expected:
            failures.extend(f"[{check}] {dataset}: {p}" for p in problems)
        elif problems:
            report.notes.append(f"[{check}] {dataset}: expected failure ({expected[check]}): {problems[0]}")
        else:
            report.checks.setdefault(dataset, []).append(check)

    registered = adapter.name not in METHODS
    if registered:
        METHODS.register(adapter)
    try:
        splits, full_rows = _test_splits(adapter, data_dir, datasets, rows, report)
        smallest = min(full_rows, key=full_rows.get)
        record(smallest, "grid_cell", _cell_problems(adapter, smallest, data_dir, overrides))
        if audit_runs and adapter.private and not getattr(adapter, "data_independent", False):
            record(smallest, "audit", _audit_problems(adapter, smallest, data_dir, overrides, audit_runs))
        for dataset, split in splits.items():
            subject = Subject(adapter, dataset, split, overrides)
            before = len(failures)
            for name, check in _applicable(subject):
                try:
                    problems = check(subject, report.notes)
                except Exception as error:  # a check that cannot run is a failure to report, with its cause
                    problems = [f"raised {type(error).__name__}: {error}"]
                record(dataset, name, problems)
            if len(failures) == before:
                report.passed.append(dataset)
    finally:
        if registered:
            METHODS.unregister(adapter.name)
    failures += [
        f"[{check}] expected to fail ({why}) but passed" for check, why in expected.items() if outcomes.get(check)
    ]
    if failures:
        raise ConformanceError(f"{adapter.name!r} fails conformance: " + "; ".join(failures))
    return report


def _test_splits(
    adapter, data_dir, datasets, rows: int, report: ConformanceReport
) -> tuple[dict[str, Split], dict[str, int]]:
    splits, full_rows = {}, {}
    for kind in sorted(adapter.data_kinds, key=lambda k: k.value):
        dataset = (datasets or TEST_DATASETS).get(kind)
        if dataset is None:
            report.skipped.append(f"{kind.value}: no test dataset (pass datasets={{DataKind.{kind.name}: NAME}})")
            continue
        try:
            split = DATASETS.get(dataset).load(Path(data_dir) if data_dir else None, 0)
        except DataError as error:
            report.skipped.append(f"{kind.value} ({dataset}): {error}")
            continue
        splits[dataset], full_rows[dataset] = _head(split, rows), len(split.train)
    if not splits:
        raise ConformanceError(f"{adapter.name!r}: no test dataset could be loaded: {'; '.join(report.skipped)}")
    return splits, full_rows


def _head(split: Split, rows: int) -> Split:
    head = slice(0, rows)
    return Split(
        LabelledData(split.train.x[head], split.train.y[head], split.train.schema),
        LabelledData(split.test.x[head], split.test.y[head], split.test.schema),
        split.caveats,
    )


def _cell_problems(adapter: Any, dataset: str, data_dir, overrides) -> list[str]:
    result = run_cell(
        adapter.name, dataset, epsilon=EPSILON, evaluators=(), profile="smoke", overrides=overrides, data_dir=data_dir
    )
    if not result.ok:
        return [f"the grid's worker failed the cell: {result.error}"]
    spent = (result.ledger or {}).get("spent", {}).get("epsilon", math.inf)
    if adapter.private and spent > EPSILON * (1 + 1e-9):
        return [f"spent ε = {spent:.4g} > the target {EPSILON}"]
    return []


def _audit_problems(adapter: Any, dataset: str, data_dir, overrides, runs: int) -> list[str]:
    from bench.harness.auditing import audit_method

    result = audit_method(
        adapter.name,
        dataset,
        4.0,
        0.05,
        runs=runs,
        rows=100,
        data_dir=Path(data_dir) if data_dir else None,
        overrides=overrides,
        candidates=4,
    )
    return [result.summary()] if result.violated else []


# ---- test datasets: public-domain redraws and adversarial neighbours ---------------------------------


def _column_range(data: LabelledData, j: int) -> tuple[float, float]:
    """A numerical column's public bounds; without them, the rows' range (the kit's own use only)."""
    column = data.schema.columns[j]
    if column.bounds is not None:
        return float(column.bounds[0]), float(column.bounds[1])
    return float(data.x[:, j].min()), float(data.x[:, j].max())


def _codes(data: LabelledData, j: int) -> int | None:
    column = data.schema.columns[j]
    if column.categories is not None:
        return len(column.categories)
    return 2 if column.kind == ColumnKind.BINARY else None


def redrawn_from_public_domain(data: LabelledData, rng: np.random.Generator) -> LabelledData:
    """As many rows as ``data``, each value drawn uniformly from its column's public domain and
    each label uniformly from the classes: a dataset unrelated to ``data`` but of its public size."""
    n = len(data)
    columns = []
    for j in range(data.schema.n_features):
        codes = _codes(data, j)
        if codes is not None:
            columns.append(rng.integers(0, codes, n).astype(np.float32))
        else:
            low, high = _column_range(data, j)
            columns.append(rng.uniform(low, high, n).astype(np.float32))
    x = np.stack(columns, 1) if columns else np.zeros((n, 0), np.float32)
    return LabelledData(x, rng.integers(0, data.schema.n_classes, n).astype(data.y.dtype), data.schema)


def adversarial_neighbour(data: LabelledData, row: int) -> LabelledData:
    """``data`` with one row replaced (replace-one): each value moved to the far end of its
    column's public domain, the label to another class."""
    x, y = data.x.copy(), data.y.copy()
    for j in range(data.schema.n_features):
        codes = _codes(data, j)
        low, high = (0.0, float(codes - 1)) if codes is not None else _column_range(data, j)
        x[row, j] = low if abs(x[row, j] - low) > abs(x[row, j] - high) else high
    y[row] = (y[row] + 1) % data.schema.n_classes
    return LabelledData(x, y, data.schema)


# ---- comparing values ----------------------------------------------------------------------------------


def clean_distance(mine: ReleaseEvent, theirs: ReleaseEvent) -> float:
    """How far one release's clean value moved between two fits, in its declared norm: the largest
    over the values released separately (``each``), or the whole list as one vector (a DP-SGD step)."""
    release = mine.release
    if not isinstance(release, GaussianRelease) and getattr(release, "mechanism", "") == "exponential":
        return float(np.max(np.abs(_numpy(mine.clean) - _numpy(theirs.clean)), initial=0.0))
    order = 2 if isinstance(release, GaussianRelease) else 1
    pairs = (
        list(zip(mine.clean, theirs.clean)) if isinstance(mine.clean, (list, tuple)) else [(mine.clean, theirs.clean)]
    )
    differences = [(_numpy(a).astype(np.float64) - _numpy(b).astype(np.float64)).ravel() for a, b in pairs]
    if not mine.each:
        differences = [np.concatenate(differences)] if differences else []
    return max((float(np.linalg.norm(d, order)) for d in differences), default=0.0)


def _same(a: LabelledData, b: LabelledData) -> bool:
    return np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)


def _is_additive(event: ReleaseEvent) -> bool:
    """Gaussian (incl. DP-SGD steps) and Laplace releases add noise to a clean value."""
    return isinstance(event.release, GaussianRelease) or getattr(event.release, "mechanism", "") == "laplace"


def _close(clean: Any, noisy: Any) -> bool:
    pairs = zip(clean, noisy) if isinstance(clean, (list, tuple)) else [(clean, noisy)]
    return all(np.allclose(_numpy(a), _numpy(b), rtol=1e-6, atol=1e-9) for a, b in pairs)


def _numpy(value: Any) -> np.ndarray:
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)


# ---- datasets and evaluators ----------------------------------------------------------------------------


def check_dataset(
    dataset: Any, *, data_dir: str | Path | None = None, seeds: tuple[int, int] = (0, 1)
) -> ConformanceReport:
    """Named checks of a dataset: ``declaration``; ``deterministic_split`` (a seed's split is the
    same on every load); ``public_size`` (the row counts do not depend on the seed: under
    replace-one the size is public; a random subsample's count must be stated as a caveat); ``schema`` (both splits carry the declared schema);
    ``public_domain`` (category codes are integers inside their public lists, binary values 0/1,
    labels inside the classes); ``protocols`` (the ``paper`` protocol loads too, stating its
    caveats when it differs)."""
    problems = dataset_problems(dataset)
    if problems:
        raise ConformanceError(f"{getattr(dataset, 'name', dataset)!r}: [declaration] " + "; ".join(problems))
    report, failures = ConformanceReport(), []
    folder = Path(data_dir) if data_dir else None
    first, again, other = (dataset.load(folder, seed, "sound") for seed in (seeds[0], seeds[0], seeds[1]))
    results = {
        "deterministic_split": []
        if all(_same(a, b) for a, b in ((first.train, again.train), (first.test, again.test)))
        else ["the same seed gave another split (draw the split from the seed)"],
        "public_size": []
        if (len(first.train), len(first.test)) == (len(other.train), len(other.test))
        or any("row count" in caveat for caveat in first.caveats)
        else [
            f"seed {seeds[0]} gives {len(first.train)}/{len(first.test)} rows, seed {seeds[1]} "
            f"{len(other.train)}/{len(other.test)}: a size that depends on the draw depends on the private rows; "
            "make it fixed or state the uncharged row count as a caveat of the split"
        ],
        "schema": []
        if first.train.schema == first.test.schema == dataset.schema
        else ["the splits' schema is not the dataset's declared schema"],
        "public_domain": _domain_problems(first.train) + _domain_problems(first.test),
    }
    try:
        paper = dataset.load(folder, seeds[0], "paper")
        results["protocols"] = (
            []
            if paper.train.schema.columns == dataset.schema.columns or paper.caveats
            else ["the paper protocol changes the columns without a caveat saying so"]
        )
    except Exception as error:  # noqa: BLE001 - reported as the check's failure
        results["protocols"] = [f"loading under the paper protocol raised {type(error).__name__}: {error}"]
    for check, found in results.items():
        failures += [f"[{check}] {p}" for p in found]
        if not found:
            report.checks.setdefault(dataset.name, []).append(check)
    if failures:
        raise ConformanceError(f"{dataset.name!r} fails conformance: " + "; ".join(failures))
    report.passed.append(dataset.name)
    return report


def _domain_problems(data: LabelledData) -> list[str]:
    problems = []
    for j, column in enumerate(data.schema.columns):
        codes = _codes(data, j)
        values = data.x[:, j]
        if codes is not None and (
            not np.array_equal(values, np.round(values)) or values.min() < 0 or values.max() >= codes
        ):
            problems.append(f"column {column.name!r} holds values outside its {codes} public codes")
    if len(data.y) and not 0 <= data.y.min() <= data.y.max() < data.schema.n_classes:
        problems.append("labels outside the declared classes")
    return problems[:3]


def check_evaluator(
    evaluator: Any,
    *,
    data_dir: str | Path | None = None,
    datasets: Mapping[DataKind, str] | None = None,
    rows: int = 500,
) -> ConformanceReport:
    """Named checks of an evaluator, on the first ``rows`` rows of a test dataset of each kind it
    supports (the real training rows standing in for synthetic ones): ``declaration``;
    ``declared_metrics`` (every returned metric is declared, as ``name`` or ``group.name``, a
    number, and at least one is returned); ``stateless`` (a second evaluation gives the same
    quality metrics: nothing carried between cells); ``settings`` (an evaluator's ``--eval-set``
    settings, if any, apply)."""
    from bench.api.contracts import EvalContext, MetricKind
    from bench.harness.grid import configured, settable_fields

    problems = evaluator_problems(evaluator)
    if problems:
        raise ConformanceError(f"{getattr(evaluator, 'name', evaluator)!r}: [declaration] " + "; ".join(problems))
    report, failures = ConformanceReport(), []
    for kind in sorted(evaluator.data_kinds, key=lambda k: k.value):
        name = (datasets or TEST_DATASETS).get(kind)
        if name is None:
            report.skipped.append(f"{kind.value}: no test dataset")
            continue
        try:
            split = _head(DATASETS.get(name).load(Path(data_dir) if data_dir else None, 0), rows)
        except DataError as error:
            report.skipped.append(f"{kind.value} ({name}): {error}")
            continue
        if not evaluator.applies_to(split.train.schema):
            report.skipped.append(f"{kind.value} ({name}): does not apply")
            continue
        context = EvalContext(seed=0, data_dir=Path(data_dir) if data_dir else None, shadow_fit=_copying_shadow_fit)
        first, second = (evaluator.evaluate(split.train, split.train, split.test, context) for _ in range(2))
        undeclared = sorted(m for m in first.metrics if m.rsplit(".", 1)[-1] not in evaluator.metrics)
        quality = {
            m
            for m in first.metrics
            if evaluator.metrics.get(m.rsplit(".", 1)[-1], None) is not None
            and evaluator.metrics[m.rsplit(".", 1)[-1]].kind == MetricKind.QUALITY
        }
        found = {
            "declared_metrics": ([f"returned undeclared metrics {undeclared[:5]}"] if undeclared else [])
            + ([] if first.metrics else ["returned no metric"])
            + [
                f"{m} is not a number"
                for m in first.metrics
                if not isinstance(first.metrics[m], (int, float, np.floating))
            ][:3],
            "stateless": [
                f"{m}: {first.metrics[m]} then {second.metrics.get(m)}"
                for m in sorted(quality)
                if not np.isclose(first.metrics[m], second.metrics.get(m, np.nan), equal_nan=True)
            ][:3],
            "settings": _settings_problems(evaluator, settable_fields, configured),
        }
        for check, listed in found.items():
            failures += [f"[{check}] {name}: {p}" for p in listed]
            if not listed:
                report.checks.setdefault(name, []).append(check)
        if not any(p.split("] ", 1)[1].startswith(f"{name}:") for p in failures):
            report.passed.append(name)
    if failures:
        raise ConformanceError(f"{evaluator.name!r} fails conformance: " + "; ".join(failures))
    if not report.passed:
        raise ConformanceError(f"{evaluator.name!r}: no test dataset could be evaluated: {'; '.join(report.skipped)}")
    return report


def _copying_shadow_fit(rows: Any, seed: int, n: int) -> Any:
    """``EvalContext.shadow_fit`` of a method that returns its training rows (``real``), ``n`` of
    them, cycling: the kit's stand-in for a run's method."""
    index = np.resize(np.arange(len(rows)), n)
    return type(rows)(rows.x[index], rows.y[index], rows.schema)


def _settings_problems(evaluator: Any, settable_fields, configured) -> list[str]:
    try:
        current = settable_fields(evaluator)
        return [] if configured(evaluator, current).name == evaluator.name else ["its settings changed its name"]
    except Exception as error:  # noqa: BLE001 - reported as the check's failure
        return [f"applying its own settings raised {type(error).__name__}: {error}"]


__all__ = [
    "CHECKS",
    "check_dataset",
    "check_evaluator",
    "check_method",
    "ConformanceError",
    "ConformanceReport",
    "TEST_DATASETS",
    "adversarial_neighbour",
    "redrawn_from_public_domain",
]
