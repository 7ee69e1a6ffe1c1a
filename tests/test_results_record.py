"""The results record (results/runs/): every committed record's privacy claim stands from the
record alone; export and import keep every number; dirty runs are refused or marked; the
tables' statistics (CIs, medians, seed counts) are what scipy computes."""

from __future__ import annotations

import dataclasses
import json
import math

import pandas as pd
import pytest

from bench.harness import tracking
from bench.harness import provenance
from bench.harness.record import (
    LEGACY_LEDGER,
    Record,
    RecordError,
    export_store,
    import_records,
    ledger_problem,
    FAILED_LEDGER,
    load_records,
    write_record,
)
from bench.report.source import MlflowSource, RecordSource
from bench.report.render import render_all
from bench.report.tables import DIRTY_MARK, FEW_SEEDS_MARK, summary_text
from tests.conftest import REPO, run_cli

COMMITTED = REPO / "results" / "runs"


def test_every_committed_record_s_privacy_claim_is_reproduced_from_the_record_alone():
    everything = load_records(COMMITTED)
    # a failed cell's record (a library that crashed, a timeout) holds its reason and no numbers
    assert all(r.ledger is not None or r.ledger_missing == FAILED_LEDGER for r in everything if r.status == "FAILED")
    records = [r for r in everything if r.status == "FINISHED" and r.kind == "cell"]
    assert records, "results/runs holds the committed record"
    # an audit (`bench audit`, exported) releases nothing: it holds a bound, its target and its code
    for audit in (r for r in everything if r.kind == "audit"):
        assert {"audit.epsilon_lower_bound", "audit.epsilon_target"} <= set(audit.metrics), audit.label
        assert len(audit.code.commit) == 40 and not audit.code.dirty, audit.label
    with_ledger = [r for r in records if r.ledger is not None]
    problems = {r.label: ledger_problem(r) for r in with_ledger}
    assert {label: why for label, why in problems.items() if why} == {}
    # a record without its ledger says why; none hides it
    assert all(r.ledger_missing for r in records if r.ledger is None)
    assert {r.ledger_missing for r in records if r.ledger is None} <= {LEGACY_LEDGER}


def private_gaussian_record():
    """A committed private record of Gaussian releases only (ε = ∞ ones add no noise to halve)."""
    return next(
        r
        for r in load_records(COMMITTED)
        if r.ledger is not None
        and r.ledger["releases"]
        and math.isfinite(float(r.ledger["target"]["epsilon"]))
        and all(release["kind"] == "gaussian" and release["noise_multiplier"] > 0 for release in r.ledger["releases"])
    )


def test_a_record_whose_releases_do_not_support_its_claim_is_caught():
    """The check recomputes from the releases, so a ledger that claims ε = 1 for releases with half
    the noise, or for twice as many of them, fails — it does not trust the recorded ε."""
    record = private_gaussian_record()
    assert ledger_problem(record) is None
    for broken_field, factor in (("noise_multiplier", 0.5), ("compositions", 2)):
        ledger = json.loads(json.dumps(record.ledger))
        for release in ledger["releases"]:
            release[broken_field] *= factor
        broken = dataclasses.replace(record, ledger=ledger)
        assert "independent accountant finds" in ledger_problem(broken)
    wrong_target = json.loads(json.dumps(record.ledger))
    wrong_target["target"]["epsilon"] = 10.0
    assert "target ε" in ledger_problem(dataclasses.replace(record, ledger=wrong_target))


def test_no_record_is_newer_than_an_export_of_itself_and_files_are_named_by_their_cell():
    for record in load_records(COMMITTED):
        assert record.key in record.file_name()
    keys = [(r.experiment, r.key) for r in load_records(COMMITTED)]
    assert len(keys) == len(set(keys)), "one record per cell"


@pytest.fixture(scope="module")
def grid_store(tmp_path_factory):
    """One small grid (real and dp-merf on gmm2d, 2 seeds) for the tests of this module; each test
    works on a copy of its store (the artifacts stay in this folder, which the store names)."""
    import os
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("grid")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "run",
            "--methods",
            "real,dp-merf",
            "--datasets",
            "gmm2d",
            "--eps",
            "1",
            "--seeds",
            "0-1",
            "--jobs",
            "2",
            "--profile",
            "smoke",
            "--set",
            "dp-merf.epochs=1",
            "--no-progress",
            "--experiment",
            "rec",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return folder / "mlflow.db"


def _cli_grid(workdir, grid_store):
    import shutil

    shutil.copy(grid_store, workdir / "mlflow.db")


