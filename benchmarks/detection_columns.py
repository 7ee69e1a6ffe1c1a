"""Why a detection AUC (``fidelity.detection_auc``) is what it is: per stored run, the
classifier-two-sample test of the evaluator beside a linear one (SDMetrics' LogisticDetection
classifier) and the same test on each column alone.

    MLFLOW_TRACKING_URI=sqlite:///STORE.db python benchmarks/detection_columns.py \\
        --experiment privacy-utility --dataset adult [--seeds 0] [--methods dp-hp,real] [--eps 1,inf]

Prints one line per run: the evaluator's detection AUC (its code, its rows: synthetic against
test rows in the training class mix), the logistic AUC on the same rows, the median over columns
of the one-column AUC, and the three columns that alone tell real from synthetic best, with the
share of real and synthetic rows sitting on the real column's atoms (values held by ≥ 5% of its
rows: a point mass such as capital-gain's zeros). A detection AUC of 1.00 carried by one column on
an atom the generator never emits is a fact about the generator's marginals, not about the test.
Reads the stored ``synthetic.npz`` of finished runs and the real splits from ``DPBENCH_DATA_DIR``;
refits nothing. Nothing is logged.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

ATOM_SHARE = 0.05


def column_names(schema) -> list[str]:
    """The names of the evaluator's distance-feature columns: one per numerical, binary or
    ordinal column, one per category of a categorical column and of the label."""
    from bench.core.data import ColumnKind

    names = []
    for column in schema.columns:
        if column.kind == ColumnKind.CATEGORICAL:
            names += [f"{column.name}={category}" for category in column.categories]
        else:
            names.append(column.name)
    return names + [f"label={c}" for c in range(schema.n_classes)]


def atom_shares(real: np.ndarray, synthetic: np.ndarray) -> tuple[float, float]:
    values, counts = np.unique(real, return_counts=True)
    atoms = values[counts >= ATOM_SHARE * len(real)]
    return float(np.isin(real, atoms).mean()), float(np.isin(synthetic, atoms).mean())


def diagnose(synthetic, train, test, seed: int, max_rows: int = 5000) -> dict:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from evaluators.fidelity import detection_auc
    from evaluators.rows import distance_features, in_class_mix, subset

    rng = np.random.default_rng([seed, 0xF1D])
    real = subset(test, in_class_mix(test, train, max_rows, rng))
    evaluator_auc = detection_auc(synthetic, real, train, max_rows, np.random.default_rng([seed, 0xDE7]))
    n = min(len(synthetic), len(real), max_rows)
    real_rows = distance_features(subset(real, rng.permutation(len(real))[:n]), train)
    synthetic_rows = distance_features(subset(synthetic, rng.permutation(len(synthetic))[:n]), train)
    rows, is_real = np.vstack([real_rows, synthetic_rows]), np.r_[np.ones(n), np.zeros(n)]
    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    linear = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000))
    one_column = np.array(
        [
            np.mean(
                cross_val_score(
                    HistGradientBoostingClassifier(max_iter=20, random_state=0),
                    rows[:, [j]],
                    is_real,
                    cv=folds,
                    scoring="roc_auc",
                )
            )
            for j in range(rows.shape[1])
        ]
    )
    names = column_names(train.schema)
    best = np.argsort(one_column)[::-1][:3]
    return {
        "detection_auc": evaluator_auc,
        "logistic_auc": float(np.mean(cross_val_score(linear, rows, is_real, cv=folds, scoring="roc_auc"))),
        "median_one_column_auc": float(np.median(one_column)),
        "best_columns": [
            (names[j], float(one_column[j]), *atom_shares(real_rows[:, j], synthetic_rows[:, j])) for j in best
        ],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--methods", help="comma-separated; default: every method")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    parser.add_argument("--eps", help="comma-separated ε as logged (e.g. 1,inf); default: every ε")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)

    from bench.api.registry import DATASETS
    from bench.harness import tracking
    from bench.harness.samples import SAMPLE_FILE, load_synthetic

    client = tracking.client()
    experiment_id = tracking.experiment_id(client, args.experiment, create=False)
    if experiment_id is None:
        raise SystemExit(f"no experiment {args.experiment!r} in {tracking.tracking_uri()}")
    methods = set(args.methods.split(",")) if args.methods else None
    seeds = {int(s) for s in args.seeds.split(",")}
    epsilons = {float(e) for e in args.eps.split(",")} if args.eps else None
    splits: dict = {}
    for run in tracking.iter_runs(client, experiment_id, "attributes.status = 'FINISHED'"):
        if "cell_key" not in run.data.tags:
            continue
        cell = tracking.stored_cell(client, run)
        if cell.dataset != args.dataset or (methods and cell.method not in methods):
            continue
        seed = cell.seed
        if seed not in seeds or (epsilons and cell.epsilon not in epsilons):
            continue
        if seed not in splits:
            folder = Path(args.data_dir) if args.data_dir else None
            splits[seed] = DATASETS.get(args.dataset).load(folder, seed, cell.protocol)
        split = splits[seed]
        with tempfile.TemporaryDirectory() as work:
            synthetic, _ = load_synthetic(
                Path(client.download_artifacts(run.info.run_id, SAMPLE_FILE, work)), split.train.schema
            )
        found = diagnose(synthetic, split.train, split.test, seed)
        columns = "; ".join(
            f"{name} {auc:.3f} (on atoms: real {r:.2f}, synthetic {s:.2f})" for name, auc, r, s in found["best_columns"]
        )
        print(
            f"{cell.method:>12} ε={cell.mlflow_params()['epsilon']:<5} seed {seed}: detection {found['detection_auc']:.3f}, "
            f"logistic {found['logistic_auc']:.3f}, one column median {found['median_one_column_auc']:.3f}; "
            f"best alone: {columns}",
            flush=True,
        )


if __name__ == "__main__":
    main()
