"""A content-keyed disk cache for arrays computed from the *real* data (FID statistics of the
reference split, encoded test sets), shared across cells through ``EvalContext.cache_dir``.

Keys are sha256 digests of everything the result depends on (the data's bytes, shape and dtype,
the settings, a version string), so a stale entry is never found: changing any input changes
the key. Entries are ``.npz`` files written under a temporary name and renamed, so concurrent
cells never read half a file; a damaged entry is recomputed, not trusted. The cache holds
derivatives of private data: keep it as private as the data folder, never commit it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np


def content_key(*parts: str | np.ndarray) -> str:
    """sha256 over the parts; an array contributes its shape, dtype and bytes."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            array = np.ascontiguousarray(part)
            digest.update(f"array{array.shape}{array.dtype}|".encode())
            digest.update(memoryview(array).cast("B"))
        else:
            digest.update(f"{part}|".encode())
    return digest.hexdigest()


def load_arrays(path: Path) -> dict[str, np.ndarray] | None:
    if not path.is_file():
        return None
    try:
        with np.load(path) as stored:
            return {name: stored[name] for name in stored.files}
    except (OSError, ValueError, KeyError, EOFError):  # a damaged entry is recomputed, not trusted
        return None


def save_arrays(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Written to a temporary name and renamed, so a concurrent reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".npz")
    try:
        with os.fdopen(handle, "wb") as out:
            np.savez(out, **arrays)
        Path(temporary).replace(path)
    finally:
        Path(temporary).unlink(missing_ok=True)


def cached_arrays(
    cache_dir: Path | None, folder: str, key: str, compute: Callable[[], Mapping[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """``compute()``'s arrays, read from ``<cache_dir>/<folder>/<key>.npz`` when present and
    written there otherwise; without a ``cache_dir``, always computed."""
    if cache_dir is None:
        return dict(compute())
    path = Path(cache_dir) / folder / f"{key}.npz"
    found = load_arrays(path)
    if found is not None:
        return found
    arrays = dict(compute())
    save_arrays(path, arrays)
    return arrays
