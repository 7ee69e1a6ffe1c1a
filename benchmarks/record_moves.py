"""How far reruns moved a recorded setup's numbers, against the seeds' spread: for each setup
(experiment folder, method, dataset, ε, settings) that both folders hold, each metric's mean and
seed-sd before and after, and the move of the mean in seed-sds (timings and memory left out).

    python benchmarks/record_moves.py BEFORE_DIR AFTER_DIR [--metrics marginals.tv_3,downstream.roc_auc]

BEFORE_DIR: the committed records as they were (e.g. ``git worktree add /tmp/before HEAD~1`` then
its ``results/runs``); AFTER_DIR: the same folder with the reruns copied in
(``benchmarks/collect_records.py --replace``). Only setups with a record that changed are shown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collect_records import volatile  # noqa: E402


def setups(folder: Path) -> dict[tuple, dict[str, dict]]:
    """Records by setup: (experiment, method, dataset, ε, settings) → {file name: record}."""
    found: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for path in sorted(folder.glob("*/*.json")):
        record = json.loads(path.read_text())
        if record.get("status") != "FINISHED":
            continue
        cell = record["cell"]
        setting = json.dumps(cell.get("params", {}), sort_keys=True) + cell.get("protocol", "")
        found[(path.parent.name, cell["method"], cell["dataset"], cell["epsilon"], setting)][path.name] = record
    return found


def spread(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else float("nan")
    return f"{statistics.fmean(values):.4f} ± {sd:.4f} ({len(values)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--metrics", help="comma-separated metrics (default: every metric the records share)")
    args = parser.parse_args()
    before, after = setups(args.before), setups(args.after)
    wanted = set(args.metrics.split(",")) if args.metrics else None
    print("| experiment | method | dataset | ε | metric | before | after | moved (seed-sds) |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(set(before) & set(after), key=str):
        old, new = before[key], after[key]
        if all(old.get(name, {}).get("run_id") == record.get("run_id") for name, record in new.items()):
            continue
        metrics = set.intersection(*(set(r["metrics"]) for r in [*old.values(), *new.values()]))
        for metric in sorted(m for m in metrics if not volatile(m) and (wanted is None or m in wanted)):
            a = [r["metrics"][metric] for r in old.values() if isinstance(r["metrics"][metric], (int, float))]
            b = [r["metrics"][metric] for r in new.values() if isinstance(r["metrics"][metric], (int, float))]
            if len(a) < 2 or len(b) < 2 or a == b:
                continue
            sd = statistics.stdev(a)
            moved = (statistics.fmean(b) - statistics.fmean(a)) / sd if sd else float("inf")
            experiment, method, dataset, epsilon, _ = key
            print(
                f"| {experiment} | {method} | {dataset} | {epsilon} | {metric} | {spread(a)} | {spread(b)} | {moved:+.2f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
