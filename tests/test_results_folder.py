"""results/ holds only what is regenerated from the committed results record (REPORT.md,
REPORT.html, report_files/), the record itself (runs/), the design card's timing record and the README that reads the
numbers, and every results/ path the READMEs and the docs/ pages name exists: a table whose runs are
gone cannot linger there, and no README or docs page points at a file that is not there."""

from __future__ import annotations

import re

from tests.conftest import REPO

RESULTS = REPO / "results"
# name → why it may be in results/
ALLOWED = {
    "README.md": "reads the numbers of REPORT.md, with the commands behind them",
    "REPORT.md": "python -m bench report --out results",
    "REPORT.html": "python -m bench report --out results",
    "report_files": "python -m bench report --out results (plots and sample grids)",
    "runs": "the committed results record behind REPORT.md: one JSON per run (python -m bench export)",
    "design_card.md": "the design card's command, timed (a performance record, not an MLflow table)",
}


def test_results_holds_only_the_report_its_record_and_named_files():
    present = {path.name for path in RESULTS.iterdir()}
    assert present - set(ALLOWED) == set(), "results/ files not regenerated from the committed record"
    assert not list(RESULTS.rglob("*.db")), "the record is text: no SQLite store is committed"
    assert {path.suffix for path in (RESULTS / "runs").rglob("*") if path.is_file()} == {".json"}
    stray = [p.name for p in (RESULTS / "report_files").iterdir() if p.suffix != ".png"]
    assert stray == []


def test_every_results_path_a_readme_names_exists():
    named = []
    pages = sorted((REPO / "docs").glob("*.md"))
    assert pages, "docs/ holds the reference pages the README links to"
    # the README, results/README.md and the docs pages (whose links read ../results/…: the same paths)
    for readme in (REPO / "README.md", RESULTS / "README.md", *pages):
        named += [
            m.removeprefix("../").rstrip(".,;:)") for m in re.findall(r"(?:\.\./)?results/[\w./-]+", readme.read_text())
        ]
    # results/README.md also names its neighbours without the folder: `REPORT.md`, `report_files/…`
    named += [
        f"results/{m}"
        for m in re.findall(r"`([\w./-]+\.(?:md|html|png|db))`", (RESULTS / "README.md").read_text())
        if not m.startswith(("results/", "methods/", "bench/", "tests/", "benchmarks/"))
    ]
    missing = sorted({path for path in named if not (REPO / path).exists()})
    assert missing == [], f"named in a README or docs page but not in the repository: {missing}"


def test_the_preset_table_of_the_docs_names_every_preset_with_its_experiment():
    from bench.report.presets import PRESETS

    rows = [line for line in (REPO / "docs" / "results.md").read_text().splitlines() if line.startswith("| `")]
    for preset in PRESETS.values():
        row = next((r for r in rows if f"`{preset.name}`" in r.split("|")[1]), None)
        assert row is not None, f"docs/results.md's preset table lacks {preset.name}"
        names = [n.strip(" `") for n in row.split("|")[1].split("/")]
        experiments = [e.strip(" `") for e in row.split("|")[3].split("/")]
        assert experiments[names.index(preset.name) if len(experiments) > 1 else 0] == preset.experiment, row


def test_the_committed_report_names_the_clean_code_it_was_regenerated_by():
    """REPORT's header names the commit of the code that wrote it; one regenerated from a working
    tree with uncommitted changes (``-dirty``) names code nobody can check out."""
    header = (REPO / "results" / "REPORT.md").read_text(encoding="utf-8").split("\n\n", 2)[1]
    code = re.search(r"\(code ([0-9a-f]{40}(?:-dirty)?)\)", header)
    assert code is not None, header[:300]
    assert not code.group(1).endswith("-dirty"), (
        "results/REPORT.md was regenerated from uncommitted code: commit, then `python -m bench report` again"
    )
