"""Gaps to the papers (issue 58, ``bench/report/gaps.py``): which cells count as more than one
seed-sd from the paper, and how the narrative's tags claim them."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from bench.report.frame import TableError
from bench.report.gaps import Gap, gap_of, idle_tags, narrative_tags, printed_half_unit, summary_blocks, unexplained


def runs(values: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"seed": range(len(values)), "downstream.roc_auc": values})


def test_a_gap_is_a_mean_more_than_one_seed_sd_from_the_paper_over_two_seeds_or_more():
    wide = runs([0.60, 0.70, 0.80])  # mean 0.70, sd 0.10
    assert gap_of(wide, "downstream.roc_auc", 0.79, "d", "s", "ROC") is None  # 0.9 sd
    gap = gap_of(wide, "downstream.roc_auc", 0.81, "d", "s", "ROC")  # 1.1 sd
    assert gap == Gap("d", "s", "ROC", pytest.approx(0.70), pytest.approx(0.10), 3, 0.81)
    assert gap.seed_sds == pytest.approx(1.1)
    assert gap_of(wide, "downstream.roc_auc", (0.81, 0.05, 5), "d", "s", "ROC") is not None  # the paper's mean
    assert gap_of(wide, "downstream.roc_auc", "≈ 0.9", "d", "s", "ROC") is None  # read off a figure
    assert gap_of(runs([0.5]), "downstream.roc_auc", 0.9, "d", "s", "ROC") is None  # one seed: no spread
    assert gap_of(wide, "missing.metric", 0.9, "d", "s", "ROC") is None
    # seeds that agree to the last bit (a real-data row): any difference is beyond their spread
    equal = gap_of(runs([0.875, 0.875, 0.875 + 1e-16]), "downstream.roc_auc", 0.8749, "d", "s", "ROC")
    assert equal is not None and math.isinf(equal.seed_sds)
    assert gap_of(runs([0.875] * 3), "downstream.roc_auc", 0.875, "d", "s", "ROC") is None


def test_tags_claim_cells_by_preset_dataset_setup_and_column_with_alternatives():
    text = """intro

- **Census, real data.** text <!--gap t2; t7 | census [protocol paper] | real data; DP-HP ε=1 --> more
  text across lines

**Only a column.**<!--gap t2 | adult | DP-GAN ε=1 | ROC -->
"""
    first, second = narrative_tags(text)
    assert first.lead == "Census, real data." and second.lead == "Only a column."
    census = Gap("census [protocol paper]", "DP-HP ε=1", "PRC", 0.5, 0.01, 5, 0.7)
    assert first.claims("t7", census) and not first.claims("t1", census)
    assert not first.claims("t2", Gap("adult", "DP-HP ε=1", "PRC", 0.5, 0.01, 5, 0.7))
    roc, prc = (Gap("adult", "DP-GAN ε=1", column, 0.5, 0.01, 5, 0.6) for column in ("ROC", "PRC"))
    assert second.claims("t2", roc) and not second.claims("t2", prc)
    assert unexplained("t2", [roc, prc, census], [first, second]) == [prc]
    assert idle_tags([first, second], {"t9": [roc]}) == [str(first), str(second)]
    assert idle_tags([first, second], {"t2": [roc]}) == [str(first)]
    # an alternative that claims nothing is named on its own, beside the tag's others that do
    assert idle_tags([first], {"t2": [census]}) == [f"{first}: t7", f"{first}: real data"]
    with pytest.raises(TableError, match="preset \\| dataset \\| setup"):
        narrative_tags("<!--gap only | two -->")
    # the lead is the bold words the paragraph opens with, without the record marks inside them
    (marked,) = narrative_tags(
        "- **ROC <!--r a | b | c | 1 | m | mean -->0.5<!--/r--> here.** text <!--gap a | b | c -->"
    )
    assert marked.lead == "ROC 0.5 here."
    (plain,) = narrative_tags("No lead but **bold later**. <!--gap a | b | c -->")
    assert plain.lead == "(a paragraph with no bold lead)"


def test_a_difference_within_the_paper_s_printed_precision_is_no_gap():
    assert printed_half_unit(0.78) == pytest.approx(0.005) and printed_half_unit(0.8669) == pytest.approx(5e-5)
    equal_seeds = runs([0.783, 0.783, 0.783])
    assert gap_of(equal_seeds, "downstream.roc_auc", 0.78, "d", "s", "MEAN") is None  # 0.78 printed: ±0.005
    assert gap_of(equal_seeds, "downstream.roc_auc", 0.7744, "d", "s", "MEAN") is not None


def test_the_summary_counts_the_gaps_without_a_paragraph_and_names_idle_tags():
    (tag,) = narrative_tags("**Lead.** <!--gap t2 | adult | DP-GAN ε=1 -->")
    claimed, alone = (
        Gap("adult", "DP-GAN ε=1", "ROC", 0.5, 0.0, 5, 0.51),
        Gap("adult", "real data", "ROC", 0.7, 0.01, 5, 0.8),
    )
    (text,) = summary_blocks({"t2": [claimed, alone]}, [tag], whole_record=True)
    assert "2 cells of ours (2 rows)" in text.text and "1 have none yet" in text.text
    blocks = summary_blocks({"t2": [alone]}, [tag], whole_record=True)
    assert "every one" not in blocks[0].text and "claim no gap any more" in blocks[1].text
    assert len(summary_blocks({"t2": [alone]}, [tag], whole_record=False)) == 1  # a partial report: no idle check
