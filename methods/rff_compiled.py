"""DP-MERF's per-class random-Fourier-feature sums, compiled: one fused loop per class block.

``torch.compile`` (inductor's C++ code) turns a class block's projection xΩᵀ, its cosine and
sine and their sums over the rows into one vectorised loop: no rows × D/2 tile is written to
memory, and its sine and cosine run several times faster than torch's own. The backward pass
recomputes them the same way (a reduction over the frequencies per row and input coordinate).
Measured at 1 thread on the development machine (forward and backward of the class sums, median
of 10; `benchmarks/bench_dp_merf.py --compiled-sweep`): gmm2d (500 rows × 15,000 frequencies)
38.9 → 13.3 ms, adult under the paper protocol (1,100 × 500) 4.8 → 1.8 ms, under the sound one
(2,400 × 500) 6.2 → 3.8 ms. The sums are those of the eager kernel to float32 rounding (≈ 10⁻⁷
relative), and the same bits at 1 and 2 threads (tests/test_dp_merf.py).

Compiling costs ≈ 1–3 s in a process when inductor's disk cache holds the kernels, ≈ 11 s when
it does not; so DP-MERF uses these kernels only for training steps large enough to repay it
(``methods.dp_merf.COMPILE_MIN_STEP_ENTRIES``), on CPU, for inputs narrow enough to project coordinate by
coordinate, and only where a first compilation works (inductor needs a C++ compiler). Set
``DPBENCH_COMPILE=0`` to keep the eager kernel everywhere.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
import torch


def _projection(rows: torch.Tensor, frequencies_t: torch.Tensor) -> torch.Tensor:
    # coordinate by coordinate, as the eager kernel: d multiply-adds inside the fused loop
    projection = rows[:, 0:1] * frequencies_t[0]
    for k in range(1, rows.shape[1]):
        projection = projection + rows[:, k : k + 1] * frequencies_t[k]
    return projection


def _cos_sin_sums(rows: torch.Tensor, frequencies_t: torch.Tensor) -> torch.Tensor:
    """[Σ_rows cos(xΩᵀ), Σ_rows sin(xΩᵀ)] (2·half)."""
    projection = _projection(rows, frequencies_t)
    return torch.cat([torch.cos(projection).sum(0), torch.sin(projection).sum(0)])


def _rows_gradient(
    rows: torch.Tensor, frequencies_t: torch.Tensor, grad_cos: torch.Tensor, grad_sin: torch.Tensor
) -> torch.Tensor:
    """∂/∂x of ⟨g_cos, Σ cos(xΩᵀ)⟩ + ⟨g_sin, Σ sin(xΩᵀ)⟩ for each row: Σ_k (g_sin,k cos pₖ − g_cos,k sin pₖ) Ωₖ."""
    projection = _projection(rows, frequencies_t)
    slope = grad_sin * torch.cos(projection) - grad_cos * torch.sin(projection)
    return torch.stack([(slope * frequencies_t[j]).sum(1) for j in range(rows.shape[1])], dim=1)


def _rows_vary(rows: torch.Tensor) -> torch.Tensor:
    # Only the row count varies between steps (class blocks of a sampled batch). The frequency count
    # stays a constant of the graph: with it symbolic, inductor runs the loop over frequencies on one
    # thread; constant, it splits the frequencies across the threads — each sum still adds its rows in
    # one order, so 1 and 2 threads give the same bits (tests/test_dp_merf.py). 1-row blocks keep
    # their own graph (dynamo specialises sizes 0 and 1).
    if rows.shape[0] >= 2:
        torch._dynamo.mark_dynamic(rows, 0)
    return rows


class Kernels:
    def __init__(self) -> None:
        self._sums = torch.compile(_cos_sin_sums, dynamic=False, fullgraph=True)
        self._gradient = torch.compile(_rows_gradient, dynamic=False, fullgraph=True)

    def sums(self, rows: torch.Tensor, frequencies_t: torch.Tensor) -> torch.Tensor:
        return self._sums(_rows_vary(rows), frequencies_t)

    def gradient(
        self, rows: torch.Tensor, frequencies_t: torch.Tensor, grad_cos: torch.Tensor, grad_sin: torch.Tensor
    ) -> torch.Tensor:
        return self._gradient(_rows_vary(rows), frequencies_t, grad_cos, grad_sin)


@lru_cache(maxsize=1)
def _configured_kernels() -> Kernels | None:
    """The kernels, compiled lazily (None with ``DPBENCH_COMPILE=0``)."""
    if os.environ.get("DPBENCH_COMPILE", "1") == "0":
        return None
    import logging

    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # "No CUDA runtime is found" on CPU machines
    inductor_config.compile_threads = 1  # compile in this process: no pool of helper processes left behind
    # one graph per input width, frequency count, dtype, thread count (a guard: the runner lends
    # cores) and 1-row block; a process running many cells (tests, a Ray worker) needs more than 8
    dynamo_config.recompile_limit = max(dynamo_config.recompile_limit, 64)
    return Kernels()


@lru_cache(maxsize=None)
def compiled_kernels(coordinates: int, frequencies: int, dtype: torch.dtype = torch.float32) -> Kernels | None:
    """The compiled kernels for rows of ``coordinates`` columns against ``frequencies`` frequencies,
    or None where they cannot be used (``DPBENCH_COMPILE=0``, or compiling fails, e.g. no C++
    compiler: said on stderr). Both kernels are compiled here, on a 2-row block of these shapes:
    the graphs every later block of any row count uses, so no compilation is spent on a probe."""
    kernels = _configured_kernels()
    if kernels is None:
        return None
    try:
        rows, frequencies_t = (
            torch.zeros(2, coordinates, dtype=dtype),
            torch.zeros(coordinates, frequencies, dtype=dtype),
        )
        # as inside the autograd function, which the graphs' guards check: grad mode off, and two
        # distinct gradient tensors (one passed twice would guard on that aliasing)
        grad_cos, grad_sin = torch.zeros(frequencies, dtype=dtype), torch.zeros(frequencies, dtype=dtype)
        with torch.no_grad():
            kernels.sums(rows, frequencies_t)
            kernels.gradient(rows, frequencies_t, grad_cos, grad_sin)
        return kernels
    except Exception as error:  # noqa: BLE001 — any failure to compile means: use the eager kernel
        print(
            f"note: DP-MERF's compiled kernel is unavailable ({type(error).__name__}: {str(error)[:200]}); "
            "using the eager one (slower, the same sums to float rounding)",
            file=sys.stderr,
        )
        return None


class CompiledCosSinClassSums(torch.autograd.Function):
    """Per-class sums of [cos(xΩᵀ); sin(xΩᵀ)] (C × D), one compiled loop per class block."""

    @staticmethod
    def forward(ctx, x, labels, n_classes: int, frequencies, kernels: Kernels):
        half = frequencies.shape[0]
        order = torch.argsort(labels, stable=True)
        rows = x[order]
        frequencies_t = frequencies.T.contiguous()
        sums = x.new_zeros(n_classes, 2 * half)
        blocks, start = [], 0
        for label, count in enumerate(torch.bincount(labels, minlength=n_classes).tolist()):
            if count:
                blocks.append((label, start, start + count))
                sums[label] = kernels.sums(rows[start : start + count], frequencies_t)
            start += count
        ctx.blocks, ctx.kernels = blocks, kernels
        ctx.save_for_backward(rows, order, frequencies_t)
        return sums

    @staticmethod
    def backward(ctx, grad_sums):
        rows, order, frequencies_t = ctx.saved_tensors
        half = frequencies_t.shape[1]
        grad_rows = torch.empty_like(rows)
        for label, start, stop in ctx.blocks:
            grad_rows[start:stop] = ctx.kernels.gradient(
                rows[start:stop],
                frequencies_t,
                grad_sums[label, :half].contiguous(),
                grad_sums[label, half:].contiguous(),
            )
        grad_x = torch.empty_like(grad_rows)
        grad_x[order] = grad_rows
        return grad_x, None, None, None, None
