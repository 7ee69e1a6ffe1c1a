"""What the runner (and ``run_cell``) does for a grid's methods before their first cell: each
method's ``prepare`` (``DeclaredMethod``), e.g. building an outside library's virtual environment,
which a cell cannot do behind its data wall (Landlock refuses the cross-folder renames of a wheel
build): a fit that finds its environment missing fails at once with the reason the build gave.
With Ray, the preparation runs on the driver's machine: other nodes must see the same
``$DPBENCH_ENV_DIR`` (a shared folder), or their cells fail that way."""

from __future__ import annotations

import sys
from typing import Iterable

from bench.api.registry import METHODS, RegistryError
from bench.harness.cell import Cell


def prepare_methods(cells: Iterable[Cell]) -> list[str]:
    """Runs the ``prepare`` of every method among ``cells`` once, in this process; returns the
    methods whose preparation failed, each failure printed in one line (their cells then fail as
    they run, each recording the reason, so no grid is lost to one library)."""
    failed = []
    for name in sorted({cell.method for cell in cells}):
        try:
            prepare = METHODS.get(name).prepare
        except RegistryError:
            continue  # the worker records an unknown method as the cell's failure
        if prepare is None:
            continue
        try:
            prepare()
        except Exception as error:  # noqa: BLE001 - any library's failure is the cells' reason, not the grid's end
            failed.append(name)
            print(f"warning: preparing {name} failed ({error}); its cells will fail with that reason", file=sys.stderr)
    return failed
