"""Runs one grid cell: load → fit (through the ledger) → sample → evaluate → files on disk.

It runs in its own process (so a hanging cell can be killed on ``--timeout``) and never talks
to MLflow: it writes ``outcome.json`` and artifacts into its work folder, and the parent, the
only MLflow writer, logs them. A crash therefore never leaves a half-logged run.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import resource
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from bench.core.processes import die_with_parent

if TYPE_CHECKING:
    from bench.api.contracts import Evaluation, Evaluator

OUTCOME_FILE = "outcome.json"
# Python's string hashes, and so the iteration order of a set of column names, are randomised per
# interpreter unless PYTHONHASHSEED is set: mbi's sampler orders a column's parents by iterating a
# set (MarkovRandomField.synthetic_data: ``tuple(used.intersection(...))``), so an AIM or MST fit
# drew other rows in every process. Each cell's interpreter starts with this fixed seed instead.
HASH_SEED = "0"


def _progress(report: Callable[[float], None], cores: "LentCores") -> Callable[[int, int], None]:
    def progress(done: int, total: int) -> None:
        cores.poll()  # the fit's steps are where lent cores can be taken up
        report(done / max(total, 1))

    return progress


class LentCores:
    """Idle cores the runner lends a cell's fit, on top of its own ``--threads``.

    Only for a lendable cell (its method gives the same bits at any thread count on this data
    kind), and only while it fits: the evaluators may not be thread-invariant, so the count goes
    back to the cell's own before the sample is drawn. ``offer`` is the runner's shared integer
    (the threads it may use now), read at the fit's progress reports."""

    def __init__(self, own: int, offer: Any = None) -> None:
        self.own = own
        self.offer = offer
        self.current = own
        self.most = own
        self.fitting = False

    def poll(self) -> None:
        if self.offer is None or not self.fitting:
            return
        wanted = max(self.own, int(self.offer.value))
        if wanted != self.current:
            import torch

            torch.set_num_threads(wanted)
            self.current = wanted
            self.most = max(self.most, wanted)

    def start(self) -> None:
        self.fitting = True
        self.poll()

    def stop(self) -> None:
        self.fitting = False
        if self.current != self.own:
            import torch

            torch.set_num_threads(self.own)
            self.current = self.own


@dataclass
class Outcome:
    status: str  # "FINISHED" or "FAILED"
    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    def write(self, folder: Path) -> None:
        (folder / OUTCOME_FILE).write_text(json.dumps(self.__dict__, default=str, allow_nan=True))

    @staticmethod
    def read(folder: Path) -> "Outcome | None":
        path = folder / OUTCOME_FILE
        return Outcome(**json.loads(path.read_text())) if path.exists() else None


def resolve_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for, but torch sees no CUDA device; use --device auto or cpu")
    return requested


def cpu_description() -> str:
    """The processor a cell ran on, with the vector extensions its float kernels choose by: two
    machines with the same package versions can still train to different numbers (a rerun on one
    machine is bit-identical; across machines GAN training amplifies kernel-level rounding)."""
    import platform

    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:  # not Linux: the model name from platform is what there is
        pass
    extensions = [name for name in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if name in flags]
    return " ".join([model, *extensions])


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def peak_memory_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def shadow_fitter(method: Any, template: Any, *, calibrator: str, secure_noise: bool = False) -> Callable[..., Any]:
    """``EvalContext.shadow_fit`` for a run: the run's ``method`` refitted with the settings, budget,
    device and protocol of its fit context ``template`` on the rows given, each time with a fresh
    ledger (an attacker's shadow fit releases nothing of the run), then ``n`` rows sampled."""
    from bench.privacy.ledger import PrivacyLedger
    from bench.privacy.private_data import PrivateData

    def fit_and_sample(rows: Any, seed: int, n: int) -> Any:
        ledger = PrivacyLedger(template.budget, calibrator=calibrator, secure_noise=secure_noise)
        ledger.use_public_fact("n_train", len(rows), "the shadow training set's row count")
        context = dataclasses.replace(template, ledger=ledger, seed=seed, progress=lambda done, total: None)
        return method.fit(PrivateData(rows, ledger), context).sample(n)

    return fit_and_sample


