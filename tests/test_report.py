"""`bench report`: REPORT.md and a self-contained REPORT.html from the MLflow store."""

from __future__ import annotations

import base64
import dataclasses
import io
import math
import os
import re
import shlex
import shutil
import subprocess

import pytest

from bench.cli import build_parser, main
from bench.harness.runargs import grid_spec_from_args
from bench.harness import tracking
from bench.harness.grid import expand
from bench.harness.worker import Outcome
from bench.harness.grid import GridSpec
from bench.report.presets import PRESETS
from bench.report.preset import Preset, grid_cells
from tests.conftest import REPO

TINY = Preset(
    "tiny",
    "a test table",
    "real, uniform and independent on cervical",
    "tiny-exp",
    (GridSpec(("real", "uniform", "independent"), ("cervical",), [0.5, 1.0], [0, 1]),),
    (("ROC", "downstream.roc_auc"),),
    {"cervical": {("real", math.inf): {"ROC": 0.959}, ("independent", 1.0): {"ROC": 0.5}}},
    "a made-up source for the test",
    plot_metrics=("downstream.roc_auc",),
)
# Metric values logged for the test (not results): per method, ε → value at seed 0 (+0.02 at seed 1)
VALUES = {"real": {math.inf: 0.90}, "uniform": {0.5: 0.50, 1.0: 0.50}, "independent": {0.5: 0.60, 1.0: 0.70}}


@pytest.fixture
def tiny_store(workdir, monkeypatch, tmp_path):
    """The tiny preset's cells logged through the harness's own logger, all but one: independent
    at ε = 1, seed 1 is left out so that the report has a cell to list as not run."""
    monkeypatch.setitem(PRESETS, "tiny", TINY)
    client = tracking.client()
    experiment = tracking.experiment_id(client, TINY.experiment)
    skipped = None
    for cell in grid_cells(TINY.grids[0], TINY.experiment):
        if (cell.method, cell.epsilon, cell.seed) == ("independent", 1.0, 1):
            skipped = cell
            continue
        folder = tmp_path / f"cell-{cell.key}"
        folder.mkdir()
        value = VALUES[cell.method][cell.epsilon] + 0.02 * cell.seed
        outcome = Outcome("FINISHED", metrics={"downstream.roc_auc": value, "time.fit_s": 1.0})
        tracking.log_cell(client, experiment, cell, outcome, folder, {})
    return skipped


def test_report_puts_ours_beside_the_paper_and_lists_the_missing_cell(tiny_store, workdir, capsys):
    assert main(["report", "--experiment", "tiny-exp", "--out", "out"]) == 0
    text = (workdir / "out" / "REPORT.md").read_text()
    assert "## a test table — preset `tiny`" in text
    assert "| cervical | real data | ours | 0.910 ± 0.0141 (2)◦ |" in text
    assert "| cervical | real data | paper | 0.959 |" in text
    assert "| cervical | independent ε=1 | ours | 0.700 (1)◦ |" in text  # one seed: no std
    assert "| cervical | independent ε=1 | paper | 0.500 |" in text
    assert "| cervical | independent ε=0.5 | ours | 0.610 ± 0.0141 (2)◦ |" in text
    assert "### Not run here (1 of 10 cells)" in text
    # the summary at the top: finished and missing cells, and the time of the missing one from
    # the logged runs of the same method and dataset
    assert re.search(r"\| `tiny` \| a test table \| 9 \| 1 \| ≈ \d+ min \|  \|", text)
    command = "python -m bench run --methods independent --datasets cervical --eps 1 --seeds 1 --experiment tiny-exp"
    assert command in text
    # the printed command runs exactly the missing cell
    argv = shlex.split(command)[3:]
    cells, _ = expand(grid_spec_from_args(build_parser().parse_args(argv)))
    assert [c.key for c in cells] == [tiny_store.key]
    image = re.search(r"!\[[^\]]*\]\((report_files/[^)]+\.png)\)", text).group(1)
    assert (workdir / "out" / image).read_bytes()[:4] == b"\x89PNG"


def decoded_images(page: str) -> list:
    from PIL import Image

    sources = re.findall(r'<img [^>]*src="([^"]+)"', page)
    images = []
    for source in sources:
        assert source.startswith("data:image/png;base64,"), "the page must not depend on other files"
        image = Image.open(io.BytesIO(base64.b64decode(source.split(",", 1)[1], validate=True)))
        image.load()  # raises on a truncated or corrupt PNG
        images.append(image)
    return images


