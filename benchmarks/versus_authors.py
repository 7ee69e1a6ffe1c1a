"""Times our DP-MERF and DP-HP side by side with the papers' authors' code on adult, in one alternating run.

    python benchmarks/versus_authors.py [--repeats 3] [--only dpmerf|dphp] [--steps 1000] [--scratch /tmp/versus]

What is compared (issue: "Per step, DP-MERF adult ≥ 4× faster than the authors' code under the
paper protocol and ≥ 2× under sound; the whole DP-HP adult cell ≥ 1.5× faster; all as ratios from
one alternating run"):

1. DP-MERF adult, seconds per Adam step. Theirs: github.com/ParkLabML/DP-MERF
   ``code_tab/single_generator_priv_all.py --dataset adult --private 1 --batch 0.1
   --num_features 1000 --undersample 0.4 --repeat 1`` (DP-MERF (arXiv:2002.11603) Table 4's adult
   row and the script's own adult grid: batch 0.1·n, 1,000 features, 0.4 of ``<=50K`` kept; one
   Adam step per "epoch"). Ours: ``dp-merf`` on ``adult-sdgym`` (the rows DP-MERF's code reads)
   under ``--protocol paper`` and ``--protocol sound`` through ``bench.harness.api.run_cell``
   with no evaluator (the CLI always evaluates; the classifiers would only add noise here).
   Each side's whole process runs at N and 2N steps (``--epochs`` theirs, ``--set
   dp-merf.epochs`` ours) and the per-step time of a repetition is (t(2N) − t(N)) / N, so
   imports, data loading, the release and sampling cancel. Theirs evaluates with one classifier
   (``--classifiers 1``, GaussianNB, milliseconds) for the same reason; the classifier list is a
   command-line argument of their script, not a code change.
2. DP-HP adult, the whole Table 2 cell (load, release, 20 epochs, sampling and the 12-classifier
   evaluation with its variants). Theirs: github.com/ParkLabML/DP-HP
   ``dp_mehp/run_sum_prod_kernel_tabular_data.py --data-name adult --is-private 1`` with its
   in-file adult grid (ε = 1, batch 0.1, sum order 100, product order 5 on 5 dimensions,
   γ 0.1, 20 epochs, 0.4 undersampling), through the shims of
   ``benchmarks/reference_dphp_adult.py``, on the pickle ``adult.p`` written from our
   ``adult-dphp-logs`` rows (adult.data's 32,561 rows, sorted-name codes), every column z-scored
   as the authors' file was (results/README.md, issue 28; on raw columns their loss is NaN from
   the first epoch and the evaluation fails). Ours: ``python -m
   bench run --methods dp-hp --datasets adult-dphp-logs --eps 1 --protocol paper --seeds 0
   --jobs 1 --threads 1 --no-progress`` (fresh ``--experiment`` each run; MLflow store and
   artifacts in the scratch folder), and the same with ``--eval-set downstream.scaling=standard`` (each classifier
   z-scores its training rows, as theirs see z-scored rows; results/README.md calls that row the
   like-for-like one). Whole process, wall clock; the table also splits each into the evaluation
   (ours: the run's ``time.eval_downstream_s``; theirs: ``test_models``, timed by a wrapper) and
   the rest.

How: for each repetition the runs alternate ours, theirs, ours, … (DP-MERF: ours paper N,
theirs N, ours sound N, ours paper 2N, theirs 2N, ours sound 2N; then DP-HP: ours, theirs,
ours with z-scoring classifiers).
Every process gets ``OMP_NUM_THREADS=1 MKL_NUM_THREADS=1`` and one torch thread. Reported:
medians over repetitions, ratio = theirs median / ours median. Untimed set-up first: the
authors' files, the data files they read, one short warm-up run of each DP-MERF side (checks the
set-up, fills the page cache) and the MLflow store.

One core for ours, as for theirs: our runner lends the machine's idle cores to DP-HP's tabular
fit (docs/cli.md, "Idle cores are lent") and our downstream evaluator fits in a pool of 2 worker
processes by default. The DP-HP run therefore goes through ``bench.cli.main`` with
``bench.harness.runner.available_cores`` answering 1 (no core to lend; the fit keeps
``--threads 1``, checked afterwards from the run's tag ``threads.fit_most``) and
``DPBENCH_EVAL_JOBS=1`` (one single-threaded classifier process). Nothing else differs from
``python -m bench run``.

Shims (no computation changed; each for something today's libraries or this machine lack):

* both: ``np.int``/``np.float`` = ``int``/``float`` (removed in numpy 1.24);
  ``from autodp import rdp_acct`` before their ``privacy_calibrator`` import (autodp 0.2.3.1
  cannot import it first); ``OneHotEncoder(sparse=)`` → ``sparse_output=`` (renamed in
  scikit-learn 1.2; DP-MERF calls it once per step); a stub ``seaborn`` (imported for
  ``sns.set()`` plot styling only); ``torch.set_num_threads(1)``.
* DP-HP only (from reference_dphp_adult.py): ``DecisionTreeClassifier(max_features='auto')`` →
  ``'sqrt'`` (the same for classifiers), ``AdaBoostClassifier(algorithm=)`` dropped (SAMME is
  the only one left).
* DP-MERF only: ``code_tab/util.py`` imports the py2 compatibility package ``future``, not
  installed: stubs ``future.standard_library.install_aliases`` (a no-op on Python 3 in ``future``
  itself) and ``past.utils.old_div`` (``future``'s definition; used by a function the script never
  calls). ``sdgym`` (0.1.0, pins long-gone libraries) is a stub whose ``load_dataset('adult')``
  does what SDGym's does — reads ``adult.npz``'s ``train`` array and the column types of
  ``adult.json`` and returns ``(train, categorical_columns, ordinal_columns)`` — on files written
  here from our ``adult-sdgym`` paper rows (22,561 rows, SDGym's codes; continuous/ordinal/
  categorical from our schema, as SDGym's adult.json: education ordinal, the label categorical).
* DP-HP, timing only: ``all_aux_files_tab_data.test_models`` is wrapped (before their script
  imports it by name) to print its wall time; it runs unchanged.
* DP-HP's script repeats the cell 5 times (``repetitions = 5 # seed: 0 to 4``, a literal in its
  ``__main__`` block, no argument): the run uses a copy,
  ``dp_mehp/run_sum_prod_kernel_tabular_data_1rep.py``, in which that one line reads
  ``repetitions = 1`` (seed 0 only); nothing else in the file differs.

Not like for like:

* DP-MERF, paper protocol: the same 11,077 training rows (theirs sets 10 aside for its median
  heuristic); batches of 1,110 generated rows theirs (round(0.1 · 11,077) + one per class "to
  avoid no labels") and 1,108 ours; both 1,000 random features (500 frequencies, cos and sin),
  generator hidden widths 56 and 28 (4d and 2d, d = 14), 10 noise inputs; but theirs puts 6
  columns through the Fourier features and scales 8 (education among them) as codes, ours 7
  and 7 (education ordinal, so numerical). Theirs also refits a
  scikit-learn OneHotEncoder on the generated labels at every step (its code, its cost).
* DP-MERF, sound protocol: ours trains on 23,904 rows (all 48,842, 90/10 split, 0.4
  undersampling): batch 2,390 rows, one-hot width 93 (7 numerical + 86 category columns).
  Theirs has one protocol, so both ratios divide its one per-step time.
* DP-HP: the same rows (32,561; 15,956 training after undersampling), hyperparameters and
  20 epochs; theirs on z-scored columns (its file), ours on raw columns with public bounds (the
  dataset). Ours' evaluation fits a superset of theirs (the 12 classifiers at our settings and
  at DP-HP's, with DP-HP's variants, scores as well as hard labels) in a worker process; on
  the unscaled rows its fits are slower (the z-scoring series shows by how much).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# a sibling script, not the site-packages `benchmarks` package that shadows this folder's name
sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_dphp_adult import SHIMS as DPHP_SHIMS  # noqa: E402

MIRRORS = Path("/work/.mirror")
DPMERF_MIRROR = MIRRORS / "ParkLabML+DP-MERF" / "repo"
DPHP_MIRROR = MIRRORS / "ParkLabML+DP-HP" / "repo"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
TARGETS = {"dpmerf-paper": 4.0, "dpmerf-sound": 2.0, "dphp": 1.5}
DPHP_REPETITIONS_LINE = "repetitions = 5 # seed: 0 to 4"
DPHP_ONE_REPETITION = "run_sum_prod_kernel_tabular_data_1rep.py"

# --- the authors' files and the data they read -------------------------------------------------


def extract(mirror: Path, dest: Path, paths: list[str]) -> None:
    """The mirror's HEAD files under ``paths`` (not the whole tree: some of its large data
    blobs are absent from the mirror and stop ``git archive``)."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", f"--git-dir={mirror}", "archive", "HEAD", *paths], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


