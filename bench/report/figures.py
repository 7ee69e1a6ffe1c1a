"""The report's figures: privacy–utility plots, sample grids fetched from the runs' artifacts, the privacy triad."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pandas as pd
from bench.report.blocks import Block

from bench.report.preset import Preset
from bench.report.source import RunSource
from bench.report.tables import epsilon_text


def _png(fig: Any) -> bytes:
    from bench.core.plotting import pyplot

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    pyplot().close(fig)
    return buffer.getvalue()


def triad_blocks(preset: Preset, runs: pd.DataFrame, source: RunSource) -> list[Block]:
    """The privacy triad of the preset's runs that hold the privacy evaluator's metrics."""
    from bench.report.triad import audit_bounds, triad_rows

    if not preset.triad or "privacy.mia_auc" not in runs.columns or runs["privacy.mia_auc"].isna().all():
        return []
    header, rows = triad_rows(runs, audit_bounds(source=source))
    return [
        Block(
            "p",
            "Privacy side by side, per dataset, ε and method: the ledger's ε and the independent accountant's, "
            "the ε lower bound of `bench audit` (experiment `audit`), the membership attack on the released "
            "rows (DOMIAS AUC with the widest of its seeds' 95% CIs; 0.5: no signal), the DCR share (0.5 ideal), "
            "the detection AUC of a classifier telling synthetic from real test rows (0.5 ideal; where it reads ≈ 1.00, "
            "one column alone may give the rows away — a point mass or an integer grid the generator never "
            "emits: `benchmarks/detection_columns.py` tells, docs/data.md explains) and the "
            "utility metric. Cells: mean ± sd [95% CI] (seeds); runs without these metrics are left out.",
        ),
        Block("table", header=header, rows=rows),
    ]


def plot_blocks(preset: Preset, runs: pd.DataFrame) -> list[Block]:
    from bench.report.plots import privacy_utility_figure

    blocks = []
    if runs.empty:
        return blocks
    bands = _data_independent_methods()
    for metric in preset.plot_metrics:
        if metric not in runs.columns:
            continue
        for dataset, rows in runs.dropna(subset=[metric]).groupby("dataset"):
            if not (rows["epsilon"].map(math.isfinite) & ~rows["method_name"].isin(bands)).any():
                continue  # no private method here: nothing to draw against ε
            fig = privacy_utility_figure(
                rows,
                metric,
                f"{dataset}: {metric} against ε ({preset.name})",
                {m for m in rows["method"] if m.split(" [")[0] in bands},
            )
            name = f"{preset.name}_{dataset}_{metric}".replace(" ", "_").replace("/", "_")
            name = "".join(c if c.isalnum() or c in "._-" else "_" for c in name) + ".png"
            blocks.append(
                Block("image", text=f"{dataset}: {metric} against ε", png=_png(fig), file=f"{FILES_FOLDER}/{name}")
            )
    return blocks


SAMPLES_ARTIFACT = "samples.png"


def sample_file(preset: Preset, run_id: str) -> str:
    """A sample grid's path in the report, named by its run: a file kept from an earlier report
    under this name is that run's artifact and nothing else."""
    return f"{FILES_FOLDER}/samples_{preset.name}_{run_id}.png"


def sample_blocks(preset: Preset, runs: pd.DataFrame, earlier_report: Path | None, source: RunSource) -> list[Block]:
    """One sample grid per dataset × setup × ε: the ``samples.png`` of its lowest seed's run, read
    from the run's artifacts or, where they are not on this machine, kept from an earlier report
    written to the same folder (the file name carries the run id)."""
    if runs.empty:
        return []
    blocks, unreachable = [], []
    # the same run on every machine: lowest seed, then the earliest and the smallest id (presets
    # sharing an experiment may hold two runs of one seed)
    ordered = runs.sort_values(["seed", "start_time", "run_id"], kind="stable")
    first = (
        ordered.groupby(["dataset", "method", "epsilon"])
        .head(1)
        .sort_values(["dataset", "method", "epsilon"], kind="stable")
    )
    for row in first.itertuples():
        file = sample_file(preset, row.run_id)
        png = source.artifact(row.run_id, SAMPLES_ARTIFACT)
        if png is None and earlier_report is not None and (earlier_report / file).is_file():
            png = (earlier_report / file).read_bytes()
        label = (
            f"{row.dataset}: samples of {row.method} ε={epsilon_text(row.epsilon)}, seed {row.seed} (run {row.run_id})"
        )
        if png is None:
            unreachable.append(f"{row.dataset}, {row.method} ε={epsilon_text(row.epsilon)}: run `{row.run_id}`")
        else:
            blocks.append(Block("image", text=label, png=png, file=file))
    if blocks:
        blocks.insert(
            0,
            Block(
                "p",
                "Samples: generated 2-D points beside real ones (the test split's; a picture titled "
                "'real (train)' predates that and draws the training split's), or a grid of generated "
                f"images per class (the run's `{SAMPLES_ARTIFACT}` artifact), one run per setup, its lowest seed.",
            ),
        )
    if unreachable:
        blocks.append(
            Block(
                "p",
                f"No sample grid for these setups: no `{SAMPLES_ARTIFACT}` of their runs is reachable "
                "here (the store carries parameters and metrics; artifacts stay where the run ran).",
            )
        )
        blocks.append(Block("list", items=unreachable))
    return blocks


FILES_FOLDER = "report_files"


def _data_independent_methods() -> set[str]:
    from bench.api.registry import METHODS

    return {m.name for m in METHODS if m.data_independent}
