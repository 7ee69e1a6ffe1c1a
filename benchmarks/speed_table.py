"""Issue 16's speed table: every row of benchmarks/{method,evaluator,cli}_rows.py, the median of
``--repeats`` runs each, printed as markdown with the time before this round, the target and the
authors' code's time on this machine side by side.

    python benchmarks/speed_table.py [--rows 1,3] [--repeats 3] [--threads 1]

Rows are numbered in the order printed by ``--list``. Measure on an otherwise idle machine; the
grid runs each cell with one torch thread by default (``--threads`` of ``bench run``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cli_rows  # noqa: E402
import evaluator_rows  # noqa: E402
import method_rows  # noqa: E402

ROWS = [*method_rows.ROWS, *evaluator_rows.ROWS, *cli_rows.ROWS]


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value / 60:.1f} min" if value >= 120 else f"{value:.3g} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", help="comma-separated row numbers (1-based; default all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (a grid cell's default: 1)")
    parser.add_argument("--list", action="store_true", help="print the numbered rows and stop")
    args = parser.parse_args()
    if args.list:
        for number, row in enumerate(ROWS, 1):
            print(f"{number:2d}  {row.name}")
        return
    import torch

    torch.set_num_threads(args.threads)
    chosen = [ROWS[int(i) - 1] for i in args.rows.split(",")] if args.rows else ROWS
    print(f"{torch.get_num_threads()} torch thread(s), median of {args.repeats}\n")
    print("| what | before this round | now | target | authors' code |\n|---|---|---|---|---|")
    for row in chosen:
        now = statistics.median(row.run() for _ in range(args.repeats))
        print(
            f"| {row.name} | {_seconds(row.before_s)} | {_seconds(now)} | {_seconds(row.target_s)} | "
            f"{_seconds(row.authors_s)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
