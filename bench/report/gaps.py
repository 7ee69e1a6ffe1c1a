"""Gaps to the papers that cannot go unexplained (issue 58): every cell of ours more than one
seed-sd from the paper's value is listed under its table in REPORT beside the line of the results
narrative (``results/README.md``) that gives its cause or what was ruled out, and a test fails
while any gap has no such line, or a line names a gap that is no longer one.

A narrative line claims the cells it explains with tags (HTML comments, invisible when rendered)::

    <!--gap dphp-table2 | cervical [protocol paper] | DP-GAN ε=1 -->
    <!--gap dpmerf-table1 | intrusion [protocol paper] | DP-MERF ε=1 | F1 (seeds' code) -->

Fields: the preset, the dataset and the setup as its table shows them, and optionally the column
(without it, every column of that row); a field may list alternatives separated by ``;`` (the same
runs shown by two presets, several setups one cause explains). The gap itself is a difference, not a test: |mean − paper|
greater than the seeds' sd, over at least two seeds (a paper value printed with its spread is
compared by its mean; text read off a figure is not compared), and greater than half a unit of
the paper's last printed digit (0.78 printed: a difference up to 0.005 is the paper's rounding).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.report.blocks import Block
from bench.report.frame import TableError
from bench.report.tables import format_number, is_heavy_tailed

TAG = re.compile(r"<!--gap (?P<spec>[^>]*?) -->")
LEAD = re.compile(r"^\s*(?:- )?\*\*(?P<lead>.+?)\*\*", re.DOTALL)  # the bold words a paragraph opens with
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class Gap:
    """One cell of ours beside its published twin, ``seed_sds`` of our seeds' sd away from it."""

    dataset: str
    setup: str
    column: str
    mean: float
    sd: float
    seeds: int
    paper: float

    @property
    def seed_sds(self) -> float:
        """|Δ| in our seeds' sds; ∞ where every seed gives the same number (a real-data row whose
        split and classifiers are fixed): then any difference exceeds the spread."""
        return abs(self.mean - self.paper) / self.sd if self.sd > 0 else math.inf


def gap_of(selected: pd.DataFrame, metric: str, published: object, dataset: str, setup: str, column: str) -> Gap | None:
    """The gap of our runs ``selected`` in ``metric`` to the published value, if it exceeds one
    seed-sd; None below that, for fewer than two seeds, for text, or for a heavy-tailed metric
    (its cells are medians; no sd to measure by)."""
    if metric not in selected.columns or is_heavy_tailed(metric):
        return None
    values = selected[metric].dropna()
    paper = published[0] if isinstance(published, tuple) else published
    if len(values) < 2 or isinstance(paper, str) or paper is None:
        return None
    mean, sd = float(values.mean()), float(values.std(ddof=1))
    sd = 0.0 if sd <= 1e-9 * max(1.0, abs(mean)) else sd  # equal seeds, up to the mean's float rounding
    if abs(mean - float(paper)) <= max(sd, printed_half_unit(float(paper))):
        return None
    return Gap(dataset, setup, column, mean, sd, len(values), float(paper))


def printed_half_unit(value: float) -> float:
    """Half a unit of the last digit ``value`` is written with (the shortest repr of the float
    transcribed from the paper): 0.78 → 0.005, 0.8669 → 0.00005."""
    text = repr(value)
    if "e" in text or "." not in text:
        return 0.0
    return 0.5 * 10.0 ** -len(text.split(".")[1])


@dataclass(frozen=True)
class Tag:
    presets: tuple[str, ...]
    datasets: tuple[str, ...]
    setups: tuple[str, ...]
    columns: tuple[str, ...]  # () for every column of the row
    lead: str  # the bold lead of the narrative's paragraph that holds the tag

    def claims(self, preset: str, gap: Gap) -> bool:
        return (
            preset in self.presets
            and gap.dataset in self.datasets
            and gap.setup in self.setups
            and (not self.columns or gap.column in self.columns)
        )

    def __str__(self) -> str:
        return " | ".join(
            "; ".join(field) for field in (self.presets, self.datasets, self.setups, self.columns) if field
        )


def narrative_tags(text: str) -> list[Tag]:
    """Every gap tag of a narrative, with the bold lead of the paragraph (or list item) holding it."""
    tags = []
    for paragraph in re.split(r"\n\s*\n|\n(?=- )", text):
        lead = LEAD.search(paragraph)
        for match in TAG.finditer(paragraph):
            fields = [tuple(item.strip() for item in field.split(";")) for field in match["spec"].split("|")]
            if len(fields) not in (3, 4) or not all(all(field) for field in fields):
                raise TableError(f"a gap tag needs 'preset | dataset | setup [| column]'; got {match['spec']!r}")
            columns = fields[3] if len(fields) == 4 else ()
            text = (
                _short(" ".join(COMMENT.sub("", lead["lead"]).split())) if lead else "(a paragraph with no bold lead)"
            )
            tags.append(Tag(*fields[:3], columns, text))
    return tags


