"""Does a conditional image generator draw the class it is asked for? A logistic regression fitted
on real training images (the first 10,000) labels each run's first 5,000 generated images; its
agreement with the labels the generator was given is ≈ 0.1 (chance, 10 classes) when the
generator ignores them, and near the classifier's real test accuracy when it follows them.

    MLFLOW_TRACKING_URI=sqlite:///images.db python benchmarks/label_agreement.py \
        --experiment images --run-name 'dp-cgan/mnist/ε=9.6/seed=%' --dataset mnist --out FILE.json

Writes the per-seed agreement and the predicted class shares (``seeds``) and the classifier's
accuracy on the first 5,000 real test images, for ``<!--m FILE | agreement | … -->`` marks.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from datetime import date
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.api.registry import DATASETS  # noqa: E402
from bench.harness.samples import SAMPLE_FILE  # noqa: E402

TRAIN, SCORED = 10_000, 5_000


def flat(images: np.ndarray) -> np.ndarray:
    x = images.reshape(len(images), -1).astype(np.float32)
    return x / 255.0 if x.max() > 1.5 else x  # samples are stored as 8-bit images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--run-name", required=True, help="an MLflow LIKE pattern on the runs' names")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import mlflow
    from sklearn.linear_model import LogisticRegression

    client = mlflow.tracking.MlflowClient()
    experiment = client.get_experiment_by_name(args.experiment)
    runs = client.search_runs([experiment.experiment_id], filter_string=f"tags.mlflow.runName LIKE '{args.run_name}'")
    split = DATASETS.get(args.dataset).load(None, seed=0)
    classifier = LogisticRegression(max_iter=300).fit(flat(split.train.x[:TRAIN]), split.train.y[:TRAIN])
    real = float((classifier.predict(flat(split.test.x[:SCORED])) == split.test.y[:SCORED]).mean())
    seeds = {}
    for run in sorted((r for r in runs if r.info.status == "FINISHED"), key=lambda r: r.data.tags["mlflow.runName"]):
        with tempfile.TemporaryDirectory() as scratch:  # the sample is private-derived: not left beside the output
            sample = dict(np.load(client.download_artifacts(run.info.run_id, SAMPLE_FILE, scratch)))
        predicted = classifier.predict(flat(sample["x"][:SCORED]))
        seed = run.data.tags["mlflow.runName"].rsplit("seed=", 1)[-1]
        seeds[seed] = {
            "agreement": float((predicted == sample["y"][:SCORED]).mean()),
            "largest_predicted_share": float(np.bincount(predicted, minlength=10).max() / SCORED),
            "run_id": run.info.run_id,
            "fitted_at": run.data.tags.get("git_commit", "unknown"),  # the code that fitted the sample
        }
    args.out.write_text(
        json.dumps(
            {
                "what": f"label agreement of {args.run_name} ({args.experiment}): a real-data logistic regression's "
                f"labels for the first {SCORED:,} generated images against the labels the generator was given",
                "command": " ".join(sys.argv),
                "real_test_accuracy": real,
                "seeds": seeds,
                "date": date.today().isoformat(),
                "machine": {"platform": platform.platform()},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
