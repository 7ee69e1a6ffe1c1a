"""``check_method``: the named checks every method adapter must pass (see ``bench.testing``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from bench.core.data import DataKind, LabelledData, Split
from bench.api.contracts import DeclaredMethod, FitContext, method_problems
from bench.api.registry import DATASETS, METHODS
from bench.core.walls import fit_wall
from bench.privacy.budget import PrivacyBudget
from bench.privacy.copies import training_copies
from bench.privacy.ledger import PrivacyLedger, ReleaseEvent
from bench.privacy.replay import ReplayDiverged
from bench.privacy.replay import ReleaseReplay
from bench.privacy.replay import snapshot
from bench.privacy.private_data import PrivateData
from bench.testing.kit import (
    EPSILON,
    IMAGE_ROWS,
    ROWS,
    SAMPLE,
    ConformanceError,
    ConformanceReport,
    audit_problems,
    cell_problems,
    dataset_kind,
    head_rows,
    test_splits,
)
from bench.testing.neighbours import (
    adversarial_neighbour,
    clean_distance,
    close_values,
    is_additive,
    redrawn_from_public_domain,
    same_rows,
)


# Further budgets at which the release checks run again, so that a method that misbehaves only at
# a small or a large ε is tried there.
OTHER_EPSILONS = (0.1, 8.0)
GLOBAL_SEEDS = (0, 918_273)  # two global seeds under one run seed
SENSITIVITY_SLACK = 1e-3  # relative: float32 sums of thousands of rows round


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

    adapter: DeclaredMethod
    dataset: str
    split: Split
    overrides: Mapping[str, str] | None
    epsilon: float = EPSILON
    probes: int = 4  # how many of probed_rows the sensitivity probe replaces
    profile: str = "smoke"

    @property
    def private(self) -> bool:
        return bool(self.adapter.private)

    @property
    def data_independent(self) -> bool:
        return self.adapter.data_independent

    def fit(
        self,
        train: LabelledData,
        *,
        epsilon: float | None = None,
        global_seed: int = GLOBAL_SEEDS[0],
        noise_source: Any = None,
        replay: ReleaseReplay | None = None,
    ) -> Fit:
        """Fit as the worker would (run seed 0, CPU, smoke profile, behind the data wall) at the
        subject's ε unless another is given, and sample SAMPLE rows."""

        from bench.harness.worker import seed_everything

        seed_everything(global_seed)
        epsilon = self.epsilon if epsilon is None else epsilon
        private = math.isfinite(epsilon) and self.private
        resolved = self.adapter.hyperparameters.resolve(self.dataset, self.profile, self.overrides, private=private)
        budget = PrivacyBudget(epsilon, 1e-5) if private else PrivacyBudget.non_private()
        events: list[ReleaseEvent] = []
        ledger = PrivacyLedger(budget, noise_source=noise_source, replay=replay, observers=[_recorded(events)])
        context = FitContext.of(DATASETS.get(self.dataset), resolved.params, 0, ledger)
        with fit_wall(self.adapter.name):
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
    def neighbours(self) -> dict[int, LabelledData]:
        """Replace-one neighbours, one for each of the first ``probes`` rows of :func:`probed_rows`."""
        rows = probed_rows(self.split.train)[: self.probes]
        return {row: adversarial_neighbour(self.split.train, row=row) for row in rows}


def probed_rows(train: LabelledData) -> list[int]:
    """The rows the sensitivity probe replaces, across the table: the last, the most extreme (the
    largest standardised norm), the first and a fixed random one — a method that treats one row
    apart, or reads a statistic of all rows but one, shows at some of them."""
    n = len(train)
    x = train.x.reshape(n, -1).astype(np.float64)
    spread = x.std(0)
    z = (x - x.mean(0)) / np.where(spread > 0, spread, 1.0)
    extreme = int(np.argmax(np.linalg.norm(z, axis=1)))
    random_row = int(np.random.default_rng(20261129).integers(n))
    return list(dict.fromkeys([n - 1, extreme, 0, random_row]))


# ---- the named checks: each returns its problems (empty: passed) -----------------------------------


