"""Runs the DP-MERF and DP-HP authors' own code for many seeds (DP-MERF on adult, cervical, census
and intrusion; DP-HP on adult), to set our seed spread beside theirs.

    python benchmarks/authors_seeds.py [--method dpmerf|dphp] [--dataset adult|cervical|census|intrusion]
                                       [--repeats 15] [--scratch /tmp/authors-seeds] [--out docs/measurements]
    python benchmarks/authors_seeds.py --dataset intrusion --first-seed 2 --repeats 1 \
        --add-to docs/measurements/authors_dpmerf_intrusion_seeds_DATE.json   # one more seed, added

A seed of intrusion or census costs most of an hour or more, and a machine here does not outlive a
session: ``--first-seed K`` runs seeds K … K+N−1 (DP-MERF: their two ``for ii in range(repetitions)``
loops start at K, in a copy of their script; nothing else changes), and ``--add-to FILE`` adds them
to an earlier record of the same command (refused when a seed is already in it), the summary taken
over all its seeds and each call listed under ``runs`` with its commit, date and wall time.

``--method dpmerf`` (the default) runs their ``code_tab/single_generator_priv_all.py --dataset D
--private 1 … --repeat N`` with DP-MERF (arXiv:2002.11603) supplementary Table 4's private row of
D (``THEIR_ARGUMENTS``), with the shims of ``benchmarks/versus_authors.py`` (listed there; none
changes a computation), on the file their loader reads, written where it reads it:

- ``adult``: ``--epochs 8000 --batch 0.1 --num_features 1000 --undersample 0.4`` (8,000 Adam
  steps, batch 0.1·n, 1,000 features, 0.4 of ``<=50K`` kept) on the rows our ``adult-sdgym``
  dataset reads (SDGym's 22,561-row adult, its codes), served by the ``sdgym`` stub of
  versus_authors.py. Issue 28 compared our DP-MERF adult mean over five seeds with their code over
  five seeds (0.657 ± 0.024); both spreads are wide (seed-sds 0.03–0.07), so whether there is a gap
  at all is a question for more seeds, on both sides.
- ``cervical``: ``--epochs 200 --batch 0.5 --num_features 2000 --undersample 1`` on the UCI file
  their loader reads (copied from the data mirror to the path it opens); our rows of it are
  ``cervical-dpmerf`` (datasets/cervical.py rebuilds their loader line by line).
- ``census``: ``--epochs 2000 --batch 0.5 --num_features 10000 --undersample 0.4`` on
  ``../data/real/census/train.npy`` (relative to code_tab), written from our ``census-sdgym`` paper
  rows: SDGym's census 'train' (sdgym-utils/data/real/census.py, v0.1.0: census-income.data's
  199,523 rows in file order, the instance weight dropped, every categorical value and the label
  coded by descending frequency, float32), 41 columns, the label (0 = ``- 50000``) last. Our
  schema's column order is SDGym's (census-income.names' order less the instance weight; names
  and kinds checked one by one against SDGym v0.1.0's ``col_type`` on 2026-11-29), so their
  indices land where they mean to: numerical ``[0, 5, 16, 17, 18, 29, 38]`` are exactly our 7
  numerical columns (age, wage per hour, capital gains, capital losses, dividends from stocks, num
  persons worked for employer, weeks worked in year; checked when the file is written) and 40 is
  the label. Their categorical list repeats 38
  (weeks worked in year, 0–52) in place of 39 (``year``): ``year`` never reaches their model, and
  weeks worked enters twice, once through the Fourier features and once in the "categorical" block,
  whose sigmoid head can only emit 0 or 1 there — their code's slip, kept. The block also holds
  values up to 52 (divided by √33 only), so their sensitivity 2√2/m does not bound it: ε = 1 is
  claimed, not held. Heavy: the data's embedding ([69,690 × 10,033] features and their outer
  product with the 2 label columns, 2.8 + 5.6 GB float32) stays in memory through training, and
  every step builds a [34,897 × 10,033 × 2] product and its gradient — on the order of 20 GB
  (an estimate from the tensor sizes, not measured).
- ``intrusion``: ``--epochs 10000 --batch 0.03 --num_features 2000 --undersample 0.1`` on what
  ``sdgym.load_dataset('intrusion')`` returns, served by the same stub from ``intrusion.npz`` and
  ``intrusion.json`` written from our ``intrusion-sdgym`` rows (the 10% file's 494,021 rows, SDGym's
  codes for protocol_type, service and flag, num_outbound_cmds dropped) as SDGym's intrusion.py
  (v0.1.0) cut them: the label last (0 = dos, the majority, … 4 = u2r: SDGym's frequency order is our
  class order), rows shuffled by ``np.random.seed(0); np.random.shuffle``, the last 100,000 the
  'test' part; load_dataset returns the 'train' part, 394,021 rows (not DP-HP's 494,021). The
  column types of intrusion.json are those of SDGym's ``col_type``. Their code ignores them and
  takes columns ``[6, 11, 13, 20]`` as binary — our land, logged_in, root_shell and
  is_guest_login, each coded 0/1 (SDGym codes them by frequency, and 0 is the commoner value in
  each, so its codes are the values) — and the other 36, protocol, service and flag codes and
  is_host_login (always 0) included, as numbers; class 0 is the one their undersampling thins.
  Their wrong_fragment, urgent, num_failed_logins, su_attempted, num_shells and num_access_files
  are SDGym ordinals whose codes are the values.

Their script runs seeds 0 … N−1 in one process (``seed_number = ii``). That seeds Python's
``random`` and their train/test split (``random_state``) only: numpy (the undersampling, the
median-heuristic points, the frequencies, the DP noise) and torch (initialisation, sampled labels
and inputs) are not seeded, so a seed is not a replicate of one number (cervical, seed 0 alone:
ROC 0.514, 0.499 and 0.504 in three runs on 2026-11-29). After each repetition it prints, for the
two-class datasets, "roc mean across methods" and "prc mean across methods" (the mean over the 12
classifiers of the hard-label ROC and PRC, DP-MERF Table 1's metric), and for intrusion (5 classes)
"f1 mean across methods" (the mean over the 12 classifiers of the weighted F1, Table 1's intrusion
metric); this script collects them per seed.

``--method dphp``: their ``dp_mehp/run_sum_prod_kernel_tabular_data.py --data-name adult
--is-private 1`` (its in-file adult grid: ε = 1, batch 0.1, sum order 100, product order 5 on 5
dimensions, γ 0.1, 20 epochs, 0.4 undersampling; DP-HP (arXiv:2106.05042) Table 2's adult cell)
on the ``adult.p`` the authors' logs evidence (our ``adult-dphp-logs`` rows, every column
z-scored; written by ``benchmarks/versus_authors.py``), in a copy whose one line
``repetitions = 5 # seed: 0 to 4`` reads ``repetitions = N`` (seeds 0 … N−1). Their
``test_models`` is wrapped, unchanged, to print the mean over the 12 classifiers of the ROC and
PRC it returns (each classifier's best variant on the test set: DP-HP Table 2's number).

Writes ``authors_<method>_<dataset>_seeds_<date>.json`` (per-seed ROC/PRC or F1, the command, the
machine) and a short Markdown summary beside it. Their code logs to no store, so its numbers are
quoted from this file, not from MLflow. One thread (``OMP_NUM_THREADS=1``,
``torch.set_num_threads(1)``).
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_dphp_adult import SHIMS as DPHP_SHIMS  # noqa: E402

from bench.harness.provenance import git_commit  # noqa: E402
from versus_authors import DPHP_REPETITIONS_LINE, THEIRS_DPMERF, Setup, prepare  # noqa: E402

REPETITION = re.compile(r"Repetition:\s+(\d+)")
# what their scripts print after each repetition, by the per-seed key it is filed under
METRICS = {
    "roc": re.compile(r"roc mean across methods is ([0-9.]+)"),
    "prc": re.compile(r"prc mean across methods is ([0-9.]+)"),
    "f1": re.compile(r"f1 mean across methods is ([0-9.]+)"),
}
HEADERS = {"roc": "ROC", "prc": "PRC", "f1": "F1"}
# their script's multi-class datasets (its covtype/intrusion branch): weighted F1, no ROC/PRC
MULTICLASS = ("intrusion",)

# DP-MERF (arXiv:2002.11603) supplementary Table 4's private row of each dataset: epochs, batch
# fraction, number of Fourier features, undersampling rate (the fraction of the majority class kept)
THEIR_ARGUMENTS = {
    "adult": ["--dataset", "adult", "--private", "1", "--epochs", "8000", "--batch", "0.1", "--num_features", "1000",
              "--undersample", "0.4"],
    "cervical": ["--dataset", "cervical", "--private", "1", "--epochs", "200", "--batch", "0.5", "--num_features",
                 "2000", "--undersample", "1"],
    "census": ["--dataset", "census", "--private", "1", "--epochs", "2000", "--batch", "0.5", "--num_features",
               "10000", "--undersample", "0.4"],
    "intrusion": ["--dataset", "intrusion", "--private", "1", "--epochs", "10000", "--batch", "0.03",
                  "--num_features", "2000", "--undersample", "0.1"],
}  # fmt: skip
# the same table's non-private columns (epochs, batch fraction, Fourier features), for --non-private:
# their script then runs with --private 0 (no noise on the embedding)
THEIR_NON_PRIVATE = {
    "adult": ("8000", "0.1", "50000"),
    "census": ("200", "0.5", "10000"),
    "cervical": ("2000", "0.6", "2000"),
    "intrusion": ("10000", "0.03", "2000"),
}


def their_arguments(dataset: str, non_private: bool) -> list[str]:
    """Their script's arguments for ``dataset``: supplementary Table 4's private row, or its
    non-private row with ``--private 0``."""
    arguments = list(THEIR_ARGUMENTS[dataset])
    if non_private:
        epochs, batch, features = THEIR_NON_PRIVATE[dataset]
        for flag, value in (("--private", "0"), ("--epochs", epochs), ("--batch", batch), ("--num_features", features)):
            arguments[arguments.index(flag) + 1] = value
    return arguments


# where their code_tab reads each file (relative to code_tab), and what is put there: a file of the
# data mirror (copied) or our dataset's rows (written); adult and intrusion come through the sdgym stub
THEIR_FILES = {
    "cervical": (
        "../data/Cervical/kag_risk_factors_cervical_cancer.csv",
        "cervical/kag_risk_factors_cervical_cancer.csv",
    ),
    "census": ("../data/real/census/train.npy", "census-sdgym"),
}
# their census branch: numerical columns and the label column of SDGym's census array
THEIR_CENSUS_NUMERICAL, THEIR_CENSUS_LABEL = [0, 5, 16, 17, 18, 29, 38], 40
# their intrusion branch: the binary columns; SDGym's intrusion.py: the column types of intrusion.json
# (the rest continuous, the label categorical) and the size of its 'test' part after a seed-0 shuffle
THEIR_INTRUSION_BINARY = {6: "land", 11: "logged_in", 13: "root_shell", 20: "is_guest_login"}
SDGYM_INTRUSION_TYPES = {
    **dict.fromkeys(
        ("protocol_type", "service", "flag", "land", "logged_in", "root_shell", "is_host_login", "is_guest_login"),
        "categorical",
    ),
    **dict.fromkeys(
        ("wrong_fragment", "urgent", "num_failed_logins", "su_attempted", "num_shells", "num_access_files"), "ordinal"
    ),
}
SDGYM_INTRUSION_TEST_ROWS = 100_000

DPHP_REPEATED = "run_sum_prod_kernel_tabular_data_seeds.py"
DPMERF_SEEDED = "single_generator_priv_all_seeds.py"
DPMERF_LOOP = "for ii in range(repetitions):"  # their two live loops over seeds (binary, multi-class)


def dpmerf_from_seed(source: str, first: int) -> str:
    """Their script with its seed loops starting at ``first``: seeds first … first+N−1 for --repeat N."""
    lines = source.splitlines(keepends=True)
    live = [i for i, line in enumerate(lines) if line.strip() == DPMERF_LOOP]
    if len(live) != 2:
        raise SystemExit(f"DP-MERF's script no longer has the loop {DPMERF_LOOP!r} twice (found {len(live)})")
    for i in live:
        lines[i] = lines[i].replace(DPMERF_LOOP, f"for ii in range({first}, {first} + repetitions):")
    return "".join(lines)


def with_runs(record: dict) -> dict:
    """A record as --add-to extends it: ``arguments`` (the command without its --repeat) and
    ``runs`` (one entry per call), derived for a record written before either existed."""
    if "runs" in record:
        return record
    run = {key: record.get(key) for key in ("reproduce", "commit", "date", "wall_seconds", "machine")}
    return {
        **record,
        "arguments": record["command"].rsplit(" --repeat", 1)[0].split(" (repetitions")[0],
        "runs": [{"seeds": sorted(record["seeds"], key=int), **run}],
    }


def merged(earlier: dict, new: dict) -> dict:
    """``new`` (this call's record) added to ``earlier`` (a record of the same command): the seeds of
    both, the summary over all of them, each call under ``runs``."""
    earlier, new = with_runs(earlier), with_runs(new)
    if (earlier["what"], earlier["arguments"]) != (new["what"], new["arguments"]):
        raise SystemExit(
            f"--add-to: that record is of {earlier['what']!r} with {earlier['arguments']}, "
            f"not of this call's {new['what']!r} with {new['arguments']}"
        )
    both = set(earlier["seeds"]) & set(new["seeds"])
    if both:
        raise SystemExit(
            f"--add-to: seeds {sorted(both, key=int)} are in that record already; pick others with --first-seed"
        )
    seeds = {int(k): v for k, v in {**earlier["seeds"], **new["seeds"]}.items()}
    return {
        **earlier,
        "seeds": {str(s): v for s, v in sorted(seeds.items())},
        "summary": summary(seeds, tuple(next(iter(seeds.values())))),
        "runs": earlier["runs"] + new["runs"],
        "notes": earlier["notes"] + [note for note in new["notes"] if note not in earlier["notes"]],
    }


# their test_models, unchanged, with the mean of what it returns printed after each call
DPHP_REPORTER = """import numpy as _np, all_aux_files_tab_data as _aux
_test_models = _aux.test_models
def _reported_test_models(*args, **kwargs):
    roc, prc = _test_models(*args, **kwargs)
    print(f"roc mean across methods is {_np.mean(roc):.6f}")
    print(f"prc mean across methods is {_np.mean(prc):.6f}", flush=True)
    return roc, prc
_aux.test_models = _reported_test_models
"""
THEIRS_DPHP = "import torch\ntorch.set_num_threads(1)\n" + DPHP_SHIMS.replace(
    'runpy.run_path("run_sum_prod_kernel_tabular_data.py"', f'runpy.run_path("{DPHP_REPEATED}"'
).replace("sys.argv = [", DPHP_REPORTER + "sys.argv = [")
assert DPHP_REPEATED in THEIRS_DPHP and "_reported_test_models" in THEIRS_DPHP

WHAT = {
    "dpmerf": "DP-MERF authors' code, adult (SDGym rows), claimed (1, 1e-5), DP-MERF Table 1 protocol (hard-label ROC)",
    "dpmerf-cervical": "DP-MERF authors' code, cervical (the UCI file, their loader: 753 rows, median imputation, "
    "no undersampling), claimed (1, 1e-5), DP-MERF Table 1 protocol (hard-label ROC)",
    "dpmerf-census": "DP-MERF authors' code, census (SDGym's census 'train': census-income.data's 199,523 rows, "
    "SDGym's codes; 0.4 of '- 50000' kept), claimed (1, 1e-5), DP-MERF Table 1 protocol (hard-label ROC)",
    "dpmerf-intrusion": "DP-MERF authors' code, intrusion (SDGym's intrusion 'train': 394,021 rows of the 10% file, "
    "SDGym's codes; 0.1 of dos kept), claimed (1, 1e-5), DP-MERF Table 1 protocol (weighted F1, 5 classes)",
    "dphp": "DP-HP authors' code, adult (adult.data z-scored, as their logs evidence), (1, 1e-5), DP-HP Table 2 "
    "protocol (each classifier's best variant on the test set)",
}


def what(method: str, dataset: str, non_private: bool) -> str:
    text = WHAT[method if dataset == "adult" else f"{method}-{dataset}"]
    if non_private:
        text = text.replace("claimed (1, 1e-5)", "non-private (--private 0, supp. Table 4's non-private row)")
    return text


def write_census(target: Path, data_dir: Path) -> int:
    """SDGym's census 'train' array as their ``train.npy``, from our census-sdgym paper rows; checks
    that their numerical indices are our numerical columns (see the module docstring)."""
    from datasets import census_sdgym

    columns = census_sdgym.SCHEMA_SDGYM.columns
    numerical = [j for j, c in enumerate(columns) if c.kind.value == "numerical"]
    if numerical != THEIR_CENSUS_NUMERICAL or len(columns) != THEIR_CENSUS_LABEL:
        raise SystemExit(f"census-sdgym's numerical columns {numerical} (of {len(columns)}) are not their census's")
    table = census_sdgym.read_paper(data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    np.save(target, np.column_stack([table.x, table.y]).astype(np.float32))  # float32, as SDGym's arrays
    return len(table.y)


def write_sdgym_intrusion(folder: Path, data_dir: Path) -> int:
    """SDGym's intrusion files as its load_dataset reads them, from our intrusion-sdgym rows, cut into
    'train' and 'test' as SDGym's intrusion.py does; checks their binary columns (module docstring)."""
    from datasets import intrusion_sdgym

    columns = intrusion_sdgym.SCHEMA_SDGYM.columns
    table = intrusion_sdgym.read(data_dir)
    for j, name in THEIR_INTRUSION_BINARY.items():
        if columns[j].name != name or not set(np.unique(table.x[:, j])) <= {0.0, 1.0}:
            raise SystemExit(f"intrusion-sdgym's column {j} is {columns[j].name!r}, not their binary {name!r}")
    rows = np.column_stack([table.x, table.y]).astype(np.float32)  # float32, as SDGym's arrays
    np.random.RandomState(0).shuffle(rows)  # SDGym: np.random.seed(0); np.random.shuffle(tdata)
    train, test = rows[:-SDGYM_INTRUSION_TEST_ROWS], rows[-SDGYM_INTRUSION_TEST_ROWS:]
    meta = [{"name": c.name, "type": SDGYM_INTRUSION_TYPES.get(c.name, "continuous")} for c in columns]
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "intrusion.npz", train=train, test=test)
    (folder / "intrusion.json").write_text(json.dumps({"columns": [*meta, {"name": "label", "type": "categorical"}]}))
    return len(train)