def _short(lead: str, limit: int = 90) -> str:
    if len(lead) <= limit:
        return lead
    cut = lead.rfind(" ", 0, limit)
    return lead[: cut if cut > 0 else limit] + " …"


def narrative_of(report_folder: Path | None) -> Path | None:
    """The results narrative beside a report: ``README.md`` in the folder it is written to."""
    return report_folder / "README.md" if report_folder is not None else None


def read_tags(narrative: Path | None) -> list[Tag]:
    return narrative_tags(narrative.read_text()) if narrative is not None and narrative.is_file() else []


def unexplained(preset: str, gaps: list[Gap], tags: list[Tag]) -> list[Gap]:
    return [gap for gap in gaps if not any(tag.claims(preset, gap) for tag in tags)]


def gap_blocks(preset: str, gaps: list[Gap], tags: list[Tag]) -> list[Block]:
    """The preset's gaps, each beside the narrative paragraph that claims it."""
    if not gaps:
        return []
    rows = []
    for gap in sorted(gaps, key=lambda g: (g.dataset, g.setup, g.column)):
        leads = [tag.lead for tag in tags if tag.claims(preset, gap)]
        rows.append(
            [
                gap.dataset,
                gap.setup,
                gap.column,
                f"{format_number(gap.mean)} ± {format_number(gap.sd)} ({gap.seeds})",
                format_number(gap.paper),
                f"{gap.seed_sds:.1f}" if math.isfinite(gap.seed_sds) else "∞",
                "; ".join(dict.fromkeys(leads)) or "**none yet**",
            ]
        )
    missing = len(unexplained(preset, gaps, tags))
    return [
        Block(
            "p",
            f"Cells of ours more than one seed-sd from the paper's value ({len(gaps)}; a difference, not a test): "
            "each beside the paragraph of results/README.md that names its cause or what was ruled out"
            + (f" — {missing} without one yet." if missing else "."),
        ),
        Block(
            "table",
            header=["dataset", "setup", "column", "ours", "paper", "|Δ| in seed-sds", "results/README.md"],
            rows=rows,
        ),
    ]


def idle_tags(tags: list[Tag], gaps: dict[str, list[Gap]]) -> list[str]:
    """Each tag, or alternative of a tag's field, that claims no gap of the record (the gap
    closed, or a label changed), as ``tag: field value``."""
    idle = []
    for tag in tags:
        claimed = [(p, gap) for p, found in gaps.items() for gap in found if tag.claims(p, gap)]
        if not claimed:
            idle.append(str(tag))
            continue
        used = ({p for p, _ in claimed}, {g.dataset for _, g in claimed}, {g.setup for _, g in claimed})
        used += ({g.column for _, g in claimed},)
        for values, seen in zip((tag.presets, tag.datasets, tag.setups, tag.columns), used):
            idle += [f"{tag}: {value}" for value in values if value not in seen]
    return idle


def summary_blocks(gaps: dict[str, list[Gap]], tags: list[Tag], whole_record: bool) -> list[Block]:
    """One paragraph over every preset's gaps, and (for a report of the whole record) the tags of
    the narrative that claim none."""
    total = sum(len(found) for found in gaps.values())
    if not total and not tags:
        return []
    rows = len({(p, gap.dataset, gap.setup) for p, found in gaps.items() for gap in found})
    missing = sum(len(unexplained(p, found, tags)) for p, found in gaps.items())
    blocks = [
        Block(
            "p",
            f"Gaps to the papers: {total} cells of ours ({rows} rows) lie more than one seed-sd from the paper's "
            "value (over ≥ 2 seeds; a difference, not a test). Each table's section lists them beside the "
            "paragraph of results/README.md that gives the cause or what was ruled out; "
            + (f"{missing} have none yet." if missing else "every one has its paragraph."),
        )
    ]
    idle = idle_tags(tags, gaps) if whole_record else []
    if idle:
        blocks.append(
            Block(
                "p",
                "Tags of results/README.md, or alternatives in them, that claim no gap any more (closed, or a "
                "label changed): " + "; ".join(f"`{tag}`" for tag in idle),
            )
        )
    return blocks
