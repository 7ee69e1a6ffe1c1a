"""Results tables: aggregation over seeds, non-private rows, best marks, combined cells."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

from bench.report.tables import render, render_combined, summarise
from bench.report.frame import _row_label


def frame():
    rows = []
    for seed, (a, b) in enumerate([(3.0, 5.0), (5.0, 7.0)]):
        rows += [
            {
                "method": "dp-merf",
                "dataset": "gmm2d",
                "epsilon": 1.0,
                "seed": seed,
                "marginals.tv_3": a,
                "marginals.tv_4": 10 * a,
            },
            {
                "method": "dp-merf",
                "dataset": "gmm2d",
                "epsilon": 0.1,
                "seed": seed,
                "marginals.tv_3": b,
                "marginals.tv_4": 10 * b,
            },
            {
                "method": "other",
                "dataset": "gmm2d",
                "epsilon": 1.0,
                "seed": seed,
                "marginals.tv_3": a + 1,
                "marginals.tv_4": 1.0,
            },
            {
                "method": "real",
                "dataset": "gmm2d",
                "epsilon": math.inf,
                "seed": seed,
                "marginals.tv_3": 2.0,
                "marginals.tv_4": 20.0,
            },
        ]
    return pd.DataFrame(rows)


def test_mean_std_and_seed_count_per_cell():
    text, means = summarise(frame(), "marginals.tv_3")
    assert text.loc[("gmm2d", 1.0), "dp-merf"] == "4.00 ± 1.41 (2)◦"
    assert means.loc[("gmm2d", 0.1), "dp-merf"] == pytest.approx(6.0)


def test_non_private_methods_fill_every_epsilon_row():
    text, _ = summarise(frame(), "marginals.tv_3")
    assert text.loc[("gmm2d", 0.1), "real"] == text.loc[("gmm2d", 1.0), "real"] == "2.00 (2 equal)◦"
    assert text.loc[("gmm2d", 0.1), "other"] == ""


def test_best_private_method_is_bold_by_direction():
    table = render(frame(), "marginals.tv_3", "md")
    assert "| gmm2d | 1 | **4.00 ± 1.41 (2)◦** | 5.00 ± 1.41 (2)◦ | 2.00 (2 equal)◦ |" in table  # lower is better
    assert "(lower is better)" in table
    assert "\\textbf{4.00 $\\pm$ 1.41 (2)◦}" in render(frame(), "marginals.tv_3", "latex")


def test_diagnostic_metrics_are_never_bold():
    """A diagnostic (a timing, a count) has no better direction: no bold, no 'is better'."""
    timings = frame().assign(**{"fid.seconds_per_image": frame()["marginals.tv_3"]})
    table = render(timings, "fid.seconds_per_image", "md")
    assert "| gmm2d | 1 | 4.00 ± 1.41 (2)◦ | 5.00 ± 1.41 (2)◦ |" in table
    assert "**" not in table.split("\n", 1)[1] and "is better" not in table
    assert "\\textbf" not in render(timings, "fid.seconds_per_image", "latex")


def test_combined_cells_join_metrics():
    table = render_combined(frame(), ["marginals.tv_3", "marginals.tv_4"], "csv")
    assert "4.00 ± 1.41 (2)◦ / 40.0 ± 14.1 (2)◦" in table


def test_non_default_conventions_get_their_own_rows():
    from tests.conftest import plain_cell

    assert _row_label(plain_cell("real", "adult")) == "adult"
    assert _row_label(plain_cell("real", "adult", protocol="paper")) == "adult [protocol paper]"
    assert _row_label(plain_cell("real", "adult", calibrator="paper")) == "adult [calibrator paper]"
    assert (
        _row_label(plain_cell("dp-merf", "adult", 1.0, delta="1e-06", evaluator_settings={"fid": {"n_samples": 10}}))
        == "adult [delta 1e-06, fid.n_samples=10]"
    )


def test_non_private_variant_of_a_private_method_gets_its_own_row():
    data = frame()
    variant = data[data["method"] == "dp-merf"].head(2).assign(epsilon=math.inf, **{"marginals.tv_3": 9.0})
    text, means = summarise(pd.concat([data, variant]), "marginals.tv_3")
    assert text.loc[("gmm2d", math.inf), "dp-merf"] == "9.00 (2 equal)◦"
    assert text.loc[("gmm2d", math.inf), "real"] == "2.00 (2 equal)◦"
    assert means.loc[("gmm2d", 1.0), "dp-merf"] == pytest.approx(4.0)  # not mixed with the variant
    assert "**9" not in render(pd.concat([data, variant]), "marginals.tv_3", "md")  # no 'best private' at ∞


def test_table1_layout_puts_the_seeds_values_beside_both_conventions():
    from bench.report.versus import render_table1

    rows = [
        {
            "method": "dp-hp",
            "dataset": "adult-discrete [protocol paper]",
            "epsilon": 0.3,
            "seed": seed,
            "marginals.tv_3": 0.2 + seed / 10,
            "marginals.paper.tv_3": 0.4,
        }
        for seed in (0, 1)
    ] + [
        {
            "method": "mst",
            "dataset": "adult-discrete [protocol paper]",
            "epsilon": 0.1,
            "seed": 0,
            "marginals.tv_3": 0.1,
            "marginals.paper.tv_3": 0.15,
        }
    ]
    table = render_table1(pd.DataFrame(rows), "md")
    assert "| dp-hp ε=0.3 | dp-hp ε=0.1 | mst ε=0.3 | mst ε=0.1 |" in table
    assert "| 3 | ours: all C(D,α) subsets | 0.250 ± 0.0707 (2)◦ |  |  | 0.100 (1)◦ |" in table
    assert "| 3 | ours: seeds' code, (α+1)-way | 0.400 (2 equal)◦ |  |  | 0.150 (1)◦ |" in table
    assert "| 3 | seeds' Table 1 | 0.332 | 0.377 |  |  |" in table  # DP-HP (arXiv:2106.05042) Table 1
    assert "| 4 | seeds' Table 1 | 0.418 | 0.467 |  |  |" in table


def image_frame() -> pd.DataFrame:
    """Two seeds of the real data and of DP-HP at ε = 1 on MNIST, one DP-GAN run at ε = 2 (a
    setup the seeds' Fig. 6 lacks); image-downstream and effective-size metrics."""
    from bench.report.versus import FIG6_CLASSIFIERS

    rows = []
    for method, eps, base, seeds in (
        ("real", math.inf, 0.8, (0, 1)),
        ("dp-hp", 1.0, 0.7, (0, 1)),
        ("dp-gan", 2.0, 0.4, (0,)),
    ):
        for seed in seeds:
            accuracy = {
                f"image-downstream.{name}.accuracy": base + 0.01 * i + 0.02 * seed
                for i, name in enumerate(FIG6_CLASSIFIERS)
            }
            rows.append(
                {
                    "method": method,
                    "dataset": "mnist",
                    "epsilon": eps,
                    "seed": seed,
                    **accuracy,
                    "image-downstream.accuracy": float(np.mean(list(accuracy.values()))),
                    "effective-size.acc_n60000": base + 0.02 * seed,
                    "effective-size.acc_n600": base - 0.1,
                }
            )
    return pd.DataFrame(rows)


def test_fig6_layout_follows_each_setup_with_the_seeds_row():
    from bench.report.versus import render_fig6

    table = render_fig6(image_frame(), "md")
    assert (
        "| dataset | setup | numbers | LR | RF | GNB | BNB | LSVC | DT | LDA | Ada | MLP | Bag | GBM | XGB | MEAN |"
        in table
    )
    lines = table.splitlines()
    ours = next(i for i, line in enumerate(lines) if line.startswith("| mnist | real data | ours |"))
    assert lines[ours].startswith("| mnist | real data | ours | 0.810 ± 0.0141 (2)◦ | 0.820 ± 0.0141 (2)◦ |")
    assert lines[ours].endswith("| 0.865 ± 0.0141 (2)◦ |")  # MEAN: the runs' image-downstream.accuracy
    # DP-HP (arXiv:2106.05042) Fig. 6 (github.com/ParkLabML/DP-HP code_balanced/plots/), MNIST, real data and DP-HP ε=1 (LR … XGB, MEAN)
    assert lines[ours + 1] == (
        "| mnist | real data | seeds' Fig. 6 | 0.925 | 0.9688 | 0.555 | 0.842 | 0.918 | 0.8774 | "
        "0.879 | 0.7097 | 0.9782 | 0.9282 | 0.909 | 0.912 | 0.8669 |"
    )
    hp = lines.index(next(line for line in lines if line.startswith("| mnist | DP-HP ε=1 | ours |")))
    assert lines[hp + 1] == (
        "| mnist | DP-HP ε=1 | seeds' Fig. 6 | 0.811 | 0.8155 | 0.5862 | 0.8145 | 0.7714 | 0.5598 | "
        "0.8148 | 0.6739 | 0.8063 | 0.666 | 0.7273 | 0.7982 | 0.7371 |"
    )
    assert "| mnist | DP-MERF ε=1 | seeds' Fig. 6 | 0.7695 |" in table  # the seeds' other setups are shown
    assert "| mnist | DP-GAN ε=2 | ours | 0.400 (1)◦ |" in table  # ours without a seeds' row
    assert "fashion-mnist" not in table  # no run of ours there


def test_fig3_layout_puts_ours_beside_the_seeds_per_size():
    from bench.report.versus import render_fig3

    table = render_fig3(image_frame(), "md")
    assert "| n=60000 | n=30000 | n=12000 | n=6000 | n=3000 | n=1200 | n=600 | n=300 | n=120 | n=60 |" in table
    assert "| mnist | real data | ours | 0.810 ± 0.0141 (2)◦ |  |  |  |  |  | 0.700 (2 equal)◦ |  |  |  |" in table
    # DP-HP (arXiv:2106.05042) Fig. 3 (MNIST): the real data with their stds, DP-HP ε=1 with one std
    assert (
        "| mnist | real data | seeds' Fig. 3 | 0.8669 ± 0.0003 | 0.8574 ± 0.0054 | 0.8379 ± 0.0034 | "
        "0.8316 ± 0.0051 | 0.8170 ± 0.0038 | 0.7880 ± 0.0040 | 0.7484 ± 0.0088 | 0.7084 ± 0.0100 | "
        "0.6174 ± 0.0118 | 0.5350 ± 0.0165 |"
    ) in table
    assert (
        "| mnist | DP-HP ε=1 | seeds' Fig. 3 | 0.7299 ± 0.0103 | 0.7295 | 0.7261 | 0.7237 | 0.7168 | 0.7052 | "
        "0.6927 | 0.6576 | 0.5957 | 0.5314 |"
    ) in table
    assert "| mnist | DP-GAN ε=9.6 | seeds' Fig. 3 | 0.4803 |" in table


def test_image_layouts_need_their_metrics():
    from bench.report.versus import render_fig3, render_fig6
    from bench.report.frame import TableError

    with pytest.raises(TableError):
        render_fig6(frame(), "md")
    with pytest.raises(TableError):
        render_fig3(frame(), "md")


# --------------------------------------------------------------------------------------------
# Numbers: 3 significant digits, no scientific notation for ordinary magnitudes, n always shown
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,text",
    [
        (376_900.0, "377,000"),
        (3_123.0, "3,120"),
        (317_400.0, "317,000"),
        (3.497, "3.50"),
        (0.7371, "0.737"),
        (0.00123, "0.00123"),
        (9.996, "10.0"),
        (12.0, "12.0"),
        (0.0, "0"),
        (1.01e6, "1.01×10⁶"),
        (0.000123, "1.23×10⁻⁴"),
        (-2.5e-7, "-2.50×10⁻⁷"),
        (math.inf, "∞"),
    ],
)
def test_numbers_have_three_significant_digits_and_no_e_notation(value, text):
    from bench.report.tables import format_number

    assert format_number(value) == text