def test_export_then_import_keeps_every_number_ledger_and_provenance(workdir, grid_store):
    _cli_grid(workdir, grid_store)
    client = tracking.client()
    out = workdir / "runs"
    summary = export_store(client, ["rec"], out, allow_dirty=True)
    assert summary.written == 4 and summary.without_ledger == 0
    records = load_records(out, "rec")
    merf = next(r for r in records if r.cell.method == "dp-merf")
    assert ledger_problem(merf) is None and merf.ledger["releases"]
    assert merf.ledger["independent"]["epsilon"] == pytest.approx(1.0, rel=1e-3)
    assert merf.cell.key == merf.key and merf.split.n_train > 0 and merf.cell.param_sources
    assert merf.code.commit == provenance.git_commit().removesuffix("-dirty")
    assert merf.machine["cpu"] != "not recorded" and merf.machine["versions"]["torch"]
    assert merf.machine["platform"] != "not recorded"
    assert "time.fit_s" in merf.timings and "time.fit_s" not in merf.metrics

    # tables from the store and from the record are the same text
    from_store = render_all("rec", None, "md", source=MlflowSource())
    assert render_all("rec", None, "md", source=RecordSource(out)) == from_store

    # a second export changes nothing; an import into a new store gives the same table again
    before = {p.name: p.read_text() for p in (out / "rec").iterdir()}
    export_store(client, ["rec"], out, allow_dirty=True)
    assert {p.name: p.read_text() for p in (out / "rec").iterdir()} == before
    imported = run_cli("import", str(out), env={"MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'imported.db'}"})
    assert imported.returncode == 0 and "imported 4 run(s)" in imported.stdout, imported.stderr
    again = run_cli("import", str(out), env={"MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'imported.db'}"})
    assert "imported 0 run(s)" in again.stdout and "4 already there" in again.stdout
    table = run_cli("table", "--experiment", "rec", env={"MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'imported.db'}"})
    assert table.returncode == 0 and table.stdout.strip() == from_store.strip()
    # issue 61: evaluate called imported runs "fitted before samples were kept": a record holds no sample
    evaluated = run_cli(
        "evaluate",
        "--experiment",
        "rec",
        "--evaluators",
        "nll",
        "--rerun",
        env={"MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'imported.db'}"},
    )
    assert "4 without a stored sample" in evaluated.stdout, evaluated.stdout + evaluated.stderr
    assert evaluated.stdout.count("imported from a record, which holds no synthetic rows") == 4
    # into the store it came from (issue 61: every run was duplicated): nothing is added
    assert import_records(client, out) == (0, 4)
    assert len(list(tracking.iter_runs(client, tracking.experiment_id(client, "rec", create=False)))) == 4


def test_export_refuses_dirty_runs_unless_asked_and_tables_mark_them(workdir, grid_store):
    _cli_grid(workdir, grid_store)
    client = tracking.client()
    runs = list(tracking.iter_runs(client, tracking.experiment_id(client, "rec", create=False)))
    for run in runs:  # one run from uncommitted code, whatever state this checkout is in
        dirty = run.data.params["method"] == "real" and run.data.params["seed"] == "0"
        client.set_tag(run.info.run_id, "git_commit", "0" * 40 + ("-dirty" if dirty else ""))

    refused = run_cli("export", "--experiment", "rec", "--out", str(workdir / "clean"))
    assert refused.returncode == 0
    assert "1 from uncommitted code skipped" in refused.stdout and "--allow-dirty" in refused.stderr
    assert len(load_records(workdir / "clean")) == 3

    marked = run_cli("export", "--experiment", "rec", "--out", str(workdir / "all"), "--allow-dirty")
    assert "exported 4" in marked.stdout
    records = load_records(workdir / "all")
    assert sum(r.code.dirty for r in records) == 1
    table = run_cli("table", "--experiment", "rec", "--records", str(workdir / "all"), "--metric", "nll.mean")
    uniform_cell = next(line for line in table.stdout.splitlines() if line.startswith("| gmm2d"))
    assert uniform_cell.count(DIRTY_MARK) == 1, table.stdout  # the real cell only