def check_sample_schema(subject: Subject) -> list[str]:
    sample = subject.first.sample
    if sample.schema != subject.split.train.schema or len(sample) != SAMPLE:
        return ["sample(n) must return n rows in the training data's schema"]
    return []


def check_global_seed_independence(subject: Subject) -> list[str]:
    again = subject.fit(subject.split.train, global_seed=GLOBAL_SEEDS[1])
    if not same_rows(subject.first.sample, again.sample):
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
    if any(is_additive(e) and not close_values(e.clean, e.noisy) for e in infinite.events):
        return ["the ε = ∞ fit added noise"]
    return []


def check_noise_reaches_output(subject: Subject) -> list[str]:
    if not subject.first.events:
        return [
            "private, but recorded no release through the ledger (gaussian, laplace, exponential, subsampled_phase)"
        ]
    other = subject.fit(subject.split.train, noise_source=np.random.default_rng(1))
    if same_rows(subject.first.sample, other.sample):
        return ["other ledger noise gave the same synthetic data: the released noise does not reach the output"]
    return []


def check_release_replay(subject: Subject) -> list[str]:
    try:
        replayed = subject.replayed_on(subject.far_dataset)
    except ReplayDiverged as error:
        return [str(error)]
    if not same_rows(subject.first.sample, replayed.sample):
        return [
            "given the same released values, a fit on other rows gave other synthetic data: the method reads "
            "the rows outside its releases (a clean value used after the noise door, noise drawn outside the "
            "ledger, or rows used directly)"
        ]
    return []


def check_sensitivity_probe(subject: Subject) -> list[str]:
    problems = []
    for row, neighbour in subject.neighbours.items():
        try:
            probe = subject.replayed_on(neighbour)
        except ReplayDiverged as error:
            return [str(error)]
        for index, (mine, theirs) in enumerate(zip(subject.first.events, probe.events)):
            declared, moved = mine.release.sensitivity, clean_distance(mine, theirs)
            if moved > declared * (1 + SENSITIVITY_SLACK) + 1e-9:
                problems.append(
                    f"release {index + 1} {mine.release.what!r} moved by {moved:.4g} between neighbours "
                    f"(row {row} replaced, at ε = {subject.epsilon:g}) but declares sensitivity {declared:.4g}"
                )
    return problems[:3]


def check_no_training_copies(subject: Subject) -> list[str]:
    """The sample matches training rows no more than held-out rows (:mod:`bench.privacy.copies`):
    no assumption about the code, so it sees a copy made through any door."""
    copies = training_copies(
        subject.first.sample, subject.split.train, subject.split.test, DATASETS.get(subject.dataset).kind
    )
    if copies.suspicious:
        return [f"the synthetic sample copies training rows: {copies.describe()}"]
    return []


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
    if not same_rows(one.sample, two.sample):
        return [
            f"declares {DATASETS.get(subject.dataset).kind.value} data in thread_invariant_kinds, but gave other "
            "synthetic data at 2 torch threads than at 1 (the runner would lend it idle cores and change its results)"
        ]
    return []


def check_data_independence(subject: Subject) -> list[str]:
    if subject.first.events:
        return ["declared data_independent, but recorded releases"]
    other = subject.fit(subject.far_dataset)
    if not same_rows(subject.first.sample, other.sample):
        return ["declared data_independent, but other rows gave other synthetic data"]
    return []


def _applicable(subject: Subject) -> list[tuple[str, Callable[[Subject, list[str]], list[str]]]]:
    checks: list[tuple[str, Callable[[Subject, list[str]], list[str]]]] = [
        ("sample_schema", lambda s, notes: check_sample_schema(s)),
        ("global_seed_independence", lambda s, notes: check_global_seed_independence(s)),
    ]
    if DATASETS.get(subject.dataset).kind in subject.adapter.thread_invariant_kinds:
        checks.append(("thread_invariance", lambda s, notes: check_thread_invariance(s)))
    if not subject.private:
        return checks
    checks.append(("infinite_epsilon_noiseless", check_infinite_epsilon_noiseless))
    checks.append(("queries_only", lambda s, notes: check_queries_only(s)))
    if subject.data_independent:
        return checks + [("data_independence", lambda s, notes: check_data_independence(s))]
    return checks + [
        ("noise_reaches_output", lambda s, notes: check_noise_reaches_output(s)),
        ("no_training_copies", lambda s, notes: check_no_training_copies(s)),
        *RELEASE_CHECKS,
    ]