def test_cells_read_mean_std_and_seed_count_and_one_seed_has_no_std():
    from bench.report.tables import summary_text

    assert summary_text(pd.Series([376_000.0, 377_800.0, 380_000.0])) == "378,000 ± 2,000 [373,000, 383,000] (3)"
    assert summary_text(pd.Series([1.01e6])) == "1.01×10⁶ (1)◦"
    assert summary_text(pd.Series([0.5, math.nan, 0.7])) == "0.600 ± 0.141 (2)◦"  # a missing value is no seed
    assert "e+0" not in render(frame().assign(**{"marginals.tv_3": 376_900.0}), "marginals.tv_3", "md")
    assert "$\\times10^{6}$" in render(frame().assign(**{"marginals.tv_3": 1.01e6}), "marginals.tv_3", "latex")


# --------------------------------------------------------------------------------------------
# Grouping: a table aggregates over seeds only, never over runs whose settings differ
# --------------------------------------------------------------------------------------------


def record(
    seed,
    method="dp-merf",
    dataset="gmm2d",
    epsilon=1.0,
    value=1.0,
    profile="paper",
    overrides=None,
    delta=None,
    extra_params=None,
):
    from bench.api.registry import METHODS
    from tests.conftest import cell_record, plain_cell

    private = math.isfinite(epsilon)
    resolved = METHODS.get(method).hyperparameters.resolve(dataset, profile, overrides or {}, private=private).values
    cell = plain_cell(
        method,
        dataset,
        epsilon,
        seed,
        {**resolved, **(extra_params or {})},
        profile=profile,
        evaluators=("nll",),
        **({"delta": delta} if delta else {}),
    )
    return cell_record(cell, {"marginals.tv_3": value}, start_time=seed, n_train=1000 + seed)


