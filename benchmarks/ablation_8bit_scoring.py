"""Does scoring generated images as 8-bit pixels move the image classifiers? (issue 58's open MNIST gap)

    python benchmarks/ablation_8bit_scoring.py [--method dp-hp] [--dataset mnist] [--eps 1] [--seeds 0-2]
                                               [--classifiers XGB,RF,DT,GNB] [--threads 2]
                                               [--out docs/measurements/ablation_8bit_<date>.json]

A grid cell stores a generated image sample as 8-bit pixels (``bench/harness/samples.py``) and
scores what it stored; the seeds' code scores the generator's float output. The two differ by at
most 1/510 a pixel, but generated backgrounds are near-zero floats where the real test images are
exact zeros, so a tree can split on that noise in float and not in 8-bit, and a Gaussian naive
Bayes sees a different per-pixel variance. For each seed this fits the method in this process
(paper protocol, the preset's hyperparameters), draws one float sample of the training set's size,
and scores the same sample twice with ``image-downstream``'s classifiers — as floats and as
``as_8bit_images`` makes them — on the real test images. AdaBoost is left out: our stump search
needs the 8-bit levels and scikit-learn's stumps on float images cost ≈ 27 min a fit
(``--classifiers`` scores a subset, e.g. the tree learners where a gap sits). Writes per
seed and classifier both accuracies and their difference, with a paired t-test over seeds of each
difference. The fits do not reproduce a recorded cell's sample (not run through the grid worker),
which the comparison does not need: both scorings read one sample.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from bench.harness.provenance import git_commit
from scipy import stats

OUT = Path(__file__).resolve().parents[1] / "docs" / "measurements" / f"ablation_8bit_{time.strftime('%Y-%m-%d')}.json"
LEFT_OUT = ("Ada",)


def float_sample(method_name: str, dataset_name: str, epsilon: float, delta: float, seed: int):
    """The method's float sample of the training set's size, fitted at the paper protocol, and the split."""
    from bench.api.contracts import FitContext
    from bench.api.registry import DATASETS, METHODS
    from bench.privacy.budget import PrivacyBudget
    from bench.privacy.ledger import PrivacyLedger
    from bench.privacy.private_data import PrivateData

    torch.manual_seed(seed)
    np.random.seed(seed)
    dataset, method = DATASETS.get(dataset_name), METHODS.get(method_name)
    split = dataset.load(None, seed, "paper")
    budget = PrivacyBudget(epsilon, delta)
    params = method.hyperparameters.resolve(dataset_name, private=math.isfinite(epsilon)).params
    ledger = PrivacyLedger(budget)
    context = FitContext(budget, ledger, params, seed, torch.device("cpu"), "paper", dataset.kind)
    fitted = method.fit(PrivateData(split.train, ledger), context)
    return fitted.sample(len(split.train)), split


def kept_float_sample(args: argparse.Namespace, seed: int):
    """:func:`float_sample`, kept beside ``--out`` until the seed is scored: a crash while scoring
    (minutes each) does not cost the fit (tens of minutes) again."""
    from bench.api.registry import DATASETS
    from bench.core.data import LabelledData

    kept = args.out.with_name(f"{args.out.stem}.seed{seed}.npz")
    if kept.exists():
        sample = np.load(kept)
        split = DATASETS.get(args.dataset).load(None, seed, "paper")
        return LabelledData(sample["x"], sample["y"], split.train.schema), split
    synthetic, split = float_sample(args.method, args.dataset, args.eps, args.delta, seed)
    np.savez(kept, x=synthetic.x, y=synthetic.y)
    return synthetic, split


def accuracies(synthetic, split, seed: int, names: tuple[str, ...]) -> tuple[dict[str, float], dict[str, str]]:
    """Each classifier's test accuracy (and their mean), and the classifiers that failed with why.
    No per-fit timeout: float pixels give the tree learners more split candidates, and a loaded
    machine must not turn that into a missing number (the first attempt lost GBM at 1,800 s)."""
    from bench.api.contracts import EvalContext
    from evaluators.image_downstream import IMAGE_CLASSIFIERS, ImageDownstreamClassifiers

    evaluator = ImageDownstreamClassifiers(
        classifiers=tuple(spec for spec in IMAGE_CLASSIFIERS if spec.name in names), n_jobs=2, timeout_s=None
    )
    evaluation = evaluator.evaluate(synthetic, split.train, split.test, EvalContext(seed=seed, device="cpu"))
    values = {k.removesuffix(".accuracy"): v for k, v in evaluation.metrics.items() if k.endswith(".accuracy")}
    return {**values, "MEAN": statistics.fmean(values.values())}, dict(evaluation.errors)


def paired_differences(seeds: dict[str, dict[str, dict[str, float]]]) -> dict[str, dict]:
    """Per classifier, the 8-bit minus float accuracy over seeds: mean, sd, paired t-test p (≥ 3 seeds)."""
    names = dict.fromkeys(name for s in seeds.values() for name in s["float"])
    differences = {
        name: [s["8bit"][name] - s["float"][name] for s in seeds.values() if name in s["float"] and name in s["8bit"]]
        for name in names
    }
    return {
        name: {
            "mean": statistics.fmean(d),
            "sd": statistics.stdev(d) if len(d) > 1 else None,
            "paired_t_p": float(stats.ttest_1samp(d, 0.0).pvalue) if len(d) > 2 else None,
            "n": len(d),
        }
        for name, d in differences.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", default="dp-hp")
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--seeds", default="0-2", help="e.g. 0-2")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--classifiers", default=None, help="comma-separated image-downstream classifiers (default: all but Ada)"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from bench.harness.samples import as_8bit_images
    from evaluators.image_downstream import IMAGE_CLASSIFIERS

    known = [spec.name for spec in IMAGE_CLASSIFIERS if spec.name not in LEFT_OUT]
    names = tuple(args.classifiers.split(",")) if args.classifiers else tuple(known)
    if unknown := sorted(set(names) - set(known)):
        parser.error(f"--classifiers: {', '.join(unknown)} not among {', '.join(known)}")

    first, _, last = args.seeds.partition("-")
    seeds = range(int(first), int(last or first) + 1)
    commit = git_commit()
    result: dict = {
        "commit": commit,
        "setup": {
            "method": args.method,
            "dataset": args.dataset,
            "epsilon": args.eps,
            "delta": args.delta,
            "classifiers": list(names),
        },
        "left_out": list(LEFT_OUT),
        "commits": [commit],
        "seeds": {},
    }
    if args.out.exists():  # resume: seeds already scored for this setup are kept, not refitted
        before = json.loads(args.out.read_text())
        if before.get("setup") == result["setup"]:
            result["seeds"] = before["seeds"]
            result["commits"] = sorted({*before.get("commits", [before["commit"]]), commit})
    for seed in seeds:
        if str(seed) in result["seeds"]:
            continue
        synthetic, split = kept_float_sample(args, seed)
        as_float, float_errors = accuracies(synthetic, split, seed, names)
        as_8bit, bit_errors = accuracies(as_8bit_images(synthetic), split, seed, names)
        both = [name for name in as_float if name in as_8bit and name != "MEAN"]
        # the mean over the classifiers both scorings finished, so that a failure cannot move it
        as_float["MEAN"], as_8bit["MEAN"] = (statistics.fmean(a[n] for n in both) for a in (as_float, as_8bit))
        result["seeds"][str(seed)] = {
            "float": as_float,
            "8bit": as_8bit,
            "errors": {"float": float_errors, "8bit": bit_errors},
        }
        print(seed, json.dumps({k: round(as_8bit[k] - as_float[k], 4) for k in as_float if k in as_8bit}), flush=True)
        args.out.with_name(f"{args.out.stem}.seed{seed}.npz").unlink(missing_ok=True)
        result["difference_8bit_minus_float"] = paired_differences(result["seeds"])
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    for name, summary in paired_differences(result["seeds"]).items():
        print(f"{name:>6}: 8-bit − float {summary['mean']:+.4f} (sd {summary['sd']}, p {summary['paired_t_p']})")


if __name__ == "__main__":
    main()