def write_their_input(dataset: str, setup: Setup) -> list[str]:
    """Put the file DP-MERF's loader reads for ``dataset`` where it reads it; the record's notes."""
    if dataset == "adult":  # prepare() wrote SDGym's adult files for the stub
        return list(setup.notes)
    if dataset == "intrusion":
        rows = write_sdgym_intrusion(setup.stubs / "sdgym" / "data", setup.data_dir)
        return [
            f"their load_dataset('intrusion') reads {rows:,} rows (SDGym's intrusion 'train': our intrusion-sdgym "
            "rows, shuffled by seed 0, the last 100,000 set aside as SDGym did)"
        ]
    if any(host in platform.node() for host in ("g0", "p0")):
        raise SystemExit(f"on a host named like {platform.node()!r} their loader reads its authors' Dropbox paths")
    theirs, source = THEIR_FILES[dataset]
    target = (setup.dpmerf_code / theirs).resolve()
    if dataset == "census":
        rows = write_census(target, setup.data_dir)
        return [
            f"their loader reads {theirs}: {rows:,} rows (SDGym's census 'train', from our census-sdgym paper rows)"
        ]
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(setup.data_dir / source, target)
    return [f"their loader reads {theirs} (the data mirror's {source}, copied there)"]


def per_seed(log: str, metrics: tuple[str, ...]) -> dict[int, dict[str, float]]:
    """Each repetition's (seed's) mean ``metrics`` over the 12 classifiers, from their output."""
    seeds: dict[int, dict[str, float]] = {}
    current = None
    for line in log.splitlines():
        if match := REPETITION.search(line):
            current = int(match.group(1))
        elif current is not None:
            for key in metrics:
                if match := METRICS[key].search(line):
                    seeds.setdefault(current, {})[key] = float(match.group(1))
    return seeds


