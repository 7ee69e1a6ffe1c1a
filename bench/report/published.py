"""Every number transcribed from the papers, read from one place: the TOML files in
``bench/report/published/``, one per published table or figure, each naming its source and
holding its rows as ``{dataset, method, epsilon, values = {column = value}}``. A row that is one
of several settings of the same method and ε (an ablation's γ, D_prod) adds
``settings = ["method.param=value", …]``: its setup is then named ``method [param=value, …]``
(:func:`variant_label`), and our runs sit beside it only where they used those settings; a file's
own ``settings`` hold for all its rows without naming them. A value is a number,
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


Settings = dict[str, dict[tuple[str, float], tuple[str, ...]]]  # dataset → setup → ("method.param=value", …)


@dataclass(frozen=True)
class PublishedTable:
    name: str
    source: str
    values: dict[str, Setups]  # dataset → setups, in the paper's order
    settings: Settings  # the settings that tell a setup from its method's other rows at that ε


def variant_label(method: str, settings: tuple[str, ...]) -> str:
    """The name of a published setup that is ``method`` with ``settings`` (``dp-hp [gamma=0.1]``)."""
    if not settings:
        return method
    if any(not item.startswith(f"{method}.") or "=" not in item for item in settings):
        raise ValueError(f"settings {settings} of a {method} row must each read '{method}.param=value'")
    return f"{method} [{', '.join(item.removeprefix(f'{method}.') for item in settings)}]"


def named_like_twin(label: str, twin: str | None) -> str:
    """Our ``label`` with each setting its published twin names (``dp-hp [gamma=1]``) that ours
    leaves out because the value is the method's default, so that the pair reads alike."""
    if not twin or not twin.endswith("]"):
        return label
    base, _, inside = label.partition(" [")
    ours = inside[:-1].split(", ") if inside else []
    named = {item.split("=", 1)[0] for item in ours}
    extra = [item for item in twin.partition(" [")[2][:-1].split(", ") if item.split("=", 1)[0] not in named]
    items = [i for i in ours if "=" not in i] + sorted(
        (i for i in ours + extra if "=" in i), key=lambda i: i.split("=")[0]
    )
    return f"{base} [{', '.join(items)}]" if extra else label


def registered_method(setup_method: str) -> str:
    """The registered method of a published setup's name (``dp-hp [gamma=0.1]`` → ``dp-hp``)."""
    return setup_method.split(" [", 1)[0]


@functools.cache
def _read(name: str) -> PublishedTable:
    path = FOLDER / f"{name}.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    values: dict[str, Setups] = {}
    settings: Settings = {}
    runs = data.get("runs")
    for row in data["rows"]:
        if runs is None and any(isinstance(v, list) for v in row["values"].values()):
            raise ValueError(f"{path}: a [mean, sd] value needs the file's runs = N (the paper's run count)")
        columns = {column: (*v, runs) if isinstance(v, list) else v for column, v in row["values"].items()}
        own = tuple(row.get("settings", ()))
        setup = (variant_label(row["method"], own), float(row["epsilon"]))
        if setup in values.get(row["dataset"], {}):
            raise ValueError(f"{path}: two rows of {row['dataset']} {setup}; tell them apart by their settings")
        values.setdefault(row["dataset"], {})[setup] = columns
        # the file's settings hold for every row (not in the label); a row's own tell it from the others
        common = tuple(item for item in data.get("settings", ()) if item.startswith(f"{row['method']}."))
        if common or own:
            settings.setdefault(row["dataset"], {})[setup] = common + own
    return PublishedTable(name, data["source"], values, settings)


def published(name: str) -> dict[str, Setups]:
    """The values of the published table ``name`` (a file in ``FOLDER``), a fresh copy."""
    return copy.deepcopy(_read(name).values)


def published_settings(name: str) -> Settings:
    """The settings of the published table ``name``'s variant rows (a preset's ``paper_settings``)."""
    return copy.deepcopy(_read(name).settings)


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