STUBS = {
    # imported for sns.set() plot styling only
    "seaborn.py": "def set(*args, **kwargs):\n    pass\n",
    # code_tab/util.py's py2 compatibility imports (package `future`, not installed)
    "future/__init__.py": "",
    "future/standard_library.py": "def install_aliases():\n    pass  # a no-op on Python 3 in `future` too\n",
    "past/__init__.py": "",
    "past/utils.py": (
        "import numbers\n\n\ndef old_div(a, b):\n"
        "    return a // b if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral) else a / b\n"
    ),
    # sdgym 0.1.0's load_dataset, on local files (the real one downloads them from S3)
    "sdgym/__init__.py": """import json, os
import numpy as np

DATA_PATH = os.path.join(os.path.dirname(__file__), "data")


def load_dataset(name, benchmark=False):
    data = np.load(os.path.join(DATA_PATH, name + ".npz"))
    with open(os.path.join(DATA_PATH, name + ".json")) as f:
        meta = json.load(f)
    categorical = [i for i, c in enumerate(meta["columns"]) if c["type"] == "categorical"]
    ordinal = [i for i, c in enumerate(meta["columns"]) if c["type"] == "ordinal"]
    if benchmark:
        return data["train"], data["test"], meta, categorical, ordinal
    return data["train"], categorical, ordinal
""",
}


