"""Presets: named grids for the seeds' tables and figures, run with `bench run --preset NAME`."""

from __future__ import annotations

import dataclasses
import math
import os
import shlex
from pathlib import Path

import pytest

from bench.cli import build_parser, main
from bench.harness.runargs import grid_spec_from_args
from bench.harness.grid import expand
from bench.harness import tracking
from bench.harness.grid import GridSpec
from bench.report.presets import PRESETS
from bench.report.costs import estimate_cost, logged_seconds
from bench.report.preset import FIVE_SEEDS, Preset, grid_cells
from tests.conftest import REPO


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_expands_and_its_printed_commands_give_the_same_cells(name, monkeypatch):
    from bench.core.paths import DATA_DIR_VARIABLE

    monkeypatch.delenv(DATA_DIR_VARIABLE, raising=False)
    preset = PRESETS[name]
    assert preset.grids and preset.experiment and preset.columns
    for grid in preset.grids:
        cells = grid_cells(grid, preset.experiment)
        assert cells, f"{name}: a grid without cells"
        argv = shlex.split(grid.command(preset.experiment))[3:]  # after "python -m bench"
        again, _ = expand(grid_spec_from_args(build_parser().parse_args(argv)))
        assert [c.key for c in again] == [c.key for c in cells]
        # the typed spec survives its printed arguments unchanged
        assert grid_spec_from_args(build_parser().parse_args(["run", *grid.to_argv()])) == grid
    # every published setup names a column of this preset
    headers = {header for header, _ in preset.columns}
    for setups in preset.published.values():
        for values in setups.values():
            assert set(values) <= headers, name


def test_tabular_presets_carry_the_trivial_baselines():
    for name in ("dphp-table1", "dphp-table2", "dpmerf-table1", "privacy-utility"):
        methods = {m for grid in PRESETS[name].grids for m in grid.methods}
        assert {"uniform", "independent"} <= methods, name


def test_narrowed_commands_keep_only_their_methods_settings():
    grid = GridSpec(("dp-hp", "mst"), ("adult-discrete",), [0.1], FIVE_SEEDS, overrides={"dp-hp": {"prod_order": "5"}})
    assert "--set dp-hp.prod_order=5" in grid.command("x")
    assert "--set" not in grid.narrowed(methods=["mst"], seeds=[3]).command("x")
    assert grid.narrowed(methods=["mst"], seeds=[3]).command("x").endswith("--seeds 3 --experiment x")


def _fig2_key(method: str, profile: str = "paper"):
    from bench.report.costs import cost_key

    grid = PRESETS["dphp-fig2"].grids[0]
    cells = grid_cells(GridSpec((method,), grid.datasets, grid.epsilons, [0], profile=profile), "x")
    return cost_key(cells[0])


def test_cost_counts_cells_and_never_guesses_unmeasured_ones():
    preset = PRESETS["dphp-fig2"]
    cost = estimate_cost(preset, timings={_fig2_key("real"): 60.0, _fig2_key("dp-merf"): 540.0})
    assert cost.cells == 25  # 5 methods × 5 seeds, one ε
    # real and dp-merf have a logged time; three methods have none
    assert cost.seconds == pytest.approx(5 * 540 + 5 * 60) and cost.unmeasured == 15
    assert "15 cells not measured yet" in cost.text()

    assert cost.text().endswith("; GPU: no run logged on one yet")


def test_a_smoke_run_never_prices_a_paper_cell():
    """Issue 31: after one smoke run, Fig. 2's paper cells read "≈ 2 min"; they take 10–12 min.
    A cost is keyed on the whole setting (profile, protocol, evaluators, hyperparameters)."""
    smoke = {_fig2_key("dp-merf", profile="smoke"): 20.0}
    assert _fig2_key("dp-merf", profile="smoke") != _fig2_key("dp-merf")
    cost = estimate_cost(PRESETS["dphp-fig2"], timings=smoke)
    assert cost.unmeasured == cost.cells and cost.seconds == 0