def test_every_table_starts_with_a_real_data_calibration_row_that_flags_a_miss(
    tiny_store, workdir, monkeypatch, tmp_path
):
    """Two seeds are shown but not tested (never evidence below 3 seeds); with a third, ours
    0.910 ± 0.010 against the paper's point value 0.959 — a gap of 0.049 whose 90% interval
    [−0.066, −0.032] lies wholly beyond the ±0.02 margin — is flagged before any method row, with
    the preset's explanation once it has one."""
    assert main(["report", "--experiment", "tiny-exp", "--out", "out"]) == 0
    text = (workdir / "out" / "REPORT.md").read_text()
    section = text[text.index("preset `tiny`") :]
    assert (
        "| cervical | ROC | 0.910 ± 0.0141 (2)◦ | 0.959 | 2 seed(s), fewer than 3: not tested yet (Δ -0.049 so far) |"
        in section
    )
    assert "MISS" not in section

    client = tracking.client()
    third = next(
        c for c in grid_cells(TINY.grids[0], TINY.experiment, seeds=[0, 1, 2]) if c.method == "real" and c.seed == 2
    )
    (tmp_path / "third").mkdir()
    tracking.log_cell(
        client,
        tracking.experiment_id(client, TINY.experiment),
        third,
        Outcome("FINISHED", metrics={"downstream.roc_auc": 0.91, "time.fit_s": 1.0}),
        tmp_path / "third",
        {},
    )
    assert main(["report", "--experiment", "tiny-exp", "--out", "out"]) == 0
    text = (workdir / "out" / "REPORT.md").read_text()
    section = text[text.index("preset `tiny`") :]
    calibration = section.index("| 0.959 | **MISS**: Δ -0.049 beyond ±0.02 (90% CI [-0.066, -0.032])")
    assert calibration < section.index("| cervical | real data | ours |")  # above the comparison table
    assert "| unexplained |" in section

    monkeypatch.setitem(PRESETS, "tiny", dataclasses.replace(TINY, calibration_notes={"cervical": "a known cause"}))
    assert main(["report", "--experiment", "tiny-exp", "--out", "out"]) == 0
    assert (
        "a pipeline difference to explain before any method comparison | a known cause |"
        in (workdir / "out" / "REPORT.md").read_text()
    )


def test_a_calibration_shown_equivalent_agrees_one_shown_beyond_the_margin_misses_and_sound_is_never_flagged():
    import pandas as pd

    from bench.report.calibration import Calibration

    ours = pd.Series([0.74, 0.743, 0.707, 0.735, 0.736])  # sd 0.0145
    assert not Calibration("adult [protocol paper]", "ROC", ours, 0.730, True).miss
    assert Calibration("adult [protocol paper]", "ROC", ours, 0.730, True).verdict().startswith("agrees: Δ +0.002")
    assert Calibration("adult [protocol paper]", "ROC", ours, 0.786, True).miss
    sound = Calibration("adult", "ROC", ours, 0.786, comparable=False)
    assert not sound.miss and sound.verdict().startswith("not comparable by design")


def test_html_page_is_self_contained_and_every_image_decodes(tiny_store, workdir):
    stale = workdir / "out" / "report_files" / "tiny_a-plot-no-report-shows-any-more.png"
    other = workdir / "out" / "report_files" / "samples_dphp-fig2_0123abcd.png"  # another preset's grid
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"")
    other.write_bytes(b"")
    assert main(["report", "--experiment", "tiny-exp", "--out", "out"]) == 0
    assert not stale.exists() and other.exists() and len(list(stale.parent.glob("tiny_*.png"))) == 1
    page = (workdir / "out" / "REPORT.html").read_text()
    images = decoded_images(page)
    assert len(images) == 1 and images[0].size[0] > 300
    assert "<table>" in page and "0.910 ± 0.0141 (2)◦" in page and "python -m bench run --methods independent" in page
    assert "<td><code>tiny</code></td>" in page and "`" not in page.split("<body>", 1)[1].split("<pre>", 1)[0]


def test_html_renders_in_a_headless_browser_without_broken_images(tiny_store, workdir):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        if os.environ.get("CI"):  # .ci/run installs it: a CI without it must not pass by skipping
            pytest.fail("no headless browser on this CI machine (.ci/run should have installed chromium)")
        pytest.skip("no headless browser installed (apt-get install chromium)")
    assert main(["report", "--experiment", "tiny-exp", "--out", "out"]) == 0
    page = (workdir / "out" / "REPORT.html").read_text()
    # a copy with a probe that writes each image's decoded width into the DOM (0 = broken image)
    probe = page.replace(
        "</body>",
        "<script>window.addEventListener('load', () => {document.body.dataset.widths = "
        "Array.from(document.images).map(i => i.complete ? i.naturalWidth : 0).join(',');});"
        "</script></body>",
    )
    (workdir / "probe.html").write_text(probe)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000"]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", (workdir / "probe.html").as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    widths = re.search(r'data-widths="([^"]*)"', dom)
    assert widths is not None, dom[:500]
    assert [int(w) for w in widths.group(1).split(",")] == [image.size[0] for image in decoded_images(page)]
    shot = workdir / "shot.png"
    subprocess.run(
        [
            browser,
            *flags,
            f"--screenshot={shot}",
            "--window-size=1200,1600",
            (workdir / "out" / "REPORT.html").as_uri(),
        ],
        capture_output=True,
        timeout=120,
    )
    from PIL import Image, ImageStat

    rendered = Image.open(shot).convert("L")
    assert ImageStat.Stat(rendered).stddev[0] > 10  # text, a table and a plot, not a blank page