def write_stubs(stubs: Path) -> None:
    for name, text in STUBS.items():
        (stubs / name).parent.mkdir(parents=True, exist_ok=True)
        (stubs / name).write_text(text)


def write_sdgym_adult(folder: Path, data_dir: Path) -> int:
    """SDGym's adult files as its load_dataset reads them, from our adult-sdgym paper rows."""
    from datasets import adult

    table = adult.read_sdgym_train(data_dir)
    kinds = {"numerical": "continuous", "ordinal": "ordinal", "categorical": "categorical"}
    columns = [{"name": c.name, "type": kinds[c.kind.value]} for c in adult.SCHEMA_SDGYM.columns]
    columns.append({"name": "label", "type": "categorical"})
    folder.mkdir(parents=True, exist_ok=True)
    train = np.column_stack([table.x, table.y]).astype(np.float64)
    np.savez(folder / "adult.npz", train=train, test=train[:0])  # the test part is never read
    (folder / "adult.json").write_text(json.dumps({"columns": columns}))
    return len(train)


def write_dphp_pickle(checkout: Path, data_dir: Path) -> int:
    """``data/adult/adult.p`` = (y_tot, x_tot), from our adult-dphp-logs rows (the rows our cell
    uses), every column z-scored as the authors' file was (results/README.md, issue 28: their run
    log evidences adult.data z-scored). On the raw columns their order-100 Hermite recursion
    overflows (loss NaN from the first epoch, then the classifiers refuse the NaN rows)."""
    from datasets import adult

    table = adult.read_dphp_logs(data_dir)
    x = table.x.astype(np.float64)
    x = (x - x.mean(axis=0)) / x.std(axis=0)  # StandardScaler's z-score (population sd)
    (checkout / "data" / "adult").mkdir(parents=True, exist_ok=True)
    with open(checkout / "data" / "adult" / "adult.p", "wb") as f:
        pickle.dump((table.y.astype(np.float64), x), f)
    return len(table.y)


