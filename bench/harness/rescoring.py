"""``python -m bench evaluate``: score the synthetic samples stored with finished runs by more
evaluators, without refitting, and log the metrics into the same runs.

Idempotent and resumable: an evaluator whose metrics a run already has, none of its parts failed
(no ``errors.<evaluator>`` tag: a classifier timed out, say), is skipped (``--rerun``
scores it again), so an interrupted pass is finished by running it again. Each run is evaluated in
a fresh spawned process, as ``run`` isolates a cell: a crash or an out-of-memory kill fails that run's
evaluation, is reported, and the pass goes on. The real splits are loaded as the run loaded them
(its dataset, seed and protocol). Nothing here imports a method: no generator is refitted.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Sequence

from bench.core.errors import UsageError
from bench.harness import tracking
from bench.harness import provenance
from bench.harness.cpuload import ForeignLoad
from bench.harness.artifacts import DRAWN_KINDS, SAMPLES_PNG
from bench.harness.record import IMPORTED_TAG, SplitFacts
from bench.harness.runner import available_cores
from bench.harness.samples import SAMPLE_FILE
from bench.harness.worker import HASH_SEED


class RescoreError(UsageError, ValueError):
    pass


@dataclass
class Rescored:
    run_id: str
    label: str
    status: str  # "scored", "up to date" (…; "drew samples.png"), "no stored sample", "failed: …"
    metrics: dict[str, float] = field(default_factory=dict)


def evaluate_stored_sample(
    sample_path: str,
    cell_json: dict[str, Any],
    data_dir: str | None,
    evaluators: Sequence[str],
    settings: Mapping[str, Mapping[str, Any]],
    out: str,
    delta_resolved: float | None = None,
    threads: int = 1,
    draw_samples: bool = False,
) -> tuple[dict[str, float], dict[str, str]]:
    """In the child: load the run's real splits (its cell's dataset, seed and protocol) and stored
    sample, evaluate, write the evaluations' artifacts to ``out``; the metrics (with
    ``time.eval_<name>_s``) and tags. The cell also serves an evaluator that refits the method
    (``EvalContext.shadow_fit``); ``delta_resolved``: the δ the run's fit used; ``threads``: the
    cores the evaluators' thread pools may use (torch's and BLAS/OpenMP); ``draw_samples``: also
    draw the sample's ``samples.png`` (a run fitted elsewhere whose picture did not come back)."""
    import torch

    torch.set_num_threads(max(1, threads))
    from bench.api.contracts import EvalContext
    from bench.api.registry import DATASETS, EVALUATORS
    from bench.harness.grid import configured
    from bench.harness.cell import Cell
    from bench.harness.samples import load_synthetic
    from bench.core.paths import cache_dir
    from bench.harness.worker import Outcome, pools_held_to, record_evaluation

    cell = Cell.from_json(cell_json)
    folder = Path(data_dir) if data_dir else None
    split = DATASETS.get(cell.dataset).load(folder, cell.seed, cell.protocol)
    synthetic, _ = load_synthetic(Path(sample_path), split.train.schema)
    context = EvalContext(
        seed=cell.seed,
        data_dir=folder,
        protocol=cell.protocol,
        cache_dir=cache_dir(),
        shadow_fit=_run_shadow_fit(cell, delta_resolved, folder),
    )
    outcome = Outcome(status="FINISHED")
    for name in evaluators:
        evaluator = configured(EVALUATORS.get(name), dict(settings.get(name, {})))
        started = time.perf_counter()
        with pools_held_to(threads):
            evaluation = evaluator.evaluate(synthetic, split.train, split.test, context)
        record_evaluation(evaluator, evaluation, outcome, Path(out))
        outcome.metrics[f"time.eval_{name}_s"] = time.perf_counter() - started
    if draw_samples:
        from bench.harness.artifacts import save_samples_png

        try:
            save_samples_png(DATASETS.get(cell.dataset).kind.value, synthetic, split.test, Path(out), cell.label)
        except Exception as error:  # noqa: BLE001 - a picture is no reason to lose the scores beside it
            outcome.tags["errors.samples_png"] = f"{type(error).__name__}: {error}"
    return outcome.metrics, outcome.tags


def _run_shadow_fit(cell: Any, delta_resolved: float | None, data_dir: Path | None) -> Any:
    """The run's method refitted as its cell did (``bench.harness.worker.shadow_fitter``), built on
    first use."""
    built: list[Any] = []

    def fit_and_sample(rows: Any, seed: int, n: int) -> Any:
        if not built:
            built.append(_shadow_fitter_of(cell, delta_resolved, data_dir))
        return built[0](rows, seed, n)

    return fit_and_sample