def test_gpu_cost_comes_only_from_runs_logged_on_a_gpu(tmp_path, monkeypatch):
    from bench.harness.cell import CELL_FILE

    """Two runs of the same cell in a real store, one on the CPU and one tagged with a GPU: each
    feeds only its own estimate."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    client = tracking.client()
    experiment = client.create_experiment("timings", artifact_location=str(tmp_path / "artifacts"))
    (cell,) = grid_cells(GridSpec(("dp-merf",), ("gmm2d",), [1.0], [0]), "x")
    for device, fit_seconds in (("cpu", 400.0), ("NVIDIA H100 80GB HBM3", 30.0)):
        run = client.create_run(experiment, tags={"device": device, "cell_key": cell.key})
        for name, value in cell.mlflow_params().items():
            client.log_param(run.info.run_id, name, value)
        client.log_dict(run.info.run_id, cell.to_json(), CELL_FILE)
        client.log_metric(run.info.run_id, "time.fit_s", fit_seconds)
        client.log_metric(run.info.run_id, "time.eval_nll_s", 20.0)
        client.set_terminated(run.info.run_id, "FINISHED")
    cpu, gpu = logged_seconds(), logged_seconds(gpu=True)
    assert cpu == {_fig2_key("dp-merf"): 420.0} and gpu == {_fig2_key("dp-merf"): 50.0}
    cost = estimate_cost(PRESETS["dphp-fig2"], cpu, gpu)
    assert cost.gpu_measured == 5 and cost.gpu_seconds == pytest.approx(5 * 50)
    assert cost.text().endswith("; GPU: ≈ 4 min for the 5 cells measured on one")


def test_a_fit_scored_later_prices_the_cells_that_ask_for_what_it_was_scored_by(tmp_path, monkeypatch):
    """A fit logged with ``--evaluators none`` and scored later by ``bench evaluate`` (its cell names
    no evaluator) prices a cell asking for the evaluators it was scored by, in any order — not a
    documented lower bound of its method (the image-gaps preset read "≥ 54 min" of a 3 h cell)."""
    from bench.harness.cell import CELL_FILE
    from bench.report.costs import cost_key

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    client = tracking.client()
    experiment = client.create_experiment("timings", artifact_location=str(tmp_path / "artifacts"))
    (fitted,) = grid_cells(GridSpec(("dp-merf",), ("gmm2d",), [1.0], [0], evaluators=()), "x")
    run = client.create_run(experiment, tags={"device": "cpu", "cell_key": fitted.key})
    for name, value in fitted.mlflow_params().items():
        client.log_param(run.info.run_id, name, value)
    client.log_dict(run.info.run_id, fitted.to_json(), CELL_FILE)
    for name, seconds in (("time.fit_s", 400.0), ("time.eval_nll_s", 20.0), ("time.eval_fidelity_s", 5.0)):
        client.log_metric(run.info.run_id, name, seconds)
    client.set_terminated(run.info.run_id, "FINISHED")

    (asking,) = grid_cells(GridSpec(("dp-merf",), ("gmm2d",), [1.0], [0], evaluators=("nll", "fidelity")), "x")
    (reordered,) = grid_cells(GridSpec(("dp-merf",), ("gmm2d",), [1.0], [0], evaluators=("fidelity", "nll")), "x")
    (fewer,) = grid_cells(GridSpec(("dp-merf",), ("gmm2d",), [1.0], [0], evaluators=("nll",)), "x")
    timings = logged_seconds()
    assert timings[cost_key(asking)] == timings[cost_key(reordered)] == 425.0
    assert cost_key(fewer) not in timings and cost_key(fitted) not in timings


@pytest.mark.parametrize(
    "arguments,message",
    [
        (["--preset", "dphp-nope"], "unknown preset 'dphp-nope'; valid: dphp-fig2"),
        (["--preset", "dphp-fig2", "--eps", "3"], "preset 'dphp-fig2' has no cell with --eps 3"),
        (["--preset", "dphp-fig2", "--methods", "dp-mrf"], "unknown method 'dp-mrf'"),
        (["--preset", "dphp-fig2", "--set", "dp-merf.epochs=1"], "drop --set"),
        (["--preset", "dphp-fig2", "--profile", "smoke"], "drop --profile"),
        ([], "run needs --methods and --datasets, or --preset NAME"),
    ],
)
def test_preset_usage_errors_are_one_line_and_exit_2(workdir, capsys, arguments, message):
    assert main(["run", *arguments]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and message in error and "\n" not in error


def test_list_presets_shows_each_with_its_cost(workdir, capsys):
    assert main(["list", "presets"]) == 0
    out = capsys.readouterr().out
    for name, preset in PRESETS.items():
        line = next(line for line in out.splitlines() if line.strip().startswith(name + " "))
        assert preset.reproduces in line and " cells" in line
    assert not (workdir / "mlflow.db").exists()  # listing does not create a store
    # with no store of one's own, the committed record's runs price the cells (a fresh clone)
    fig2 = next(line for line in out.splitlines() if line.strip().startswith("dphp-fig2 "))
    assert "25 cells, ≈ " in fig2 and "not measured" not in fig2


def test_run_preset_runs_its_grids_into_its_experiment(workdir, data_dir, monkeypatch, capsys):
    tiny = Preset(
        "tiny",
        "a test",
        "uniform and real on cervical",
        "tiny-exp",
        (
            GridSpec(("uniform",), ("cervical",), [1.0], FIVE_SEEDS),
            GridSpec(("real",), ("cervical",), [math.inf], FIVE_SEEDS),
        ),
        (("ROC", "downstream.roc_auc"),),
    )
    monkeypatch.setitem(PRESETS, "tiny", tiny)
    code = main(["run", "--preset", "tiny", "--seeds", "0", "--no-progress", "--data-dir", str(data_dir)])
    assert code == 0, capsys.readouterr()
    client = tracking.client()
    runs = list(tracking.iter_runs(client, tracking.experiment_id(client, "tiny-exp", create=False)))
    assert sorted(r.data.params["method"] for r in runs) == ["real", "uniform"]
    assert all(r.data.params["seed"] == "0" for r in runs)


def test_a_cell_two_presets_share_is_fitted_once_and_counts_for_both(workdir, data_dir, monkeypatch, capsys):
    """`Preset.shares`: the external preset's built-ins are privacy-utility's own cells (the same
    keys); a cell finished in the experiment a preset shares is not run again by `run --preset`, and
    the report reads it as the preset's (its status, tables and coverage), the preset's own
    experiment first."""
    from bench.report.source import MlflowSource
    from bench.report.status import preset_frame, preset_status

    uniform = GridSpec(("uniform",), ("cervical",), [1.0], FIVE_SEEDS, evaluators=["downstream"])
    first = Preset("first", "a test", "uniform on cervical", "exp-first", (uniform,), (("ROC", "downstream.roc_auc"),))
    real = GridSpec(("real",), ("cervical",), [math.inf], FIVE_SEEDS, evaluators=["downstream"])
    second = Preset(
        "second", "a test", "uniform and real", "exp-second", (uniform, real), first.columns, shares=("exp-first",)
    )
    monkeypatch.setitem(PRESETS, "first", first)
    monkeypatch.setitem(PRESETS, "second", second)
    common = ["--seeds", "0", "--no-progress", "--data-dir", str(data_dir)]
    assert main(["run", "--preset", "first", *common]) == 0
    capsys.readouterr()
    assert main(["run", "--preset", "second", *common]) == 0
    assert (
        "1 cell(s) finished in experiment 'exp-first', which this preset shares: not run again"
        in capsys.readouterr().err
    )
    client = tracking.client()
    runs = list(tracking.iter_runs(client, tracking.experiment_id(client, "exp-second", create=False)))
    assert [r.data.params["method"] for r in runs] == ["real"]  # uniform was not fitted a second time
    frame = preset_frame(second, {}, MlflowSource())
    assert sorted(frame["method"]) == ["real", "uniform"]
    status = preset_status(second, frame)
    assert status.finished == 2 and all(m.seeds == (1, 2, 3, 4) for m in status.missing)
    # a preset that shares nothing reads its own experiment only
    alone = dataclasses.replace(second, shares=())
    assert sorted(preset_frame(alone, {}, MlflowSource())["method"]) == ["real"]


def test_methods_datasets_and_eps_narrow_a_preset_to_the_cells_it_shares_with_them(
    workdir, data_dir, monkeypatch, capsys
):
    """A campaign runs one setup of several presets at a time: `--preset P --methods M --eps E` runs
    exactly P's cells of M at E (a non-private method's cells are at ε = ∞ whatever its grid's ε),
    with P's settings and experiment, so they are the preset's own cells (same keys). A method
    left out is never loaded: its packages may be missing where the narrowed cells run (a GPU lease
    without MST's `mbi` refused DP-HP's cells of DP-HP Table 1)."""
    from bench.api.registry import Plugin
    from bench.api.registry import METHODS

    METHODS._discover()
    monkeypatch.setitem(
        METHODS._plugins, "unloadable", Plugin("unloadable", "no_such_package:method", "its package is missing")
    )
    tiny = Preset(
        "tiny",
        "a test",
        "uniform at two ε and real on cervical",
        "tiny-exp",
        (
            GridSpec(("uniform",), ("cervical",), [1.0, 3.0], FIVE_SEEDS),
            GridSpec(("real",), ("cervical",), [math.inf], FIVE_SEEDS),
            GridSpec(("unloadable", "uniform"), ("cervical",), [9.0], FIVE_SEEDS),
        ),
        (("ROC", "downstream.roc_auc"),),
    )
    monkeypatch.setitem(PRESETS, "tiny", tiny)
    run = ["run", "--preset", "tiny", "--seeds", "0-1", "--no-progress", "--data-dir", str(data_dir)]
    assert main([*run, "--methods", "uniform", "--eps", "3"]) == 0, capsys.readouterr()
    assert main([*run, "--methods", "real", "--eps", "inf", "--datasets", "cervical"]) == 0, capsys.readouterr()
    client = tracking.client()
    runs = list(tracking.iter_runs(client, tracking.experiment_id(client, "tiny-exp", create=False)))
    assert sorted((r.data.params["method"], r.data.params["seed"]) for r in runs) == [
        ("real", "0"),
        ("real", "1"),
        ("uniform", "0"),
        ("uniform", "1"),
    ]
    preset_keys = {
        cell.key
        for grid in tiny.grids[:2]
        for cell in expand(dataclasses.replace(grid.narrowed(seeds=[0, 1]), data_dir=data_dir))[0]
    }
    assert {r.data.tags["cell_key"] for r in runs} <= preset_keys
    assert all(float(r.data.params["epsilon"]) in (3.0, math.inf) for r in runs)
    # the rest of the preset is left to run: one cell per seed at ε = 1 (the unloadable method's
    # grid narrowed to uniform)
    assert main([*run, "--methods", "uniform"]) == 0, capsys.readouterr()
    runs = list(tracking.iter_runs(client, tracking.experiment_id(client, "tiny-exp", create=False)))
    assert len(runs) == 8
    assert main([*run]) == 2  # the whole preset needs the method that cannot load
    assert "'unloadable': cannot load no_such_package:method" in capsys.readouterr().err


def test_the_datasets_the_report_calls_missing_from_the_mirror_are_missing_there(monkeypatch):
    """The report's "not runnable here" line is a claim about the data mirror: each dataset it
    names fails to load from it, with an error naming the file, and each sample that stands in
    for one loads."""
    from bench.core.data import DataError
    from bench.api.registry import DATASETS
    from bench.report.preset import MIRROR_SAMPLES, NOT_IN_MIRROR

    monkeypatch.setenv("DPBENCH_OFFLINE", "1")  # a missing file must fail, not be downloaded
    mirror = Path(os.environ.get("DPBENCH_DATA_DIR") or REPO.parent / "shared" / "data")
    if not mirror.is_dir():
        pytest.skip("no data mirror beside the repository")
    for name, files in NOT_IN_MIRROR.items():
        with pytest.raises(DataError) as error:
            DATASETS.get(name).load(mirror, seed=0)
        assert files.split(" and ")[0] in str(error.value), name
    for name in MIRROR_SAMPLES:
        if name != "covtype-subset":  # 286,048 rows: loading it is a slow test's job
            assert len(DATASETS.get(name).load(mirror, seed=0).train) > 0


def test_reference_rows_come_from_committed_measurements_of_the_same_rows():
    """A preset's reference rows (the authors' code) are read from docs/measurements, written by
    benchmarks/authors_seeds.py: at least 5 seeds, and the per-seed values agree with the file's summary."""
    import json
    import statistics

    from bench.report.preset import MEASUREMENTS, measured_references

    found = 0
    for preset in PRESETS.values():
        for dataset, setups in measured_references(preset).items():
            for (method, _), (label, values) in setups.items():
                assert label and method in {grid_method for grid in preset.grids for grid_method in grid.methods}
                for header, seeds in values.items():
                    assert len(seeds) >= 5 and header in {h for h, _ in preset.columns}, (dataset, header)
                found += 1
        for setups in preset.references.values():
            for measured in setups.values():
                summary = json.loads((MEASUREMENTS / measured.file).read_text())["summary"]
                roc = [v for h, v in measured.values().items() if h.startswith("ROC")][0]
                assert abs(statistics.mean(roc) - summary["roc_mean"]) < 1e-9 and len(roc) == summary["n"]
    assert found