def test_profiles_overrides_and_delta_get_their_own_rows_and_seeds_alone_are_averaged():
    from bench.report.frame import runs_frame

    runs = [record(s, value=3.0 + s) for s in (0, 1)]
    runs += [record(s, value=9.0 + s, profile="smoke") for s in (0, 1)]
    runs += [record(s, value=5.0, overrides={"epochs": "1"}) for s in (0, 1, 2)]
    runs += [record(s, value=7.0, delta="1e-06") for s in (0,)]
    runs += [record(s, method="real", epsilon=math.inf, value=2.0, profile="smoke") for s in (0, 1)]
    data = runs_frame(runs)
    text, means = summarise(data, "marginals.tv_3")
    assert text.loc[("gmm2d", 1.0), "dp-merf"] == "3.50 ± 0.707 (2)◦"
    assert text.loc[("gmm2d", 1.0), "dp-merf [profile smoke]"] == "9.50 ± 0.707 (2)◦"
    assert text.loc[("gmm2d", 1.0), "dp-merf [epochs=1]"] == "5.00 (3 equal)"
    assert text.loc[("gmm2d [delta 1e-06]", 1.0), "dp-merf"] == "7.00 (1)◦"
    # `real` has no hyperparameters, so its profile changes nothing and is not a setting
    assert text.loc[("gmm2d", 1.0), "real"] == "2.00 (2 equal)◦"
    assert set(data["method_name"]) == {"dp-merf", "real"}