def _png_of_size(width: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, 40), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_sample_grids_come_from_the_runs_artifacts_and_survive_on_a_machine_without_them(
    workdir, monkeypatch, tmp_path
):
    """A preset with sample grids shows, per setup, its lowest seed's ``samples.png`` artifact;
    a setup whose run left none is listed by run id, never drawn from another run. A regenerated
    report on a machine without the artifacts keeps the file an earlier report wrote for that run."""
    preset = Preset(
        "tiny-samples",
        "a sample table",
        "real and uniform on cervical",
        "tiny-samples-exp",
        (GridSpec(("real", "uniform"), ("cervical",), [1.0], [0, 1]),),
        (("ROC", "downstream.roc_auc"),),
        sample_grids=True,
    )
    monkeypatch.setitem(PRESETS, preset.name, preset)
    client = tracking.client()
    experiment = tracking.experiment_id(client, preset.experiment)
    pngs = {}
    for cell in grid_cells(preset.grids[0], preset.experiment):
        folder = tmp_path / f"cell-{cell.key}"
        folder.mkdir()
        if cell.method == "real":  # uniform logs no samples.png
            pngs[cell.seed] = _png_of_size(100 + cell.seed)
            (folder / "samples.png").write_bytes(pngs[cell.seed])
        tracking.log_cell(
            client, experiment, cell, Outcome("FINISHED", metrics={"downstream.roc_auc": 0.5}), folder, {}
        )
    assert main(["report", "--experiment", preset.experiment, "--out", "out"]) == 0
    text = (workdir / "out" / "REPORT.md").read_text()
    shown = re.findall(
        r"!\[cervical: samples of real ε=∞, seed 0 \(run (\w+)\)\]\((report_files/samples_[^)]+)\)", text
    )
    assert len(shown) == 1
    run_id, file = shown[0]
    assert run_id in file and (workdir / "out" / file).read_bytes() == pngs[0]  # seed 0's, not seed 1's
    assert re.search(r"- cervical, uniform ε=1: run `\w+`", text)
    assert sorted(image.size[0] for image in decoded_images((workdir / "out" / "REPORT.html").read_text()))[-1] == 100

    # the artifacts gone (a fresh clone elsewhere): the file the earlier report kept for that run stays
    shutil.rmtree(workdir / "mlartifacts")
    assert main(["report", "--experiment", preset.experiment, "--out", "out"]) == 0
    assert (workdir / "out" / "REPORT.md").read_text().split("\n", 3)[3] == text.split("\n", 3)[3]
    assert (workdir / "out" / file).read_bytes() == pngs[0]
    # ... but a new folder has nothing to keep: the setup is listed, not drawn
    assert main(["report", "--experiment", preset.experiment, "--out", "elsewhere"]) == 0
    again = (workdir / "elsewhere" / "REPORT.md").read_text()
    assert "![cervical: samples" not in again and f"- cervical, real ε=∞: run `{run_id}`" in again


def test_a_report_with_its_defaults_never_touches_the_committed_results(tiny_store, workdir):
    """Issue 31: the default --out was results/, so a user's first `bench report` rewrote the
    committed report from their own store and deleted its sample grids."""
    (workdir / "results").mkdir()
    kept = workdir / "results" / "REPORT.md"
    kept.write_text("committed")
    assert main(["report", "--experiment", "tiny-exp"]) == 0
    assert kept.read_text() == "committed" and (workdir / "report" / "REPORT.md").is_file()


