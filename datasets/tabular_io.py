"""Shared reading helpers of the tabular loaders: verified file access, strict parsing, coding.

The loaders read the publishers' original files and turn them into raw codes of the *public*
schema (``bench/core/encoding.py``): floats for numerical columns, the index into
``Column.categories`` for categorical and ordinal columns, 0/1 for binary ones. Category lists
and bounds are hard-coded in each dataset module from public documentation; a value in the file
that the documentation does not list is an error (``DataFormatError``), never a silent extension
of the domain, since the domain must not depend on the private rows.

File access goes through ``datasets.files.fetch`` (content-checksum verified; a file whose
checksum is not pinned yet is used unverified, with a warning).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from datasets.files import DataFileError
from bench.core.data import Column, ColumnKind

MISSING = "?"  # the UCI missing-value marker (adult.names: "Convert Unknown to '?'")


class DataFormatError(DataFileError):
    """A dataset file was found but does not have the published format; the message says which."""


# --- schema helpers ----------------------------------------------------------------------------


def numerical(name: str, low: float, high: float) -> Column:
    return Column(name, ColumnKind.NUMERICAL, bounds=(float(low), float(high)))


def categorical(name: str, categories: Sequence[str]) -> Column:
    return Column(name, ColumnKind.CATEGORICAL, categories=_unique(name, categories))


def ordinal(name: str, categories: Sequence[str]) -> Column:
    return Column(name, ColumnKind.ORDINAL, categories=_unique(name, categories))


def binary(name: str) -> Column:
    return Column(name, ColumnKind.BINARY)


def _unique(name: str, categories: Sequence[str]) -> tuple[str, ...]:
    categories = tuple(categories)
    if len(set(categories)) != len(categories):
        raise ValueError(f"column {name!r}: the documented category list has duplicates")
    return categories


def split_names_list(text: str) -> tuple[str, ...]:
    """The values of a UCI ``.names`` line body, e.g. ``"A, B C, D."`` → ``("A", "B C", "D")``."""
    body = text.strip()
    if body.endswith("."):
        body = body[:-1]
    return tuple(value.strip() for value in body.split(","))


# --- parsing -----------------------------------------------------------------------------------


def read_csv(path: Path, expected_columns: int, what: str, **kwargs) -> pd.DataFrame:
    """``pandas.read_csv`` with a one-line ``DataFormatError`` for anything unparseable and for
    a column count other than ``expected_columns``."""
    try:
        frame = pd.read_csv(path, **kwargs)
    except (
        pd.errors.ParserError,
        pd.errors.EmptyDataError,
        ValueError,
        UnicodeDecodeError,
        EOFError,
        OSError,
    ) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DataFormatError(f"{path} cannot be parsed as {what} ({reason}); is it the original file?") from None
    if frame.shape[1] != expected_columns:
        raise DataFormatError(
            f"file {path} has {frame.shape[1]} columns, expected {expected_columns}; is it the original {what} file?"
        )
    if len(frame) == 0:
        raise DataFormatError(f"file {path} has no rows; is it the original {what} file?")
    return frame


def check_header(path: Path, found: Sequence[str], expected: Sequence[str], what: str) -> None:
    found = [str(name).strip() for name in found]
    if list(found) != list(expected):
        if len(found) == len(expected):
            name, wanted = next((a, b) for a, b in zip(found, expected) if a != b)
            detail = f"column {name!r} where {wanted!r} is expected"
        else:
            detail = f"{len(found)} header names, expected {len(expected)}"
        raise DataFormatError(f"file {path} has an unexpected header ({detail}); is it the original {what} file?")


def code_categories(values: pd.Series, categories: Sequence[str], column: str, path: Path) -> np.ndarray:
    """Index of each (whitespace-stripped) value in the documented ``categories``."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    index = {category: i for i, category in enumerate(categories)}
    lookup = np.empty(len(uniques), dtype=np.int64)
    unknown = []
    for k, value in enumerate(uniques):
        key = str(value).strip()
        if key in index:
            lookup[k] = index[key]
        else:
            unknown.append(key)
    if unknown:
        shown = ", ".join(repr(v) for v in sorted(unknown)[:5]) + (" …" if len(unknown) > 5 else "")
        raise DataFormatError(
            f"file {path}: column {column!r} has value(s) {shown} outside its {len(categories)} documented "
            "categories; is it the original file? (the domain comes from the public documentation and is "
            "never extended from the data)"
        )
    if (codes < 0).any():
        raise DataFormatError(f"file {path}: column {column!r} has empty values in row {int(np.argmax(codes < 0))}")
    return lookup[codes]