def summary(seeds: dict[int, dict[str, float]], metrics: tuple[str, ...]) -> dict[str, float]:
    values = {key: [seeds[s][key] for s in sorted(seeds) if key in seeds[s]] for key in metrics}
    out = {"n": len(values[metrics[0]])}
    for key, series in values.items():
        if len(series) >= 2:
            out.update(
                {
                    f"{key}_mean": statistics.mean(series),
                    f"{key}_sd": statistics.stdev(series),
                    f"{key}_min": min(series),
                }
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", choices=("dpmerf", "dphp"), default="dpmerf")
    parser.add_argument(
        "--dataset",
        choices=tuple(THEIR_ARGUMENTS),
        default="adult",
        help="dpmerf only: adult (SDGym's rows), cervical (the UCI file their loader reads; our cervical-dpmerf), "
        "census (SDGym's census train; our census-sdgym) or intrusion (SDGym's intrusion train; our intrusion-sdgym)",
    )
    parser.add_argument("--repeats", type=int, default=15, help="seeds 0 … N−1 (default 15)")
    parser.add_argument(
        "--first-seed", type=int, default=0, help="dpmerf only: run seeds K … K+N−1 instead (default 0)"
    )
    parser.add_argument(
        "--add-to",
        type=Path,
        help="add this call's seeds to that earlier record (JSON) of the same command and rewrite it (and its .md)",
    )
    parser.add_argument(
        "--from-log",
        type=Path,
        help="summarise the log of an earlier run (e.g. one stopped part way) instead of running their script",
    )
    parser.add_argument(
        "--non-private",
        action="store_true",
        help="dpmerf only: supplementary Table 4's non-private row, --private 0 (the paper's ε = ∞ column)",
    )
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/authors-seeds"))
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "measurements")
    args = parser.parse_args()
    args.scratch.mkdir(parents=True, exist_ok=True)
    if args.method == "dphp" and args.non_private:
        parser.error("--non-private is for --method dpmerf (supplementary Table 4's non-private rows)")
    if args.method == "dphp" and args.first_seed:
        parser.error("--first-seed is for --method dpmerf (DP-HP's script runs its seeds from 0)")
    if args.add_to is not None and not args.add_to.is_file():
        parser.error(f"--add-to {args.add_to}: no such record")
    if args.method == "dphp" and args.dataset != "adult":
        parser.error("--method dphp runs adult only (DP-HP's released code has no loader for the others)")
    metrics = ("f1",) if args.dataset in MULTICLASS else ("roc", "prc")
    setup = prepare(args.scratch, steps=8000, only=args.method)
    if args.method == "dpmerf":
        setup.notes[:] = write_their_input(args.dataset, setup) + [
            "their code seeds Python's random and the train/test split only (numpy: undersampling, median-heuristic "
            "points, frequencies, DP noise; torch: initialisation, sampling; neither seeded): a seed is not a "
            "replicate of one number (cervical, seed 0 alone with --repeat 1: ROC 0.514, 0.499 and 0.504 in three "
            "runs on 2026-11-29)"
        ]
        arguments = their_arguments(args.dataset, args.non_private)
        source = (setup.dpmerf_code / "single_generator_priv_all.py").read_text()
        (setup.dpmerf_code / DPMERF_SEEDED).write_text(dpmerf_from_seed(source, args.first_seed))
        env = {**setup.env, "PYTHONPATH": f"{setup.stubs}:{setup.dpmerf_code}"}
        theirs = THEIRS_DPMERF.replace('run_path("single_generator_priv_all.py"', f'run_path("{DPMERF_SEEDED}"')
        assert DPMERF_SEEDED in theirs
        argv = [sys.executable, "-u", "-c", theirs, *arguments, "--repeat", str(args.repeats)]
        cwd, command = (
            setup.dpmerf_code,
            "single_generator_priv_all.py " + " ".join(arguments) + f" --repeat {args.repeats}",
        )
        if args.first_seed:
            command += f" (seeds {args.first_seed} … {args.first_seed + args.repeats - 1}: its seed loops start there)"
    else:
        source = (setup.dphp_code / "run_sum_prod_kernel_tabular_data.py").read_text()
        if source.count(DPHP_REPETITIONS_LINE) != 1:
            raise SystemExit(f"DP-HP's script no longer has the line {DPHP_REPETITIONS_LINE!r} once")
        (setup.dphp_code / DPHP_REPEATED).write_text(
            source.replace(DPHP_REPETITIONS_LINE, f"repetitions = {args.repeats}")
        )
        env = {**setup.env, "PYTHONPATH": f"{setup.stubs}:{setup.dphp_code}"}
        argv = [sys.executable, "-u", "-c", THEIRS_DPHP]
        cwd, command = (
            setup.dphp_code,
            f"run_sum_prod_kernel_tabular_data.py --data-name adult --is-private 1 (repetitions = {args.repeats})",
        )
    name = f"{args.dataset}-nonprivate" if args.non_private else args.dataset
    log_path = args.from_log or args.scratch / f"authors_{args.method}_{name}.log"
    code, seconds = None, None
    if args.from_log is None:
        start = time.perf_counter()
        with open(log_path, "w") as log:
            code = subprocess.run(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        seconds = time.perf_counter() - start
    seeds = per_seed(log_path.read_text(), metrics)
    if not seeds:
        print(f"no seed finished (exit {code}); see {log_path}", file=sys.stderr)
        return 1
    if len(seeds) < args.repeats:  # killed or crashed part way: the seeds it finished are kept
        setup.notes.append(
            f"their script stopped after {len(seeds)} of {args.repeats} seeds (exit {code}; "
            f"{'summarised from its log by --from-log' if args.from_log else 'its log kept'}): those seeds are the record"
        )
    stamp = datetime.now(timezone.utc)
    record = {
        "what": what(args.method, args.dataset, args.non_private),
        "command": command,
        "reproduce": f"python benchmarks/authors_seeds.py --method {args.method} --dataset {args.dataset}"
        + (" --non-private" * args.non_private)
        + (f" --first-seed {args.first_seed}" if args.first_seed else "")
        + f" --repeats {args.repeats}",
        "notes": setup.notes,
        "seeds": {str(s): v for s, v in sorted(seeds.items())},
        "summary": summary(seeds, metrics),
        "wall_seconds": None if seconds is None else round(seconds, 1),
        "commit": git_commit(),
        "date": stamp.isoformat(timespec="seconds"),
        "machine": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
    }
    record = with_runs(record)
    if args.add_to is not None:
        record = merged(json.loads(args.add_to.read_text()), record)
        seeds = {int(k): v for k, v in record["seeds"].items()}
        base = args.add_to.with_suffix("")
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        base = args.out / f"authors_{args.method}_{name}_seeds_{stamp:%Y-%m-%d}"
    base.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    s = record["summary"]
    lines = [
        f"# {record['what']}",
        "",
        "; ".join(
            f"`{run['reproduce']}` "
            + ("(one thread)" if run["wall_seconds"] is None else f"({run['wall_seconds'] / 60:.0f} min, one thread)")
            for run in record["runs"]
        ),
        "",
        "| seed | " + " | ".join(HEADERS[key] for key in metrics) + " |",
        "|---" * (len(metrics) + 1) + "|",
    ]
    lines += [
        f"| {k} | " + " | ".join(f"{v.get(key, float('nan')):.3f}" for key in metrics) + " |"
        for k, v in sorted(seeds.items())
    ]
    if all(f"{key}_mean" in s for key in metrics):
        first, *rest = metrics
        spreads = [
            f"{HEADERS[first]} {s[f'{first}_mean']:.3f} ± {s[f'{first}_sd']:.3f} (sd, n = {s['n']}), "
            f"lowest {s[f'{first}_min']:.3f}"
        ]
        spreads += [f"{HEADERS[key]} {s[f'{key}_mean']:.3f} ± {s[f'{key}_sd']:.3f}" for key in rest]
        lines += ["", "; ".join(spreads)]
    base.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