def test_every_transcribed_number_lives_in_the_published_files():
    """Issue 57: one home for published values — bench/report/published/*.toml, each table with its
    source; the presets hold no number but their grids' and setups' ε."""
    import ast

    from bench.api.registry import METHODS
    from bench.report.published import FOLDER, published, published_settings, registered_method, source_of, table_names

    assert len(table_names()) >= 12
    for name in table_names():
        assert "arXiv:" in source_of(name), name
        for dataset, setups in published(name).items():
            for (method, epsilon), columns in setups.items():
                # GS-WGAN: shown, no adapter; a variant row (dp-hp [gamma=0.1]) is its method's with settings
                assert registered_method(method) in METHODS.names() or method == "gs-wgan", (name, method)
                if method != registered_method(method):
                    assert published_settings(name)[dataset][(method, epsilon)], (name, method)
                assert epsilon > 0 and columns, (name, dataset, method)
                for value in columns.values():
                    # a spread comes with the paper's run count: (mean, sd, runs)
                    assert isinstance(value, (float, int, str)) or (
                        len(value) == 3 and value[1] >= 0 and value[2] >= 2
                    ), (
                        name,
                        value,
                    )
    epsilons = {e for preset in PRESETS.values() for grid in preset.grids for e in grid.epsilons}
    epsilons |= {e for preset in PRESETS.values() for setups in preset.published.values() for _, e in setups}
    literals = {
        n.value
        for path in (REPO / "bench" / "report").glob("preset*.py")
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Constant) and isinstance(n.value, float)
    }
    assert literals - epsilons - {0.0} == set()
    assert FOLDER == REPO / "bench" / "report" / "published"