def write_dphp_one_repetition(code: Path) -> None:
    source = (code / "run_sum_prod_kernel_tabular_data.py").read_text()
    if source.count(DPHP_REPETITIONS_LINE) != 1:
        raise SystemExit(f"DP-HP's script no longer has the line {DPHP_REPETITIONS_LINE!r} once")
    (code / DPHP_ONE_REPETITION).write_text(source.replace(DPHP_REPETITIONS_LINE, "repetitions = 1"))
    (code / "tab_results").mkdir(exist_ok=True)  # the script appends its summary there


# --- what each process runs ---------------------------------------------------------------------

THEIRS_DPMERF = """
import runpy, sys
import numpy as np
np.int, np.float = int, float
import torch
torch.set_num_threads(1)
from autodp import rdp_acct  # noqa: F401  (autodp 0.2.3.1 cannot import privacy_calibrator first)
import sklearn.preprocessing
_OneHot = sklearn.preprocessing.OneHotEncoder
sklearn.preprocessing.OneHotEncoder = lambda sparse=True, **kw: _OneHot(sparse_output=sparse, **kw)
sys.argv = ["single_generator_priv_all.py"] + sys.argv[1:]
runpy.run_path("single_generator_priv_all.py", run_name="__main__")
"""

# Times their evaluation (test_models, the 12 classifiers and their variants) without changing
# it: the script imports the function by name at run time, after the sklearn shims above it.
DPHP_EVAL_TIMER = """import time, all_aux_files_tab_data as _aux
_test_models = _aux.test_models
def _timed_test_models(*args, **kwargs):
    start = time.perf_counter()
    result = _test_models(*args, **kwargs)
    print(f"versus_authors: test_models {time.perf_counter() - start:.3f} s", flush=True)
    return result
_aux.test_models = _timed_test_models
"""
DPHP_EVAL_PREFIX = "versus_authors: test_models "

# reference_dphp_adult.py's shims, on the one-repetition copy, with one torch thread and the timer
THEIRS_DPHP = "import torch\ntorch.set_num_threads(1)\n" + DPHP_SHIMS.replace(
    'runpy.run_path("run_sum_prod_kernel_tabular_data.py"', f'runpy.run_path("{DPHP_ONE_REPETITION}"'
).replace("sys.argv = [", DPHP_EVAL_TIMER + "sys.argv = [")
assert DPHP_ONE_REPETITION in THEIRS_DPHP and "_timed_test_models" in THEIRS_DPHP

OURS_DPMERF = """
import sys, torch
torch.set_num_threads(1)
from bench.harness.api import run_cell
protocol, steps, out = sys.argv[1], sys.argv[2], sys.argv[3]
r = run_cell("dp-merf", "adult-sdgym", epsilon=1.0, seed=0, evaluators=(), protocol=protocol,
             overrides={"epochs": steps}, out=out)
if r.status != "FINISHED":
    sys.exit(f"dp-merf cell {r.status}: {r.error}")
print("n_train", r.params["n_train"], "fit_s", r.metrics["time.fit_s"])
"""

# `python -m bench run …` with no idle core to lend to the fit (see the module docstring)
OURS_CLI = """
import sys
import bench.harness.runner
bench.harness.runner.available_cores = lambda: 1
from bench.cli import main
sys.exit(main(sys.argv[1:]))
"""


