"""What every speed-row script shares (issue 16): a row, how its seconds are written, and the
command line that times rows and prints them as a markdown table — name | before | now (median
of ``--repeats``) | target | authors' code — for benchmarks/{method,evaluator,cli}_rows.py alone
and for benchmarks/speed_table.py, which prints all of them."""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class Row:
    name: str
    target_s: float
    before_s: float | None  # the reviewer's measurement before issue 16's work
    authors_s: float | None  # the authors' code on this machine, where it exists
    run: Callable[[], float]  # one measurement, seconds


def seconds_text(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value / 60:.1f} min" if value >= 120 else f"{value:.3g} s"


def chosen_rows(rows: Sequence[Row], wanted: str | None) -> list[Row]:
    """``wanted``: comma-separated 1-based numbers or row names (None: every row)."""
    if not wanted:
        return list(rows)
    names = {w.strip() for w in wanted.split(",")}
    return [row for number, row in enumerate(rows, 1) if str(number) in names or row.name in names]


def main(rows: Sequence[Row], doc: str | None, threads: int, argv: list[str] | None = None) -> None:
    """Time the chosen rows with ``--threads`` torch and BLAS threads and print the table."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", help="comma-separated row numbers (1-based, as --list prints them) or names")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=threads, help=f"torch and BLAS threads (default {threads})")
    parser.add_argument("--list", action="store_true", help="print the numbered rows and stop")
    args = parser.parse_args(argv)
    if args.list:
        for number, row in enumerate(rows, 1):
            print(f"{number:2d}  {row.name}")
        return
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(args.threads)
    print(f"{torch.get_num_threads()} torch thread(s), median of {args.repeats}\n")
    print("| what | before | now | target | authors' code |\n|---|---|---|---|---|")
    for row in chosen_rows(rows, args.rows):
        with threadpool_limits(limits=args.threads):
            now = statistics.median(row.run() for _ in range(args.repeats))
        print(
            f"| {row.name} | {seconds_text(row.before_s)} | {seconds_text(now)} | {seconds_text(row.target_s)} | "
            f"{seconds_text(row.authors_s)} |",
            flush=True,
        )
