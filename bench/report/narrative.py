"""Numbers in prose that cannot go stale: a results narrative (``results/README.md``) marks each
number it takes from the record, and ``bench report`` writes the number from the record into the
mark; a test fails when the committed text and the record disagree.

A mark is an HTML comment naming the number, then the number, then a closing comment::

    <!--r table2 | cervical [protocol paper] | dp-hp | 1 | downstream.test_selected_best.roc_auc | mean±sd -->0.536 ± 0.023<!--/r-->

Its fields: experiment, dataset label and method label as the report's tables show them
(:func:`bench.report.frame.runs_frame`), ε (``inf`` for none), metric, and what to write: ``mean``,
``mean±sd`` (both to 3 decimals) or ``n`` (the number of seeds). Comments do not show on a
rendered page, so the prose reads as before.

A coverage mark takes one of REPORT.md's coverage totals (the lines under "Coverage of the papers'
tables and figures": how many setups of the papers' tables are run, and at how many seeds), by the
line's opening words, so that the front page's claim of what is reproduced is the report's::

    <!--coverage images -->62 setups; 20 run (32%), …<!--/coverage-->
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.report.frame import TableError, load_runs

MARK = re.compile(r"<!--r (?P<spec>[^>]*?) -->(?P<text>.*?)<!--/r-->", re.DOTALL)
COVERAGE_MARK = re.compile(r"<!--coverage (?P<spec>[^>]*?) -->(?P<text>.*?)<!--/coverage-->", re.DOTALL)
COVERAGE_HEADING = "## Coverage of the papers' tables and figures"
FORMATS = ("mean", "mean±sd", "n")


class NarrativeError(TableError):
    """A mark that names no number of the record."""


@dataclass(frozen=True)
class Mark:
    experiment: str
    dataset: str
    method: str
    epsilon: float
    metric: str
    form: str

    @staticmethod
    def parse(spec: str) -> "Mark":
        fields = [field.strip() for field in spec.split("|")]
        if len(fields) != 6 or fields[5] not in FORMATS:
            raise NarrativeError(
                f"a record mark needs 'experiment | dataset | method | ε | metric | {'/'.join(FORMATS)}'; got {spec!r}"
            )
        return Mark(fields[0], fields[1], fields[2], float(fields[3]), fields[4], fields[5])

    def text(self, frames: dict[str, pd.DataFrame], source) -> str:
        if self.experiment not in frames:
            frames[self.experiment] = load_runs(self.experiment, source)
        frame = frames[self.experiment]
        same_eps = frame["epsilon"].map(lambda e: e == self.epsilon or (math.isinf(e) and math.isinf(self.epsilon)))
        selected = frame[(frame["dataset"] == self.dataset) & (frame["method"] == self.method) & same_eps]
        if selected.empty or self.metric not in selected.columns or selected[self.metric].dropna().empty:
            raise NarrativeError(f"no runs of {self} in the record")
        values = selected[self.metric].dropna()
        if self.form == "n":
            return str(len(values))
        if self.form == "mean":
            return f"{values.mean():.3f}"
        return f"{values.mean():.3f} ± {values.std(ddof=1):.3f}"

    def __str__(self) -> str:
        return f"{self.experiment} | {self.dataset} | {self.method} | ε = {self.epsilon:g} | {self.metric}"


def rendered(text: str, source) -> tuple[str, list[str]]:
    """``text`` with every mark's number written from the record, and the marks whose number
    changed (as 'mark: old → new')."""
    frames: dict[str, pd.DataFrame] = {}
    changed: list[str] = []

    def fill(match: re.Match) -> str:
        mark = Mark.parse(match["spec"])
        new = mark.text(frames, source)
        if new != match["text"]:
            changed.append(f"{mark}: {match['text']} → {new}")
        return f"<!--r {match['spec']} -->{new}<!--/r-->"

    return MARK.sub(fill, text), changed


def coverage_totals(report_markdown: str) -> dict[str, str]:
    """REPORT.md's coverage totals, ``{"images": "62 setups; 20 run (32%), …", …}``: the list items
    under its coverage heading, keyed by the words before their colon."""
    _, found, rest = report_markdown.partition(COVERAGE_HEADING)
    totals: dict[str, str] = {}
    for line in rest.splitlines() if found else []:
        if line.startswith("#"):
            break
        if line.startswith("- ") and ": " in line:
            what, text = line[2:].split(": ", 1)
            totals[what] = text
    return totals


def rendered_coverage(text: str, report_markdown: str) -> tuple[str, list[str]]:
    """``text`` with every coverage mark written from the report's totals, and what changed."""
    totals = coverage_totals(report_markdown)
    changed: list[str] = []

    def fill(match: re.Match) -> str:
        what = match["spec"].strip()
        if what not in totals:
            raise NarrativeError(f"coverage mark {what!r}: the report's totals are {', '.join(totals) or 'missing'}")
        if totals[what] != match["text"]:
            changed.append(f"coverage of {what}: {match['text']} → {totals[what]}")
        return f"<!--coverage {match['spec']} -->{totals[what]}<!--/coverage-->"

    return COVERAGE_MARK.sub(fill, text), changed


def refresh(path: Path, source, report_markdown: str | None = None) -> list[str]:
    """Rewrite ``path``'s marks from the record (and its coverage marks from ``report_markdown``,
    REPORT.md's text, when given); returns what changed."""
    text = path.read_text(encoding="utf-8")
    new, changed = rendered(text, source)
    if report_markdown is not None:
        new, more = rendered_coverage(new, report_markdown)
        changed += more
    if new != text:
        path.write_text(new, encoding="utf-8")
    return changed