@dataclass(frozen=True)
class Job:
    key: str  # what the time is filed under
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    done_marker: str = ""  # text the log must contain (their scripts exit 0 on some failures)

    def command(self) -> str:
        return f"(cd {shlex.quote(str(self.cwd))} && {shlex.join(self.argv)})"


def run(job: Job, log: Path) -> float:
    """Wall-clock seconds of the whole process; its output goes to ``log``."""
    with open(log, "w") as out:
        start = time.perf_counter()
        code = subprocess.run(job.argv, cwd=job.cwd, env=job.env, stdout=out, stderr=subprocess.STDOUT).returncode
        seconds = time.perf_counter() - start
    text = log.read_text()
    if code != 0 or job.done_marker not in text:
        tail = "\n".join(text.splitlines()[-25:])
        raise SystemExit(f"{job.key} failed (exit {code}); {log}:\n{tail}")
    return seconds


# --- the plan -----------------------------------------------------------------------------------


@dataclass
class Setup:
    scratch: Path
    data_dir: Path
    steps: int
    env: dict[str, str]
    stubs: Path
    dpmerf_code: Path
    dphp_code: Path
    tracking_uri: str
    notes: list[str]


def prepare(scratch: Path, steps: int, only: str | None) -> Setup:
    data_dir = Path(os.environ.get("DPBENCH_DATA_DIR") or ROOT.parent / "shared" / "data")
    env = {
        **os.environ,
        **ONE_THREAD,
        "DPBENCH_DATA_DIR": str(data_dir),
        "MPLBACKEND": "Agg",
        "DPBENCH_OFFLINE": "1",
        "PYTHONWARNINGS": "ignore",
    }
    stubs = scratch / "stubs"
    write_stubs(stubs)
    setup = Setup(
        scratch,
        data_dir,
        steps,
        env,
        stubs,
        scratch / "dpmerf" / "code_tab",
        scratch / "dphp" / "dp_mehp",
        f"sqlite:///{scratch / 'runs.db'}",
        [],
    )
    if only in (None, "dpmerf"):
        extract(DPMERF_MIRROR, scratch / "dpmerf", ["code_tab"])
        rows = write_sdgym_adult(stubs / "sdgym" / "data", data_dir)
        setup.notes.append(f"DP-MERF theirs reads {rows:,} rows (SDGym adult 'train', from our adult-sdgym paper rows)")
    if only in (None, "dphp"):
        extract(DPHP_MIRROR, scratch / "dphp", ["dp_mehp"])
        write_dphp_one_repetition(setup.dphp_code)
        rows = write_dphp_pickle(scratch / "dphp", data_dir)
        setup.notes.append(f"DP-HP theirs reads adult.p with {rows:,} rows (our adult-dphp-logs rows, z-scored)")
        init_tracking(setup)
    (scratch / "logs").mkdir(exist_ok=True)
    (scratch / "cells").mkdir(exist_ok=True)
    return setup


def init_tracking(setup: Setup) -> None:
    """Create the MLflow store now, so that no timed run pays its schema migration."""
    import mlflow

    mlflow.set_tracking_uri(setup.tracking_uri)
    mlflow.search_experiments()


def dpmerf_jobs(setup: Setup, steps: int, tag: str) -> list[Job]:
    """Ours paper, theirs, ours sound, at ``steps`` Adam steps."""
    theirs_env = {**setup.env, "PYTHONPATH": f"{setup.stubs}{os.pathsep}{setup.dpmerf_code}"}
    theirs = Job(
        f"dpmerf-theirs@{steps}",
        [
            sys.executable,
            "-c",
            THEIRS_DPMERF,
            "--dataset",
            "adult",
            "--private",
            "1",
            "--epochs",
            str(steps),
            "--batch",
            "0.1",
            "--num_features",
            "1000",
            "--undersample",
            "0.4",
            "--repeat",
            "1",
            "--classifiers",
            "1",
        ],
        setup.dpmerf_code,
        theirs_env,
        done_marker="roc mean across methods",
    )

    def ours(protocol: str) -> Job:
        out = setup.scratch / "cells" / f"dpmerf-{protocol}-{steps}-{tag}"
        return Job(
            f"dpmerf-ours-{protocol}@{steps}",
            [sys.executable, "-c", OURS_DPMERF, protocol, str(steps), str(out)],
            ROOT,
            setup.env,
            done_marker="fit_s",
        )

    return [ours("paper"), theirs, ours("sound")]


