"""`python -m bench audit`: runs ``bench.privacy.audit`` on a registered method and dataset, and
logs the result to MLflow as a run of its own (experiment ``audit`` by default)."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from bench.core.errors import UsageError
from bench.api.registry import DATASETS, METHODS
from bench.privacy.audit import AuditResult, StopAudit, audit_releases, capture_releases
from bench.privacy.budget import PrivacyBudget
from bench.privacy.ledger import PrivacyLedger


class AuditError(UsageError, ValueError):
    """A bad audit request; the message says how to fix it."""


@dataclass(frozen=True)
class AuditTarget:
    """One audit's question: does ``method``'s run at (``epsilon``, ``delta``) keep its claim on D,
    the first ``rows`` training rows of ``dataset`` (seed ``seed``'s split), tried ``runs`` times a
    side, the method resolved at ``profile`` with ``overrides`` and calibrated by ``calibrator``?
    One form from the command line to the checkpoint's name and the record's params."""

    method: str
    dataset: str
    epsilon: float
    delta: float
    runs: int
    rows: int
    seed: int = 0
    data_dir: Path | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    profile: str = "smoke"
    calibrator: str = "tight"

    def identity(self) -> dict[str, str]:
        """What each run's scores depend on: every setting but ``runs`` (a longer audit extends a
        shorter one's runs)."""
        return {f.name: str(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "runs"}

    def params(self) -> dict[str, Any]:
        """The settings as the audit's MLflow params (the result names the method and dataset;
        each override is ``set.NAME``)."""
        named = ("method", "dataset", "overrides")
        params = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in named}
        return params | {f"set.{k}": v for k, v in self.overrides.items()}


def neighbours(train: Any, count: int, seed: int) -> list[Any]:
    """Candidate D′s, each D with one row replaced, the replaced row taken across the table (the
    first, the last, a random one, in turn): that row under every other label, and by ``count``
    other training rows of another label (the replaced position rotating over those rows)."""
    data_type = type(train)
    n = len(train)
    draw = np.random.default_rng(seed)
    positions = list(dict.fromkeys([0, n - 1, int(draw.integers(n))]))
    candidates = []
    for position in positions[:2]:
        for label in range(train.schema.n_classes):
            if label != int(train.y[position]):
                y = train.y.copy()
                y[position] = label
                candidates.append(data_type(train.x, y, train.schema))
    for turn in range(count):
        position = positions[turn % len(positions)]
        others = np.flatnonzero(train.y != train.y[position])
        if len(others) == 0:  # one class only (discretized tables): any other row
            others = np.delete(np.arange(n), position)
        index = int(draw.choice(others))
        x, y = train.x.copy(), train.y.copy()
        x[position], y[position] = train.x[index], train.y[index]
        candidates.append(data_type(x, y, train.schema))
    return candidates


def audited_method(method_name: str, epsilon: float) -> Any:
    """The registered method, if its run at ``epsilon`` makes a privacy claim from its rows."""
    method = METHODS.get(method_name)
    if not method.private:
        raise AuditError(f"{method_name} is not a private method; there is no privacy claim to audit")
    if method.data_independent:
        raise AuditError(f"{method_name} reads no row (data-independent, ε spent 0): it makes no release to audit")
    if not math.isfinite(epsilon):
        raise AuditError("--eps must be finite: a non-private run makes no claim to audit")
    return method


def first_rows(dataset: Any, rows: int, seed: int, data_dir: Path | None) -> Any:
    """D of every audit: the first ``rows`` rows of the dataset's training split (sound protocol)."""
    full = dataset.load(data_dir, seed, "sound").train
    rows = min(rows, len(full))
    return type(full)(full.x[:rows], full.y[:rows], full.schema)


def audit_method(
    target: AuditTarget,
    candidates: int = 8,
    ledger_factory: Callable[..., PrivacyLedger] = PrivacyLedger,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> AuditResult:

    from bench.api.contracts import FitContext

    method, dataset = audited_method(target.method, target.epsilon), DATASETS.get(target.dataset)
    spec = method.audit
    train = first_rows(dataset, target.rows, target.seed, target.data_dir)
    rows, seed = len(train), target.seed
    settings = {k: v.format(rows=rows) for k, v in spec.params.items()} | dict(target.overrides)
    params = method.hyperparameters.resolve(dataset.name, target.profile, settings, private=True).params
    budget = PrivacyBudget(target.epsilon, target.delta)

    def make_context(ledger: PrivacyLedger, released: Callable[[], bool]) -> Any:
        def stop(done: int, total: int) -> None:  # at the first progress report after a release
            if spec.stop_after_events is None and released():
                raise StopAudit

        return FitContext.of(dataset, params, seed, ledger, progress=stop, data_dir=target.data_dir)

    factory = functools.partial(ledger_factory, calibrator=target.calibrator)

    def run(data: Any, noise: np.random.Generator | None):
        return capture_releases(method, data, budget, make_context, noise, spec.stop_after_events, factory)

    candidates_d_prime = neighbours(train, candidates, seed)
    result = audit_releases(
        target.method, target.dataset, run, train, candidates_d_prime, target.runs, target.delta, seed, progress
    )
    return dataclasses.replace(result, dataset=f"{target.dataset} (first {rows} rows)")


def log_audit(
    result: AuditResult, experiment: str, settings: Mapping[str, Any], context: Mapping[str, str] | None = None
) -> str:
    """The audit as a run of ``experiment``; ``context``: the code and machine it ran on
    (:func:`bench.harness.provenance.run_context_tags`, taken when it started; now if not given)."""
    from bench.harness import tracking
    from bench.harness.provenance import run_context_tags

    client = tracking.client()
    run = client.create_run(
        tracking.experiment_id(client, experiment),
        tags={
            **(context if context is not None else run_context_tags()),  # an audit's bound names its code
            "mlflow.runName": f"audit {result.method}/{result.dataset}",
            "kind": "audit",
            "verdict": result.verdict,
            "releases": "; ".join(result.releases)[:4000],
        },
    )
    run_id = run.info.run_id
    for key, value in {**settings, "method": result.method, "dataset": result.dataset}.items():
        client.log_param(run_id, key, str(value))
    metrics = {
        "audit.epsilon_lower_bound": result.lower_bound,
        "audit.epsilon_attainable": result.attainable,
        "audit.epsilon_claimed": result.claimed_epsilon,
        "audit.mu_fitted": result.mu_fitted,
        "audit.runs_per_side": result.runs_per_side,
        "audit.wall_s": result.wall_s,
        "audit.runs_resumed": result.runs_resumed,
    }
    if result.mu_claimed is not None:
        metrics["audit.mu_claimed"] = result.mu_claimed
    if "epsilon" in settings:  # the ε the audit was asked at: the privacy triad's key
        metrics["audit.epsilon_target"] = float(settings["epsilon"])
    for key, value in metrics.items():
        client.log_metric(run_id, key, float(value))
    client.set_terminated(run_id, "FINISHED")
    return run_id


def audit_dp_sgd(
    target: AuditTarget,
    ledger_factory: Callable[..., PrivacyLedger] = PrivacyLedger,
) -> AuditResult:
    """The step-level audit of a DP-SGD method: its phase calibrated as ``fit`` calibrates it
    (on the first ``rows`` rows, with the method's parameters), its discriminator's real
    per-row gradients, and a gradient canary (``bench.privacy.audit.audit_dp_sgd_step``)."""
    from bench.api.contracts import FitContext
    from bench.core.params import batch_rows
    from bench.privacy.audit import audit_dp_sgd_step

    method, dataset = METHODS.get(target.method), DATASETS.get(target.dataset)
    if method.audit.dp_sgd_gradients is None:
        raise AuditError(f"{target.method} trains no DP-SGD phase; use the release-level audit (--level release)")
    train = first_rows(dataset, target.rows, target.seed, target.data_dir)
    rows, seed = len(train), target.seed
    params = method.hyperparameters.resolve(dataset.name, target.profile, dict(target.overrides), private=True).params
    budget = PrivacyBudget(target.epsilon, target.delta)
    ledger = ledger_factory(budget, calibrator=target.calibrator)
    batch = batch_rows(rows, params.batch_size, None, real_rows=True)
    sampling_rate = 1.0 / math.ceil(rows / batch)  # as dp-gan's fit: Opacus' Poisson rate
    steps = params.epochs * math.ceil(rows / batch)
    clip = params.max_grad_norm
    phase = ledger.subsampled_phase("DP-SGD step (audited)", clip, sampling_rate, steps)
    context = FitContext.of(dataset, params, seed, ledger, data_dir=target.data_dir)
    gradients = method.audit.dp_sgd_gradients(train, context)
    result = audit_dp_sgd_step(gradients, phase.release, clip, budget, target.runs, seed, ledger_factory)
    return dataclasses.replace(
        result, method=f"{target.method} (DP-SGD step)", dataset=f"{target.dataset} (first {rows} rows)"
    )


@dataclass(frozen=True)
class Canary:
    """A row unlike the others (:func:`canary_of`) and the columns where it is rarest in D."""

    row: np.ndarray
    label: int
    telling: tuple[int, ...]  # columns whose canary value D never takes (else its rarest one)


def canary_of(train: Any) -> Canary:
    """Every coded column at its least frequent code in ``train``, every numerical column at the
    end of its public range farthest from the column's mean, the label at its least frequent
    class; ``telling``: the columns where no row of D takes the canary's value (else the column
    where fewest do). (The audit is an experiment, not a release: choosing the canary from the
    rows spends nothing of any run's budget.)"""
    from bench.core.data import ColumnKind

    row = np.empty(train.schema.n_features, dtype=np.float32)
    for j, column in enumerate(train.schema.columns):
        if column.kind == ColumnKind.NUMERICAL:
            lower, upper = column.public_bounds()
            row[j] = lower if abs(train.x[:, j].mean() - lower) > abs(train.x[:, j].mean() - upper) else upper
        else:
            counts = np.bincount(train.x[:, j].astype(np.int64), minlength=column.domain_size())
            row[j] = float(np.argmin(counts))
    shares = _matches(train, row).mean(axis=0)
    telling = tuple(int(j) for j in np.flatnonzero(shares == 0)) or (int(np.argmin(shares)),)
    return Canary(row, int(np.argmin(np.bincount(train.y, minlength=train.schema.n_classes))), telling)


def _matches(data: Any, row: np.ndarray) -> np.ndarray:
    """rows × columns: does each row take the canary's value (numerical: within a tenth of the
    column's public range)?"""
    from bench.core.data import ColumnKind

    out = np.empty(data.x.shape, dtype=bool)
    for j, column in enumerate(data.schema.columns):
        if column.kind == ColumnKind.NUMERICAL:
            lower, upper = column.public_bounds()
            out[:, j] = np.abs(data.x[:, j] - row[j]) <= (upper - lower) / 10
        else:
            out[:, j] = data.x[:, j] == row[j]
    return out


def canary_statistic(sample: Any, canary: Canary) -> float:
    """How much of the output looks like the canary: the synthetic rows that take its value in
    each telling column (summed over those columns), plus the rows equal to it everywhere (label
    included). A marginal-based generator moves the first, a generator that copies rows the
    second; both are near 0 on D for an honest generator, where the canary's values are rare."""
    matches = _matches(sample, canary.row)
    everywhere = matches.all(axis=1) & (sample.y == canary.label)
    return float(matches[:, list(canary.telling)].sum() + everywhere.sum())


def audit_black_box(
    target: AuditTarget,
    progress: Callable[[int, int], None] = lambda done, total: None,
    checkpoint: Path | None = None,
) -> AuditResult:
    """The output-only audit (issue 60): ``runs`` whole fits on D (the first ``rows`` training
    rows) and on D′ (row 0 replaced by :func:`canary_of`'s canary), each with its own seed; each
    fit's sample of ``rows`` rows scored by :func:`canary_statistic`; the ε lower bound of
    :func:`bench.privacy.audit.epsilon_lower_bound`. It needs no ledger, so it audits an outside
    library as it audits a built-in; a bound below the claim proves nothing (a weak statistic
    gives a low bound for any generator).

    ``checkpoint``: a file each finished run's two scores are appended to, and read back on a
    later call (a killed audit of minutes-long fits resumes where it stopped); the caller names it
    by everything the scores depend on (:func:`black_box_checkpoint`). Run ``i`` fits with seed
    ``seed + 1 + i`` whatever ``runs`` is, so a longer audit extends a shorter one's runs."""
    import time

    from bench.api.contracts import FitContext
    from bench.privacy.audit import epsilon_lower_bound
    from bench.privacy.private_data import PrivateData

    method, dataset = audited_method(target.method, target.epsilon), DATASETS.get(target.dataset)
    train = first_rows(dataset, target.rows, target.seed, target.data_dir)
    rows, seed, runs, delta = len(train), target.seed, target.runs, target.delta
    canary = canary_of(train)
    x, y = train.x.copy(), train.y.copy()
    x[0], y[0] = canary.row, canary.label
    neighbour = type(train)(x, y, train.schema)
    params = method.hyperparameters.resolve(dataset.name, target.profile, dict(target.overrides), private=True).params
    budget = PrivacyBudget(target.epsilon, delta)
    finished = finished_runs(checkpoint)[:runs]
    resumed = len(finished)
    if resumed:
        progress(resumed, runs)  # the runs read back count as done
    for run in range(resumed, runs):
        started, scored = time.perf_counter(), {}
        for side, data in (("d", train), ("d_prime", neighbour)):
            ledger = PrivacyLedger(budget, calibrator=target.calibrator)  # calibrated as a run with it would be
            context = FitContext.of(dataset, params, seed + 1 + run, ledger, data_dir=target.data_dir)
            sample = method.fit(PrivateData(data, ledger), context).sample(rows)
            scored[side] = canary_statistic(sample, canary)
        seconds = time.perf_counter() - started
        finished.append({"run": run, **scored, "claimed": ledger.epsilon_spent, "seconds": seconds})
        if checkpoint is not None:
            with checkpoint.open("a", encoding="utf-8") as out:
                out.write(json.dumps(finished[-1]) + "\n")
        progress(run + 1, runs)
    scores = {side: [float(done[side]) for done in finished] for side in ("d", "d_prime")}
    claimed = finished[-1]["claimed"]
    bound = epsilon_lower_bound(np.array(scores["d"]), np.array(scores["d_prime"]), delta)
    return AuditResult(
        target.method,
        f"{target.dataset} (first {rows} rows)",
        runs,
        claimed,
        delta,
        bound.epsilon,
        mu_fitted=math.nan,
        mu_claimed=None,
        wall_s=sum(done["seconds"] for done in finished),  # the runs' fits, over every call that made them
        releases=("black box: the synthetic output only (canary statistic)",),
        runs_resumed=resumed,
    )


def black_box_checkpoint(folder: Path, target: AuditTarget, environments: Iterable[Path] = ()) -> Path | None:
    """Where a black-box audit keeps its finished runs: a file named by the hash of everything its
    scores depend on — the target's settings but its number of runs (:meth:`AuditTarget.identity`) and the
    code (:func:`bench.harness.provenance.code_identity`: a commit of results alone keeps it), with
    the outside environments the method runs in (``environments``). None when the code cannot be
    named (no git): scores of unnamed code are not reused."""
    import hashlib

    from bench.harness.provenance import code_identity

    code = code_identity(environments)
    if code is None:
        return None
    key = json.dumps({"settings": target.identity(), "code": code}, sort_keys=True)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"black-box-{hashlib.sha256(key.encode()).hexdigest()[:20]}.jsonl"


CHECKPOINT_FIELDS = ("run", "d", "d_prime", "claimed", "seconds")  # each a number in every line


def finished_runs(checkpoint: Path | None) -> list[dict]:
    """The whole runs a checkpoint holds, in order. A line a kill cut short, or anything not a run
    (another file's bytes, a run out of order, a run claiming another ε than the first), and all
    after it are dropped, and the file rewritten to what is kept: those runs are fitted again."""
    finished: list[dict] = []
    if checkpoint is None or not checkpoint.exists():
        return finished
    text = checkpoint.read_bytes().decode("utf-8", errors="replace")
    for line in text.splitlines():
        try:
            run = json.loads(line)
        except json.JSONDecodeError:
            break
        well_formed = isinstance(run, dict) and all(
            isinstance(run.get(name), (int, float)) and not isinstance(run.get(name), bool)
            for name in CHECKPOINT_FIELDS
        )
        if not well_formed or run["run"] != len(finished):
            break
        if finished and run["claimed"] != finished[0]["claimed"]:  # one audit claims one ε throughout
            break
        finished.append(run)
    kept = "".join(json.dumps(run) + "\n" for run in finished)
    if text != kept:  # also a last line without its newline, which the next run's line would join
        checkpoint.write_text(kept, encoding="utf-8")
    return finished
