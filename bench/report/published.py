"""Every number transcribed from the papers, read from one place: the TOML files in
``bench/report/published/``, one per published table or figure, each naming its source and
holding its rows as ``{dataset, method, epsilon, values = {column = value}}``. A value is a number,
``[mean, sd]`` where the paper gives the spread — read as ``(mean, sd, runs)`` with the file's
``runs``, the paper's run count, which a file with any spread must give — or text where it can
only be read off a figure ("≈ 3.1×10⁵"). Nothing here computes a number; the presets and layouts
arrange these."""

from __future__ import annotations

import copy
import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "published"

Value = float | str | tuple[float, float, int]  # a number, text, or (mean, sd, runs)
Setups = dict[tuple[str, float], dict[str, Value]]  # (method, ε) → column → value


@dataclass(frozen=True)
class PublishedTable:
    name: str
    source: str
    values: dict[str, Setups]  # dataset → setups, in the paper's order


@functools.cache
def _read(name: str) -> PublishedTable:
    path = FOLDER / f"{name}.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    values: dict[str, Setups] = {}
    runs = data.get("runs")
    for row in data["rows"]:
        if runs is None and any(isinstance(v, list) for v in row["values"].values()):
            raise ValueError(f"{path}: a [mean, sd] value needs the file's runs = N (the paper's run count)")
        columns = {column: (*v, runs) if isinstance(v, list) else v for column, v in row["values"].items()}
        values.setdefault(row["dataset"], {})[(row["method"], float(row["epsilon"]))] = columns
    return PublishedTable(name, data["source"], values)


def published(name: str) -> dict[str, Setups]:
    """The values of the published table ``name`` (a file in ``FOLDER``), a fresh copy."""
    return copy.deepcopy(_read(name).values)


def source_of(name: str) -> str:
    return _read(name).source


def table_names() -> list[str]:
    return sorted(path.stem for path in FOLDER.glob("*.toml"))


def merged(*names: str) -> dict[str, Setups]:
    """Several published tables as one (a later table's setups after an earlier one's)."""
    out: dict[str, Setups] = {}
    for name in names:
        for dataset, setups in published(name).items():
            out.setdefault(dataset, {}).update(setups)
    return out
