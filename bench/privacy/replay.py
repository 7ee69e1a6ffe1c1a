"""Release replay, the conformance kit's check that a method's releases are all it saw: a refit
on other rows gets back, in order, the noisy values the first fit released (``ReleaseReplay``);
a fit that asks for other releases diverges (``ReplayDiverged``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.privacy.noise import _is_torch


class ReplayDiverged(RuntimeError):
    """Under release replay, a fit asked for a release the recorded fit did not make: the number,
    order or shape of its releases depends on the private rows."""


@dataclass
class ReleaseReplay:
    """The released (noisy) values of another fit, ``(what, value)`` in release order, handed
    back one by one (as copies: a method may change what it gets in place)."""

    outputs: list[tuple[str, Any]]
    position: int = 0

    def next(self, what: str, fresh: Any) -> Any:
        if self.position >= len(self.outputs):
            raise ReplayDiverged(
                f"release {what!r} (number {self.position + 1}) was not made by the recorded fit: "
                "the number of releases depends on the data"
            )
        recorded_what, value = self.outputs[self.position]
        if recorded_what != what or _shapes(value) != _shapes(fresh):
            raise ReplayDiverged(
                f"release number {self.position + 1} is {what!r} {_shapes(fresh)} here but was "
                f"{recorded_what!r} {_shapes(value)} in the recorded fit: releases depend on the data"
            )
        self.position += 1
        return snapshot(value)


def snapshot(value: Any) -> Any:
    """A deep copy of a released or clean value (tensors, arrays, lists of them, numbers)."""
    if isinstance(value, (list, tuple)):
        return [snapshot(v) for v in value]
    if _is_torch(value):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


def _shapes(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_shapes(v) for v in value]
    return tuple(getattr(value, "shape", ()))
