"""``python -m bench evaluate`` (issue 30): stored samples are scored by new evaluators into the
same runs, without refitting, idempotently; a run fitted before samples were kept is reported."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from bench.api.registry import DATASETS
from bench.harness import tracking
from bench.harness import provenance
from bench.harness.samples import SAMPLE_FILE, load_synthetic
from tests.conftest import run_cli

DATA_DIR = os.environ.get("DPBENCH_DATA_DIR")
pytestmark = pytest.mark.skipif(not DATA_DIR, reason="needs DPBENCH_DATA_DIR (cervical)")

COUNTING_PLUGIN = """
import os
from bench.api import DataKind, method
from methods.baselines import uniform


@method("counting-uniform", "uniform, counting its fits in the file $FIT_COUNTER",
        kinds={DataKind.TABULAR, DataKind.DISCRETE}, data_independent=True)
def counting_uniform(data, context):
    with open(os.environ["FIT_COUNTER"], "a") as counter:
        counter.write("fit\\n")
    return uniform.fit(data, context)
"""


def _runs(experiment: str):
    client = tracking.client()
    return list(tracking.iter_runs(client, tracking.experiment_id(client, experiment, create=False)))


def test_evaluate_adds_metrics_to_old_runs_without_refitting(workdir, monkeypatch):
    (workdir / "plugins" / "counting_plugin.py").write_text(COUNTING_PLUGIN)
    counter = workdir / "fits.txt"
    env = {"DPBENCH_PLUGINS": "dpbench_test_plugins,counting_plugin", "FIT_COUNTER": str(counter)}
    fitted = run_cli(
        "run",
        "--methods",
        "counting-uniform",
        "--datasets",
        "cervical",
        "--seeds",
        "0-1",
        "--jobs",
        "2",
        "--evaluators",
        "downstream",
        "--experiment",
        "old",
        "--no-progress",
        env=env,
    )
    assert fitted.returncode == 0, fitted.stdout + fitted.stderr
    assert counter.read_text().count("fit") == 2
    samples = sorted(workdir.glob(f"mlartifacts/*/artifacts/{SAMPLE_FILE}"))
    assert len(samples) == 2
    stored, meta = load_synthetic(samples[0], DATASETS.get("cervical").schema)
    assert meta["private_rows"] is False and meta["rows_kept"] == meta["rows_generated"] == len(stored)

    first = run_cli("evaluate", "--experiment", "old", "--evaluators", "privacy,fidelity", env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "2 scored" in first.stdout and counter.read_text().count("fit") == 2  # no method was fitted
    runs = _runs("old")
    assert len(runs) == 2
    for run in runs:
        assert {"privacy.mia_auc", "fidelity.detection_auc", "downstream.roc_auc"} <= set(run.data.metrics)
        assert run.data.tags["evaluated_later"] == "fidelity,privacy"
        assert run.data.tags["evaluated_later.git_commit"] == provenance.git_commit()
        for name in ("fidelity", "privacy"):  # per evaluator: a later pass at another commit leaves these
            assert run.data.tags[f"evaluated_later.{name}.git_commit"] == provenance.git_commit()

    # the shadow-model attack refits the run's method (rebuilt from its stored cell) on shadow sets
    # only: two shadows a run, the runs' own fits untouched
    shadows = run_cli(
        "evaluate", "--experiment", "old", "--evaluators", "shadow-mia", "--eval-set", "shadow-mia.shadows=2", env=env
    )
    assert shadows.returncode == 0 and "2 scored" in shadows.stdout, shadows.stdout + shadows.stderr
    assert counter.read_text().count("fit") == 2 + 2 * 2
    assert all(0 <= run.data.metrics["shadow-mia.shadow_auc"] <= 1 for run in _runs("old"))

    again = run_cli("evaluate", "--experiment", "old", "--evaluators", "privacy", env=env)
    assert again.returncode == 0 and "2 up to date" in again.stdout, again.stdout + again.stderr

    history = tracking.client().get_metric_history(runs[0].info.run_id, "privacy.mia_auc")
    assert len(history) == 1  # idempotent: not logged twice

    # --runs: one run scored again, the other left alone; an id the experiment lacks is a usage error
    one = run_cli(
        "evaluate", "--experiment", "old", "--evaluators", "privacy", "--rerun", "--runs", runs[1].info.run_id, env=env
    )
    assert one.returncode == 0 and "1 run(s) of old: 1 scored" in one.stdout, one.stdout + one.stderr
    assert len(tracking.client().get_metric_history(runs[0].info.run_id, "privacy.mia_auc")) == 1
    assert len(tracking.client().get_metric_history(runs[1].info.run_id, "privacy.mia_auc")) == 2
    typo = run_cli("evaluate", "--experiment", "old", "--evaluators", "privacy", "--runs", "0123abcd", env=env)
    assert typo.returncode == 2 and "no finished run 0123abcd" in typo.stderr and "Traceback" not in typo.stderr

    shutil.rmtree(samples[0].parent / SAMPLE_FILE, ignore_errors=True)
    samples[0].unlink()  # as a run fitted before samples were kept
    missing = run_cli("evaluate", "--experiment", "old", "--evaluators", "nll,privacy", "--rerun", env=env)
    assert "without a stored sample" in missing.stdout and "1 without a stored sample" in missing.stdout, missing.stdout


def test_evaluate_scores_again_an_evaluator_one_of_whose_parts_failed(workdir):
    """A classifier that timed out leaves its evaluator's metrics incomplete (tag
    ``errors.<evaluator>``): ``evaluate`` without ``--rerun`` scores that evaluator again, and once
    every part succeeds the tag is gone and a further pass finds the run up to date."""
    env = {"DPBENCH_PLUGINS": "dpbench_test_plugins"}
    grid = ("run", "--methods", "uniform", "--datasets", "cervical", "--experiment", "flaky", "--no-progress")
    fitted = run_cli(*grid, "--evaluators", "test-flaky-part", env={**env, "FLAKY_PART_FAILS": "1"})
    assert fitted.returncode == 0, fitted.stdout + fitted.stderr
    (run,) = _runs("flaky")
    assert run.data.tags["errors.test-flaky-part"] == "slow-part"
    still = run_cli(
        "evaluate", "--experiment", "flaky", "--evaluators", "test-flaky-part", env={**env, "FLAKY_PART_FAILS": "1"}
    )
    assert still.returncode == 0 and "1 scored" in still.stdout, still.stdout + still.stderr
    assert "errors.test-flaky-part" in _runs("flaky")[0].data.tags  # failed again: still incomplete
    healed = run_cli("evaluate", "--experiment", "flaky", "--evaluators", "test-flaky-part", env=env)
    assert healed.returncode == 0 and "1 scored" in healed.stdout, healed.stdout + healed.stderr
    (run,) = _runs("flaky")
    assert "errors.test-flaky-part" not in run.data.tags and run.data.metrics["test-flaky-part.score"] == 1.0
    again = run_cli("evaluate", "--experiment", "flaky", "--evaluators", "test-flaky-part", env=env)
    assert again.returncode == 0 and "1 up to date" in again.stdout, again.stdout + again.stderr


def test_a_sample_from_another_schema_is_refused(tmp_path):
    from bench.harness.samples import SampleError, save_synthetic

    cervical = DATASETS.get("cervical").load(DATA_DIR, 0)
    save_synthetic(cervical.train, tmp_path / SAMPLE_FILE, dataset="cervical", private_rows=True)
    loaded, meta = load_synthetic(tmp_path / SAMPLE_FILE, cervical.train.schema)
    assert np.array_equal(loaded.x, cervical.train.x) and meta["private_rows"]
    with pytest.raises(SampleError, match="not those of dataset 'cervical'"):
        load_synthetic(tmp_path / SAMPLE_FILE, DATASETS.get("gmm2d").schema)


def test_one_fit_per_setup_a_second_grid_only_scores_what_its_evaluators_add(workdir):
    """Two grids of the same setups with other evaluators (as DP-HP Fig. 6 and Fig. 3 are): the
    second fits nothing, scores the stored samples with its evaluators into the same runs, and a
    third run of either is skipped whole. A rerun (--rerun) fits again."""
    (workdir / "plugins" / "counting_plugin.py").write_text(COUNTING_PLUGIN)
    counter = workdir / "fits.txt"
    env = {"DPBENCH_PLUGINS": "dpbench_test_plugins,counting_plugin", "FIT_COUNTER": str(counter)}
    grid = (
        "run",
        "--methods",
        "counting-uniform",
        "--datasets",
        "cervical",
        "--seeds",
        "0-1",
        "--experiment",
        "shared",
        "--no-progress",
        "--evaluators",
    )
    first = run_cli(*grid, "downstream", env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert counter.read_text().count("fit") == 2
    second = run_cli(*grid, "privacy,downstream", env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert counter.read_text().count("fit") == 2, "the second grid refitted a fitted setup"
    assert "2 setup(s) already fitted" in second.stderr
    runs = _runs("shared")
    assert len(runs) == 2
    for run in runs:
        assert {"privacy.mia_auc", "downstream.roc_auc"} <= set(run.data.metrics)
        assert run.data.tags["setup_key"] and run.data.tags["evaluated_later"] == "privacy"
    third = run_cli(*grid, "privacy", env=env)
    assert third.returncode == 0 and counter.read_text().count("fit") == 2, third.stderr
    assert "up to date" in third.stderr

    rerun = run_cli(*grid, "privacy", "--rerun", env=env)
    assert rerun.returncode == 0 and counter.read_text().count("fit") == 4


def test_a_preset_cell_is_finished_by_a_run_of_its_setup_that_holds_its_evaluators_metrics():
    from bench.report.coverage import finished_cell_keys
    import math

    from bench.harness.grid import GridSpec
    from bench.report.preset import Preset, grid_cells
    from bench.report.frame import runs_frame
    from tests.conftest import cell_record

    fitted = GridSpec(("uniform",), ("cervical",), [math.inf], [0, 1], evaluators=("downstream",))
    scored = GridSpec(("uniform",), ("cervical",), [math.inf], [0, 1, 2], evaluators=("privacy",))
    preset = Preset("p", "P", "", "shared", (scored,), (), {}, "")
    runs = [
        cell_record(
            cell,
            {
                "downstream.roc_auc": 0.5,
                **({"privacy.mia_auc": 0.5} if cell.seed == 0 else {}),
                "privacy.epsilon_spent": 0.0,
            },
            f"run{cell.seed}",
            cell.seed,
        )
        for cell in grid_cells(fitted, "shared")
    ]
    wanted = {cell.seed: cell.key for cell in grid_cells(scored, "shared")}
    finished = finished_cell_keys(preset, runs_frame(runs))
    assert wanted[0] in finished  # its setup's run holds privacy's metrics
    assert wanted[1] not in finished  # fitted, not scored by privacy (the ledger's privacy.* is not it)
    assert wanted[2] not in finished  # not fitted


def test_evaluate_draws_the_samples_picture_of_a_run_whose_picture_did_not_come_back(workdir):
    """Issue 55: runs fitted on a lent machine came back with their stored sample but without
    samples.png; `evaluate` draws it from the sample (and says so), once."""
    grid = ["--methods", "dp-merf", "--datasets", "gmm2d", "--profile", "smoke", "--evaluators", "nll"]
    fitted = run_cli("run", *grid, "--experiment", "pictures", "--no-progress")
    assert fitted.returncode == 0, fitted.stdout + fitted.stderr
    (picture,) = list(workdir.rglob("samples.png"))
    picture.unlink()
    drawn = run_cli("evaluate", "--experiment", "pictures", "--evaluators", "nll")
    assert drawn.returncode == 0 and "up to date; drew samples.png" in drawn.stdout, drawn.stdout + drawn.stderr
    assert "1 up to date" in drawn.stdout and picture.is_file() and picture.stat().st_size > 1000
    again = run_cli("evaluate", "--experiment", "pictures", "--evaluators", "nll")
    assert "drew" not in again.stdout and "1 up to date" in again.stdout, again.stdout


def test_cells_a_stored_sample_cannot_score_go_back_to_the_runner_in_their_given_order(monkeypatch):
    """A setup fitted elsewhere (an imported record: no stored sample) is fitted here again, in
    the grid's order — seed 0 first, not after the seeds that were never fitted."""
    from types import SimpleNamespace

    from bench.harness import rescoring

    cells = [
        SimpleNamespace(key=f"k{s}", setup_key=f"s{s}", evaluators=["fid"], evaluator_settings={}, data_dir=None,
                        label=f"seed={s}")
        for s in range(3)
    ]  # fmt: skip
    monkeypatch.setattr(tracking, "is_remote", lambda: False)
    monkeypatch.setattr(tracking, "client", lambda: None)
    monkeypatch.setattr(tracking, "experiment_id", lambda client, name, create=False: "1")
    monkeypatch.setattr(tracking, "finished_cell_keys", lambda client, experiment_id: set())
    monkeypatch.setattr(tracking, "fitted_setups", lambda client, experiment_id: {"s0": ("imported", {})})
    monkeypatch.setattr(tracking, "has_evaluator_metrics", lambda metrics, name: False)
    monkeypatch.setattr(
        rescoring, "rescore", lambda *a, **k: [rescoring.Rescored("imported", "seed=0", "no stored sample")]
    )
    left, scored = rescoring.score_fitted_setups(cells, "e")
    assert [cell.label for cell in left] == ["seed=0", "seed=1", "seed=2"]
    assert [s.status for s in scored] == ["no stored sample"]
