"""The `bench run` commands that rerun the committed records still from uncommitted code
(``dirty``) or without a privacy ledger (``ledgerless``), found by expanding every preset's grids
and matching their cell keys to the records; run them from a clean checkout into a scratch store,
then `python -m bench export --out results/runs` replaces the records.

    python benchmarks/record_rerun_plan.py dirty|ledgerless [--records results/runs]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.grid import expand  # noqa: E402
from bench.report.presets import PRESETS  # noqa: E402


def wanted(record: dict, kind: str) -> bool:
    if kind == "dirty":
        return bool(record["code"].get("dirty"))
    # a failed cell has no ledger by design (its record holds the reason): not a record to rerun for one
    failed = record.get("status") == "FAILED"
    if record.get("kind") == "audit":  # an audit releases nothing to account for
        return False
    return not record.get("ledger") and not failed and record["cell"]["method"] not in ("real", "uniform")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=("dirty", "ledgerless"))
    parser.add_argument("--records", type=Path, default=Path("results/runs"))
    args = parser.parse_args()
    records = {}
    for path in args.records.glob("*/*.json"):
        record = json.loads(path.read_text())
        if wanted(record, args.kind):
            records[(record["experiment"], record["key"])] = record["label"]
    seeds_of = collections.defaultdict(set)
    grids = {}
    for preset in PRESETS.values():
        for grid in preset.grids:
            cells, _ = expand(grid)
            for cell in cells:
                if records.pop((preset.experiment, cell.key), None) is not None:
                    seeds_of[(preset.name, id(grid))].add(cell.seed)
                    grids[(preset.name, id(grid))] = (grid, preset.experiment)
    for name, seeds in seeds_of.items():
        grid, experiment = grids[name]
        print(grid.narrowed(seeds=sorted(seeds)).command(experiment))
    if records:
        print(f"# {len(records)} record(s) match no preset cell: {sorted(records.values())[:10]}", file=sys.stderr)


if __name__ == "__main__":
    main()