def test_record_folder_keeps_the_later_run_of_a_cell_and_bad_input_is_one_line(tmp_path):
    record = next(r for r in load_records(COMMITTED) if r.kind == "cell")
    later = dataclasses.replace(record, run_id="later", start_time=record.start_time + 1, metrics={"x.y": 1.0})
    assert write_record(tmp_path, later) is not None
    assert write_record(tmp_path, record) is None  # the folder holds a later run of the cell
    (only,) = load_records(tmp_path)
    assert only.run_id == "later"
    assert [p.suffix for p in (tmp_path / record.experiment).iterdir()] == [".json"]  # no temporary file left

    missing = run_cli("table", "--records", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "export" in missing.stderr
    (tmp_path / record.experiment / "broken.json").write_text("{")
    broken = run_cli("table", "--records", str(tmp_path), "--experiment", record.experiment)
    assert broken.returncode == 2 and "not a readable run record" in broken.stderr


def _damaged(record_json: dict, damage: str) -> str:
    data = json.loads(json.dumps(record_json))
    where, _, value = damage.partition("=")
    if where == "whole":
        return value
    target = data
    *path, last = where.split(".")
    for part in path:
        target = target[part]
    if value == "<deleted>":
        del target[last]
    else:
        target[last] = json.loads(value)
    return json.dumps(data)


@pytest.mark.parametrize(
    "damage",
    [
        "whole=[1, 2]",
        'whole="a string"',
        "metrics=[1, 2]",
        'metrics.x="high"',
        "metrics.x=[1]",
        "params.epsilon=1.0",
        'start_time="yesterday"',
        "start_time=true",
        'kind="dataset"',
        'code="abc"',
        "cell=[1]",
        'cell.epsilon="one"',
        'cell.calibrator="loose"',
        "cell.seed=<deleted>",
        'cell.colour="red"',
        "ledger=5",
        "tags=<deleted>",
    ],
)
def test_a_record_of_the_wrong_shape_is_one_line(tmp_path, damage):
    """Issue 61: a record with a field of the wrong type or shape (edited or damaged by hand, not
    only cut short) was an 'unexpected' crash, or read silently and failed later in a table."""
    record = next(r for r in load_records(COMMITTED) if r.kind == "cell")
    text = _damaged(json.loads(record.to_json()), damage)
    with pytest.raises(RecordError, match="broken.json is not a") as refused:
        Record.from_json(text, "broken.json")
    assert "\n" not in str(refused.value)


def test_a_damaged_record_in_a_folder_stops_the_command_in_one_line(tmp_path):
    record = next(r for r in load_records(COMMITTED) if r.kind == "cell")
    folder = tmp_path / record.experiment
    folder.mkdir()
    (folder / "damaged.json").write_text(_damaged(json.loads(record.to_json()), 'metrics.x="high"'))
    result = run_cli("table", "--records", str(tmp_path), "--experiment", record.experiment)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "damaged.json is not a readable run record: metrics holds a value that is not a number" in result.stderr


def test_a_record_survives_json_with_infinite_values():
    record = next(r for r in load_records(COMMITTED) if r.kind == "cell")
    odd = dataclasses.replace(record, metrics={"a.b": math.inf, "a.c": math.nan, "a.d": 0.25})
    back = Record.from_json(odd.to_json())
    assert back.metrics["a.b"] == math.inf and math.isnan(back.metrics["a.c"]) and back.metrics["a.d"] == 0.25
    json.loads(odd.to_json(), parse_constant=pytest.fail)  # strict JSON: no Infinity/NaN tokens
    ledger = {
        "target": {"epsilon": math.inf, "delta": 0.0},
        "spent": {"epsilon": math.inf, "delta": 0.0},
        "releases": [],
    }
    real = dataclasses.replace(record, ledger=ledger)  # a non-private run's ledger
    json.loads(real.to_json(), parse_constant=pytest.fail)
    assert Record.from_json(real.to_json()).ledger["target"]["epsilon"] == math.inf


def test_cells_carry_the_t_interval_the_median_for_heavy_tails_and_mark_few_seeds():
    from scipy import stats

    values = pd.Series([0.570, 0.661, 0.619, 0.676, 0.649])
    low, high = stats.t.interval(0.95, 4, loc=values.mean(), scale=stats.sem(values))
    assert summary_text(values) == f"0.635 ± 0.0419 [{low:.3f}, {high:.3f}] (5)"
    # the gmm2d NLL of the issue: one seed far out; the mean (8.63×10⁵) says nothing typical
    nll = pd.Series([4.6e5, 5.3e5, 5.7e5, 5.7e5, 21.8e5])
    assert summary_text(nll, heavy_tailed=True) == "median 570,000 [530,000, 570,000] (5)"
    assert summary_text(values[:2]).endswith(f"(2){FEW_SEEDS_MARK}") and "[" not in summary_text(values[:2])
    assert summary_text(values[:1]) == f"0.570 (1){FEW_SEEDS_MARK}"
    assert summary_text(values, dirty=True).endswith(f"(5){DIRTY_MARK}")


def test_the_marks_are_scipy_s_tests_at_the_five_percent_level():
    from scipy import stats

    from bench.report.stats import BETTER_MARK, PAPER_MARK, WORSE_MARK, marks, one_sample, paired

    ours = pd.Series([0.570, 0.661, 0.619, 0.676, 0.649], index=range(5))
    test = one_sample(ours, 0.688, 3)
    assert test.p == pytest.approx(stats.ttest_1samp(ours, 0.688).pvalue) and test.significant
    assert not one_sample(ours, 0.64, 3).significant
    assert one_sample(ours[:2], 0.688, 3) is None  # too few seeds: never tested
    uniform = pd.Series([0.50, 0.55, 0.52, 0.49, 0.53, 0.9], index=range(6))  # seed 5 has no partner
    versus = paired(ours, uniform, 3)
    assert versus.n == 5 and versus.p == pytest.approx(stats.ttest_rel(ours, uniform[:5]).pvalue)
    assert marks(test, versus, higher_is_better=True) == PAPER_MARK + BETTER_MARK
    assert marks(None, versus, higher_is_better=False) == WORSE_MARK  # a higher TV is worse
    assert marks(None, versus, higher_is_better=None) == ""  # a diagnostic has no better side


def test_report_tables_mark_and_spell_out_each_test():
    report = (REPO / "results" / "REPORT.md").read_text()
    assert "The tests behind the marks" in report
    spelled = [line for line in report.splitlines() if "| paper | Δ = " in line or "| uniform | Δ = " in line]
    assert spelled and all(", p = " in line for line in spelled)


def test_show_prints_a_committed_record_with_its_ledger_and_its_recomputation():
    record = private_gaussian_record()
    shown = run_cli("show", record.run_id, "--records", str(COMMITTED))
    assert shown.returncode == 0, shown.stderr
    assert f"run {record.run_id}" in shown.stdout and "releases (" in shown.stdout
    assert "recomputed from this record by the independent accountant: the claim stands" in shown.stdout
    missing = run_cli("show", "no-such-run", "--records", str(COMMITTED))
    assert missing.returncode == 2 and "no run 'no-such-run' in the record" in missing.stderr


def test_a_failed_cell_is_exported_with_its_reason_and_listed_by_the_report(workdir, monkeypatch):
    """issue 60: a library that crashes is a recorded cell, not a lost one — exported as a FAILED
    record (its reason, no numbers, no ledger claimed) and listed under its preset's section;
    an interrupted run is not a result and is not exported."""
    import math

    import pandas as pd

    from bench.harness.grid import GridSpec
    from bench.harness.record import failure_reason
    from bench.report.preset import Preset
    from bench.report.report import failed_blocks

    env = {"DPBENCH_PLUGINS": "dpbench_test_plugins"}
    failed = run_cli(
        "run", "--methods", "test-raising", "--datasets", "cervical", "--experiment", "fails", "--no-progress", env=env
    )
    assert failed.returncode == 1, failed.stdout + failed.stderr
    out = workdir / "records"
    exported = run_cli("export", "--experiment", "fails", "--out", str(out), "--allow-dirty")  # clean in CI
    assert exported.returncode == 0, exported.stdout + exported.stderr
    (record,) = load_records(out)
    assert record.status == "FAILED" and record.ledger_missing in (None, FAILED_LEDGER)
    assert "deliberate failure for the test" in failure_reason(record.tags)
    source = RecordSource(out)
    assert source.finished_runs("fails") == []  # no numbers from a failed cell
    from bench.report import report as report_module

    # the preset's cells are the failed one (the test plugin is registered in the CLI's process only)
    monkeypatch.setattr(report_module, "grid_cells", lambda grid, experiment: [record.cell])
    preset = Preset("p", "P", "", "fails", (GridSpec(("uniform",), ("cervical",), [1.0], [0]),), (), {}, "")
    (intro, listing) = failed_blocks(preset, pd.DataFrame(columns=["method_name", "dataset"]), source)
    assert "Failed here (1 cells)" in intro.text
    assert listing.items[0].startswith(record.label) and "deliberate failure" in listing.items[0]
    assert failure_reason({"error": "interrupted (SIGTERM) before the cell finished; rerun to resume"}) is None
    assert failure_reason({"error": "x", "outbox.waiting": "1"}) is None
    reaped = "killed: its runner (vm:1) stopped without finishing the cell (kill -9, crash or power loss)"
    assert failure_reason({"error": reaped}) is None  # the runner died, not the method: rerun to resume
    assert not math.isnan(record.start_time)

    # a failed run killed before its cell was stored cannot be rebuilt: skipped with a warning, the
    # others exported (an export that stopped there kept a whole campaign's runs from the record)
    client = tracking.client()
    lost = client.create_run(
        tracking.experiment_id(client, "fails"), tags={"cell_key": "0" * 20, "cell": "lost/cell", "error": "crashed"}
    )
    client.set_terminated(lost.info.run_id, status="FAILED")
    again = run_cli("export", "--experiment", "fails", "--out", str(workdir / "again"), "--allow-dirty")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "warning: not exported, its cell cannot be rebuilt: lost/cell" in again.stderr
    assert "1 skipped: their cell cannot be rebuilt" in again.stdout
    assert [r.label for r in load_records(workdir / "again")] == [record.label]
