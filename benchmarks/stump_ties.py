"""How often SammeStumpBoost's rounds tie between features, and what a tie does to its agreement
with scikit-learn's AdaBoostClassifier (evaluators/stump_boost.py's docstring quotes this).

    python benchmarks/stump_ties.py --samples '/work/wt-campaign/mlartifacts/*/artifacts/synthetic.npz' \
        --json docs/measurements/stump_ties_2026-11-30.json

Per training set: the rounds (of ``--rounds``) whose best Gini proxy is shared, to 1e-12, by two
or more features; then, where asked, test-set agreement and accuracy of ours against scikit-learn at
random_state 0, 1, 2, with the lowest tied feature winning (the rule before fit_version 3) and
with it drawn from random_state 0, 1, 2 (the rule since). Training sets: real MNIST (2,000 images; 60 images, effective-size's
smallest), a degenerate sample (a DP-MERF smoke fit on MNIST's first 3,000 training images, whose
classes many pixels separate exactly), and stored generator samples (``--samples``, 2,000 and 20,000
images, tie counts only).
"""

from __future__ import annotations

import argparse
import glob
import json
import tempfile
from pathlib import Path

import numpy as np
from sklearn.ensemble import AdaBoostClassifier

import evaluators.stump_boost as stump_boost
from bench.api.registry import DATASETS
from bench.harness.samples import SAMPLE_FILE, load_synthetic


def tie_counter(lowest: bool):
    """A best_stump that counts, per round, the features sharing the best proxy; ``lowest``: the
    lowest tied feature wins (the rule before fit_version 3), else one drawn as the boost draws it."""
    counts: list[int] = []
    original = stump_boost.best_stump

    def counting(h, totals, splittable, random_state=None):
        proxy = stump_boost.gini_proxies(h, totals, splittable)
        best = proxy.max()
        tied = proxy >= best - abs(best) * stump_boost.TIE_RTOL
        counts.append(int(tied.any(axis=1).sum()) if np.isfinite(best) else 0)
        return original(h, totals, splittable, None if lowest else random_state)

    return counts, counting


def boost(x, y, rounds: int, random_state: int, lowest: bool) -> tuple[np.ndarray, list[int]]:
    """Our fit with the tie rule asked, and its per-round tie counts."""
    original = stump_boost.best_stump
    counts, stump_boost.best_stump = tie_counter(lowest)
    try:
        return stump_boost.SammeStumpBoost(n_estimators=rounds, learning_rate=0.7, random_state=random_state).fit(
            x, y
        ), counts
    finally:
        stump_boost.best_stump = original


def measure(x, y, test, rounds: int, compare: bool) -> dict:
    ours, counts = boost(x, y, rounds, 0, lowest=True)
    found = {"rows": len(x), "rounds": len(counts), "tied_rounds": sum(c > 1 for c in counts), "most_tied": max(counts)}
    if compare:
        theirs = [
            AdaBoostClassifier(n_estimators=rounds, learning_rate=0.7, random_state=s).fit(x, y).predict(test.x)
            for s in range(3)
        ]
        drawn = [boost(x, y, rounds, s, lowest=False)[0].predict(test.x) for s in range(3)]
        lowest = ours.predict(test.x)
        found["accuracy_scikit_learn"] = [float(np.mean(p == test.y)) for p in theirs]
        found["agree_scikit_learn_0_1"] = float(np.mean(theirs[0] == theirs[1]))
        found["accuracy_lowest"] = float(np.mean(lowest == test.y))
        found["agree_lowest_scikit_learn_0"] = float(np.mean(lowest == theirs[0]))
        found["accuracy_drawn"] = [float(np.mean(p == test.y)) for p in drawn]
        found["agree_drawn_scikit_learn_same_state"] = [float(np.mean(p == t)) for p, t in zip(drawn, theirs)]
    return found


def degenerate_sample(data_dir: str):
    import bench
    from datasets.images import ImageArrays, ImageDataset
    from datasets.mnist import MNIST

    arrays = MNIST.read(data_dir)
    first = ImageArrays(arrays.train_x[:3000], arrays.train_y[:3000], arrays.test_x[:1000], arrays.test_y[:1000])
    DATASETS.register(ImageDataset("mnist-3k-ties", "MNIST, first 3,000 images", MNIST.schema, lambda _: first))
    out = Path(tempfile.mkdtemp())
    result = bench.run_cell(
        "dp-merf", "mnist-3k-ties", epsilon=1.0, evaluators=(), profile="smoke", data_dir=data_dir, out=out
    )
    assert result.ok, result.error
    return load_synthetic(out / SAMPLE_FILE, MNIST.schema)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None, help="default: $DPBENCH_DATA_DIR")
    parser.add_argument("--samples", default="", help="a glob of stored synthetic.npz files (MNIST or FashionMNIST)")
    parser.add_argument("--json", type=Path, help="write the findings here")
    args = parser.parse_args()
    import os

    data_dir = args.data_dir or os.environ["DPBENCH_DATA_DIR"]
    mnist = DATASETS.get("mnist").load(data_dir, seed=0)
    fashion = DATASETS.get("fashion-mnist").load(data_dir, seed=0)
    found = {
        "real_2000": measure(mnist.train.x[:2000], mnist.train.y[:2000], mnist.test, 150, compare=True),
        "real_60": measure(mnist.train.x[:60], mnist.train.y[:60], mnist.test, 1000, compare=True),
    }
    degenerate = degenerate_sample(data_dir)
    found["degenerate_2000"] = measure(degenerate.x[:2000], degenerate.y[:2000], mnist.test, 150, compare=True)
    for path in sorted(glob.glob(args.samples)) if args.samples else []:
        for dataset in (mnist, fashion):
            try:
                images = load_synthetic(Path(path), dataset.train.schema)[0]
            except Exception:  # a sample of the other dataset's schema
                continue
            for n in (2000, 20_000):
                found[f"{path}:{n}"] = measure(images.x[:n], images.y[:n], dataset.test, 100, compare=False)
            break
    for name, row in found.items():
        print(name, row, flush=True)
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
