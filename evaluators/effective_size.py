"""``effective-size``: accuracy of the 12 image classifiers against the number of synthetic
training images (the seeds' Fig. 3, "effective dataset size"; DP-HP (arXiv:2106.05042) Sec. 5.3, Fig. 3).

For each ratio in ``ratios`` (default the seeds' [1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005,
0.002, 0.001]) the classifiers of ``image-downstream`` (DP-HP Table 10, the same settings and
adaptations: ``evaluators/image_downstream.py``) are trained on ``size = round(ratio · n)`` of the
``n`` synthetic images (60,000 → 60,000, 30,000, …, 60 for MNIST) and tested on the real test
images. Ratio 1 is the whole synthetic set as generated (as the seeds: the real-data baseline is
then all 60,000 real images, whose classes are not exactly balanced); every smaller size is an
exactly class-balanced subset (``balanced_indices``: ``size / n_classes`` images per class, seeded
by ``seed``, the same subset for every classifier). A class with too few images gives all it has;
``n_train_n<size>`` reports the images actually used.

The real-data curve is this evaluator on runs of the ``real`` method, whose "synthetic" images are
the real training images; ``python -m bench plot --layout effective-size`` draws every method's
curve with the seeds' values, ``python -m bench table --layout fig3`` tabulates them.

Metrics, for each ``<size>`` (``<clf>`` a short name as in ``image-downstream``):

* ``acc_n<size>``: the mean accuracy over the classifiers that produced a value (Fig. 3's number);
* ``<clf>.acc_n<size>``, ``<clf>.fit_seconds_n<size>``, ``<clf>.failed_n<size>``;
* ``n_failed_n<size>`` and ``n_train_n<size>``; ``n_failed`` over all sizes.

The metric names depend on the synthetic set's size, so ``metrics`` accepts any
``<name>_n<digits>`` of these (:class:`SizedMetrics`) and lists those of a 60,000-image set.

Artifacts (``Evaluation.artifacts``): ``effective_size.csv`` (size, images used, mean accuracy,
one column per classifier) and ``effective_size.png`` (the curve, log x).

Cost: all sizes together are ≈ 1.9 times one ``image-downstream`` evaluation on the whole set.
All fits of all sizes share one pool (``evaluators.fitpool``; each task names its subset's rows).
"""

from __future__ import annotations

import csv
import math
import re
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
from sklearn.metrics import accuracy_score

from bench.core.data import LabelledData
from bench.api.contracts import Direction, EvalContext, Evaluation, MetricSpec
from evaluators.downstream import POOL_DIAGNOSTICS, summarise_fits
from evaluators.image_downstream import ImageClassifiers

# The seeds' Fig. 3 ratios of the synthetic set (github.com/ParkLabML/DP-HP code_balanced/plot_results.py).
FIG3_RATIOS: tuple[float, ...] = (1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001)
LISTED_SIZE = 60_000  # the synthetic set size whose metric names `metrics` lists (MNIST's)
CSV_FILE = "effective_size.csv"
PNG_FILE = "effective_size.png"

SIZED = {
    "acc": MetricSpec.quality(
        Direction.HIGHER, "accuracy on the real test images after training on <size> synthetic images"
    ),
    "fit_seconds": MetricSpec.diagnostic("wall time of one classifier's fit on <size> synthetic images"),
    "failed": MetricSpec.diagnostic("1 if the classifier failed at this size (see the errors), else 0"),
    "n_failed": MetricSpec.diagnostic("classifiers that failed at this size"),
    "n_train": MetricSpec.diagnostic("synthetic images actually used for this size (less when a class is short)"),
}
SIZED_NAME = re.compile(r"^(?P<base>" + "|".join(SIZED) + r")_n(?P<size>\d+)$")


def sizes_for(n: int, ratios: tuple[float, ...]) -> list[int]:
    """The distinct training-set sizes, largest first: round(ratio · n), at least 1."""
    return sorted({max(1, int(round(ratio * n))) for ratio in ratios}, reverse=True)


class SizedMetrics(Mapping[str, MetricSpec]):
    """The declared metrics: ``n_failed``, and ``<base>_n<size>`` for any size (``in`` and
    lookup accept every size); iteration lists the sizes of a ``listed_size``-image set."""

    def __init__(self, ratios: tuple[float, ...], listed_size: int = LISTED_SIZE) -> None:
        self._fixed = {
            "n_failed": MetricSpec.diagnostic("fits that failed, over all sizes"),
            "worker_peak_mib": POOL_DIAGNOSTICS["worker_peak_mib"],
        }
        self._listed = [f"{base}_n{size}" for size in sizes_for(listed_size, ratios) for base in SIZED]

    def __getitem__(self, name: str) -> MetricSpec:
        if name in self._fixed:
            return self._fixed[name]
        match = SIZED_NAME.match(name)
        if match is None:
            raise KeyError(name)
        return SIZED[match["base"]]

    def __iter__(self) -> Iterator[str]:
        return iter([*self._fixed, *self._listed])

    def __len__(self) -> int:
        return len(self._fixed) + len(self._listed)


