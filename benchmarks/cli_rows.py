"""Speed rows for the command line: ``python -m bench list`` and ``--help`` (issue 16: ≤ 1 s;
they read the registries' cards and import no plugin code, torch or jax)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from speed_rows import Row  # noqa: E402


def _command_seconds(*argv: str) -> Callable[[], float]:
    def run() -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "bench", *argv], cwd=REPO, check=True, capture_output=True)
        return time.perf_counter() - started

    return run


ROWS = [
    Row("`python -m bench list`", 1.0, 10.0, None, _command_seconds("list")),
    Row("`python -m bench --help`", 1.0, 10.0, None, _command_seconds("--help")),
]