# Our DP-HP series: the brief's command as is, and with the classifiers z-scoring their training
# rows (theirs see z-scored rows: their adult.p is z-scored); value key → extra CLI arguments
OURS_DPHP = {"dphp-ours": [], "dphp-ours-scaled": ["--eval-set", "downstream.scaling=standard"]}


def create_experiment(setup: Setup, name: str) -> None:
    """Our CLI would put a new experiment's artifacts in ``mlartifacts/`` of its working
    directory, the repository; created here first, they go to the scratch folder."""
    import mlflow

    mlflow.MlflowClient(setup.tracking_uri).create_experiment(
        name, artifact_location=(setup.scratch / "mlartifacts").as_uri()
    )


def dphp_jobs(setup: Setup, tag: str) -> list[Job]:
    """Ours, theirs, ours with z-scoring classifiers; each of ours in its own fresh experiment."""
    ours_env = {**setup.env, "MLFLOW_TRACKING_URI": setup.tracking_uri, "DPBENCH_EVAL_JOBS": "1"}

    def ours(key: str) -> Job:
        create_experiment(setup, f"versus-{key}-{tag}")
        return Job(
            key,
            [
                sys.executable,
                "-c",
                OURS_CLI,
                "run",
                "--methods",
                "dp-hp",
                "--datasets",
                "adult-dphp-logs",
                "--eps",
                "1",
                "--protocol",
                "paper",
                "--seeds",
                "0",
                "--jobs",
                "1",
                "--threads",
                "1",
                "--no-progress",
                "--experiment",
                f"versus-{key}-{tag}",
                *OURS_DPHP[key],
            ],
            ROOT,
            ours_env,
            done_marker="1 finished, 0 failed",
        )

    theirs_env = {**setup.env, "PYTHONPATH": f"{setup.stubs}{os.pathsep}{setup.dphp_code}"}
    theirs = Job(
        "dphp-theirs", [sys.executable, "-c", THEIRS_DPHP], setup.dphp_code, theirs_env, done_marker="Average ROC"
    )
    return [ours("dphp-ours"), theirs, ours("dphp-ours-scaled")]


def our_dphp_runs(setup: Setup, key: str, tags: list[str]) -> list[dict]:
    """Our DP-HP runs of one series as MLflow logged them: status, ``threads.fit_most`` (must be
    1), fit and evaluation seconds."""
    import mlflow

    client = mlflow.MlflowClient(setup.tracking_uri)
    found = []
    for tag in tags:
        name = f"versus-{key}-{tag}"
        experiment = client.get_experiment_by_name(name)
        runs = client.search_runs([experiment.experiment_id]) if experiment else []
        if len(runs) != 1:
            raise SystemExit(f"experiment {name}: expected one run, found {len(runs)}")
        r = runs[0]
        found.append(
            {
                "experiment": name,
                "status": r.info.status,
                "threads.fit_most": r.data.tags.get("threads.fit_most"),
                "fit_s": r.data.metrics.get("time.fit_s"),
                "eval_s": r.data.metrics.get("time.eval_downstream_s"),
            }
        )
    return found


def their_eval_seconds(log: Path) -> float:
    lines = [line for line in log.read_text().splitlines() if line.startswith(DPHP_EVAL_PREFIX)]
    if len(lines) != 1:
        raise SystemExit(f"{log}: expected one line {DPHP_EVAL_PREFIX!r}, found {len(lines)}")
    return float(lines[0][len(DPHP_EVAL_PREFIX) :].split()[0])


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} logical CPUs)"
    return "unknown"


