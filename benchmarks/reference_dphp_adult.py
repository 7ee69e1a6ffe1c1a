"""Runs the DP-HP authors' Table 2 code on adult, to compare with ours on the same data (issue 19).

    python benchmarks/reference_dphp_adult.py CHECKOUT --encoding sorted|names

CHECKOUT is a clone of github.com/ParkLabML/DP-HP. Its ``data/adult/adult.p`` is not retrievable
(DP-HP (arXiv:2106.05042) Table 3 says 48,842 rows, 8 categorical features), so this script
writes one from the UCI files of ``$DPBENCH_DATA_DIR/adult`` — the pickle ``(y_tot, x_tot)`` their
``data_loading`` reads, 14 columns in UCI order — with the categorical codes either ``sorted``
(scikit-learn ``LabelEncoder`` order: sorted strings, ``?`` first; our ``adult-dphp-sorted``) or
``names`` (``adult.names`` order, ``?`` last; our ``adult-dphp``). Then it runs
``dp_mehp/run_sum_prod_kernel_tabular_data.py --data-name adult --is-private 1`` unchanged (its
in-file grid: ε = 1, 5 repetitions) on today's libraries, through four shims that change no
computation: autodp's import order, ``np.int``/``np.float``, ``OneHotEncoder(sparse=)`` and
``DecisionTreeClassifier(max_features='auto')`` (= ``'sqrt'`` for classifiers), and
``AdaBoostClassifier(algorithm=)`` (SAMME is the only algorithm left). Its stdout goes to
``CHECKOUT/dp_mehp/reference_adult_<encoding>.log``; the last lines print each repetition's mean
ROC / PRC over the 12 classifiers (the number their Table 2 reports, averaged over repetitions).
Takes about 5–8 minutes per repetition on 2 busy CPU cores.

Ours on the same rows and codes, logged to MLflow (the ``dphp-gaps`` preset holds these cells):

    python -m bench run --methods dp-hp --datasets adult-dphp-sorted,adult-dphp --eps 1 --seeds 0-4 \
        --protocol paper --experiment dphp-gaps
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHIMS = """
import runpy, sys
import numpy as np
np.int, np.float = int, float
from autodp import rdp_acct  # noqa: F401  (autodp 0.2.3.1 cannot import privacy_calibrator first)
import sklearn.preprocessing, sklearn.tree, sklearn.ensemble, sklearn.linear_model, sklearn.naive_bayes, sklearn.svm
import sklearn.discriminant_analysis, sklearn.neural_network, sklearn.model_selection
_OneHot, _Tree, _Ada = sklearn.preprocessing.OneHotEncoder, sklearn.tree.DecisionTreeClassifier, sklearn.ensemble.AdaBoostClassifier
sklearn.preprocessing.OneHotEncoder = lambda sparse=True, **kw: _OneHot(sparse_output=sparse, **kw)
sklearn.tree.DecisionTreeClassifier = lambda max_features=None, **kw: _Tree(
    max_features="sqrt" if max_features == "auto" else max_features, **kw)
sklearn.ensemble.AdaBoostClassifier = lambda algorithm=None, **kw: _Ada(**kw)
sys.argv = ["run_sum_prod_kernel_tabular_data.py", "--data-name", "adult", "--is-private", "1"]
runpy.run_path("run_sum_prod_kernel_tabular_data.py", run_name="__main__")
"""


def adult_pickle(data_dir: Path, encoding: str) -> tuple[np.ndarray, np.ndarray]:
    from datasets import adult

    table = (adult.read_sorted_codes if encoding == "sorted" else adult.read)(data_dir)
    return table.y.astype(np.float64), table.x.astype(np.float64)


def repetition_means(log: str) -> list[tuple[float, float]]:
    roc = [float(v) for v in re.findall(r"ROC on test generated data is ([0-9.]+)", log)]
    prc = [float(v) for v in re.findall(r"PRC on test generated data is ([0-9.]+)", log)]
    return [
        (float(np.mean(roc[i : i + 12])), float(np.mean(prc[i : i + 12]))) for i in range(0, len(roc) // 12 * 12, 12)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a clone of github.com/ParkLabML/DP-HP")
    parser.add_argument("--encoding", choices=("sorted", "names"), default="sorted")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("DPBENCH_DATA_DIR") or ROOT.parent / "shared" / "data")
    code = args.checkout / "dp_mehp"
    (args.checkout / "data" / "adult").mkdir(parents=True, exist_ok=True)
    with open(args.checkout / "data" / "adult" / "adult.p", "wb") as f:
        pickle.dump(adult_pickle(data_dir, args.encoding), f)
    (code / "tab_results").mkdir(exist_ok=True)
    (code / "seaborn.py").write_text("def set(*args, **kwargs):\n    pass\n")  # imported for plot styling only
    log = code / f"reference_adult_{args.encoding}.log"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(code)}
    with open(log, "w") as out:
        subprocess.run([sys.executable, "-c", SHIMS], cwd=code, env=env, stdout=out, stderr=subprocess.STDOUT)
    for i, (roc, prc) in enumerate(repetition_means(log.read_text())):
        print(f"repetition {i}: ROC {roc:.3f} / PRC {prc:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
