"""Numbers in prose that cannot go stale: a results narrative (``results/README.md``) marks each
number it takes from the record, and ``bench report`` writes the number from the record into the
mark; a test fails when the committed text and the record disagree.

A mark is an HTML comment naming the number, then the number, then a closing comment::

    <!--r table2 | cervical [protocol paper] | dp-hp | 1 | downstream.test_selected_best.roc_auc | mean±sd -->0.536 ± 0.023<!--/r-->

Its fields: experiment, dataset label and method label as the report's tables show them
(:func:`bench.report.frame.runs_frame`), ε (``inf`` for none), metric, and what to write: ``mean``,
``mean±sd`` (both to 3 decimals), ``min`` (the lowest seed), ``seeds`` (each seed's value, in
seed order) or ``n`` (the number of seeds). Comments do not show on a
rendered page, so the prose reads as before.

A coverage mark takes one of REPORT.md's coverage totals (the lines under "Coverage of the papers'
tables and figures": how many setups of the papers' tables are run, and at how many seeds), by the
line's opening words, so that the front page's claim of what is reproduced is the report's::

    <!--coverage images -->62 setups; 20 run (32%), …<!--/coverage-->

Numbers that are not ours have marks of their own, checked the same way: a paper's value
(``<!--p TABLE | dataset | method | ε | column | mean or mean±sd -->``, read from
``bench/report/published/TABLE.toml``), and another code's seeds measured here
(``<!--m FILE | key | mean, mean±sd, n or min -->``, from the per-seed values of
``docs/measurements/FILE``; a key ``@path`` names one number of a file without seeds,
``@setups[method=dp-gan,dataset=mnist].fit_seconds``). A number of a record since replaced, quoted as history, is marked
``<!--h why -->…<!--/h-->``: said to be old, and not checked. A mean ± sd outside every mark is an
error (:func:`unmarked_spreads`), so none is quoted by hand.

A form may name its decimals after a colon (``range:0`` writes "582–614"; default 3; none groups
thousands, "3,359") and a unit after a slash (``/60``: seconds written in minutes, ``/3600`` in
hours); ``max`` is the highest seed, ``range`` the lowest–highest, ``median`` and ``iqr`` ("[q1, q3]") as REPORT
writes a heavy-tailed metric, and ``seedK`` seed K's value.
An experiment ``table8 + dphp-gaps`` reads a setup's seeds in both, as a preset reads the cells it
shares with another (``Preset.shares``). Besides the logged metrics, ``time.evaluation_s`` and ``time.cell_s`` are a run's evaluation and
whole-cell seconds (:func:`bench.report.costs.summed_seconds`). A comparison of two setups is a ``<!--d …-->``
mark, computed by the report's own tests (:mod:`bench.report.stats`)::

    <!--d table2 | adult | dp-hp | 1 | downstream.roc_auc vs table2 | adult | uniform | 1 | downstream.roc_auc | paired | Δ -->+0.035<!--/d-->

Each side names a record's setup (experiment | dataset | method | ε | metric) or another code's
seeds (docs/measurements file | per-seed key); then the test (``paired``: the seeds both sides
have, ``welch``, ``tost``: the equivalence test at ``EQUIVALENCE_MARGIN``, ``spread``:
Brown–Forsythe) and what to write: ``Δ`` (ours − theirs, signed), ``p`` (the raw two-sided p;
TOST's larger one-sided p) or ``ci`` (TOST's 90% interval). A number that is no result — a
setting, a margin, a threshold — is marked ``<!--c why -->…<!--/c-->``. Every other decimal number
outside a mark is quoted by hand (:func:`unmarked_numbers`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.report.costs import summed_seconds
from bench.report.frame import TableError, load_runs
from bench.report.preset import MEASUREMENTS, MeasuredSeeds
from bench.report.published import published, table_names

MARK = re.compile(r"<!--r (?P<spec>[^>]*?) -->(?P<text>.*?)<!--/r-->", re.DOTALL)
PAPER_MARK = re.compile(r"<!--p (?P<spec>[^>]*?) -->(?P<text>.*?)<!--/p-->", re.DOTALL)
MEASURED_MARK = re.compile(r"<!--m (?P<spec>[^>]*?) -->(?P<text>.*?)<!--/m-->", re.DOTALL)
HISTORY_MARK = re.compile(r"<!--h (?P<spec>[^>]*?) -->(?P<text>.*?)<!--/h-->", re.DOTALL)
COMPARISON_MARK = re.compile(r"<!--d (?P<spec>[^>]*?) -->(?P<text>.*?)<!--/d-->", re.DOTALL)
CONSTANT_MARK = re.compile(r"<!--c (?P<spec>[^>]*?) -->(?P<text>.*?)<!--/c-->", re.DOTALL)
SPREAD = re.compile(r"(?<![\d.])\d+\.\d+\s*±\s*\d+\.\d+")
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d{2,}(?!\d|\.\d)")  # 0.53, 3.50 (a result's precision), not 1.17.2
# a time: 582–614 s, 3,359 s, 1.5 h, 13–31 min (a cost, read from the record's time.*_s)
# a seed count a finding rests on: 5 seeds, 3–5 seeds (read from the record: form ``n``)
SEED_COUNT = re.compile(r"(?<![\w.,])\d+(?:\s?[–-]\s?\d+)?(?= seeds?\b(?!-))")  # not "2 seed-sds"
# a number grouped in thousands (a sum, a row count) and a percentage
GROUPED = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d|,\d)")
PERCENT = re.compile(r"(?<![\w.,])\d+(?:\.\d+)?\s?%")
DURATION = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?:\s?[–-]\s?\d[\d,]*(?:\.\d+)?)?\s?(?:s|min|h)\b")
COVERAGE_MARK = re.compile(r"<!--coverage (?P<spec>[^>]*?) -->(?P<text>.*?)<!--/coverage-->", re.DOTALL)
COVERAGE_HEADING = "## Coverage of the papers' tables and figures"
FORMATS = ("mean", "mean±sd", "n", "min", "max", "range", "median", "iqr", "seeds")
TESTS = ("paired", "welch", "tost", "spread")
COMPARISON_FORMS = ("Δ", "p", "ci")


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
        if len(fields) != 6 or not _is_form(fields[5]):
            raise NarrativeError(
                f"a record mark needs 'experiment | dataset | method | ε | metric | {'/'.join(FORMATS)}[:decimals]'; "
                f"got {spec!r}"
            )
        return Mark(fields[0], fields[1], fields[2], _epsilon(fields[3], spec), fields[4], fields[5])

    def values(self, frames: dict[str, pd.DataFrame], source) -> pd.Series:
        """The setup's values, indexed by seed; ``a + b`` names the setup's runs in two experiments,
        as a preset reads a setup it shares with another (``Preset.shares``): ``a``'s seeds, then
        the seeds of ``b`` that ``a`` lacks (a seed run in both is one measurement, ``a``'s)."""
        parts = [self._values_in(name.strip(), frames, source) for name in self.experiment.split(" + ")]
        values = parts[0]
        for part in parts[1:]:
            values = pd.concat([values, part[~part.index.isin(values.index)]])
        values = values.sort_index()
        if values.index.duplicated().any():
            raise NarrativeError(f"{self}: seed {values.index[values.index.duplicated()][0]} has two runs")
        return values

    def _values_in(self, experiment: str, frames: dict[str, pd.DataFrame], source) -> pd.Series:
        if experiment not in frames:
            frames[experiment] = load_runs(experiment, source)
        frame = frames[experiment]
        same_eps = frame["epsilon"].map(lambda e: e == self.epsilon or (math.isinf(e) and math.isinf(self.epsilon)))
        selected = frame[(frame["dataset"] == self.dataset) & (frame["method"] == self.method) & same_eps]
        summed = summed_seconds(selected, self.metric)  # a cell's or its evaluation's seconds
        if summed is not None:
            selected = selected.assign(**{self.metric: summed})
        if selected.empty or self.metric not in selected.columns or selected[self.metric].dropna().empty:
            where = f" (experiment {experiment})" if " + " in self.experiment else ""
            raise NarrativeError(f"no runs of {self} in the record{where}")
        return selected.set_index("seed").sort_index()[self.metric].dropna().astype(float)

    def text(self, frames: dict[str, pd.DataFrame], source) -> str:
        return summary(self.values(frames, source), self.form)

    def __str__(self) -> str:
        return f"{self.experiment} | {self.dataset} | {self.method} | ε = {self.epsilon:g} | {self.metric}"


FORM = re.compile(r"(?P<name>[a-z±]+|seed\d+)(?::(?P<decimals>\d+))?(?:/(?P<unit>60|3600))?")


def _is_form(form: str) -> bool:
    match = FORM.fullmatch(form)
    return match is not None and (
        match["name"] in FORMATS or match["name"].startswith("seed") and match["name"] != "seeds"
    )


def _epsilon(text: str, spec: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise NarrativeError(f"ε must be a number or inf; got {text!r} in {spec!r}") from None


def summary(values: pd.Series, form: str) -> str:
    """Seeds' values written as ``form`` says (:data:`FORMATS` or ``seedK``, optionally ``:decimals``
    and ``/60`` or ``/3600`` for seconds written in minutes or hours); no decimals group thousands."""
    match = FORM.fullmatch(form)
    name, digits = match["name"], int(match["decimals"] or 3)
    values = values / int(match["unit"] or 1)
    write = lambda value: f"{value:,.0f}" if digits == 0 else f"{value:.{digits}f}"  # noqa: E731
    if name == "n":
        return str(len(values))
    if name == "seeds":  # each seed's value, in seed order (";" between values that group thousands)
        return ("; " if "," in "".join(map(write, values)) else ", ").join(write(value) for value in values)
    if name == "min":  # the lowest seed
        return write(values.min())
    if name == "max":
        return write(values.max())
    if name.startswith("seed"):  # one seed's value, e.g. seed0
        seed = int(name[4:])
        if seed not in values.index:
            raise NarrativeError(f"no seed {seed} among the seeds {', '.join(map(str, values.index))}")
        return write(values.loc[seed])
    if name == "range":
        return f"{write(values.min())}–{write(values.max())}"
    if name == "median":  # with iqr, a heavy-tailed metric's summary as REPORT's tables give it
        return write(values.median())
    if name == "iqr":
        from bench.report.tables import MIN_SEEDS_FOR_EVIDENCE

        if len(values) < MIN_SEEDS_FOR_EVIDENCE:  # REPORT leaves the quartiles out too
            raise NarrativeError(f"quartiles of {len(values)} seed(s): an iqr needs {MIN_SEEDS_FOR_EVIDENCE}")
        return f"[{write(values.quantile(0.25))}, {write(values.quantile(0.75))}]"
    if name == "mean":
        return write(values.mean())
    return f"{write(values.mean())} ± {write(values.std(ddof=1))}"


def _fields(spec: str, count: int, forms: tuple[str, ...], shape: str) -> list[str]:
    fields = [field.strip() for field in spec.split("|")]
    if len(fields) != count or not (fields[-1] in forms or (forms == FORMATS and _is_form(fields[-1]))):
        raise NarrativeError(f"a mark needs '{shape} | {'/'.join(forms)}'; got {spec!r}")
    return fields


def paper_text(spec: str) -> str:
    """A paper's value as a ``<!--p …-->`` mark names it, from the published tables."""
    table, dataset, method, epsilon, column, form = _fields(
        spec, 6, ("mean", "mean±sd"), "published table | dataset | method | ε | column"
    )
    if table not in table_names():
        raise NarrativeError(f"no published table {table!r}; bench/report/published holds {', '.join(table_names())}")
    setups = published(table).get(dataset, {})
    value = setups.get((method, float(epsilon)), {}).get(column)
    if value is None or isinstance(value, str):
        raise NarrativeError(f"{table} prints no number for {dataset} | {method} | ε = {epsilon} | {column}")
    mean, sd = (value[0], value[1]) if isinstance(value, tuple) else (value, None)
    # as many decimals as the paper prints (0.7299 ± 0.0103), at least three (0.73 reads 0.730)
    digits = max(3, *(len(repr(v).partition(".")[2]) for v in (mean, sd) if v is not None))
    if form == "mean":
        return f"{mean:.{digits}f}"
    if sd is None:
        raise NarrativeError(f"{table} prints no spread for {dataset} | {method} | ε = {epsilon} | {column}")
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def measured_text(spec: str) -> str:
    """Another code's seeds as a ``<!--m …-->`` mark names them, from a committed measurement."""
    file, key, form = _fields(spec, 3, FORMATS, "docs/measurements file | per-seed key")
    return summary(_measured(file, key), form)


def _measured(file: str, key: str) -> pd.Series:
    if not (MEASUREMENTS / file).is_file():
        raise NarrativeError(f"no measurement file docs/measurements/{file}")
    if key.startswith("@"):
        return pd.Series([_json_value(file, key[1:])], dtype=float)
    try:
        return pd.Series(MeasuredSeeds("", file, ((key, key),)).values()[key], dtype=float)
    except KeyError:
        raise NarrativeError(f"docs/measurements/{file} has no per-seed {key!r}") from None


def _json_value(file: str, path: str) -> float:
    """The number at ``path`` of a measurement file that holds no per-seed values: dotted keys, a
    list item picked by its fields (``setups[method=dp-gan,dataset=mnist].fit_seconds``)."""
    import json

    node = json.loads((MEASUREMENTS / file).read_text())
    for step in path.split("."):
        name, _, picked = step.partition("[")
        if not isinstance(node, dict) or name not in node:
            raise NarrativeError(f"docs/measurements/{file} has no {name!r} on the path {path!r}")
        node = node[name]
        if picked:
            wanted = dict(pair.split("=", 1) for pair in picked.rstrip("]").split(","))
            items = [item for item in node if all(str(item.get(k)) == v for k, v in wanted.items())]
            if len(items) != 1:
                raise NarrativeError(f"docs/measurements/{file}: {len(items)} items of {name!r} match [{picked}")
            node = items[0]
    if not isinstance(node, (int, float)):
        raise NarrativeError(f"docs/measurements/{file}: {path!r} is not a number")
    return float(node)


def _signed(value: float, digits: int) -> str:
    return f"{value:+.{digits}f}".replace("-", "−")


def _p_text(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def comparison_text(spec: str, frames: dict[str, pd.DataFrame], source) -> str:
    """Two setups compared as a ``<!--d …-->`` mark names them, by the report's own tests."""
    from bench.report import stats
    from bench.report.tables import MIN_SEEDS_FOR_EVIDENCE

    body, test, form = ([spec, "", ""] + spec.rsplit("|", 2))[-3:]
    test, form = test.strip(), form.strip()
    name, _, decimals = form.partition(":")
    sides = body.split(" vs ")
    if len(sides) != 2 or test not in TESTS or name not in COMPARISON_FORMS or (decimals and not decimals.isdigit()):
        raise NarrativeError(
            f"a comparison mark needs 'SIDE vs SIDE | {'/'.join(TESTS)} | {'/'.join(COMPARISON_FORMS)}[:decimals]' "
            f"(a side: 'experiment | dataset | method | ε | metric' or 'measurement file | key'); got {spec!r}"
        )

    def side(text: str) -> pd.Series:
        fields = [field.strip() for field in text.split("|")]
        if len(fields) == 5:
            return Mark.parse(text + " | mean").values(frames, source)
        if len(fields) == 2:
            return _measured(*fields)
        raise NarrativeError(f"a side of a comparison names 5 fields (a record's) or 2 (a measurement's); got {text!r}")

    ours, theirs = side(sides[0]), side(sides[1])
    digits = int(decimals or 3)
    if test == "paired":
        result = stats.paired(ours, theirs, min_seeds=MIN_SEEDS_FOR_EVIDENCE)
    elif test == "welch":
        result = stats.welch(ours, list(theirs), "theirs", min_seeds=MIN_SEEDS_FOR_EVIDENCE)
    elif test == "tost":
        result = stats.tost(ours, list(theirs), "theirs", stats.EQUIVALENCE_MARGIN, min_seeds=MIN_SEEDS_FOR_EVIDENCE)
    else:
        result = stats.spread(ours, list(theirs), "theirs", min_seeds=MIN_SEEDS_FOR_EVIDENCE)
    if result is None:
        raise NarrativeError(f"{test} cannot compare {spec!r}: too few seeds, or no spread")
    if name == "p":
        return _p_text(result.p)
    if name == "ci":
        if not isinstance(result, stats.Equivalence):
            raise NarrativeError(f"'ci' is the equivalence test's interval: use 'tost' in {spec!r}")
        return f"[{_signed(result.low, digits)}, {_signed(result.high, digits)}]"
    if isinstance(result, stats.Spread):
        raise NarrativeError(f"the spread test gives a p only; got {spec!r}")
    return _signed(result.difference, digits)


def rendered(text: str, source) -> tuple[str, list[str]]:
    """``text`` with every mark's number written from where it names (the record, a paper's
    table, a measurement file), and the marks whose number changed (as 'mark: old → new')."""
    frames: dict[str, pd.DataFrame] = {}
    changed: list[str] = []

    def filler(kind: str, text_of):
        def fill(match: re.Match) -> str:
            new = text_of(match["spec"])
            if new != match["text"]:
                changed.append(f"{kind} {match['spec'].strip()}: {match['text']} → {new}")
            return f"<!--{kind} {match['spec']} -->{new}<!--/{kind}-->"

        return fill

    text = MARK.sub(filler("r", lambda spec: Mark.parse(spec).text(frames, source)), text)
    text = PAPER_MARK.sub(filler("p", paper_text), text)
    text = COMPARISON_MARK.sub(filler("d", lambda spec: comparison_text(spec, frames, source)), text)
    return MEASURED_MARK.sub(filler("m", measured_text), text), changed


def _outside_marks(text: str) -> str:
    """``text`` with every mark, comment and code span blanked (its lines kept, so they stay countable)."""
    blank = lambda match: re.sub(r"[^\n]", " ", match[0])  # noqa: E731
    # code first: a code span may name a mark (`<!--r`) without opening one
    text = re.sub(r"```.*?```|`[^`\n]*`", blank, text, flags=re.DOTALL)
    for mark in (MARK, PAPER_MARK, MEASURED_MARK, HISTORY_MARK, COMPARISON_MARK, CONSTANT_MARK, COVERAGE_MARK):
        text = mark.sub(blank, text)
    return re.sub(r"<!--.*?-->", blank, text, flags=re.DOTALL)


def unmarked_numbers(text: str) -> list[str]:
    """Every decimal number (two or more decimals: a result's precision), every time, seed count,
    percentage and number grouped in thousands of ``text`` outside a mark, a comment or a code span, with its line: each is quoted by
    hand, which nothing keeps true."""
    text = _outside_marks(text)
    patterns = (DECIMAL, DURATION, SEED_COUNT, GROUPED, PERCENT)
    longest: dict[int, str] = {}  # one finding per place: "3,359 s", not also "3,359"
    for match in (m for pattern in patterns for m in pattern.finditer(text)):
        if len(match[0]) > len(longest.get(match.start(), "")):
            longest[match.start()] = match[0]
    found = sorted(longest.items())
    return [f"line {text.count(chr(10), 0, start) + 1}: {number}" for start, number in found]


def unmarked_spreads(text: str) -> list[str]:
    """Every 'mean ± sd' of ``text`` outside a mark, with the line it sits on: each is a number
    quoted by hand, which nothing keeps true."""
    text = _outside_marks(text)
    return [f"line {text.count(chr(10), 0, m.start()) + 1}: {m[0]}" for m in SPREAD.finditer(text)]


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
