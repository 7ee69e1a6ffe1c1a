"""A DP-SGD phase through the ledger's door: its Poisson batches, its per-step noise, and the
calibration of its noise multiplier against the run's remaining budget."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from bench.privacy.accountants import Calibrator, compose_epsilon, prv_error
from bench.privacy.noise import secure_uniform
from bench.privacy.releases import GaussianRelease


class PrivacyBudgetExceeded(RuntimeError):
    """A release would take the run past its (ε, δ) target."""


@dataclass
class SubsampledPhase:
    """A DP-SGD phase, charged when it is created: ``privatise`` adds the phase's noise to one
    step's summed clipped gradients, through the ledger's door; ``steps_done`` is checked by
    the method against the steps charged."""

    ledger: Any  # the PrivacyLedger that charged the phase: its noise door draws every step's noise
    release: GaussianRelease
    clipping_norm: float
    steps_done: int = 0

    @property
    def noise_std(self) -> float:
        return self.release.noise_std

    @property
    def opacus_noise_multiplier(self) -> float:
        """Noise std relative to the clipping norm, as Opacus counts it."""
        return self.noise_std / self.clipping_norm

    def poisson_batches(self, rows: int, steps: int, generator: Any) -> Iterator[Any]:
        """One epoch of ``steps`` Poisson batches of row indices (torch tensors): each row in each
        batch with the phase's probability q, independently — the sampling the phase's
        amplification assumes. Seeded: drawn from ``generator`` (a CPU ``torch.Generator``) exactly
        as Opacus' ``DPDataLoader`` draws them, so seeded runs keep their batches (its DataLoader
        first draws one int64 per epoch, a worker seed, from the same generator). With
        ``secure_noise``: from os.urandom like the noise, so no logged seed reproduces the batches
        (known batches would forfeit the amplification by sampling)."""
        import torch

        rate = self.release.sampling_rate
        if self.ledger.secure_noise:
            for _ in range(steps):
                yield torch.as_tensor(np.flatnonzero(secure_uniform(rows) < rate))
            return
        torch.empty((), dtype=torch.int64).random_(generator=generator)
        for _ in range(steps):
            yield (torch.rand(rows, generator=generator) < rate).nonzero(as_tuple=False).reshape(-1)

    def privatise(self, summed: Sequence[Any], rng: Any) -> list[Any]:
        if self.steps_done >= self.release.compositions:
            raise PrivacyBudgetExceeded(
                f"{self.release.what}: step {self.steps_done + 1} was not charged ({self.release.compositions} were)"
            )
        self.steps_done += 1
        noisy = [self.ledger._add_gaussian(value, self.noise_std, rng) for value in summed]
        noisy = self.ledger._replayed(self.release, noisy)
        self.ledger._notify(self.release, list(summed), noisy, each=False)
        return noisy


@functools.lru_cache(maxsize=256)
def calibrate_subsampled_multiplier(
    prior: tuple[GaussianRelease, ...],
    sensitivity: float,
    sampling_rate: float,
    steps: int,
    epsilon: float,
    delta: float,
    calibrator: Calibrator,
) -> float:
    """The smallest noise multiplier (to 0.1%) of ``steps`` Poisson-subsampled releases that,
    composed with ``prior``, meet (ε, δ) under replace-one; cached, since it is pure and a
    calibration composes PRVs a dozen times."""

    def release(multiplier: float) -> GaussianRelease:
        return GaussianRelease("phase", sensitivity, multiplier, steps, sampling_rate)

    def fits(multiplier: float, accountant: Calibrator) -> bool:
        return compose_epsilon([*prior, release(multiplier)], delta, accountant, prv_error(epsilon)) <= epsilon

    # the Rényi bound (fast, looser) brackets the answer from above
    low, high = 0.02, 0.5
    while not fits(high, "paper"):
        low, high = high, high * 2
        if high > 1e6:
            raise PrivacyBudgetExceeded("no noise multiplier meets the remaining budget")
    if calibrator == "tight":
        low = low / 2
        while not fits(high, "tight"):  # not expected; keeps the answer valid regardless
            low, high = high, high * 2
    while (high - low) / high > 1e-3:
        mid = 0.5 * (low + high)
        low, high = (low, mid) if fits(mid, calibrator) else (mid, high)
    return high
