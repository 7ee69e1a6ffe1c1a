"""Child processes that do not outlive their parent."""

from __future__ import annotations

import sys


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (kill -9 included), so that no
    orphan keeps computing what nobody will log: a grid's cell worker, an outside library's
    driver. Call it in the child (a worker's first line, a ``preexec_fn``). Elsewhere a no-op:
    the parent's ``finally`` (and the lease's staleness) cover it."""
    import ctypes
    import signal

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