@dataclass(frozen=True)
class SizePoint:
    """One size of an evaluation: images used, mean and per-classifier accuracy."""

    size: int
    n_train: int
    accuracy: float
    per_classifier: dict[str, float]


@dataclass(frozen=True)
class EffectiveSize(ImageClassifiers):
    name: str = "effective-size"
    description: str = (
        "mean accuracy of the 12 image classifiers vs the number of synthetic training images (the seeds' Fig. 3)"
    )
    ratios: tuple[float, ...] = FIG3_RATIOS
    run_by_default: bool = False  # ≈ 1.9 image-downstream evaluations: only when --evaluators names it
    metrics: Mapping[str, MetricSpec] = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        ratios = tuple(float(r) for r in self.ratios)
        if not ratios or any(not 0 < r <= 1 for r in ratios):
            raise ValueError(f"ratios must be a non-empty list of numbers in (0, 1]; got {self.ratios}")
        object.__setattr__(self, "ratios", ratios)  # frozen: normalised once, at construction
        object.__setattr__(self, "metrics", SizedMetrics(ratios))

    def evaluate(
        self, synthetic: LabelledData, real_train: LabelledData, real_test: LabelledData, context: EvalContext
    ) -> Evaluation:
        # largest sizes first: the longest fits start early
        sizes = sizes_for(len(synthetic), self.ratios) if len(synthetic) else []
        names, fits, n_train = self.fit_sizes(synthetic, real_test, sizes, context.cache_dir)
        y_test = np.asarray(real_test.y, dtype=np.int64)
        accuracy = lambda result: {"acc": float(accuracy_score(y_test, result.pred))}  # noqa: E731
        values: dict[str, float] = {}
        curve: list[SizePoint] = []
        for size, used in n_train.items():
            at_size = summarise_fits(
                names, {name: fits.results[(name, size)] for name in names}, accuracy, ("acc",), suffix=f"_n{size}"
            )
            at_size[f"n_train_n{size}"] = float(used)
            values.update(at_size)
            curve.append(
                SizePoint(size, used, at_size[f"acc_n{size}"], {name: at_size[f"{name}.acc_n{size}"] for name in names})
            )
        values["n_failed"] = float(sum(values[f"n_failed_n{size}"] for size in n_train))
        values["worker_peak_mib"] = fits.worker_peak_mib
        artifacts = {CSV_FILE: curve_csv(curve, names), PNG_FILE: curve_png(curve, names)} if curve else {}
        return Evaluation(values, fits.errors, artifacts)


def curve_csv(curve: list[SizePoint], names: list[str]) -> bytes:
    """size, images used, mean accuracy, one column per classifier; one row per size."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["size", "n_train", "mean_accuracy", *names])
    for point in curve:
        writer.writerow(
            [point.size, point.n_train, _text(point.accuracy), *[_text(point.per_classifier[name]) for name in names]]
        )
    return out.getvalue().encode()


def curve_png(curve: list[SizePoint], names: list[str]) -> bytes:
    from bench.core.plotting import format_size_axis, pyplot, save_figure

    plt = pyplot()
    sizes = [point.size for point in curve]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    colours = plt.get_cmap("tab20").colors  # 20 distinct colours: one per classifier
    for index, name in enumerate(names):
        ax.plot(
            sizes,
            [p.per_classifier[name] for p in curve],
            linewidth=0.9,
            alpha=0.7,
            color=colours[index % len(colours)],
            label=name,
        )
    ax.plot(sizes, [p.accuracy for p in curve], color="black", linewidth=2.2, marker="o", label=f"mean of {len(names)}")
    format_size_axis(ax, sizes)
    ax.set_ylabel("accuracy on the real test images")
    ax.set_title("effective size: per classifier (thin) and their mean")
    ax.legend(fontsize=7, ncol=2)
    buffer = io.BytesIO()
    save_figure(fig, buffer)  # savefig writes PNG (matplotlib's default format) into the buffer
    return buffer.getvalue()


def _text(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.6g}"


EFFECTIVE_SIZE = EffectiveSize()
