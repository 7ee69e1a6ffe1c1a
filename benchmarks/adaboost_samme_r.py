"""What DP-HP's AdaBoost (SAMME.R) scores where ours (discrete SAMME) is the only choice left:
the ablation behind the real-data rows of DP-HP Fig. 3 and Fig. 6.

DP-HP Table 10's AdaBoost is ``AdaBoostClassifier(n_estimators=1000, learning_rate=0.7,
algorithm='SAMME.R')``; scikit-learn deprecated SAMME.R in 1.4 and removed the parameter in 1.8,
so this project's twelve classifiers fit SAMME (evaluators/image_downstream.py). This script fits
the seeds' SAMME.R under an older scikit-learn (``--legacy-python``: a virtual environment's
interpreter with scikit-learn < 1.6, e.g. ``python -m venv /work/sk15 && /work/sk15/bin/pip install
scikit-learn==1.5.2``) on exactly the rows our effective-size evaluator gives AdaBoost for real data
(``subset_rows``, the evaluator's seed 0), and sets its test accuracy beside ours from the committed
records (``effective-size.Ada.acc_n<size>``, real data, seed 0). A twelfth of the difference is what
the mean of the twelve moves, to be read against the real-data row's gap to the paper. On all 60,000
images the seeds publish their AdaBoost's own accuracy (Fig. 6, per classifier): set beside ours
(``samme_r_published``), it checks that this SAMME.R is theirs.

    python benchmarks/adaboost_samme_r.py --legacy-python /work/sk15/bin/python --sizes 3000,6000,12000 \
        --json docs/measurements/adaboost_samme_r_2026-12-01.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.api.registry import DATASETS
from bench.report.versus import FIG3_SIZES, FIG6_CLASSIFIERS, SEEDS_FIG3, SEEDS_FIG6
from evaluators.image_downstream import subset_rows

REPO = Path(__file__).resolve().parent.parent
EVALUATOR_SEED = 0  # the effective-size evaluator's own seed (evaluators/downstream.py), not the cell's
LEGACY_FIT = """
import json, sys, time
import numpy as np, sklearn
from sklearn.ensemble import AdaBoostClassifier
arrays = np.load(sys.argv[1])
started = time.perf_counter()
model = AdaBoostClassifier(n_estimators=1000, learning_rate=0.7, algorithm="SAMME.R", random_state=0)
model.fit(arrays["x_train"], arrays["y_train"])
accuracy = float((model.predict(arrays["x_test"]) == arrays["y_test"]).mean())
print(json.dumps({"accuracy": accuracy, "seconds": time.perf_counter() - started,
                  "rounds": len(model.estimators_), "sklearn": sklearn.__version__}))
"""


def record_metrics(dataset: str) -> dict[str, float]:
    """The committed real-data record of ``dataset`` at seed 0 (experiment ``images``)."""
    (path,) = sorted((REPO / "results" / "runs" / "images").glob(f"real_{dataset}_eps=_seed=0__*.json"))
    return json.loads(path.read_text())["metrics"]


def samme_r(python: str, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        arrays = Path(folder) / "rows.npz"
        np.savez(arrays, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
        done = subprocess.run([python, "-c", LEGACY_FIT, str(arrays)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"error: the legacy fit failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--legacy-python", required=True, help="an interpreter with scikit-learn < 1.6 (SAMME.R)")
    parser.add_argument("--datasets", default="mnist,fashion-mnist")
    parser.add_argument("--sizes", default=",".join(str(s) for s in FIG3_SIZES), help="training-set sizes")
    parser.add_argument("--data-dir", default=os.environ.get("DPBENCH_DATA_DIR"))
    parser.add_argument("--json", type=Path, help="write the measurements here")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    found: dict = {
        "command": " ".join(["python", "benchmarks/adaboost_samme_r.py", *sys.argv[1:]]),
        "commit": subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "date": time.strftime("%Y-%m-%d"),
        "rows": "effective-size's class-balanced subset of the real training images at its seed 0 (subset_rows)",
        "ours": "SammeStumpBoost (discrete SAMME, 1000 stumps, learning rate 0.7) from the committed record",
        "theirs": "AdaBoostClassifier(n_estimators=1000, learning_rate=0.7, algorithm='SAMME.R', random_state=0)",
        "results": {},
    }
    for dataset in args.datasets.split(","):
        data = DATASETS.get(dataset).load(args.data_dir, seed=0)
        metrics = record_metrics(dataset)
        paper = SEEDS_FIG3[dataset][("real", float("inf"))]
        for size in sizes:
            rows = subset_rows(np.asarray(data.train.y), size, data.train.schema.n_classes, EVALUATOR_SEED)
            x = data.train.x if rows is None else data.train.x[rows]
            y = np.asarray(data.train.y if rows is None else data.train.y[rows])
            theirs = samme_r(args.legacy_python, x, y, data.test.x, np.asarray(data.test.y))
            ours = metrics[f"effective-size.Ada.acc_n{size}"]
            published = paper[FIG3_SIZES.index(size)]
            published_mean = published[0] if isinstance(published, (tuple, list)) else published
            row = {
                "samme_r_accuracy": round(theirs["accuracy"], 4),
                "samme_accuracy_ours": round(ours, 4),
                "mean_of_12_moves_by": round((theirs["accuracy"] - ours) / 12, 4),
                "real_data_gap_to_paper": round(metrics[f"effective-size.acc_n{size}"] - published_mean, 4),
                "samme_r_seconds": round(theirs["seconds"], 1),
                "samme_r_rounds": theirs["rounds"],
                "sklearn": theirs["sklearn"],
            }
            if rows is None:  # all 60,000 images: DP-HP Fig. 6 publishes their AdaBoost's own accuracy
                row["samme_r_published"] = SEEDS_FIG6[dataset][("real", float("inf"))][FIG6_CLASSIFIERS.index("Ada")]
            found["results"].setdefault(dataset, {})[str(size)] = row
            print(dataset, size, row, flush=True)
            if args.json:
                args.json.write_text(json.dumps(found, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