def record_evaluation(evaluator: Evaluator, evaluation: Evaluation, outcome: Outcome, out: Path) -> None:
    """An evaluator's ``Evaluation`` into the outcome and the work folder: metrics as
    ``<evaluator>.<metric>`` (each declared, or ``<group>.<declared>``), errors (parts that failed
    without failing the evaluation) as ``errors_<evaluator>.json`` and a tag, artifacts as files."""
    from bench.api.contracts import metric_key

    undeclared = {name for name in evaluation.metrics if name.rsplit(".", 1)[-1] not in evaluator.metrics}
    if undeclared:
        raise RuntimeError(f"evaluator {evaluator.name} returned undeclared metrics {sorted(undeclared)}")
    for name, value in evaluation.metrics.items():
        outcome.metrics[metric_key(evaluator.name, name)] = float(value)
    if evaluation.errors:
        (out / f"errors_{evaluator.name}.json").write_text(json.dumps(dict(evaluation.errors), indent=2))
        outcome.tags[f"errors.{evaluator.name}"] = "; ".join(sorted(evaluation.errors))[:4000]
    for file_name, content in evaluation.artifacts.items():
        (out / file_name).write_bytes(content)


def warn_of_training_copies(synthetic: Any, split: Any, kind: Any, label: str, outcome: Any) -> None:
    """A private run whose sample matches training rows far more than held-out rows is warned of
    and tagged ``warning.training_copies`` (:mod:`bench.privacy.copies`): a check that assumes
    nothing about the method's code."""
    import warnings

    from bench.privacy.copies import training_copies

    copies = training_copies(synthetic, split.train, split.test, kind)
    if copies.suspicious:
        outcome.tags["warning.training_copies"] = copies.describe()
        warnings.warn(f"{label}: the synthetic sample copies training rows: {copies.describe()}", stacklevel=2)


def tuned_preset_caveats(method: Any, cell: Any) -> list[str]:
    """The per-dataset presets this cell uses: chosen for this dataset by people who had its rows
    (the seeds' tables, or our own documented choices), so uncharged uses of private data."""
    presets = method.hyperparameters.per_dataset.get(cell.dataset, {})
    used = [
        f"{name} = {setting.value!r} ({setting.source})"
        for name, setting in presets.items()
        if cell.param_sources.get(name) == setting.source
    ]
    if not used:
        return []
    return [
        f"tuned_on_private_data: per-dataset presets chosen with access to {cell.dataset}, not charged: "
        + "; ".join(used)
    ]


