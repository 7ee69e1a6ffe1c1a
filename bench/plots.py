"""Privacy–utility curves: a metric against ε per method, one PNG per dataset."""

from __future__ import annotations

import math
from pathlib import Path

from bench.tables import TableError, load_runs, spec_for


def plot_experiment(experiment: str, metric: str, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = load_runs(experiment)
    if metric not in frame.columns:
        known = sorted(c for c in frame.columns if "." in c)
        raise TableError(f"no metric {metric!r} in these runs; available: {', '.join(known)}")
    spec = spec_for(metric)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for dataset, rows in frame.dropna(subset=[metric]).groupby("dataset"):
        fig, ax = plt.subplots(figsize=(6, 4.2))
        private = rows[rows["epsilon"].map(math.isfinite)]
        for method, group in private.groupby("method"):
            stats = group.groupby("epsilon")[metric].agg(["mean", "std", "count"]).sort_index()
            ax.errorbar(stats.index, stats["mean"], yerr=stats["std"].fillna(0), marker="o", capsize=3, label=method)
        for method, group in rows[~rows["epsilon"].map(math.isfinite)].groupby("method"):
            mean, std = group[metric].mean(), group[metric].std(ddof=1) if len(group) > 1 else 0.0
            line = ax.axhline(mean, linestyle="--", label=f"{method} (non-private)")
            ax.axhspan(mean - std, mean + std, color=line.get_color(), alpha=0.12)
        if private["epsilon"].nunique() > 1:
            ax.set_xscale("log")
        ax.set_xlabel("ε (δ as logged)")
        direction = f" ({spec.direction.value} is better)" if spec else ""
        ax.set_ylabel(metric + direction)
        ax.set_title(f"{dataset}: mean ± std over seeds")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out_dir / f"{experiment}_{dataset}_{metric.replace('/', '_')}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written