def benchmark(setup: Setup, repeats: int, only: str | None) -> tuple[dict[str, list[float]], list[str], list[dict]]:
    """Run the alternating plan; per-repetition values: s per step (DP-MERF), s per cell (DP-HP)."""
    values: dict[str, list[float]] = {}
    loads, tags = [], []
    n = setup.steps
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    if only in (None, "dpmerf"):  # untimed warm-up: checks the set-up, fills the page cache
        for job in dpmerf_jobs(setup, 5, f"{stamp}-warmup"):
            run(job, setup.scratch / "logs" / f"warmup-{job.key}.log")
    for rep in range(repeats):
        times: dict[str, float] = {}
        plan: list[Job] = []
        if only in (None, "dpmerf"):
            plan += dpmerf_jobs(setup, n, f"{stamp}-{rep}") + dpmerf_jobs(setup, 2 * n, f"{stamp}-{rep}")
        if only in (None, "dphp"):
            plan += dphp_jobs(setup, f"{stamp}-{rep}")
            tags.append(f"{stamp}-{rep}")
        for job in plan:
            loads.append(loadavg())
            log = setup.scratch / "logs" / f"{stamp}-rep{rep}-{job.key}.log"
            times[job.key] = run(job, log)
            if job.key == "dphp-theirs":
                values.setdefault("dphp-theirs-eval", []).append(their_eval_seconds(log))
            print(f"  repetition {rep + 1}/{repeats}: {job.key} {times[job.key]:.1f} s (load {loads[-1]})", flush=True)
        for who in ("ours-paper", "theirs", "ours-sound"):
            if f"dpmerf-{who}@{n}" in times:
                values.setdefault(f"dpmerf-{who}", []).append(
                    (times[f"dpmerf-{who}@{2 * n}"] - times[f"dpmerf-{who}@{n}"]) / n
                )
                for steps in (n, 2 * n):
                    values.setdefault(f"dpmerf-{who}@{steps}", []).append(times[f"dpmerf-{who}@{steps}"])
        for key in ("dphp-theirs", *OURS_DPHP):
            if key in times:
                values.setdefault(key, []).append(times[key])
    logged = []
    for key in OURS_DPHP if tags else ():
        runs = our_dphp_runs(setup, key, tags)
        values[f"{key}-eval"] = [r["eval_s"] for r in runs]
        values[f"{key}-fit"] = [r["fit_s"] for r in runs]
        logged += runs
    return values, loads, logged


# --- the report ---------------------------------------------------------------------------------


def table(values: dict[str, list[float]], steps: int) -> list[str]:
    med = {key: statistics.median(v) for key, v in values.items()}
    rows = ["| what | ours median (s) | theirs median (s) | ratio (theirs / ours) | target |", "|---|---|---|---|---|"]
    for protocol in ("paper", "sound"):
        if f"dpmerf-ours-{protocol}" in med:
            ours, theirs = med[f"dpmerf-ours-{protocol}"], med["dpmerf-theirs"]
            rows.append(
                f"| DP-MERF adult, per Adam step, ours --protocol {protocol} ((t({2 * steps}) − t({steps})) / {steps}) "
                f"| {ours:.5f} | {theirs:.5f} | {theirs / ours:.2f}× | ≥ {TARGETS['dpmerf-' + protocol]:g}× |"
            )
    for key, what in (
        ("dphp-ours", "ours as given"),
        ("dphp-ours-scaled", "ours with --eval-set downstream.scaling=standard"),
    ):
        if key not in med:
            continue
        ours, theirs = med[key], med["dphp-theirs"]
        rows.append(
            f"| DP-HP adult, whole Table 2 cell (fit + 12-classifier evaluation), --protocol paper, {what} "
            f"| {ours:.1f} | {theirs:.1f} | {theirs / ours:.2f}× | ≥ {TARGETS['dphp']:g}× |"
        )
        ours, theirs = med[f"{key}-eval"], med["dphp-theirs-eval"]
        rows.append(
            f"| … of which the evaluation (ours: time.eval_downstream_s; theirs: test_models) "
            f"| {ours:.1f} | {theirs:.1f} | {theirs / ours:.2f}× | (breakdown) |"
        )
        ours = statistics.median(a - b for a, b in zip(values[key], values[f"{key}-eval"]))
        theirs = statistics.median(a - b for a, b in zip(values["dphp-theirs"], values["dphp-theirs-eval"]))
        rows.append(
            f"| … the rest (whole process − evaluation: start-up, data, release, fit, sampling, logging) "
            f"| {ours:.1f} | {theirs:.1f} | {theirs / ours:.2f}× | (breakdown) |"
        )
    return rows


