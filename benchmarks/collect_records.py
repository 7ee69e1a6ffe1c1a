"""Copy a campaign's exported runs into the committed record (``results/runs/<experiment>``).

A campaign logs into its own MLflow store from a clean worktree and exports it with
``python -m bench export --experiment E --out DIR``; this copies ``DIR/E``'s records into
``results/runs/E``, keeping only evidence: a finished run, fitted from a clean tree (``code.dirty``
false), not an imported copy of a record (tag ``record.run_id``: the store may hold the committed
record, imported so that the runner skips its cells), and not a second run of a cell the record
already holds (the committed run is kept; the clash is printed). A recorded run that a later
preset scored by more evaluators (same run id, more metrics) is copied again.

``--replace`` lets a new run of a recorded cell take the committed one's place in two cases only:
the committed run failed (it holds a reason, no numbers), or it has no privacy ledger (recorded
before ledgers were kept) and the new run has one. From the record's commit on the CPU model
that made it, the rerun must reproduce every number it holds (all its metrics but timings and
memory) exactly — reruns there are bit-identical, so a moved number is a finding, printed, and
nothing is replaced. From another commit or on another CPU model floating-point paths may differ
(a fit's trajectory drifts: compiled kernels, another summation order, other vector units), so
the rerun replaces the record and every number it moved is printed, for the note that reports
the move against the seeds' spread.

    python benchmarks/collect_records.py /work/campaign/records/images results/runs/images [--dry] [--replace]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

IMPORTED_TAG = "record.run_id"  # bench.harness.record.IMPORTED_TAG


def volatile(metric: str) -> bool:
    """A metric that measures the machine, not the method: wall times and peak memory."""
    return "seconds" in metric or "peak_memory" in metric


def moved_numbers(old: dict, new: dict) -> list[str]:
    """The committed record's metrics that the new run does not reproduce exactly."""
    before, after = old.get("metrics", {}), new.get("metrics", {})
    return [
        f"{k} {before[k]!r} → {after.get(k)!r}" for k in sorted(before) if not volatile(k) and after.get(k) != before[k]
    ]


def replacement(record: dict, existing: dict) -> str:
    """Whether a new run of a recorded cell may take its place (``--replace``; module docstring)."""
    if existing.get("status") == "FAILED":
        return "replace a failed record"
    if existing.get("ledger") or not record.get("ledger"):
        return "another run of this cell is recorded"
    moved = moved_numbers(existing, record)
    if not moved:
        return "replace a ledgerless record (its numbers reproduced)"
    listed = f"{len(moved)} number(s): {'; '.join(moved)}"
    differs = [
        what
        for what, old, new in (
            ("commit", existing.get("code", {}).get("commit"), record.get("code", {}).get("commit")),
            ("CPU", existing.get("machine", {}).get("cpu"), record.get("machine", {}).get("cpu")),
        )
        if old != new
    ]
    if not differs:
        return f"a rerun of a ledgerless record at its commit on its CPU moved {listed}"
    return f"replace a ledgerless record (rerun on another {' and '.join(differs)} moved {listed})"


def verdict(record: dict, existing: dict | None, replace: bool = False) -> str:
    """ "copy" (or "replace …"), or why the record is not copied."""
    if record.get("status") != "FINISHED":
        return f"not finished ({record.get('status')})"
    if IMPORTED_TAG in record.get("tags", {}):
        return "an imported copy of a committed record"
    code = record.get("code") or {}
    if code.get("dirty") or not code.get("commit"):
        return "fitted from a tree that differs from its commit"
    if existing is not None and existing.get("run_id") != record.get("run_id"):
        return replacement(record, existing) if replace else "another run of this cell is recorded"
    if existing == record:
        return "already recorded"
    return "copy"  # new, or the recorded run scored by more evaluators since (same run, more metrics)


def collect(source: Path, target: Path, dry: bool, replace: bool = False) -> dict[str, int]:
    counts: dict[str, int] = {}
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.glob("*.json")):
        record = json.loads(path.read_text())
        there = target / path.name
        result = verdict(record, json.loads(there.read_text()) if there.exists() else None, replace)
        kind = result.split(" (")[0].split(":")[0]
        counts[kind] = counts.get(kind, 0) + 1
        if result == "copy" or result.startswith("replace"):
            print(
                f"{result.split(' (')[0]}  {path.name}" + (f" ({result.split(' (', 1)[1]}" if "moved" in result else "")
            )
            if not dry:
                shutil.copy2(path, there)
        elif result != "already recorded" and not result.startswith("an imported"):
            print(f"skip  {path.name}: {result}", file=sys.stderr)
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="an exported experiment's folder (DIR/<experiment>)")
    parser.add_argument("target", type=Path, help="the committed record's folder, e.g. results/runs/images")
    parser.add_argument("--dry", action="store_true", help="say what would be copied, copy nothing")
    parser.add_argument(
        "--replace",
        action="store_true",
        help="a new run may replace a failed record, or a ledgerless one whose every number it reproduces",
    )
    args = parser.parse_args()
    if not args.source.is_dir():
        print(f"error: {args.source} is not a folder of exported records", file=sys.stderr)
        return 2
    counts = collect(args.source, args.target, args.dry, args.replace)
    print(", ".join(f"{n} {what}" for what, n in sorted(counts.items())) or "nothing exported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