def test_a_setting_the_labels_do_not_name_is_still_never_averaged():
    from bench.report.frame import runs_frame

    runs = [record(s, value=1.0, extra_params={"retired_option": "a"}) for s in (0, 1)]
    runs += [record(s, value=5.0, extra_params={"retired_option": "b"}) for s in (0, 1)]
    text, _ = summarise(runs_frame(runs), "marginals.tv_3")
    assert list(text.columns) == ["dp-merf [retired_option=a]", "dp-merf [retired_option=b]"]
    assert text.iloc[0].tolist() == ["1.00 (2 equal)◦", "5.00 (2 equal)◦"]


def test_a_rerun_cell_replaces_the_earlier_run():
    from dataclasses import replace

    from bench.report.frame import runs_frame

    (first,) = [record(0, value=1.0)]
    again = replace(first, run_id="rerun", start_time=first.start_time + 10, metrics={"marginals.tv_3": 3.0})
    text, _ = summarise(runs_frame([first, again]), "marginals.tv_3")
    assert text.loc[("gmm2d", 1.0), "dp-merf"] == "3.00 (1)◦"


def test_a_seed_fitted_again_for_other_evaluators_counts_once():
    """A preset that changed what it scores fits a finished seed again with its new evaluators: the
    two cells (one setup, one seed, other keys) are one measurement of that seed. Each metric is
    the newer run's where both have it (FID of seed 0 was counted twice in DP-MEPF's MNIST mean); a
    metric only the older run has stays; another --eval-set value remains a row of its own."""
    from dataclasses import replace

    from bench.report.frame import runs_frame

    first = [record(s, value=1.0 + s) for s in (0, 1)]
    first[0] = replace(
        first[0], metrics={"marginals.tv_3": 1.0, "marginals.tv_2": 0.5}, timings={"time.eval_nll_s": 9.0}
    )

    def rescored(run, start_time, **change):
        cell = replace(run.cell, **change)
        return replace(run, cell=cell, key=cell.key, run_id=cell.key, start_time=start_time)

    refit = rescored(record(0, value=4.0), 10, evaluators=("marginals",))
    assert refit.key != first[0].key and refit.cell.setup_key == first[0].cell.setup_key
    data = runs_frame([*first, refit])
    assert sorted(data["seed"]) == [0, 1]
    text, _ = summarise(data, "marginals.tv_3")
    assert text.loc[("gmm2d", 1.0), "dp-merf"] == "3.00 ± 1.41 (2)◦"  # seeds 0 (the refit's 4.0) and 1 (2.0)
    assert data.loc[data["seed"] == 0, "marginals.tv_2"].tolist() == [0.5]
    assert "time.eval_nll_s" not in data.columns  # what the older run cost is not the row's
    scored_apart = rescored(refit, 11, evaluator_settings={"nll": {"n_samples": 7}})
    assert len(runs_frame([*first, refit, scored_apart])) == 3