def execute(
    cell_json: dict[str, Any],
    folder: str,
    report: Callable[[float], None],
    cores: LentCores | None = None,
    own_process: bool = False,
) -> Outcome:
    """Run the cell and write its artifacts; never raises (errors become a FAILED outcome).
    ``own_process``: this process runs this cell alone and ends with it, so the fit may take the
    process's read access to the data folder for good (``bench.core.walls.lock_data_folder``)."""
    import torch

    from bench.privacy.budget import PrivacyBudget
    from bench.core.paths import cache_dir, data_folder
    from bench.core.walls import DataWallError, fit_wall, lock_data_folder, wall_message
    from bench.harness import artifacts
    from bench.harness.grid import configured
    from bench.harness.cell import Cell
    from bench.harness.samples import SAMPLE_FILE, as_8bit_images, save_synthetic
    from bench.api.contracts import EvalContext, FitContext
    from bench.privacy.ledger import PrivacyLedger
    from bench.api.registry import DATASETS, EVALUATORS, METHODS

    out = Path(folder)
    cell = Cell.from_json(cell_json)
    cores = cores if cores is not None and cell.lendable and cell.device != "cuda" else LentCores(cell.threads)
    outcome = Outcome(status="FAILED")
    ledger: PrivacyLedger | None = None
    independent = None
    try:
        device_name = resolve_device(cell.device)
        if device_name != "cpu":  # lent cores are for CPU fits (thread invariance is a CPU property)
            cores = LentCores(cell.threads)
        outcome.tags["device"] = device_name if device_name == "cpu" else torch.cuda.get_device_name()
        outcome.tags["cpu"] = cpu_description()
        seed_everything(cell.seed)
        method = METHODS.get(cell.method)
        dataset = DATASETS.get(cell.dataset)
        evaluators = [
            configured(EVALUATORS.get(name), cell.evaluator_settings.get(name, {})) for name in cell.evaluators
        ]

        started = time.perf_counter()
        data_dir = Path(cell.data_dir) if cell.data_dir else None
        split = dataset.load(data_dir, cell.seed, cell.protocol)
        outcome.metrics["time.load_s"] = time.perf_counter() - started
        outcome.params.update(n_train=len(split.train), n_test=len(split.test))

        if math.isfinite(cell.epsilon):
            budget = PrivacyBudget(cell.epsilon, cell.delta.resolve(len(split.train)))
        else:
            budget = PrivacyBudget.non_private()
        outcome.params["delta_resolved"] = budget.delta
        ledger = PrivacyLedger(
            budget,
            calibrator=cell.calibrator,
            secure_noise=cell.secure_noise,
            caveats=list(split.caveats) + tuned_preset_caveats(method, cell),
        )
        ledger.use_public_fact(
            "n_train",
            len(split.train),
            "the training row count: under replace-one, neighbouring datasets have the same size",
        )
        context = FitContext.of(
            dataset,
            method.hyperparameters.build(cell.params),
            cell.seed,
            ledger,
            device=device_name,
            protocol=cell.protocol,
            progress=_progress(report, cores),
            data_dir=data_dir,
        )

        from bench.privacy.private_data import PrivateData

        started = time.perf_counter()
        cores.start()
        try:
            with fit_wall(method.name):  # no dataset load, no dataset file, while the fit runs
                if own_process:
                    locked = lock_data_folder(data_folder(data_dir).resolve())
                    outcome.tags["wall.data_folder"] = "landlock" if locked else "not available (no Landlock here)"
                fitted = method.fit(PrivateData(split.train, ledger), context)
        except PermissionError as error:  # an open() the process-level wall refused: say which wall
            if (
                own_process
                and error.filename
                and Path(str(error.filename)).resolve().is_relative_to(data_folder(data_dir).resolve())
            ):
                raise DataWallError(wall_message(method.name, str(error.filename))) from error
            raise
        finally:
            cores.stop()
        outcome.metrics["time.fit_s"] = time.perf_counter() - started
        outcome.tags["threads.fit_most"] = str(cores.most)
        if method.private and budget.is_private and not ledger.releases and not method.data_independent:
            raise RuntimeError(
                f"{method.name} is declared private but recorded no release in the ledger; "
                "a private method must release through the ledger (or declare private = False)"
            )
        started = time.perf_counter()
        independent = ledger.independent_check()  # a wrong claim fails the cell here
        outcome.metrics["time.independent_accounting_s"] = time.perf_counter() - started

        started = time.perf_counter()
        synthetic = fitted.sample(len(split.train))
        outcome.metrics["time.sample_s"] = time.perf_counter() - started
        if synthetic.schema != split.train.schema:
            raise RuntimeError(f"{method.name} returned data in another schema than the training data")
        if dataset.kind.value == "image":  # scored as stored: 8-bit pixels (bench/harness/samples.py)
            synthetic = as_8bit_images(synthetic)
        if method.private and budget.is_private:
            warn_of_training_copies(synthetic, split, dataset.kind, cell.label, outcome)

        eval_context = EvalContext(
            seed=cell.seed,
            device=device_name,
            data_dir=data_dir,
            protocol=cell.protocol,
            cache_dir=cache_dir(),
            shadow_fit=shadow_fitter(method, context, calibrator=cell.calibrator, secure_noise=cell.secure_noise),
        )
        for evaluator in evaluators:
            started = time.perf_counter()
            with pools_held_to(cell.threads):
                evaluation = evaluator.evaluate(synthetic, split.train, split.test, eval_context)
            record_evaluation(evaluator, evaluation, outcome, out)
            outcome.metrics[f"time.eval_{evaluator.name}_s"] = time.perf_counter() - started

        artifacts.save_sample(synthetic, out / "synthetic_sample.csv")
        save_synthetic(synthetic, out / SAMPLE_FILE, dataset=cell.dataset, private_rows=not method.private)
        artifacts.save_samples_png(dataset.kind.value, synthetic, split.test, out, cell.label)
        outcome.status = "FINISHED"
    except Exception as error:  # a failing cell is a result to log, not a crash of the grid
        outcome.error = f"{type(error).__name__}: {error}"
        (out / "traceback.txt").write_text(traceback.format_exc())
    finally:
        if ledger is not None:
            extra = {"independent": dataclasses.asdict(independent)} if independent is not None else {}
            (out / "ledger.json").write_text(ledger.to_json(extra))
            if ledger.budget.is_private:  # a non-private run is logged with param epsilon = inf
                # numeric, so that an MLflow filter finds it (metrics.`privacy.epsilon_target` = 1); the
                # param is the text of the cell key ('1.0')
                outcome.metrics["privacy.epsilon_target"] = ledger.budget.epsilon
                outcome.metrics["privacy.epsilon_spent"] = ledger.epsilon_spent
                outcome.metrics["privacy.delta_target"] = ledger.budget.delta
                outcome.metrics["privacy.delta_spent"] = ledger.delta_spent
                if independent is not None:
                    outcome.metrics["privacy.epsilon_independent"] = independent.epsilon
        outcome.metrics["peak_memory_mib"] = peak_memory_mib()
        outcome.write(out)
    return outcome


