"""Plots regenerated from MLflow, one PNG per dataset.

* ``plot_experiment``: privacy–utility curves, a metric against ε per method (layout ``default``);
* ``plot_effective_size``: mean accuracy of the image classifiers against the number of training
  images, one line per method × ε, with the seeds' Fig. 3 values dashed (layout
  ``effective-size``; the metrics of ``evaluators/effective_size.py``).

The figure helpers every floor shares (the Agg backend, saving, the size axis that evaluators'
artifacts use too) are in ``bench.core.plotting``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from bench.core.plotting import format_size_axis, pyplot, save_figure


def plot_experiment(experiment: str, metric: str, out_dir: Path, source: Any = None) -> list[Path]:
    """One privacy–utility PNG per dataset (:func:`privacy_utility_figure`): private methods
    against ε, runs without noise and data-independent baselines as bands."""
    from bench.api.registry import METHODS
    from bench.report.frame import TableError, load_runs

    frame = load_runs(experiment, source)
    if metric not in frame.columns:
        known = sorted(c for c in frame.columns if "." in c)
        raise TableError(f"no metric {metric!r} in these runs; available: {', '.join(known)}")
    independent_of_data = {m.name for m in METHODS if m.data_independent}
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for dataset, rows in frame.dropna(subset=[metric]).groupby("dataset"):
        bands = set(rows.loc[rows["method_name"].isin(independent_of_data), "method"])
        fig = privacy_utility_figure(rows, metric, f"{dataset}: mean ± std over seeds", bands)
        path = out_dir / f"{experiment}_{dataset}_{metric.replace('/', '_')}.png"
        fig.savefig(path, dpi=120)
        pyplot().close(fig)
        written.append(path)
    return written


def plot_effective_size(
    experiment: str, out_dir: Path, frame: pd.DataFrame | None = None, source: Any = None
) -> list[Path]:
    """``effective_size_<dataset>.png`` per dataset: mean ± std over seeds of the mean accuracy
    against the training-set size, one line per method × ε (``real`` included), and the seeds'
    Fig. 3 values (``bench.report.versus.SEEDS_FIG3``) of the same setups as dashed lines."""
    from bench.report.versus import FIG3_SIZES, SEEDS_FIG3, effective_size_columns, setup_name
    from bench.report.frame import TableError, base_dataset, load_runs

    frame = load_runs(experiment, source) if frame is None else frame
    columns = effective_size_columns(frame)
    if not columns:
        raise TableError("no effective-size.acc_n<size> metric in these runs; run the effective-size evaluator")
    plt = pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for dataset, rows in frame.dropna(subset=list(columns.values()), how="all").groupby("dataset"):
        fig, ax = plt.subplots(figsize=(7, 4.8))
        seeds = SEEDS_FIG3.get(base_dataset(dataset), {})
        shown_sizes = set()
        for (method, epsilon), group in rows.groupby(["method", "epsilon"], sort=True):
            stats = pd.DataFrame(
                {size: group[column].agg(["mean", "std", "count"]) for size, column in columns.items()}
            ).T.dropna(subset=["mean"])
            if stats.empty:
                continue
            n_seeds = int(stats["count"].max())
            line = ax.errorbar(
                stats.index,
                stats["mean"],
                yerr=stats["std"].fillna(0),
                marker="o",
                markersize=3,
                capsize=2,
                color=method_colour(str(method)),
                label=f"{setup_name(method, epsilon)} (ours, {n_seeds} seed{'' if n_seeds == 1 else 's'})",
            )
            shown_sizes |= set(stats.index)
            published = seeds.get((method, epsilon))
            if published is not None:
                sizes = list(FIG3_SIZES)
                means = [value[0] if isinstance(value, tuple) else value for value in published]
                ax.plot(
                    sizes,
                    means,
                    linestyle="--",
                    linewidth=1,
                    color=line[0].get_color(),
                    label=f"{setup_name(method, epsilon)} (seeds' Fig. 3)",
                )
                shown_sizes |= set(sizes)
        format_size_axis(ax, sorted(shown_sizes))
        ax.set_title(f"{dataset}: effective size (mean ± std over seeds; dashed: the seeds' Fig. 3)", fontsize=9)
        ax.legend(fontsize=6.5, ncol=2)
        path = out_dir / f"effective_size_{dataset.replace(' ', '_').replace('/', '_')}.png"
        save_figure(fig, path)
        written.append(path)
    return written


# One colour per method in every plot (issue 31: the colours changed from plot to plot): the
# registered methods have fixed ones; any other label (a --set variant, a plugin) a stable hash.
METHOD_COLOURS = {
    "real": "#000000",
    "dp-merf": "#1f77b4",
    "dp-hp": "#ff7f0e",
    "dp-gan": "#2ca02c",
    "dp-cgan": "#d62728",
    "mst": "#9467bd",
    "aim": "#8c564b",
    "privbayes": "#e377c2",
    "independent": "#7f7f7f",
    "uniform": "#bcbd22",
    "full-mmd": "#17becf",
    "dp-mepf": "#393b79",
}


def method_colour(label: str) -> str:
    """The colour of a method label, the same in every plot; a band of a method's non-private
    variant shares its colour."""
    import zlib

    if label in METHOD_COLOURS:
        return METHOD_COLOURS[label]
    palette = pyplot().get_cmap("tab20").colors
    red, green, blue = palette[zlib.crc32(label.encode()) % len(palette)]
    return f"#{int(red * 255):02x}{int(green * 255):02x}{int(blue * 255):02x}"


def privacy_utility_figure(rows: pd.DataFrame, metric: str, title: str, bands: set[str]) -> Any:
    """Metric against ε (log axis) for one dataset: each private method a line of mean ± std
    over seeds per ε; as horizontal bands (mean ± std): every run without noise (ε = ∞: the real
    data, a private method's non-private variant) and each method named in ``bands`` (the
    data-independent baselines, whose value does not depend on ε; their per-ε runs are pooled
    per seed first so that a seed counts once). Trivial baselines are dashed."""
    from bench.report.tables import spec_for

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    data = rows.dropna(subset=[metric])
    finite = data["epsilon"].map(math.isfinite)
    for method, group in data[finite & ~data["method"].isin(bands)].groupby("method"):
        stats = group.groupby("epsilon")[metric].agg(["mean", "std", "count"]).sort_index()
        style = "--" if str(method).startswith("independent") else "-"
        ax.errorbar(
            stats.index,
            stats["mean"],
            yerr=stats["std"].fillna(0),
            marker="o",
            capsize=3,
            linestyle=style,
            color=method_colour(str(method)),
            label=f"{method} ({int(stats['count'].max())} seed{'s' if stats['count'].max() > 1 else ''})",
        )
    band_groups = [(m, f"{m} (ε = ∞)", g) for m, g in data[~finite].groupby("method")]
    band_groups += [
        (m, f"{m} (data-independent)", g.groupby("seed")[metric].mean().to_frame())
        for m, g in data[finite & data["method"].isin(bands)].groupby("method")
    ]
    for method, label, group in band_groups:
        values = group[metric]
        mean, std = values.mean(), values.std(ddof=1) if len(values) > 1 else 0.0
        colour = method_colour(str(method))
        ax.axhline(
            mean,
            linestyle=":" if "data-independent" in label else "--",
            linewidth=1.2,
            color=colour,
            label=f"{label}, {len(values)} seed{'s' if len(values) > 1 else ''}",
        )
        ax.axhspan(mean - std, mean + std, color=colour, alpha=0.12)
    if finite.any():
        ax.set_xscale("log")
    ax.set_xlabel("ε (δ = 1e-5 unless the title says otherwise)")
    spec = spec_for(metric)
    ax.set_ylabel(metric + (f" ({spec.direction.value} is better)" if spec and spec.direction else ""))
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