def _shadow_fitter_of(cell: Any, delta_resolved: float | None, data_dir: Path | None) -> Any:
    import math

    from bench.api.contracts import FitContext
    from bench.api.registry import DATASETS, METHODS
    from bench.harness.worker import shadow_fitter
    from bench.privacy.budget import PrivacyBudget
    from bench.privacy.ledger import PrivacyLedger

    method = METHODS.get(cell.method)
    if math.isfinite(cell.epsilon):
        if delta_resolved is None:
            raise RescoreError("the run logged no delta_resolved: its shadow fits cannot use its δ")
        budget = PrivacyBudget(cell.epsilon, delta_resolved)
    else:
        budget = PrivacyBudget.non_private()
    template = FitContext.of(
        DATASETS.get(cell.dataset),
        method.hyperparameters.build(cell.params),
        cell.seed,
        PrivacyLedger(budget),
        protocol=cell.protocol,
        data_dir=data_dir,
    )
    return shadow_fitter(method, template, calibrator=cell.calibrator, secure_noise=cell.secure_noise)


def rescore(
    experiment: str,
    evaluators: Sequence[str],
    *,
    methods: Sequence[str] | None = None,
    datasets: Sequence[str] | None = None,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    data_dir: str | None = None,
    rerun: bool = False,
    report: Callable[[Rescored], None] = lambda done: None,
    run_ids: Collection[str] | None = None,
) -> list[Rescored]:
    from mlflow.entities import Metric

    client = tracking.client()
    experiment_id = tracking.experiment_id(client, experiment, create=False)
    if experiment_id is None:
        raise RescoreError(
            f"no experiment {experiment!r} in {tracking.tracking_uri()}; `python -m bench runs` lists them"
        )
    if run_ids is not None:
        known = {run.info.run_id for run in tracking.iter_runs(client, experiment_id, "attributes.status = 'FINISHED'")}
        if unknown := sorted(set(run_ids) - known):
            raise RescoreError(
                f"no finished run {', '.join(unknown)} in experiment {experiment!r}: `python -m bench runs "
                f"--experiment {experiment}` lists them (full run ids)"
            )
    done: list[Rescored] = []
    evaluating_commit = provenance.git_commit()
    os.environ["PYTHONHASHSEED"] = HASH_SEED  # each evaluation's interpreter, as a cell's (shadow fits refit)
    # the cores no other program keeps busy, read before each run (see pools_held_to)
    foreign, cores = ForeignLoad(), available_cores()
    for run in tracking.iter_runs(client, experiment_id, "attributes.status = 'FINISHED'"):
        tags = run.data.tags
        if "cell_key" not in tags or (run_ids is not None and run.info.run_id not in run_ids):
            continue
        cell = tracking.stored_cell(client, run)
        if (methods and cell.method not in methods) or (datasets and cell.dataset not in datasets):
            continue
        label = tags.get("cell", run.info.run_id)
        wanted = [name for name in evaluators if rerun or not tracking.evaluator_complete(run.data, name)]
        draw = _picture_missing(client, run.info.run_id, cell.dataset)
        if not wanted and not draw:
            done.append(Rescored(run.info.run_id, label, "up to date"))
            report(done[-1])
            continue
        with tempfile.TemporaryDirectory(prefix="dpbench-evaluate-") as work:
            try:
                sample = client.download_artifacts(run.info.run_id, SAMPLE_FILE, work)
            except Exception:  # noqa: BLE001 - MLflow raises several types for a missing artifact
                why = (
                    "no stored sample: imported from a record, which holds no synthetic rows; evaluate it in the "
                    "store it was fitted in, or refit it here with `python -m bench run … --rerun`"
                    if IMPORTED_TAG in tags
                    else "no stored sample (fitted before samples were kept): refit it with `python -m bench run … --rerun`"
                )
                done.append(Rescored(run.info.run_id, label, why))
                report(done[-1])
                continue
            out = Path(work) / "out"
            out.mkdir()
            try:
                with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
                    metrics, new_tags = pool.submit(
                        evaluate_stored_sample,
                        sample,
                        cell.to_json(),
                        data_dir or cell.data_dir,
                        list(wanted),
                        dict(settings or {}),
                        str(out),
                        SplitFacts.from_logged(run.data.params).delta,
                        max(1, cores - foreign.cores_taken()),
                        draw,
                    ).result()
            except BrokenProcessPool:
                done.append(Rescored(run.info.run_id, label, "failed: the evaluating process died (out of memory?)"))
            except Exception as error:  # noqa: BLE001 - one run's failure is reported, the pass goes on
                done.append(Rescored(run.info.run_id, label, f"failed: {type(error).__name__}: {error}"))
            else:
                now = int(time.time() * 1000)
                client.log_batch(run.info.run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()])
                if wanted:  # (not for a picture alone)
                    evaluated = sorted(set(filter(None, tags.get("evaluated_later", "").split(","))) | set(wanted))
                    client.set_tag(run.info.run_id, "evaluated_later", ",".join(evaluated))
                    # the code that scored it, which may be later than the code that fitted it (git_commit):
                    # per evaluator, since passes at different commits may score one run; the plain tag is the last pass's
                    client.set_tag(run.info.run_id, "evaluated_later.git_commit", evaluating_commit)
                    for name in wanted:
                        client.set_tag(run.info.run_id, f"evaluated_later.{name}.git_commit", evaluating_commit)
                for key, value in new_tags.items():
                    client.set_tag(run.info.run_id, key, value)
                for name in wanted:  # a part that failed before and scored now: its error is history
                    if f"errors.{name}" in tags and f"errors.{name}" not in new_tags:
                        client.delete_tag(run.info.run_id, f"errors.{name}")
                for artifact in out.iterdir():
                    client.log_artifact(run.info.run_id, str(artifact))
                done.append(
                    Rescored(run.info.run_id, label, "scored" if wanted else f"up to date; drew {SAMPLES_PNG}", metrics)
                )
        report(done[-1])
    return done


