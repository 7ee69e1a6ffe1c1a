"""torch's thread count, held at one for a computation whose rounding would otherwise follow it."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run the block on one torch (and BLAS) thread, then restore the count.

    A CPU BLAS product or matrix-vector product may split its reduction between threads (which
    split, and from which size, depends on the CPU: Intel's MKL on AVX-512 Xeons splits a 500-wide
    gemv from 257 rows at 2 threads, AMD's EPYC did not), so its bits would follow the cores a
    cell is lent. On one thread they are those of a default (``--threads 1``) cell. Setting the
    count costs well under a microsecond."""
    import torch

    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
