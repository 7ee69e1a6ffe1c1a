"""What a preset's missing cells would cost: the median logged seconds of cells of the same
setting (``cost_key``: method, dataset, profile, protocol, evaluators, every hyperparameter), else
a documented CPU measurement, never a guess."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from collections.abc import Iterable
from typing import Any

import pandas as pd

from bench.report.blocks import Block
from bench.report.tables import format_number

from bench.report.preset import MEASUREMENTS, Preset, grid_cells


class AtLeast(float):
    """A documented measurement of a cell that was stopped before it finished: a lower bound on
    its cost, rendered ``≥``. Arithmetic on it gives a plain float, so a sum is marked by
    :func:`approximately` from its terms."""


def approximately(*terms: float | None) -> str:
    """``≥`` when any term is a lower bound (:class:`AtLeast`), else ``≈``."""
    return "≥" if any(isinstance(t, AtLeast) for t in terms) else "≈"


# Measured wall seconds per cell on the 2 shared development cores, for presets whose cells have
# no timing in the store yet (sources: README.md, results/README.md and docs/data.md, where each
# was reported), keyed by (method, dataset, profile).
DOCUMENTED_SECONDS = {
    ("dp-hp", "mnist", "paper"): 4515,  # results/README, lost store: fit 3,656 s + classifiers 505 s + FID 354 s
    ("dp-merf", "mnist", "paper"): 1030,  # results/README, lost store: fit 526 s; classifiers ≈ DP-HP's 505 s
    ("mst", "census-discrete", "paper"): 923,  # results/README, lost store: MST fit 189 s + marginals 734 s
    # docs/data.md, lost store, seed 0 at ε = 1 beside 3–5 other jobs (upper bounds): fit, 12
    # classifiers and FID at 5,000 samples
    ("dp-mepf", "mnist", "cpu"): 4650,
    ("dp-mepf", "fashion-mnist", "cpu"): 4631,
    ("dp-hp", "mnist", "cpu"): 4330,
    ("dp-merf", "mnist", "cpu"): 3204,
    # results/README, 2026-11-26, seed 0 at ε = 0.3, one thread beside two other jobs, stopped:
    # the first 1% of the fit (20 of 2,000 steps of the seeds' 5 → 16,400 → 4,100 generator, after
    # the release) took 191 s; DP-MERF's second 1% (20 full-batch steps over 99,762 rows at 10,000
    # features) did not end within 102 s
    ("dp-hp", "census-discrete", "paper"): AtLeast(19_100),
    ("dp-merf", "census-discrete", "paper"): AtLeast(10_200),
    # results/README, seed 0, stopped after 1,096 s inside one classifier's fit with most of the
    # ≈ 60 multi-class variants still queued (a generator's rows can fit faster: a collapsed
    # DP-GAN census sample evaluates in 21 s, the real rows in 520 s)
    ("real", "intrusion", "paper"): AtLeast(1_096),
    # results/README, DP-HP at ε = 1, seed 0, beside two other jobs, stopped after 2,522 s in its
    # evaluation (at the gradient-boosting variants, the 10th of 12 classifiers)
    ("dp-hp", "intrusion", "paper"): AtLeast(2_522),
}


def _measured_fit_costs(file: str) -> dict[tuple[str, str, str], AtLeast]:
    """The image cells timed by ``benchmarks/image_cell_costs.py`` (its committed output): each fit's
    measured rate over its first steps, extrapolated to all of them, evaluation not counted (for
    ``real``, which has no fit, the cheapest classifiers of its evaluation) — a lower bound on the cell."""
    setups = json.loads((MEASUREMENTS / file).read_text())["setups"]
    return {
        (s["method"], s["dataset"], s["profile"]): AtLeast(s.get("fit_seconds", 0) + s.get("evaluation_seconds", 0))
        for s in setups
    }


IMAGE_FIT_COSTS = "image_cell_costs_2026-11-27.json"
DOCUMENTED_SECONDS.update(
    {key: seconds for key, seconds in _measured_fit_costs(IMAGE_FIT_COSTS).items() if key not in DOCUMENTED_SECONDS}
)  # a whole measured cell beats a fit's lower bound


CostKey = tuple[str, str, str]  # (method, dataset, the setting as JSON)


def cost_key(cell: Any, scored: Iterable[str] | None = None) -> CostKey:
    """What decides a cell's time: the method, the dataset and the setting — profile, protocol,
    evaluators (as a set) with their --eval-set values and every hyperparameter — so that a smoke
    run never prices a paper cell. ε, δ, seed and calibrator are left out. ``scored``: the
    evaluators a run was actually scored by, where that differs from its cell's (a fit logged with
    ``--evaluators none`` and scored later by ``bench evaluate``)."""
    params = cell.mlflow_params()
    evaluators = params["evaluators"].split(",") if scored is None else scored
    setting = {
        "profile": cell.profile,
        "protocol": cell.protocol.value,
        "evaluators": ",".join(sorted(filter(None, evaluators))),
    }
    setting.update({k: v for k, v in params.items() if k.startswith(("hp.", "eval."))})
    return cell.method, cell.dataset, json.dumps(setting, sort_keys=True)


def seconds_for(key: CostKey, timings: dict[CostKey, float]) -> float | None:
    """The median logged seconds of cells of exactly this setting, else the documented CPU
    measurement of a cell of this method, dataset and profile (DOCUMENTED_SECONDS), else None:
    never a guess."""
    if key in timings:
        return timings[key]
    return DOCUMENTED_SECONDS.get((key[0], key[1], json.loads(key[2])["profile"]))


def evaluators_timed(metrics: dict[str, float]) -> list[str]:
    """The evaluators whose wall time a run logged (``time.eval_<evaluator>_s``)."""
    return [k[len("time.eval_") : -len("_s")] for k in metrics if k.startswith("time.eval_") and k.endswith("_s")]


def logged_seconds(gpu: bool = False, source: Any = None) -> dict[CostKey, float]:
    """Median wall seconds (load + fit + sample + every evaluator) per :func:`cost_key` over the
    finished runs of every experiment in ``source`` (default: the MLflow store), of the CPU runs
    or (``gpu``) of the runs whose ``device`` tag names a GPU; empty when there is no store."""
    import statistics

    from bench.report.source import MlflowSource

    source = source or MlflowSource()
    seconds: dict[CostKey, list[float]] = {}
    for experiment in source.experiments():
        for run in source.finished_runs(experiment) or []:
            if run.cell is None or (run.tags.get("device", "cpu") != "cpu") != gpu:
                continue
            metrics = run.all_metrics()
            times = [v for k, v in metrics.items() if k.startswith("time.") and k.endswith("_s")]
            key = cost_key(run.cell, None if run.cell.evaluators else evaluators_timed(metrics))
            if times:
                seconds.setdefault(key, []).append(sum(times))
    return {key: statistics.median(values) for key, values in seconds.items()}


def duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{max(seconds / 60, 1):.0f} min"


@dataclass(frozen=True)
class CostEstimate:
    cells: int
    seconds: float  # of the cells with a CPU measurement
    unmeasured: int  # cells with no logged or documented CPU timing
    gpu_seconds: float = 0.0  # of the cells with a GPU measurement
    gpu_measured: int = 0

    def text(self) -> str:
        if self.unmeasured == self.cells:
            cpu = f"{self.cells} cells, no CPU timing measured yet"
        else:
            extra = f" + {self.unmeasured} cells not measured yet" if self.unmeasured else ""
            cpu = f"{self.cells} cells, {approximately(self.seconds)} {duration(self.seconds)} on 2 CPU cores{extra}"
        if not self.gpu_measured:
            return f"{cpu}; GPU: no run logged on one yet"
        return f"{cpu}; GPU: ≈ {duration(self.gpu_seconds)} for the {self.gpu_measured} cells measured on one"


def estimate_cost(
    preset: Preset, timings: dict[CostKey, float] | None = None, gpu_timings: dict[CostKey, float] | None = None
) -> CostEstimate:
    """Cells × median logged seconds of cells of the same setting (:func:`cost_key`, any
    experiment), else the documented CPU measurement; cells with neither are counted apart, never
    guessed. GPU cost comes only from runs logged on a GPU."""
    timings, gpu_timings = timings or {}, gpu_timings or {}
    keys = [cost_key(cell) for grid in preset.grids for cell in grid_cells(grid, preset.experiment)]
    measured = [s for s in (seconds_for(k, timings) for k in keys) if s is not None]
    on_gpu = [gpu_timings[k] for k in keys if k in gpu_timings]
    cells = keys
    total = float(sum(measured))
    return CostEstimate(
        len(cells),
        AtLeast(total) if approximately(*measured) == "≥" else total,
        len(cells) - len(measured),
        float(sum(on_gpu)),
        len(on_gpu),
    )


COST_LEGEND = (
    "What the runs here cost, per dataset and method (all ε together): the median over finished runs of "
    "the fit's wall seconds (`time.fit_s`), the evaluation's (the sum of the evaluators' `time.eval_*_s`) and "
    "the cell process's peak memory (`peak_memory_mib`), as each run logged it — on 2-core machines shared "
    "with other jobs, so an upper bound on an idle machine's time."
)


def summed_seconds(runs: pd.DataFrame, name: str) -> pd.Series | None:
    """Per-run sums of logged wall seconds that no single metric holds: ``time.evaluation_s``
    (every evaluator's ``time.eval_*_s``) and ``time.cell_s`` (load, fit, sample, accounting and
    every evaluator: the cell's cost); None for any other name."""
    parts = {
        "time.evaluation_s": [c for c in runs.columns if c.startswith("time.eval_") and c.endswith("_s")],
        "time.cell_s": [c for c in runs.columns if c.startswith("time.") and c.endswith("_s") and c not in SUMMED],
    }.get(name)
    if parts is None:
        return None
    return runs[parts].sum(axis=1, min_count=1) if parts else pd.Series(math.nan, index=runs.index)


SUMMED = ("time.evaluation_s", "time.cell_s")


def measured_cost_rows(runs: pd.DataFrame) -> list[list[str]]:
    """One row per (dataset, method) label of ``runs``: median fit s, evaluation s, peak MiB, runs."""
    if runs.empty or "time.fit_s" not in runs.columns:
        return []
    frame = runs.assign(evaluation_s=summed_seconds(runs, "time.evaluation_s"))
    if "peak_memory_mib" not in frame.columns:
        frame = frame.assign(peak_memory_mib=math.nan)
    rows = []
    for (dataset, method), group in frame.groupby(["dataset", "method"], sort=True):
        medians = [group[c].median() for c in ("time.fit_s", "evaluation_s", "peak_memory_mib")]
        rows.append([dataset, method, *("—" if pd.isna(m) else format_number(m) for m in medians), str(len(group))])
    return rows


def measured_cost_blocks(runs: pd.DataFrame) -> list[Block]:
    rows = measured_cost_rows(runs)
    if not rows:
        return []
    return [
        Block("h3", "Cost of the runs here"),
        Block("p", COST_LEGEND),
        Block("table", header=["dataset", "method", "fit s", "evaluation s", "peak memory MiB", "runs"], rows=rows),
    ]
