"""Results tables: aggregation over seeds, non-private rows, best marks, combined cells."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from bench.tables import _row_label, render, render_combined, summarise


def frame():
    rows = []
    for seed, (a, b) in enumerate([(3.0, 5.0), (5.0, 7.0)]):
        rows += [
            {"method": "dp-merf", "dataset": "gmm2d", "epsilon": 1.0, "seed": seed, "nll.mean": a, "nll.paper_sum": 10 * a},
            {"method": "dp-merf", "dataset": "gmm2d", "epsilon": 0.1, "seed": seed, "nll.mean": b, "nll.paper_sum": 10 * b},
            {"method": "other", "dataset": "gmm2d", "epsilon": 1.0, "seed": seed, "nll.mean": a + 1, "nll.paper_sum": 1.0},
            {"method": "real", "dataset": "gmm2d", "epsilon": math.inf, "seed": seed, "nll.mean": 2.0, "nll.paper_sum": 20.0},
        ]
    return pd.DataFrame(rows)


def test_mean_std_and_seed_count_per_cell():
    text, means = summarise(frame(), "nll.mean")
    assert text.loc[("gmm2d", 1.0), "dp-merf"] == "4 ± 1.414 (2)"
    assert means.loc[("gmm2d", 0.1), "dp-merf"] == pytest.approx(6.0)


def test_non_private_methods_fill_every_epsilon_row():
    text, _ = summarise(frame(), "nll.mean")
    assert text.loc[("gmm2d", 0.1), "real"] == text.loc[("gmm2d", 1.0), "real"] == "2 ± 0 (2)"
    assert text.loc[("gmm2d", 0.1), "other"] == ""


def test_best_private_method_is_bold_by_direction():
    table = render(frame(), "nll.mean", "md")
    assert "| gmm2d | 1 | **4 ± 1.414 (2)** | 5 ± 1.414 (2) | 2 ± 0 (2) |" in table  # lower is better
    assert "(lower is better)" in table
    assert "\\textbf{4 $\\pm$ 1.414 (2)}" in render(frame(), "nll.mean", "latex")


def test_combined_cells_join_metrics():
    table = render_combined(frame(), ["nll.mean", "nll.paper_sum"], "csv")
    assert "4 ± 1.414 (2) / 40 ± 14.14 (2)" in table


def test_non_default_conventions_get_their_own_rows():
    assert _row_label({"dataset": "adult"}) == "adult"
    assert _row_label({"dataset": "adult", "protocol": "paper"}) == "adult [protocol paper]"
    assert _row_label({"dataset": "adult", "protocol": "sound", "calibrator": "paper"}) == "adult [calibrator paper]"


def test_non_private_variant_of_a_private_method_gets_its_own_row():
    data = frame()
    variant = data[data["method"] == "dp-merf"].head(2).assign(epsilon=math.inf, **{"nll.mean": 9.0})
    text, means = summarise(pd.concat([data, variant]), "nll.mean")
    assert text.loc[("gmm2d", math.inf), "dp-merf"] == "9 ± 0 (2)"
    assert text.loc[("gmm2d", math.inf), "real"] == "2 ± 0 (2)"
    assert means.loc[("gmm2d", 1.0), "dp-merf"] == pytest.approx(4.0)  # not mixed with the variant
    assert "**9" not in render(pd.concat([data, variant]), "nll.mean", "md")  # no 'best private' at ∞


def test_table1_layout_puts_the_seeds_values_beside_both_conventions():
    from bench.tables import render_table1

    rows = [
        {"method": "dp-hp", "dataset": "adult-discrete [protocol paper]", "epsilon": 0.3, "seed": seed,
         "marginals.tv_3": 0.2 + seed / 10, "marginals.paper.tv_3": 0.4}
        for seed in (0, 1)
    ] + [{"method": "mst", "dataset": "adult-discrete [protocol paper]", "epsilon": 0.1, "seed": 0,
          "marginals.tv_3": 0.1, "marginals.paper.tv_3": 0.15}]
    table = render_table1(pd.DataFrame(rows), "md")
    assert "| dp-hp ε=0.3 | dp-hp ε=0.1 | mst ε=0.3 | mst ε=0.1 |" in table
    assert "| 3 | ours: all C(D,α) subsets | 0.25 ± 0.07071 (2) |  |  | 0.1 ± 0 (1) |" in table
    assert "| 3 | ours: seeds' code, (α+1)-way | 0.4 ± 0 (2) |  |  | 0.15 ± 0 (1) |" in table
    assert "| 3 | seeds' Table 1 | 0.332 | 0.377 |  |  |" in table  # seed-dphp.md §6.1
    assert "| 4 | seeds' Table 1 | 0.418 | 0.467 |  |  |" in table
