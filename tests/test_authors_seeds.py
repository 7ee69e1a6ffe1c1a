"""benchmarks/authors_seeds.py: what it reads from the authors' printed output and the arguments it
passes them (the numbers it writes are compared with ours in REPORT, so the parsing is tested here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import authors_seeds  # noqa: E402

LOG = """is private? 1
Repetition:  0
epoch # and running loss are  [0, 1.0]
roc mean across methods is 0.610
prc mean across methods is 0.420

Repetition:  1
roc mean across methods is 0.650
prc mean across methods is 0.480

Repetition:  2
epoch # and running loss are  [100, 0.5]
"""


def test_a_seed_counts_once_its_numbers_are_printed_and_a_killed_one_not():
    seeds = authors_seeds.per_seed(LOG, ("roc", "prc"))
    assert seeds == {0: {"roc": 0.61, "prc": 0.42}, 1: {"roc": 0.65, "prc": 0.48}}
    summary = authors_seeds.summary(seeds, ("roc", "prc"))
    assert summary["n"] == 2 and abs(summary["roc_mean"] - 0.63) < 1e-12 and summary["prc_min"] == 0.42


def test_intrusion_reads_the_f1_line_and_ignores_roc():
    log = "Repetition:  0\n------\nf1 mean across methods is 0.702\n\nRepetition:  1\nf1 mean across methods is 0.690\n"
    assert authors_seeds.per_seed(log, ("f1",)) == {0: {"f1": 0.702}, 1: {"f1": 0.69}}


def test_non_private_takes_table_4s_non_private_row_and_private_0():
    private = authors_seeds.their_arguments("cervical", non_private=False)
    public = authors_seeds.their_arguments("cervical", non_private=True)
    as_dict = lambda args: dict(zip(args[::2], args[1::2]))  # noqa: E731
    assert as_dict(private) == {
        "--dataset": "cervical", "--private": "1", "--epochs": "200", "--batch": "0.5",
        "--num_features": "2000", "--undersample": "1",
    }  # fmt: skip
    assert as_dict(public) == {**as_dict(private), "--private": "0", "--epochs": "2000", "--batch": "0.6"}
    adult = as_dict(authors_seeds.their_arguments("adult", non_private=True))
    assert adult["--num_features"] == "50000" and adult["--undersample"] == "0.4"


def test_first_seed_moves_both_live_seed_loops_and_nothing_else():
    source = (
        "    # for ii in range(repetitions):\n"
        "                for ii in range(repetitions):\n                    main(seed_number=ii)\n"
        "                for ii in range(repetitions):\n                    main(seed_number=ii)\n"
    )
    moved = authors_seeds.dpmerf_from_seed(source, 3)
    assert moved.count("for ii in range(3, 3 + repetitions):") == 2
    assert moved.replace("range(3, 3 + repetitions)", "range(repetitions)") == source  # the comment kept
    ran = {}
    for_loops = "\n".join(line.strip() for line in moved.splitlines() if line.strip().startswith("for ii"))
    exec(for_loops.replace(":", ": ran.setdefault('seeds', []).append(ii)"), {"repetitions": 2, "ran": ran})
    assert ran["seeds"] == [3, 4, 3, 4]
    with pytest.raises(SystemExit, match="twice"):
        authors_seeds.dpmerf_from_seed("for ii in range(repetitions):\n", 3)


def record(seeds: dict, command: str = "single_generator_priv_all.py --dataset intrusion --private 1 --repeat 2"):
    return {
        "what": "DP-MERF authors' code, intrusion",
        "command": command,
        "reproduce": "python benchmarks/authors_seeds.py --dataset intrusion",
        "notes": ["a note"],
        "seeds": {str(k): {"f1": v} for k, v in seeds.items()},
        "summary": authors_seeds.summary({k: {"f1": v} for k, v in seeds.items()}, ("f1",)),
        "wall_seconds": 10.0,
        "commit": "abc",
        "date": "2026-11-30",
        "machine": {},
    }


def test_add_to_takes_the_summary_over_every_seed_and_keeps_each_call():
    earlier = record({0: 0.70, 1: 0.60})  # written before --add-to existed: no "runs", no "arguments"
    later = record(
        {2: 0.80}, command="single_generator_priv_all.py --dataset intrusion --private 1 --repeat 1 (seeds 2 … 2)"
    )
    both = authors_seeds.merged(earlier, later)
    assert set(both["seeds"]) == {"0", "1", "2"} and both["summary"]["n"] == 3
    assert abs(both["summary"]["f1_mean"] - 0.70) < 1e-12 and both["summary"]["f1_min"] == 0.60
    assert [run["seeds"] for run in both["runs"]] == [["0", "1"], ["2"]]
    with pytest.raises(SystemExit, match="in that record already"):
        authors_seeds.merged(both, record({2: 0.5}))
    with pytest.raises(SystemExit, match="not of this call"):
        authors_seeds.merged(
            earlier, record({5: 0.5}, command="single_generator_priv_all.py --dataset adult --repeat 1")
        )