def test_report_for_an_experiment_no_preset_uses_is_a_usage_error(workdir, capsys):
    assert main(["report", "--experiment", "nope"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: no preset logs to experiment 'nope'") and "\n" not in error


def test_privacy_utility_plot_draws_noise_free_runs_and_data_independent_baselines_as_bands():
    import pandas as pd

    from bench.core.plotting import pyplot
    from bench.report.plots import privacy_utility_figure

    rows = pd.DataFrame(
        [
            {"method": m, "epsilon": e, "seed": s, "downstream.roc_auc": v + 0.02 * s}
            for m, by_eps in VALUES.items()
            for e, v in by_eps.items()
            for s in (0, 1)
        ]
    )
    fig = privacy_utility_figure(rows, "downstream.roc_auc", "t", {"uniform"})
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    pyplot().close(fig)
    assert "real (ε = ∞), 2 seeds" in labels
    assert "uniform (data-independent), 2 seeds" in labels  # pooled over ε: each seed counts once
    assert "independent (2 seeds)" in labels  # a private baseline is a curve against ε
    assert ax.get_xscale() == "log"


def test_a_method_has_one_colour_in_every_plot():
    """Issue 31: a method's colour depended on which other methods a plot held."""
    import pandas as pd
    from matplotlib.colors import to_hex

    from bench.core.plotting import pyplot
    from bench.report.plots import method_colour, privacy_utility_figure

    def colour_of(methods: list[str], wanted: str) -> str:
        rows = pd.DataFrame(
            [
                {"method": m, "epsilon": e, "seed": s, "downstream.roc_auc": 0.5 + 0.1 * e}
                for m in methods
                for e in (0.5, 1.0)
                for s in (0, 1)
            ]
        )
        fig = privacy_utility_figure(rows, "downstream.roc_auc", "t", set())
        lines = {bars.get_label().split(" (")[0]: to_hex(bars.lines[0].get_color()) for bars in fig.axes[0].containers}
        pyplot().close(fig)
        return lines[wanted]

    alone = colour_of(["dp-hp"], "dp-hp")
    assert alone == colour_of(["dp-merf", "dp-gan", "dp-hp"], "dp-hp") == to_hex(method_colour("dp-hp"))
    variant = "dp-hp [kernel_inputs=centred]"
    assert colour_of([variant], variant) == colour_of(["dp-merf", variant], variant)


def test_a_missing_command_carries_its_measured_cost_and_never_a_guess():
    from bench.report.status import MissingCells, missing_cost

    import json

    paper = ("dp-hp", "mnist", json.dumps({"profile": "paper"}))
    two_seeds = MissingCells("dp-hp", "mnist", 1.0, (0, 1), "python -m bench run …", paper)
    assert missing_cost(two_seeds, {paper: 4515}) == "≈ 2.5 h on 2 CPU cores"
    assert missing_cost(two_seeds, {paper: 60}) == "≈ 2 min on 2 CPU cores"
    assert missing_cost(two_seeds, {}) == "≈ 2.5 h on 2 CPU cores"  # DOCUMENTED_SECONDS: a paper cell measured by hand
    smoke = MissingCells("dp-hp", "mnist", 1.0, (0, 1), "…", ("dp-hp", "mnist", json.dumps({"profile": "smoke"})))
    assert missing_cost(smoke, {}) == "not measured: no run of this setting timed yet"
    # a measurement stopped before its cell ended is a lower bound, and says so
    stopped = MissingCells(
        "dp-hp", "census-discrete", 0.3, (0, 1), "…", ("dp-hp", "census-discrete", json.dumps({"profile": "paper"}))
    )
    assert missing_cost(stopped, {}) == "≥ 10.6 h on 2 CPU cores"
    # an image fit timed by benchmarks/image_cell_costs.py, read from its committed output
    gan = MissingCells(
        "dp-gan", "fashion-mnist", 9.6, (0, 1), "…", ("dp-gan", "fashion-mnist", json.dumps({"profile": "paper"}))
    )
    assert missing_cost(gan, {}).startswith("≥ ") and missing_cost(gan, {}).endswith(" on 2 CPU cores")


def test_every_image_setup_of_the_presets_has_a_measured_cost():
    """The coverage matrix's promise for images (issue 32): every image setup of a preset is priced
    from a logged run or a committed measurement — never "not timed"."""
    from bench.report.presets import PRESETS
    from bench.report.costs import seconds_for, cost_key
    from bench.report.preset import grid_cells
    from bench.api.registry import DATASETS

    untimed = sorted(
        {
            (c.method, c.dataset, c.profile)
            for preset in PRESETS.values()
            for grid in preset.grids
            for c in grid_cells(grid, preset.experiment)
            if DATASETS.get(c.dataset).kind.name == "IMAGE" and seconds_for(cost_key(c), {}) is None
        }
    )
    assert untimed == []


COMMITTED_RECORD = REPO / "results" / "runs"


def test_the_committed_report_is_what_the_committed_record_gives(tmp_path, monkeypatch):
    """Every number in results/REPORT.md comes from the committed results record results/runs/:
    regenerated from it, the page is the same but for its first paragraph (date, source, code
    version). Catches a report edited by hand, or committed without the runs behind it."""
    # regenerating into results/ keeps the committed sample grids, named by their runs, where the
    # runs' artifacts are not on this machine
    shutil.copytree(REPO / "results" / "report_files", tmp_path / "out" / "report_files")
    shutil.copy(REPO / "results" / "README.md", tmp_path / "out" / "README.md")  # its gap tags (bench/report/gaps.py)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'unused.db'}")
    assert main(["report", "--records", str(COMMITTED_RECORD), "--out", str(tmp_path / "out")]) == 0

    def body(page: str) -> list[str]:
        return [line for line in page.splitlines() if not line.startswith("Regenerated by `python -m bench report`")]

    committed = (REPO / "results" / "REPORT.md").read_text()
    assert body((tmp_path / "out" / "REPORT.md").read_text()) == body(committed)


def test_every_gap_to_the_papers_has_its_paragraph_and_every_gap_tag_a_gap():
    """Issue 58: each cell of ours more than one seed-sd from the paper's value is claimed by a
    paragraph of results/README.md, and no tag there claims a cell that is no gap (the committed
    report is the record's, by the test above, so its gap lists are the record's)."""
    report = (REPO / "results" / "REPORT.md").read_text()
    (summary,) = [line for line in report.splitlines() if line.startswith("Gaps to the papers:")]
    assert "every one has its paragraph" in summary, summary
    assert "**none yet**" not in report
    assert "claim no gap any more" not in report


def test_every_real_data_miss_of_the_committed_report_names_its_cause_or_what_was_ruled_out():
    """Issue 58: a calibration row that misses the paper's real-data value (a test, not a seed-sd)
    carries its preset's explanation; "unexplained" is what the report prints where none exists."""
    report = (REPO / "results" / "REPORT.md").read_text()
    misses = [line for line in report.splitlines() if "| **MISS**:" in line]
    assert misses  # the calibration rows are there to be checked
    assert [line.split("|")[1:3] for line in misses if line.rstrip().endswith("| unexplained |")] == []


def test_the_summary_and_the_sections_count_the_same_finished_cells():
    """The summary's "finished" column and each section's "N of its M cells finished" are one
    number (they once disagreed: sections counted other ε of a shared experiment)."""
    report = (REPO / "results" / "REPORT.md").read_text()
    summary = dict(re.findall(r"^\| `([\w-]+)` \| [^|]+ \| (\d+) \|", report, flags=re.M))
    sections = dict(re.findall(r"— preset `([\w-]+)`\n\n[^\n]*?; (\d+) of its \d+ cells finished", report))
    assert summary and summary == sections


def test_coverage_marks_each_setup_short_of_five_seeds_with_its_measured_cost_or_says_not_timed(monkeypatch):
    """Issue 32: an image setup not run shows its measured CPU cost; none is guessed."""
    from bench.report.coverage import setup_coverage
    from bench.report.presets import PRESETS
    from bench.report.costs import cost_key
    from bench.report.preset import grid_cells

    preset = PRESETS["dpmepf-table2"]
    cells = [cell for grid in preset.grids for cell in grid_cells(grid, preset.experiment)]
    fashion = next(c for c in cells if c.method == "dp-mepf" and c.dataset == "fashion-mnist" and c.epsilon == 1.0)
    done = [c.key for c in cells if c.method == "dp-mepf" and c.dataset == "mnist" and c.epsilon == 1.0][:1]
    timings = {cost_key(fashion): 1800.0}
    coverage = {(c.setup.dataset, c.setup.epsilon): c for c in setup_coverage(preset, set(done), timings)}
    assert coverage[("fashion-mnist", 1.0)].text() == "not run (cpu profile; ≈ 30 min a seed)"  # logged
    assert coverage[("mnist", 1.0)].text() == "1 (cpu profile; ≈ 1.3 h a seed)"  # documented (docs/data.md)
    cifar = {c.setup.epsilon: c for c in setup_coverage(PRESETS["dpmepf-table5"], set(), {})}
    # a fit's measured rate (image_cell_costs.py), past 2 h a seed on 2 cores: "needs a GPU" (issue 55)
    assert cifar[1.0].text() == "needs a GPU (cpu profile; ≥ 4.5 h a seed)"
    from bench.report import costs

    monkeypatch.delitem(costs.DOCUMENTED_SECONDS, ("dp-mepf", "cifar10-jpeg", "cpu"))
    cifar = {c.setup.epsilon: c for c in setup_coverage(PRESETS["dpmepf-table5"], set(), {})}
    assert cifar[1.0].text() == "not run (cpu profile; not timed)"


def test_every_marked_number_of_the_results_narrative_is_the_record_s(tmp_path):
    """results/README.md's marked numbers (bench/report/narrative.py) are what the committed record
    gives; an edited number is caught (issue 59: the narrative had drifted from the record)."""
    from pathlib import Path

    from bench.report.narrative import (
        COMPARISON_MARK,
        MARK,
        MEASURED_MARK,
        PAPER_MARK,
        rendered,
        unmarked_numbers,
        unmarked_spreads,
    )
    from bench.report.source import RecordSource

    repo = Path(__file__).resolve().parents[1]
    text = (repo / "results" / "README.md").read_text(encoding="utf-8")
    source = RecordSource(repo / "results" / "runs")
    assert len(MARK.findall(text)) >= 40
    assert rendered(text, source) == (text, [])
    # a record's, a paper's, another code's number and a comparison's
    for mark in (MARK, PAPER_MARK, MEASURED_MARK, COMPARISON_MARK):
        first = mark.search(text)
        edited = text[: first.start("text")] + "0.999" + text[first.end("text") :]
        again, changed = rendered(edited, source)
        assert again == text and len(changed) == 1 and "0.999 →" in changed[0]
    # and no number is quoted by hand: each is one of those, or marked as history or as no result
    assert unmarked_spreads(text) == [] and unmarked_numbers(text) == []


def test_narrative_marks_name_a_paper_s_value_or_another_code_s_seeds_and_refuse_what_is_not_there():
    from bench.report.narrative import NarrativeError, rendered, unmarked_spreads

    text = (
        "<!--p dphp-fig3 | mnist | dp-hp | 1 | n=60000 | mean±sd -->?<!--/p--> "
        "<!--p dpmerf-table1 | adult | real | inf | ROC (hard labels) | mean -->?<!--/p--> "
        "<!--m authors_dphp_adult_seeds_2026-11-26.json | roc | n -->?<!--/m--> "
        "<!--h an old record -->0.111 ± 0.222<!--/h--> "
        "<!--m image_cell_costs_2026-11-27.json | @setups[method=dp-gan,dataset=mnist].fit_seconds | mean:0 -->?<!--/m-->"
    )
    new, changed = rendered(text, source=None)
    assert "-->0.7299 ± 0.0103<!--/p-->" in new and "-->0.730<!--/p-->" in new and "-->10<!--/m-->" in new
    assert "-->795<!--/m-->" in new  # a file without seeds: one number, by its path
    assert len(changed) == 4 and "0.111 ± 0.222" in new and unmarked_spreads(new) == []
    assert unmarked_spreads("ours 0.5 ± 0.1 and\n0.25 ±\n 0.05") == ["line 1: 0.5 ± 0.1", "line 2: 0.25 ±\n 0.05"]
    for bad, why in (
        ("<!--p dphp-table99 | mnist | dp-hp | 1 | MEAN | mean -->?<!--/p-->", "no published table"),
        ("<!--p dpmerf-table1 | adult | real | inf | ROC (hard labels) | mean±sd -->?<!--/p-->", "no spread"),
        ("<!--p dpmerf-table1 | adult | real | 1 | ROC (hard labels) | mean -->?<!--/p-->", "prints no number"),
        ("<!--m nothing.json | roc | mean -->?<!--/m-->", "no measurement file"),
        ("<!--m authors_dphp_adult_seeds_2026-11-26.json | roc | mode -->?<!--/m-->", "a mark needs"),
        ("<!--m image_cell_costs_2026-11-27.json | @setups[method=dp-gan].fit_seconds | mean -->?<!--/m-->", "2 items"),
        (
            "<!--m image_cell_costs_2026-11-27.json | @setups[method=real,dataset=mnist].cpu | mean -->?<!--/m-->",
            "no 'cpu'",
        ),
    ):
        with pytest.raises(NarrativeError, match=why):
            rendered(bad, source=None)


def test_comparison_and_range_marks_are_scipy_s_tests_on_the_record_s_seeds():
    """A ``<!--d …-->`` mark's Δ and p are scipy's paired / Welch t on the two setups' seeds (read
    here from the JSON records directly, not through the report's frame); ``range`` and ``max``
    are the seeds' extremes; a malformed mark is one clear error."""
    import json
    from pathlib import Path

    import pandas as pd
    from scipy import stats

    from bench.report.narrative import NarrativeError, rendered
    from bench.report.source import RecordSource

    repo = Path(__file__).resolve().parents[1]
    seeds: dict[str, dict[int, float]] = {}
    for path in (repo / "results" / "runs" / "table2").glob("*.json"):
        record = json.loads(path.read_text())
        params = record["params"]  # Table 2's adult at ε = 1 under the sound protocol
        if (params["dataset"], params["protocol"], params["epsilon"]) == ("adult", "sound", "1.0"):
            seeds.setdefault(params["method"], {})[int(params["seed"])] = record["metrics"].get("downstream.roc_auc")
    ours, theirs = (pd.Series(seeds[m]).sort_index() for m in ("dp-hp", "uniform"))
    assert len(ours) == len(theirs) == 5
    side = "table2 | adult | {} | 1 | downstream.roc_auc"
    text = " ".join(
        f"<!--d {side.format('dp-hp')} vs {side.format('uniform')} | {test} | {form} -->?<!--/d-->"
        for test, form in (("paired", "Δ"), ("paired", "p"), ("welch", "p"))
    ) + "".join(f" <!--r {side.format('dp-hp')} | {form} -->?<!--/r-->" for form in ("range:2", "max", "seed3"))
    new, changed = rendered(text, RecordSource(repo / "results" / "runs"))
    values = re.findall(r"-->([^<]*)<!--/", new)
    paired, welch = stats.ttest_rel(ours, theirs), stats.ttest_ind(ours, theirs, equal_var=False)
    assert values[0] == f"{(ours - theirs).mean():+.3f}".replace("-", "−")
    assert values[1] == f"{paired.pvalue:.2g}" and values[2] == f"{welch.pvalue:.2g}"
    assert values[3] == f"{ours.min():.2f}–{ours.max():.2f}" and values[4] == f"{ours.max():.3f}"
    assert values[5] == f"{ours[3]:.3f}" and len(changed) == 6
    for bad, why in (
        (f"<!--d {side.format('dp-hp')} | paired | Δ -->?<!--/d-->", "SIDE vs SIDE"),
        (f"<!--d {side.format('dp-hp')} vs {side.format('uniform')} | anova | Δ -->?<!--/d-->", "SIDE vs SIDE"),
        (
            f"<!--d {side.format('dp-hp')} vs {side.format('uniform')} | paired | ci -->?<!--/d-->",
            "'ci' is the equivalence",
        ),
        (f"<!--d {side.format('dp-hp')} vs {side.format('nobody')} | welch | p -->?<!--/d-->", "no runs of"),
        (f"<!--r {side.format('dp-hp')} | range:x -->?<!--/r-->", "a record mark needs"),
        (f"<!--r {side.format('dp-hp')} | seed7 -->?<!--/r-->", "no seed 7"),
    ):
        with pytest.raises(NarrativeError, match=why):
            rendered(bad, RecordSource(repo / "results" / "runs"))


def test_a_decimal_number_outside_every_mark_is_quoted_by_hand():
    from bench.report.narrative import unmarked_numbers

    text = (
        "ours 0.536 and <!--r x | y | z | 1 | m | mean -->0.512<!--/r--> at the <!--c a margin -->0.02<!--/c--> margin,\n"
        "`--eps 0.25` in code, ε = 1.5 (one decimal: a setting), 3.50 NLL <!--h old -->3.45<!--/h-->, v1.17.2\n"
        "a code span naming a mark, `<!--r`, opens none: 0.591. <!-- a comment 0.25 -->"
    )
    assert unmarked_numbers(text) == ["line 1: 0.536", "line 2: 3.50", "line 3: 0.591"]
    # and every time: a cost is read from the record too
    times = "fit 582–614 s, a cell 13–31 min or 1.5 h, <!--r a | b | c | 1 | time.fit_s | max:0 -->3,359<!--/r--> s; 2 seeds"
    assert unmarked_numbers(times) == ["line 1: 582–614 s", "line 1: 13–31 min", "line 1: 1.5 h", "line 1: 2"]
    # and every seed count a finding rests on (not a seed's number)
    counts = (
        "over 5 seeds, 3–5 seeds, seeds 0–4, <!--r a | b | c | 1 | m | n -->5<!--/r--> seeds, 12 seeded, 2 seed-sds"
    )
    assert unmarked_numbers(counts) == ["line 1: 5", "line 1: 3–5"]
    # and every number grouped in thousands (a sum, a row count) and every percentage
    grouped = (
        "sums 317,000 [373,000, 1,070,000], <!--c rows -->22,561<!--/c--> rows, 86% and 5.4% of it, 2026, 1000, 3,359 s"
    )
    assert unmarked_numbers(grouped) == [
        "line 1: 317,000",
        "line 1: 373,000",
        "line 1: 1,070,000",
        "line 1: 86%",
        "line 1: 5.4%",
        "line 1: 3,359 s",  # once: the time, not also the grouped number in it
    ]


def test_a_cell_s_cost_is_the_sum_of_its_logged_seconds_written_in_the_unit_the_mark_names():
    """``time.cell_s`` and ``time.evaluation_s`` sum a run's logged seconds (as the report's cost
    table does); ``/60`` writes minutes; whole numbers group thousands, and per-seed lists of them
    are kept apart by semicolons."""
    import pandas as pd

    from bench.report.costs import summed_seconds
    from bench.report.narrative import NarrativeError, summary

    runs = pd.DataFrame(
        {"time.fit_s": [600.0, 3000.0], "time.eval_downstream_s": [60.0, 359.0], "time.eval_fid_s": [None, 1.0]}
    )
    assert summed_seconds(runs, "time.evaluation_s").tolist() == [60.0, 360.0]
    assert summed_seconds(runs, "time.cell_s").tolist() == [660.0, 3360.0]
    assert summed_seconds(runs, "time.fit_s") is None
    cells = summed_seconds(runs, "time.cell_s")
    assert summary(cells, "range:0") == "660–3,360" and summary(cells, "range:0/60") == "11–56"
    assert summary(cells, "seeds:0") == "660; 3,360" and summary(cells, "mean:1/3600") == "0.6"
    with pytest.raises(NarrativeError, match="a record mark needs"):
        from bench.report.narrative import Mark

        Mark.parse("a | b | c | 1 | time.fit_s | range:0/7")


def test_median_and_iqr_marks_write_a_heavy_tailed_metric_as_the_report_s_tables_do():
    import pandas as pd

    from bench.report.narrative import NarrativeError, summary
    from bench.report.tables import summary_text

    sums = pd.Series([542550.0, 447220.0, 2818775.0, 528944.0, 570292.0])
    assert summary(sums, "median:0") == "542,550" and summary(sums, "iqr:0") == "[528,944, 570,292]"
    # the same statistics REPORT's cell rounds to 3 significant digits
    assert summary_text(sums, heavy_tailed=True) == "median 543,000 [529,000, 570,000] (5)"
    with pytest.raises(NarrativeError, match="an iqr needs 3"):  # REPORT gives no quartiles of 2 seeds
        summary(sums[:2], "iqr:0")


def test_the_front_page_quotes_the_committed_report_s_coverage(tmp_path):
    """README.md's opening says what is reproduced with REPORT.md's coverage totals (coverage marks,
    bench/report/narrative.py); an edited count is caught, and a mark naming no total is an error."""
    from pathlib import Path

    from bench.report.narrative import COVERAGE_MARK, NarrativeError, rendered_coverage

    repo = Path(__file__).resolve().parents[1]
    text = (repo / "README.md").read_text(encoding="utf-8")
    report = (repo / "results" / "REPORT.md").read_text(encoding="utf-8")
    marks = COVERAGE_MARK.findall(text)
    assert {what for what, _ in marks} == {"images", "tabular, discretized and 2-D"}
    assert rendered_coverage(text, report) == (text, [])
    first = COVERAGE_MARK.search(text)
    edited = text[: first.start("text")] + "99 setups" + text[first.end("text") :]
    again, changed = rendered_coverage(edited, report)
    assert again == text and len(changed) == 1 and "99 setups →" in changed[0]
    with pytest.raises(NarrativeError, match="'videos'"):
        rendered_coverage("<!--coverage videos -->x<!--/coverage-->", report)


def test_the_cost_table_gives_medians_of_what_the_runs_logged():
    """Issue 59: runtime and peak memory were in every record and in no table."""
    from bench.report.costs import measured_cost_rows
    from bench.report.frame import runs_frame
    from tests.conftest import cell_record, plain_cell

    def run(method, seed, fit, downstream, marginals, peak):
        metrics = {"time.fit_s": fit, "time.eval_downstream_s": downstream, "peak_memory_mib": peak}
        if marginals is not None:
            metrics["time.eval_marginals_s"] = marginals
        return cell_record(plain_cell(method, "cervical", 1.0 if method != "real" else math.inf, seed), metrics)

    frame = runs_frame(
        [
            run("independent", 0, 1.0, 10.0, 2.0, 300.0),
            run("independent", 1, 3.0, 20.0, None, 500.0),
            run("independent", 2, 2.0, 30.0, 4.0, 400.0),
            run("real", 0, 0.5, 7.0, None, 200.0),
        ]
    )
    rows = {row[1]: row for row in measured_cost_rows(frame)}
    assert rows["independent"][2:] == ["2.00", "20.0", "400", "3"]  # evaluation: the median of 12, 20 and 34
    assert rows["real"][2:] == ["0.500", "7.00", "200", "1"]


def test_a_mark_may_name_a_setup_s_runs_in_two_experiments_as_a_preset_sharing_them_reads_them():
    """Table 8's D_prod = 5 row was dphp-gaps' seeds 0–2 and table8's seeds 3–4 (``Preset.shares``);
    `run --preset dphp-table8` has since run seeds 0–2 in table8 too. A mark naming
    ``table8 + dphp-gaps`` reads table8's seeds and then dphp-gaps' seeds table8 lacks, as the
    preset reads a shared setup: a seed run in both is one measurement, never two."""
    from pathlib import Path

    from bench.report.narrative import Mark
    from bench.report.source import RecordSource

    source = RecordSource(Path(__file__).resolve().parents[1] / "results" / "runs")
    setup = "adult-discrete [protocol paper] | dp-hp | 1 | marginals.paper.tv_3 | seeds"
    own, shared = (Mark.parse(f"{experiment} | {setup}").values({}, source) for experiment in ("table8", "dphp-gaps"))
    assert set(shared.index) <= set(own.index) and len(own) == 5  # dphp-gaps' seeds were all run again in table8
    both = Mark.parse(f"table8 + dphp-gaps | {setup}").values({}, source)
    assert both.to_dict() == own.to_dict()  # one value a seed, table8's
    reversed_ = Mark.parse(f"dphp-gaps + table8 | {setup}").values({}, source)
    assert list(reversed_.index) == [0, 1, 2, 3, 4]
    assert reversed_[:2].tolist() == shared[:2].tolist() and reversed_[3:].tolist() == own[3:].tolist()
    # the reruns reproduce the earlier runs (other commits) to within 0.001 3-way TV
    assert (own[shared.index] - shared).abs().max() < 1e-3