def _quiet_signals() -> None:
    """The runner owns SIGINT/SIGTERM: a Ctrl-C reaches the whole process group, and a worker
    printing a KeyboardInterrupt traceback would drown the runner's message. The runner blocked
    both while starting this process (so none arrives during start-up); ignore them and unblock."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    import sys

    print(f"warning: {' '.join(str(message).split())}", file=file or sys.stderr)


def pools_held_to(threads: int) -> Any:
    """BLAS and OpenMP thread pools held to ``threads`` (a context manager) while a cell evaluates.
    Unheld, scikit-learn's OpenMP code (histogram gradient boosting) starts a thread per core
    whatever the cell's share, and where another cell or program keeps a core busy its threads wait
    for each other at every split: the fidelity evaluator on isolet-subset took 229 s beside a busy
    core against 19 s held to one thread, with the same values (threads only split the work)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=max(1, threads))


def worker_main(cell_json: dict[str, Any], folder: str, queue: Any, torch_threads: int, offer: Any = None) -> None:
    """Entry point of the child process."""
    import warnings

    _quiet_signals()
    die_with_parent()
    warnings.showwarning = _one_line_warning
    # the runner's preflight reports δ ≥ 1/n_train once per dataset, not once per cell
    warnings.filterwarnings("ignore", message="δ = .* is not below 1/n_train")
    import torch

    # Fixed by the runner, never derived from --jobs: a different intra-op thread count can
    # change float reductions, and results must not depend on how many cells ran side by side.
    torch.set_num_threads(torch_threads)
    last = [0.0]

    def report(fraction: float) -> None:
        now = time.monotonic()
        if now - last[0] > 0.5 or fraction >= 1:
            last[0] = now
            queue.put((folder, "progress", fraction))

    try:
        execute(cell_json, folder, report, LentCores(torch_threads, offer), own_process=True)
    except BaseException as error:  # e.g. the folder's disk is full: not even outcome.json fits
        # execute() turns the cell's own errors into a FAILED outcome; what escapes it is a
        # failure to write that outcome. Tell the runner in one line instead of a traceback.
        queue.put((folder, "error", f"the worker could not write the cell's results: {type(error).__name__}: {error}"))
        queue.close()
        queue.join_thread()
        raise SystemExit(1) from None
