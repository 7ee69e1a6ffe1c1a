"""Named grids for the seeds' tables and figures that this harness covers, as data.

``python -m bench run --preset NAME`` runs a preset's grids; ``python -m bench list presets``
shows them with their size and an estimated cost; ``python -m bench report`` puts our numbers
beside each preset's published values and lists the cells not run yet with the exact command.

A preset is one or more typed run specs (:class:`~bench.harness.grid.GridSpec` literals; a grid is one ``bench run`` command; a table whose
columns need different settings, like DP-HP's Table 1 ε = 0.1 row, has several), the MLflow
experiment they log to, and the paper's published values as {dataset: {(method, ε): {column:
value}}}, each column naming the metric of ours that is its like-for-like counterpart. Published
values are transcribed from the papers' tables and figures (source cited per preset),
never computed here.
"""

from __future__ import annotations

from bench.report.preset import Preset, PresetError
from bench.report.presets_beyond import BEYOND_PRESETS
from bench.report.presets_image_gaps import IMAGE_GAP_PRESETS
from bench.report.presets_papers import PAPER_PRESETS

PRESETS: dict[str, Preset] = {preset.name: preset for preset in (*PAPER_PRESETS, *BEYOND_PRESETS, *IMAGE_GAP_PRESETS)}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise PresetError(
            f"unknown preset {name!r}; valid: {', '.join(PRESETS)} (see `python -m bench list presets`)"
        ) from None
