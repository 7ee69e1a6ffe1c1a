"""Noise from the operating system's cryptographically secure source (``--secure-noise``):
standard normal, uniform and Laplace draws from ``os.urandom``, for a release no logged seed
reproduces."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from scipy import special


def secure_standard_normal(shape: tuple[int, ...]) -> np.ndarray:
    """Standard normal draws from the OS's cryptographically secure source (os.urandom),
    by the inverse CDF of 53-bit uniforms in (0, 1)."""
    count = int(np.prod(shape)) if shape else 1
    return special.ndtri(secure_uniform(count)).reshape(shape)


def secure_uniform(count: int) -> np.ndarray:
    """``count`` uniforms in (0, 1) from os.urandom (53-bit resolution)."""
    bits = np.frombuffer(os.urandom(8 * count), dtype=np.uint64) >> np.uint64(11)
    return (bits.astype(np.float64) + 0.5) / 2.0**53


def secure_standard_laplace(shape: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(shape)) if shape else 1
    bits = np.frombuffer(os.urandom(8 * count), dtype=np.uint64) >> np.uint64(11)
    centred = (bits.astype(np.float64) + 0.5) / 2.0**53 - 0.5
    return (-np.sign(centred) * np.log1p(-2 * np.abs(centred))).reshape(shape)


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch")