def test_table_from_logged_runs_keeps_a_smoke_run_apart_from_the_paper_run(workdir, data_dir):
    """The bug of issue 19: `bench table` put a cell and the same cell under --profile smoke into
    one mean ± std. Real runs through the CLI: DP-MERF on cervical (seconds per cell)."""
    from tests.conftest import run_cli

    common = [
        "--methods",
        "dp-merf",
        "--datasets",
        "cervical",
        "--eps",
        "1",
        "--seeds",
        "0-1",
        "--no-progress",
        "--jobs",
        "2",
        "--data-dir",
        str(data_dir),
        "--experiment",
        "mixed",
    ]
    for extra in ([], ["--profile", "smoke"]):
        result = run_cli("run", *common, *extra, env={"DPBENCH_OFFLINE": "1"})
        assert result.returncode == 0, result.stdout + result.stderr
    table = run_cli("table", "--experiment", "mixed", "--metric", "downstream.roc_auc", "--format", "csv")
    assert table.returncode == 0, table.stderr
    shown = pd.read_csv(io.StringIO(table.stdout), header=0)
    assert list(shown.columns) == ["metric", "dataset", "epsilon", "method", "mean", "std", "n"]
    assert set(shown["method"]) == {"dp-merf", "dp-merf [profile smoke]"} and (shown["n"] == 2).all()
    assert (shown["metric"] == "downstream.roc_auc").all() and shown["mean"].between(0, 1).all()
    # `runs` names the run ids behind those cells, under the same labels, for `show`
    listing = run_cli("runs", "--experiment", "mixed", "--method", "dp-merf", "--dataset", "cervical")
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()[1:]
    assert len(lines) == 4 and sum("| dp-merf [profile smoke] |" in line for line in lines) == 2
    shown_run = run_cli("show", lines[0].split()[0])
    assert shown_run.returncode == 0 and "privacy ledger:" in shown_run.stdout, shown_run.stderr
    nothing = run_cli("runs", "--experiment", "mixed", "--method", "dp-hp")
    assert nothing.returncode == 2 and nothing.stderr.startswith("error: no finished run of method dp-hp")


def test_a_qualified_setup_sits_beside_the_published_row_of_its_method():
    """Ours under a profile or --set label (dp-mepf [profile cpu, …]) is placed right before the
    paper's row of the same registered method and ε; a setup the paper lacks comes after."""
    from bench.report.versus import versus_seeds_rows

    frame = pd.DataFrame(
        {
            "dataset": ["mnist"] * 3,
            "method": ["dp-mepf [profile cpu]", "dp-mepf [profile cpu]", "dp-merf"],
            "method_name": ["dp-mepf", "dp-mepf", "dp-merf"],
            "epsilon": [1.0, 1.0, 1.0],
            "seed": [0, 1, 0],
            "acc": [0.80, 0.82, 0.70],
        }
    )
    published = {"mnist": {("dp-mepf", 10.0): {"ACC": 0.9}, ("dp-mepf", 1.0): {"ACC": 0.893}}}
    rows = versus_seeds_rows(frame, [("ACC", "acc")], published, "paper", ".3f")
    assert [(r[1], r[2]) for r in rows] == [
        ("DP-MEPF ε=10", "paper"),
        ("dp-mepf [profile cpu] ε=1", "ours"),
        ("DP-MEPF ε=1", "paper"),
        ("DP-MERF ε=1", "ours"),
    ]