def raw_lines(values: dict[str, list[float]]) -> list[str]:
    lines = ["| series | per repetition (s) |", "|---|---|"]
    for key, series in values.items():
        lines.append(f"| {key} | {', '.join(f'{v:.5f}' if v < 1 else f'{v:.1f}' for v in series)} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeats", type=int, default=3, help="repetitions of each process (default 3)")
    parser.add_argument("--only", choices=("dpmerf", "dphp"), help="run one comparison only")
    parser.add_argument(
        "--steps",
        type=int,
        default=1000,
        help="N: DP-MERF runs at N and 2N Adam steps, per step = (t(2N) - t(N)) / N (default 1000)",
    )
    parser.add_argument(
        "--scratch",
        type=Path,
        default=Path("/tmp/versus"),
        help="folder for the authors' files, data files, logs and the MLflow store (default /tmp/versus)",
    )
    args = parser.parse_args()
    scratch = args.scratch.resolve()
    shared = ROOT.parent / "shared"
    if any(scratch == top or top in scratch.parents for top in (ROOT, shared)):
        raise SystemExit("--scratch must be outside the repository and the shared folder")
    scratch.mkdir(parents=True, exist_ok=True)
    started = datetime.now(timezone.utc)
    load_start = loadavg()
    setup = prepare(scratch, args.steps, args.only)
    values, loads, ours_dphp = benchmark(setup, args.repeats, args.only)
    if any(r["threads.fit_most"] != "1" or r["status"] != "FINISHED" for r in ours_dphp):
        print("warning: an ours DP-HP run did not finish at one fit thread (see below)", file=sys.stderr)
    load_end = loadavg()
    minutes = (datetime.now(timezone.utc) - started).total_seconds() / 60
    command = shlex.join(["python", "benchmarks/versus_authors.py", *sys.argv[1:]])
    one_minute = [float(load.split()[0]) for load in loads]
    report = [
        f"# Ours vs the authors' code (adult), {args.repeats} alternating repetitions",
        "",
        *table(values, args.steps),
        "",
        f"- machine: {cpu_model()}; every process single-threaded (OMP/MKL 1, torch 1 thread)",
        f"- date: {started.isoformat(timespec='seconds')}, {minutes:.1f} min wall",
        f"- load average at start: {load_start}; at the end: {load_end}; 1-min load at each process start: "
        f"median {statistics.median(one_minute):.2f}, range {min(one_minute):.2f}–{max(one_minute):.2f}",
        f"- reproduce: `cd {ROOT} && DPBENCH_DATA_DIR={setup.data_dir} {command}`",
        *(f"- {note}" for note in setup.notes),
        *(
            f"- ours DP-HP run {r['experiment']}: {r['status']}, threads.fit_most={r['threads.fit_most']}, "
            f"time.fit_s={r['fit_s']:.1f}, time.eval_downstream_s={r['eval_s']:.1f}"
            for r in ours_dphp
        ),
        "",
        "Per repetition:",
        "",
        *raw_lines(values),
    ]
    text = "\n".join(report)
    print(text)
    (scratch / "versus_authors.md").write_text(text + "\n")
    (scratch / "versus_authors.json").write_text(json.dumps({"values": values, "loads": loads}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
