"""Issue 16's speed table: every row of benchmarks/{method,evaluator,cli}_rows.py, the median of
``--repeats`` runs each, printed as markdown with the time before this round, the target and the
authors' code's time on this machine side by side.

    python benchmarks/speed_table.py [--rows 1,3] [--repeats 3] [--threads 1]

Rows are numbered in the order printed by ``--list``. Measure on an otherwise idle machine; the
grid runs each cell with one torch thread by default (``--threads`` of ``bench run``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cli_rows  # noqa: E402
import speed_rows  # noqa: E402
import evaluator_rows  # noqa: E402
import method_rows  # noqa: E402

ROWS = [*method_rows.ROWS, *evaluator_rows.ROWS, *cli_rows.ROWS]


def main() -> None:
    speed_rows.main(ROWS, __doc__, threads=1)


if __name__ == "__main__":
    main()