def test_a_published_ablation_row_is_matched_only_by_runs_with_its_settings():
    """Issue 59: DP-HP Tables 5 (γ) and 8 (D_prod) publish several rows of one method at one ε;
    each row is a variant named by its settings, its preset runs one grid per variant, and in the
    table ours sits beside a row only where its runs used that row's settings."""
    import json

    import pandas as pd

    from bench.report.published import published_settings, registered_method, variant_label
    from bench.report.versus import versus_seeds_rows

    assert variant_label("dp-hp", ("dp-hp.gamma=0.1",)) == "dp-hp [gamma=0.1]"
    assert registered_method("dp-hp [gamma=0.1]") == "dp-hp"
    with pytest.raises(ValueError, match="must each read 'dp-hp.param=value'"):
        variant_label("dp-hp", ("dp-merf.gamma=0.1",))
    table5 = PRESETS["dphp-table5"]
    settings = published_settings("dphp-table5")["adult-discrete"]
    assert len(settings) == 7 and all("dp-hp.epochs=8" in items for items in settings.values())
    assert sorted(grid.set_items() for grid in table5.grids) == sorted(settings.values())

    def run(gamma: str, seed: int, tv: float) -> dict:
        hp = {
            "hp.batch_fraction": "0.1",
            "hp.prod_order": "10",
            "hp.prod_dims": "5",
            "hp.epochs": "8",
            "hp.gamma": gamma,
        }
        return {
            "dataset": "adult-discrete",
            "method": f"dp-hp [epochs=8, gamma={gamma}]",
            "method_name": "dp-hp",
            "epsilon": 0.3,
            "seed": seed,
            "settings": json.dumps(hp),
            "marginals.paper.tv_3": tv,
        }

    default = [{**run("1.0", s, 0.47), "method": "dp-hp [epochs=8]"} for s in range(3)]  # γ = 1 is the default
    frame = pd.DataFrame(
        [run("10.0", s, 0.58 + s / 100) for s in range(3)] + [run("0.5", s, 0.5) for s in range(3)] + default
    )
    rows = versus_seeds_rows(
        frame,
        [("3-way (seeds' code)", "marginals.paper.tv_3")],
        table5.published,
        "paper",
        ".3f",
        paper_settings=table5.paper_settings,
    )
    names = [(row[1], row[2]) for row in rows]
    at = names.index(("dp-hp [gamma=10] ε=0.3", "paper")) if ("dp-hp [gamma=10] ε=0.3", "paper") in names else None
    assert at is not None, names
    assert names[at - 1] == ("dp-hp [epochs=8, gamma=10.0] ε=0.3", "ours")  # 10.0 logged is the row's 10
    assert ("dp-hp [epochs=8, gamma=0.5] ε=0.3", "ours") in names  # no published twin: listed after
    assert names.index(("dp-hp [epochs=8, gamma=0.5] ε=0.3", "ours")) > at
    # the default γ is not in our label; beside its twin the row names it as the twin does
    twin = names.index(("dp-hp [gamma=1] ε=0.3", "paper"))
    assert names[twin - 1] == ("dp-hp [epochs=8, gamma=1] ε=0.3", "ours"), names


def test_every_preset_shares_only_experiments_that_hold_some_of_its_cells():
    """A misspelt or stale `Preset.shares` entry would silently read nothing: each names another
    preset's experiment, one with cells of the same keys."""
    by_experiment: dict[str, set[str]] = {}
    for preset in PRESETS.values():
        keys = {cell.key for grid in preset.grids for cell in grid_cells(grid, preset.experiment)}
        by_experiment.setdefault(preset.experiment, set()).update(keys)
    for preset in PRESETS.values():
        own = {cell.key for grid in preset.grids for cell in grid_cells(grid, preset.experiment)}
        for experiment in preset.shares:
            assert experiment != preset.experiment and experiment in by_experiment, (preset.name, experiment)
            assert own & by_experiment[experiment], f"{preset.name} shares no cell with {experiment}"
