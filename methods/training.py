"""The one generator training loop of the mean-embedding methods (DP-MERF, DP-HP, full MMD).

Each method supplies a ``StepLoss`` — the loss of one step, given the epoch and the step — and
a ``Schedule``; the loop owns the optimiser (Adam, as all three seeds), the per-epoch learning-rate
decay (StepLR) and the progress reports. Everything it does happens after the methods' releases
(or, for DP-HP's per-epoch product releases, inside ``on_epoch``, which runs before the epoch's
first step), so it reads no private row and touches no budget.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from bench.api.contracts import FitContext

# the loss of step ``step`` of epoch ``epoch``; None skips the step (a batch BatchNorm cannot take)
StepLoss = Callable[[int, int], "torch.Tensor | None"]


@dataclass(frozen=True)
class Schedule:
    epochs: int
    steps_per_epoch: int
    lr: float
    lr_decay: float = 1.0  # the learning rate's factor after every epoch (1 = constant)

    @property
    def total_steps(self) -> int:
        return self.epochs * self.steps_per_epoch

    @staticmethod
    def passes(
        epochs: int, rows: int, batch: int, lr: float, lr_decay: float, steps_per_epoch: int | None = None
    ) -> "Schedule":
        """``epochs`` of ``steps_per_epoch`` steps, None = ⌈rows / batch⌉ (one pass over the data)."""
        return Schedule(epochs, steps_per_epoch or max(1, math.ceil(rows / batch)), lr, lr_decay)


def train_generator(
    net: torch.nn.Module,
    loss: StepLoss,
    schedule: Schedule,
    context: FitContext,
    on_epoch: Callable[[int], None] = lambda epoch: None,
) -> None:
    """Adam on ``loss`` for the schedule's steps; ``progress(0, total)`` once the first epoch's
    ``on_epoch`` is done (every release before training made), then after each step."""
    # fused: one kernel for all parameters instead of a dozen per tensor (adult: 8,000 small steps)
    fused = all(p.device.type in ("cpu", "cuda") for p in net.parameters())
    optimiser = torch.optim.Adam(net.parameters(), lr=schedule.lr, fused=fused)
    decay = torch.optim.lr_scheduler.StepLR(optimiser, step_size=1, gamma=schedule.lr_decay)
    total = schedule.total_steps
    with freed_memory_kept():
        for epoch in range(schedule.epochs):
            on_epoch(epoch)
            if epoch == 0:
                context.progress(0, total)
            net.train()
            for step in range(schedule.steps_per_epoch):
                value = loss(epoch, step)
                if value is not None:
                    optimiser.zero_grad(set_to_none=True)
                    value.backward()
                    optimiser.step()
                context.progress(epoch * schedule.steps_per_epoch + step + 1, total)
            decay.step()


# glibc's mallopt parameters (malloc.h) and their defaults
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
_DEFAULT_TRIM_THRESHOLD, _DEFAULT_MMAP_MAX = 128 * 1024, 65536


def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


@contextmanager
def freed_memory_kept() -> Iterator[None]:
    """While training, freed CPU tensors stay in the process's heap for the next step.

    glibc serves every allocation above 32 MiB with its own mmap and unmaps it when freed, so a
    step's large activations (census, sound: 0.5·n rows × 510 columns, 60 MB each) are
    page-faulted and zeroed by the kernel again at every step: about 20% of a census step at
    one thread (benchmarks/method_rows.py). No mmap and no trimming keeps them; on exit the
    defaults return and the unused heap goes back to the system. A no-op without glibc."""
    libc = _glibc()
    if libc is None:
        yield
        return
    libc.mallopt(_M_MMAP_MAX, 0)
    libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)  # mallopt takes a C int
    try:
        yield
    finally:
        libc.mallopt(_M_MMAP_MAX, _DEFAULT_MMAP_MAX)
        libc.mallopt(_M_TRIM_THRESHOLD, _DEFAULT_TRIM_THRESHOLD)
        libc.malloc_trim(0)


def label_sampler(
    weights: torch.Tensor, batch: int, rng: torch.Generator, device: torch.device
) -> Callable[[], torch.Tensor]:
    """Draws a batch of generated labels ~ ``weights`` (the released class proportions)."""
    cpu_weights = weights.detach().float().cpu()

    def draw() -> torch.Tensor:
        return torch.multinomial(cpu_weights, batch, replacement=True, generator=rng).to(device)

    return draw