def code_labels(values: pd.Series, mapping: Mapping[str, int], column: str, path: Path, strip: str = "") -> np.ndarray:
    """Map label strings (stripped of whitespace, then of the characters in ``strip`` at the end)
    to class indices."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    lookup = np.empty(len(uniques), dtype=np.int64)
    unknown = []
    for k, value in enumerate(uniques):
        key = str(value).strip().rstrip(strip) if strip else str(value).strip()
        if key in mapping:
            lookup[k] = mapping[key]
        else:
            unknown.append(key)
    if unknown:
        shown = ", ".join(repr(v) for v in sorted(unknown)[:5])
        raise DataFormatError(
            f"file {path}: label column {column!r} has value(s) {shown}; expected one of {sorted(mapping)}"
        )
    if (codes < 0).any():
        raise DataFormatError(f"file {path}: label column {column!r} is empty in row {int(np.argmax(codes < 0))}")
    return lookup[codes]


def numeric(values: pd.Series, column: str, path: Path, allow_nan: bool = False) -> np.ndarray:
    try:
        out = pd.to_numeric(values, errors="raise").to_numpy(dtype=np.float64)
    except (ValueError, TypeError) as error:
        raise DataFormatError(f"file {path}: column {column!r} is not numeric ({error})") from None
    if not allow_nan and not np.isfinite(out).all():
        row = int(np.argmax(~np.isfinite(out)))
        raise DataFormatError(f"file {path}: column {column!r} has a missing or infinite value in row {row}")
    return out


def code_binary(values: pd.Series, column: str, path: Path) -> np.ndarray:
    out = numeric(values, column, path)
    bad = (out != 0) & (out != 1)
    if bad.any():
        raise DataFormatError(
            f"file {path}: binary column {column!r} has value {out[bad][0]!r} (row {int(np.argmax(bad))}); expected 0 or 1"
        )
    return out


def features(frame: pd.DataFrame, columns: Sequence[Column], sources: Sequence, path: Path) -> np.ndarray:
    """Raw-coded float32 matrix of ``columns``, column j read from ``frame[sources[j]]``.

    Numerical values outside the schema's public bounds are clipped to them, with one warning
    counting them: the encoders scale by those bounds and the methods' sensitivities (e.g. a
    feature map's norm bound) assume every encoded value lies inside them, so one out-of-range
    row would break the privacy guarantee. Clipping is row-wise and data-independent; the
    warning's counts go to the operator's console only."""
    x = np.empty((len(frame), len(columns)), dtype=np.float32)
    clipped: dict[str, int] = {}
    for j, (column, source) in enumerate(zip(columns, sources, strict=True)):
        values = frame[source]
        if column.kind == ColumnKind.NUMERICAL:
            raw = numeric(values, column.name, path)
            low, high = column.bounds
            outside = int(np.count_nonzero((raw < low) | (raw > high)))
            if outside:
                clipped[column.name] = outside
            x[:, j] = np.clip(raw, low, high)
        elif column.kind == ColumnKind.BINARY:
            x[:, j] = code_binary(values, column.name, path)
        else:
            x[:, j] = code_categories(values, column.categories, column.name, path)
    if clipped:
        shown = ", ".join(f"{name} ({count})" for name, count in list(clipped.items())[:5])
        more = f" and {len(clipped) - 5} more columns" if len(clipped) > 5 else ""
        warnings.warn(
            f"{path}: {sum(clipped.values())} value(s) outside the schema's public bounds were clipped to them "
            f"in {len(clipped)} column(s): {shown}{more}",
            stacklevel=2,
        )
    return x


def sdgym_shuffle(n: int) -> np.ndarray:
    """The row order of SDGym's ``np.random.seed(0); np.random.shuffle(values)`` on n rows (the
    legacy shuffle's swaps depend only on n, not on the array's width or dtype)."""
    order = np.arange(n)
    np.random.RandomState(0).shuffle(order)
    return order