# the checks that run again at OTHER_EPSILONS
RELEASE_CHECKS: list[tuple[str, Callable[[Subject, list[str]], list[str]]]] = [
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
    "no_training_copies",
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
    profiles: tuple[str, ...] = (),
) -> ConformanceReport:
    """Run every applicable check (see the module's docstring) on the first ``rows`` rows (images:
    ``IMAGE_ROWS``) of a test dataset of each supported kind, ``smoke`` profile, ``overrides`` as
    ``--set`` values; the ``grid_cell`` check, and the release checks once more on all its rows, on
    the smallest of them; ``profiles`` (e.g. ``("paper",)``): the release checks once more at each
    of these profiles on the smallest dataset's rows (a method that misbehaves only at its real
    settings; slow). Raises :class:`ConformanceError` naming each
    failed check not in ``expected_failures``."""
    expected = dict(expected_failures or {})
    unknown = sorted(set(expected) - set(CHECKS))
    if unknown:
        raise ValueError(f"unknown checks in expected_failures: {', '.join(unknown)}; valid: {', '.join(CHECKS)}")
    declaration = method_problems(adapter)
    if declaration:
        raise ConformanceError(f"{getattr(adapter, 'name', adapter)!r}: [declaration] " + "; ".join(declaration))
    adapter = DeclaredMethod.of(adapter)  # a class written by hand is checked in the form the registry holds
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
        fulls = test_splits(adapter, data_dir, datasets, report)
        splits = {
            name: head_rows(full, min(rows, IMAGE_ROWS) if dataset_kind(name) == DataKind.IMAGE else rows)
            for name, full in fulls.items()
        }
        smallest = min(fulls, key=lambda name: len(fulls[name].train))
        record(smallest, "grid_cell", cell_problems(adapter, smallest, data_dir, overrides))
        if audit_runs and adapter.private and not adapter.data_independent:
            record(smallest, "audit", audit_problems(adapter, smallest, data_dir, overrides, audit_runs))
        for dataset, split in splits.items():
            subject = Subject(adapter, dataset, split, overrides)
            before = len(failures)
            checks = [(dataset, subject, name, check) for name, check in _applicable(subject)]
            if subject.private and not subject.data_independent:
                others = _other_settings(subject, fulls[dataset] if dataset == smallest else None, profiles)
                checks += [(label, other, name, check) for label, other in others for name, check in RELEASE_CHECKS]
            for label, at, name, check in checks:
                try:
                    problems = check(at, report.notes)
                except Exception as error:  # a check that cannot run is a failure to report, with its cause
                    problems = [f"raised {type(error).__name__}: {error}"]
                record(label, name, problems)
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


def _other_settings(subject: Subject, whole: Split | None, profiles: tuple[str, ...]) -> list[tuple[str, Subject]]:
    """The settings at which the release checks run again (two probed rows each): the other ε, all
    the rows (``whole``: the smallest dataset's whole split), and each of ``profiles`` (on the
    smallest dataset)."""
    adapter, dataset, split, overrides = subject.adapter, subject.dataset, subject.split, subject.overrides
    others = [(f"{dataset} at ε = {e:g}", Subject(adapter, dataset, split, overrides, e, 2)) for e in OTHER_EPSILONS]
    if whole is not None and len(whole.train) > len(split.train):
        label = f"{dataset}, all {len(whole.train):,} rows"
        others.append((label, Subject(adapter, dataset, whole, overrides, probes=2)))
    if whole is not None:
        others += [
            (f"{dataset} at the {p} profile", Subject(adapter, dataset, split, overrides, probes=2, profile=p))
            for p in profiles
        ]
    return others