def _picture_missing(client: Any, run_id: str, dataset: str) -> bool:
    """Whether a run of a dataset whose samples a picture shows has its stored sample but not its
    ``samples.png`` (fitted on a lent machine whose artifacts did not all come back)."""
    from bench.api.registry import DATASETS, RegistryError

    try:
        if DATASETS.get(dataset).kind.value not in DRAWN_KINDS:
            return False
        stored = {artifact.path for artifact in client.list_artifacts(run_id)}
    except (RegistryError, OSError):  # a dataset not registered now, or artifacts out of reach: nothing to draw
        return False
    return SAMPLE_FILE in stored and SAMPLES_PNG not in stored


def score_fitted_setups(
    cells: Sequence[Any],
    experiment: str,
    report: Callable[[Rescored], None] = lambda done: None,
) -> tuple[list[Any], list[Rescored]]:
    """One fit per setup: of ``cells``, those whose setup (``Cell.setup_key``: the cell without its
    evaluators) already has a finished run in ``experiment`` are not fitted again — the
    evaluators that run lacks score its stored sample, into it. Returns the cells left to fit
    (their own cell key finished — the runner skips those —, their setup not fitted, or its run
    without a stored sample) and what was scored. A store that cannot be read leaves every cell
    to the runner, which says why."""
    try:
        if tracking.is_remote():  # a silent server: the 5-s probe, not MLflow's minutes of retries
            tracking.check_tracking(for_writing=False)
        client = tracking.client()
        experiment_id = tracking.experiment_id(client, experiment, create=False)
        if experiment_id is None:
            return list(cells), []
        finished = tracking.finished_cell_keys(client, experiment_id)
        fitted = tracking.fitted_setups(client, experiment_id)
    except Exception:  # noqa: BLE001 - the runner reports an unreachable or broken store
        return list(cells), []
    to_fit: set[int] = set()  # the cells left to the runner (ids), returned in their given order
    wanted: dict[str, tuple[list[Any], list[str]]] = {}  # run id → (its cells, the evaluators it lacks)
    for cell in cells:
        if cell.key in finished or cell.setup_key not in fitted:
            to_fit.add(id(cell))
            continue
        run_id, metrics = fitted[cell.setup_key]
        mine, missing = wanted.setdefault(run_id, ([], []))
        mine.append(cell)
        missing += [
            name
            for name in cell.evaluators
            if name not in missing and not tracking.has_evaluator_metrics(metrics, name)
        ]
    scored: list[Rescored] = []
    for run_id, (mine, missing) in wanted.items():
        if not missing:
            scored.append(Rescored(run_id, mine[0].label, "up to date"))
            report(scored[-1])
            continue
        settings: dict[str, Mapping[str, Any]] = {}
        for cell in mine:
            settings.update(cell.evaluator_settings)
        result = rescore(
            experiment, missing, settings=settings, data_dir=mine[0].data_dir, run_ids={run_id}, report=report
        )
        scored += result
        if not result or not result[0].status.startswith(("scored", "up to date")):
            to_fit.update(map(id, mine))  # no stored sample, or scoring failed: the runner fits the cells
    return [cell for cell in cells if id(cell) in to_fit], scored


def summary_line(result: Rescored) -> str:
    shown = {k: round(v, 4) for k, v in result.metrics.items() if not k.startswith("time.")}
    return f"{result.status:>10}  {result.label}" + (f"  {json.dumps(shown)[:300]}" if shown else "")