def test_a_best_of_runs_table_shows_each_column_s_best_over_the_seeds_untested():
    """DP-MERF supp. Table 7 publishes each classifier's best of five runs: ours is the best over
    its seeds in the metric's better direction (highest F1, lowest TV), with no test mark."""
    from bench.report.versus import versus_seeds_rows

    frame = pd.DataFrame(
        {
            "dataset": ["intrusion"] * 3,
            "method": ["dp-merf"] * 3,
            "method_name": ["dp-merf"] * 3,
            "epsilon": [1.0] * 3,
            "seed": [0, 1, 2],
            "downstream.paper.lda.f1_weighted": [0.40, 0.91, 0.75],
            "marginals.tv_2": [0.30, 0.20, 0.25],
        }
    )
    columns = [("LDA", "downstream.paper.lda.f1_weighted"), ("TV", "marginals.tv_2")]
    published = {"intrusion": {("dp-merf", 1.0): {"LDA": 0.950, "TV": 0.1}}}
    tests: list = []
    rows = versus_seeds_rows(frame, columns, published, "paper", ".3f", tests=tests, best_of_seeds=True)
    assert rows[0][3:] == ["0.910 (best of 3)", "0.200 (best of 3)"]
    assert rows[1][2:] == ["paper", "0.950", "0.100"]
    assert not tests


def test_a_method_can_ask_for_a_parameter_in_every_label():
    """dp-mepf declares label_params = ("encoder",): the encoder is named even at its default."""
    from bench.report.frame import _method_label

    from tests.conftest import plain_cell

    cell = plain_cell("dp-mepf", "mnist", 1.0, params={"encoder": "efficientnet-lite0-imagenet"})
    assert _method_label(cell) == "dp-mepf [encoder=efficientnet-lite0-imagenet]"


def test_a_table_title_names_the_median_where_its_cells_are_medians():
    """NLL cells are medians over the seeds (heavy-tailed sums); the title must not say mean ± sd."""
    from bench.report.tables import statistic_legend

    assert statistic_legend(["nll.mean"]) == "median [IQR] (seeds)"
    assert statistic_legend(["downstream.roc_auc"]) == "mean ± sd [95% CI] (seeds)"
    assert "median [IQR] for nll.mean" in statistic_legend(["downstream.roc_auc", "nll.mean"])


def test_a_reference_row_follows_the_paper_row_and_our_rows_are_tested_against_it_by_welch():
    """Another code's seeds on the same rows (the authors' code) sit after the paper's row of the
    setup as mean ± sd (n); each of our rows of that setup gets a Welch test, which scipy agrees with."""
    from scipy import stats

    from bench.report.versus import versus_seeds_rows

    ours = [0.52, 0.65, 0.56, 0.62, 0.59]
    theirs = [0.585, 0.586, 0.604, 0.665, 0.610, 0.648]
    frame = pd.DataFrame(
        {
            "dataset": ["adult-sdgym"] * 5,
            "method": ["dp-merf"] * 5,
            "method_name": ["dp-merf"] * 5,
            "epsilon": [1.0] * 5,
            "seed": range(5),
            "roc": ours,
        }
    )
    tests: list[list[str]] = []
    rows = versus_seeds_rows(
        frame,
        [("ROC", "roc")],
        {"adult-sdgym": {("dp-merf", 1.0): {"ROC": 0.65}}},
        "paper",
        ".3f",
        tests=tests,
        references={"adult-sdgym": {("dp-merf", 1.0): ("authors' code", {"ROC": theirs})}},
    )
    assert [r[2] for r in rows] == ["ours", "paper", "authors' code"]
    assert rows[2][3] == f"{np.mean(theirs):.3f} ± {np.std(theirs, ddof=1):.3f} (6)"
    welch, equivalence, spread = [t for t in tests if t[3] == "authors' code"]
    assert equivalence[4].startswith("TOST ±0.02: Δ = ")  # "agrees" is only ever said by an equivalence test
    # and whether the two codes' seeds spread alike (Brown–Forsythe: Levene's about the medians)
    assert f"p = {stats.levene(ours, theirs, center='median').pvalue:.2g}" in spread[4]
    assert spread[4].startswith("Brown–Forsythe: sd ")
    expected = stats.ttest_ind(ours, theirs, equal_var=False)
    assert "t(" in welch[4] and f"{expected.statistic:.2f}" in welch[4] and f"p = {expected.pvalue:.2g}" in welch[4]
