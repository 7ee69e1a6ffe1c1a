"""Our paper-protocol downstream evaluation and the DP-HP authors' ``test_models`` on the *same*
synthetic rows, alternating, one thread each.

    python benchmarks/versus_authors_eval.py [--repeats 3] [--scratch /tmp/versus]

Why: ``versus_authors.py`` times whole DP-HP adult cells, and there each side evaluates the rows
its own generator produced — so an evaluation-time gap mixes code with data (a liblinear L1 fit
at tol 1e-8 converges in 0.06 s on one sample and 8 s on another). Here both evaluate one
sample: our ``dp-hp`` on ``adult-dphp-logs``, ``--protocol paper``, ε = 1, seed 0 (fitted once,
untimed, with no evaluator), encoded as the paper protocol's integer codes.

* Theirs: github.com/ParkLabML/DP-HP ``dp_mehp/all_aux_files_tab_data.py::test_models`` with all
  12 classifiers (its default ``--classifiers``), binary branch, on the rows z-scored with the
  synthetic rows' mean and sd (their adult file was z-scored before training, so the rows their
  generator emits are z-scale). The shims of ``reference_dphp_adult.py`` (``np.int``,
  ``max_features='auto'``, ``AdaBoost(algorithm=)``); its printing silenced.
* Ours: ``evaluators.downstream`` with ``scaling=standard`` (each classifier z-scores its training
  rows with their own mean and sd: the same transformation) through its worker pool with one
  process, as a cell with ``DPBENCH_EVAL_JOBS=1`` runs it. Ours fits a superset: our two base
  settings that differ from DP-HP's (lbfgs LR at max_iter 2000, BernoulliNB α = 0.02) and
  predict_proba scores for the 12 base fits.

Each side runs in a fresh process (``OMP_NUM_THREADS=1`` etc.); wall time of the evaluation call
alone (imports and data loading excluded). Reported: medians, ratio = theirs / ours.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from versus_authors import DPHP_MIRROR, ONE_THREAD, cpu_model, extract, loadavg, write_stubs  # noqa: E402

THEIRS = """
import contextlib, io, sys, time, warnings
import numpy as np
np.int, np.float = int, float
import sklearn.tree, sklearn.ensemble
_Tree, _Ada = sklearn.tree.DecisionTreeClassifier, sklearn.ensemble.AdaBoostClassifier
sklearn.tree.DecisionTreeClassifier = lambda max_features=None, **kw: _Tree(
    max_features="sqrt" if max_features == "auto" else max_features, **kw)
sklearn.ensemble.AdaBoostClassifier = lambda algorithm=None, **kw: _Ada(**kw)
from autodp import rdp_acct  # noqa: F401
import all_aux_files_tab_data as aux
rows = np.load(sys.argv[1])
warnings.simplefilter("ignore")
started = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    aux.test_models(rows["x_train_z"], rows["y_train"], rows["x_test_z"], rows["y_test"], 2, "generated",
                    list(range(12)), "adult")
print(f"evaluation_s {time.perf_counter() - started:.3f}")
"""

OURS = """
import sys, time, warnings
from pathlib import Path
from bench.api.contracts import EvalContext
from bench.api.registry import DATASETS
from bench.harness.samples import load_synthetic
from evaluators.downstream import DownstreamClassifiers
split = DATASETS.get("adult-dphp-logs").load(None, 0, "paper")
synthetic, _ = load_synthetic(Path(sys.argv[1]), split.train.schema)
warnings.simplefilter("ignore")
started = time.perf_counter()
DownstreamClassifiers(n_jobs=1, scaling="standard").evaluate(synthetic, split.train, split.test,
                                                             EvalContext(seed=0, device="cpu", protocol="paper"))
print(f"evaluation_s {time.perf_counter() - started:.3f}")
"""


def make_sample(scratch: Path) -> tuple[Path, Path]:
    """Our DP-HP sample (synthetic.npz) and the same rows as arrays for theirs (rows.npz)."""
    from bench.core.encoding import TabularEncoder
    from bench.api.registry import DATASETS
    from bench.harness.api import run_cell
    from bench.harness.samples import load_synthetic

    out = scratch / "eval-sample"
    result = run_cell("dp-hp", "adult-dphp-logs", epsilon=1.0, seed=0, evaluators=(), protocol="paper", out=out)
    if result.status != "FINISHED":
        raise SystemExit(f"our DP-HP cell {result.status}: {result.error}")
    split = DATASETS.get("adult-dphp-logs").load(None, 0, "paper")
    synthetic, _ = load_synthetic(out / "synthetic.npz", split.train.schema)
    encoder = TabularEncoder(synthetic.schema, "codes")
    x_train, x_test = encoder.encode(synthetic.x).astype(np.float64), encoder.encode(split.test.x).astype(np.float64)
    mean, sd = x_train.mean(axis=0), x_train.std(axis=0)
    sd[sd == 0] = 1.0  # StandardScaler leaves a constant column unscaled
    rows = scratch / "eval-sample" / "rows.npz"
    np.savez(
        rows,
        x_train_z=(x_train - mean) / sd,
        y_train=np.asarray(synthetic.y),
        x_test_z=(x_test - mean) / sd,
        y_test=np.asarray(split.test.y),
    )
    return out / "synthetic.npz", rows


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("evaluation_s ")]
    if done.returncode != 0 or len(lines) != 1:
        raise SystemExit(f"{argv[:3]} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return float(lines[0].split()[1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeats", type=int, default=3, help="alternating repetitions (default 3)")
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/versus"), help="work folder (default /tmp/versus)")
    args = parser.parse_args()
    import os

    import torch

    torch.set_num_threads(1)
    scratch = args.scratch.resolve()
    scratch.mkdir(parents=True, exist_ok=True)
    write_stubs(scratch / "stubs")
    extract(DPHP_MIRROR, scratch / "dphp", ["dp_mehp"])
    sample, rows = make_sample(scratch)
    env = {**os.environ, **ONE_THREAD, "PYTHONWARNINGS": "ignore", "DPBENCH_OFFLINE": "1"}
    theirs_env = {**env, "PYTHONPATH": os.pathsep.join([str(scratch / "stubs"), str(scratch / "dphp" / "dp_mehp")])}
    times: dict[str, list[float]] = {"ours": [], "theirs": []}
    loads = []
    for rep in range(args.repeats):
        loads.append(loadavg())
        times["ours"].append(timed([sys.executable, "-c", OURS, str(sample)], ROOT, env))
        loads.append(loadavg())
        times["theirs"].append(
            timed([sys.executable, "-c", THEIRS, str(rows)], scratch / "dphp" / "dp_mehp", theirs_env)
        )
        print(
            f"  repetition {rep + 1}/{args.repeats}: ours {times['ours'][-1]:.1f} s, theirs {times['theirs'][-1]:.1f} s",
            flush=True,
        )
    ours, theirs = statistics.median(times["ours"]), statistics.median(times["theirs"])
    print(
        f"\nDP-HP adult paper-protocol evaluation on the same {np.load(rows)['y_train'].size:,} synthetic rows, "
        f"one thread each, median of {args.repeats}: ours {ours:.1f} s, theirs {theirs:.1f} s, "
        f"theirs / ours = {theirs / ours:.2f}×"
    )
    print(
        f"per repetition: ours {', '.join(f'{t:.1f}' for t in times['ours'])}; "
        f"theirs {', '.join(f'{t:.1f}' for t in times['theirs'])}"
    )
    print(f"machine: {cpu_model()}; 1-min load at each process start: {', '.join(load.split()[0] for load in loads)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
