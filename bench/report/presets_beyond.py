"""The presets beyond the seeds: where DP-HP falls short of them, the methods on the authors' own
input files, and utility against ε with the output's privacy."""

from __future__ import annotations


from bench.harness.grid import GridSpec
from bench.report.published import merged, published

from bench.report.calibration_notes import CENSUS
from bench.report.preset import BASELINES, FIVE_SEEDS, INF, TABLE1_SETTINGS, MeasuredSeeds, Preset, combined, rows_of


_AUTHORS_DPHP_ADULT = MeasuredSeeds(
    "authors' code",
    "authors_dphp_adult_seeds_2026-11-26.json",
    (("ROC (seeds' code)", "roc"), ("PRC (seeds' code)", "prc")),
)
_AUTHORS_DPMERF_ADULT = MeasuredSeeds(
    "authors' code (claimed ε = 1)",
    "authors_dpmerf_adult_seeds_2026-11-26.json",
    (("ROC (hard labels)", "roc"), ("PRC (hard labels)", "prc")),
)
# their sensitivity 2√2/m holds on cervical (binary codes / √d_cat: each part of the feature map has norm ≤ 1),
# so their claimed ε = 1 is set beside ours at ε = 1
_AUTHORS_DPMERF_CERVICAL = MeasuredSeeds(
    "authors' code (claimed ε = 1)",
    "authors_dpmerf_cervical_seeds_2026-11-29.json",
    _AUTHORS_DPMERF_ADULT.columns,
)
# supp. Table 4's non-private row with --private 0: beside each of our ε = ∞ rows (which of them is like
# for like — the non-private row with the median heuristic — is what the comparison shows)
_AUTHORS_DPMERF_CERVICAL_NONPRIVATE = MeasuredSeeds(
    "authors' code (non-private row)",
    "authors_dpmerf_cervical-nonprivate_seeds_2026-11-29.json",
    _AUTHORS_DPMERF_ADULT.columns,
)
# DP-MERF supp. Table 4's non-private columns where they differ from the private row
_DPMERF_NON_PRIVATE_ROWS = {"cervical-dpmerf": {"epochs": "2000", "batch_fraction": "0.6"}, "census": {"epochs": "200"}}
_AUTHORS_DPMERF_ADULT_NOISE = MeasuredSeeds(
    "authors' code at its claimed ε = 1 (this noise)", _AUTHORS_DPMERF_ADULT.file, _AUTHORS_DPMERF_ADULT.columns
)
# smartnoise-synth's synthesizers (methods/smartnoise.py), run as outside generators
_OUTSIDE = (  # issue 60: other libraries' DP generators, each in its own environment
    *("smartnoise-mst", "smartnoise-aim", "smartnoise-mwem", "smartnoise-dpctgan", "smartnoise-patectgan"),
    *("synthcity-aim", "synthcity-dpgan"),
)
_AUTHORS_NOTE = (
    "authors' code: their released code run on the same rows on this machine, one row per seed "
    "(`python benchmarks/authors_seeds.py`, output in docs/measurements), mean ± sd (seeds); our rows "
    "of the same method and ε are compared with it below the table: Welch's t (means), TOST at ±0.02 "
    "(agreement), Brown–Forsythe (spread)."
)

# Methods every tabular and discretized preset carries: the trivial baselines (methods/baselines.py)
BEYOND_PRESETS: tuple[Preset, ...] = (
    Preset(
        "dphp-gaps",
        "beyond the seeds: where DP-HP falls short of the seeds (issue 19)",
        "ablations: DP-HP on adult (paper protocol) at ε = 1 and ∞, with 60 epochs instead of 20, at ε = ∞ with "
        "the seeds' median-heuristic length scales or their unconditional product target, and on adult as DP-HP's "
        "Table 2 reads it (adult-dphp: 48,842 rows, education categorical; adult-dphp-sorted: the same with sorted "
        "category codes; both also with the seeds' two rules together); discretized Adult at four ε with Table 4's "
        "ε = 0.3 settings and 8 epochs, at five ε from 0.03 to ∞ with 20, at ε = 0.3 with 50 (is Table 1 limited by "
        "noise or by training?), at ε = ∞ with 20 and the seeds' median-heuristic length scales, and with a 10× learning rate; "
        "gmm2d DP-HP vs DP-MERF at ε = 1 and ∞ (3 seeds), and DP-HP with the 2-D script's product target (n/B = 180 × "
        "the released mean embedding)",
        "dphp-gaps",
        (
            GridSpec(("dp-hp",), ("adult",), [1.0, INF], FIVE_SEEDS, protocol="paper"),
            GridSpec(
                ("dp-hp",), ("adult",), [1.0], FIVE_SEEDS, protocol="paper", overrides={"dp-hp": {"epochs": "60"}}
            ),
            # the seeds' length scales (median heuristic on the private rows, uncharged): non-private only
            GridSpec(
                ("dp-hp",),
                ("adult",),
                [INF],
                FIVE_SEEDS,
                protocol="paper",
                overrides={"dp-hp": {"length_scale_rule": "median-heuristic"}},
            ),
            # the seeds' tabular code's product target: every class's row sums all of X_train (non-private only)
            GridSpec(
                ("dp-hp",),
                ("adult",),
                [INF],
                FIVE_SEEDS,
                protocol="paper",
                overrides={"dp-hp": {"prod_target_rule": "unconditional"}},
            ),
            # the data as DP-HP's Table 2 reads it: all 48,842 rows (DP-HP (arXiv:2106.05042) Table 3), education categorical
            GridSpec(("dp-hp",), ("adult-dphp",), [1.0, INF], FIVE_SEEDS, protocol="paper"),
            # ... with the codes in sorted-name order (LabelEncoder's), on which the authors' code scores 0.589
            GridSpec(("dp-hp",), ("adult-dphp-sorted",), [1.0, INF], FIVE_SEEDS, protocol="paper"),
            # ... and both with the seeds' tabular kernel set-up (both rules above; non-private only): the authors' code
            GridSpec(
                ("dp-hp",),
                ("adult-dphp", "adult-dphp-sorted"),
                [INF],
                FIVE_SEEDS,
                protocol="paper",
                overrides={"dp-hp": {"length_scale_rule": "median-heuristic", "prod_target_rule": "unconditional"}},
            ),
            GridSpec(
                ("dp-hp",),
                ("adult-discrete",),
                [0.1, 0.3, 1.0, INF],
                [0, 1, 2],
                protocol="paper",
                evaluators=("marginals",),
                overrides={"dp-hp": {"epochs": "8"}},
            ),
            # ... and with 20 (Table 4's default here): does utility now move with ε?
            GridSpec(
                ("dp-hp",),
                ("adult-discrete",),
                [0.03, 0.1, 0.3, 1.0, INF],
                [0, 1, 2],
                protocol="paper",
                evaluators=("marginals",),
                overrides={"dp-hp": {"epochs": "20"}},
            ),
            GridSpec(
                ("dp-hp",),
                ("adult-discrete",),
                [0.3],
                [0, 1, 2],  # issue 59: no finding rests on fewer than 3 seeds
                protocol="paper",
                evaluators=("marginals",),
                overrides={"dp-hp": {"epochs": "50"}},
            ),
            # Table 1's code (github.com/ParkLabML/DP-HP dp_mehp/discretized_datasets.py, --hyperparam 0) also takes
            # the median heuristic on the private rows, uncharged: non-private only
            GridSpec(
                ("dp-hp",),
                ("adult-discrete",),
                [INF],
                [0, 1, 2],  # issue 59: no finding rests on fewer than 3 seeds
                protocol="paper",
                evaluators=("marginals",),
                overrides={"dp-hp": {"epochs": "20", "length_scale_rule": "median-heuristic"}},
            ),
            # ... and with a 10× learning rate (the code's 1e-4 may be slow for 20 epochs): does training set the floor?
            GridSpec(
                ("dp-hp",),
                ("adult-discrete",),
                [INF],
                [0, 1, 2],  # issue 59: no finding rests on fewer than 3 seeds
                protocol="paper",
                evaluators=("marginals",),
                overrides={"dp-hp": {"epochs": "20", "lr": "0.001"}},
            ),
            GridSpec(("dp-hp",), ("gmm2d",), [1.0, INF], [0, 1, 2]),
            GridSpec(("dp-merf",), ("gmm2d",), [1.0, INF], [0, 1, 2]),
            # the 2-D script's product target, n/B = 180 × the mean embedding (methods/dp_hp.py prod_target_scale)
            GridSpec(("dp-hp",), ("gmm2d",), [1.0, INF], [0, 1, 2], overrides={"dp-hp": {"prod_target_scale": "180"}}),
        ),
        (
            ("ROC (seeds' code)", "downstream.test_selected_best.roc_auc"),
            ("PRC (seeds' code)", "downstream.test_selected_best.pr_auc"),
            ("3-way (seeds' code)", "marginals.paper.tv_3"),
            ("4-way (seeds' code)", "marginals.paper.tv_4"),
            ("NLL sum (seeds' convention)", "nll.paper_sum"),
        ),
        combined(
            {
                name: rows_of(published("dphp-table2"), "adult", ("dp-hp",))
                for name in ("adult", "adult-dphp", "adult-dphp-sorted")
            },
            {"adult-discrete": rows_of(published("dphp-table1"), "adult-discrete", ("dp-hp",))},
            {"gmm2d": rows_of(published("dphp-fig2"), "gmm2d", ("dp-merf", "dp-hp"))},
        ),
        "DP-HP (arXiv:2106.05042) Table 2 (adult), Table 1 (discretized Adult), Fig. 2 (gmm2d, read off the figure)",
        plot_metrics=("marginals.tv_3",),
        paper_settings=TABLE1_SETTINGS,
        shares=("table2", "table1", "table5", "table8", "gmm2d-paper"),
    ),
    Preset(
        "faithfulness",
        "beyond the seeds: our DP-MERF and DP-HP on the authors' own input files (issue 28)",
        "DP-MERF on adult as its code reads it (adult-sdgym: SDGym's 22,561 rows, codes by descending frequency) "
        "at ε = 1, ∞ and 12.9 — the ε at which our sound release adds the noise the authors' code adds at its "
        "claimed ε = 1 (their sensitivity 2√2/m assumes one-hot rows; on integer codes up to 41 the bound is "
        "2·17.0/m), at ε = ∞ with the authors' median-heuristic length scale and at ε = 1 with that median estimated "
        "privately (and at 13.8, where that run's embedding noise equals the authors' at ε = 1); DP-HP on adult.p as the authors' logs evidence it (adult-dphp-logs: adult.data's 32,561 rows, "
        "sorted codes) at ε = 1, ∞ and ∞ with the seeds' median-heuristic length scales; DP-HP on cervical at ε = ∞ "
        "with the seeds' length scales; DP-HP on both at ε = 1 and ∞ with its kernel inputs centred on their public "
        "midpoints; real data and DP-HP on adult-dphp-logs with every classifier z-scoring its training rows "
        "(the authors' file was z-scored); and every method of DP-HP Table 2's adult row, with the trivial "
        "baselines, on the authors' z-scored file itself (adult-dphp-zscored); real data, DP-HP and DP-MERF on census "
        "with the codes the seeds' arrays carry (census-sdgym: SDGym's frequency codebook); and on intrusion with "
        "protocol, service and flag as the seeds' code reads them (intrusion-sdgym: numbers, SDGym's frequency codes)",
        "faithfulness",
        (
            GridSpec(("real", "dp-merf"), ("adult-sdgym",), [1.0, INF], FIVE_SEEDS, protocol="paper"),
            GridSpec(("dp-merf",), ("adult-sdgym",), [12.9], FIVE_SEEDS, protocol="paper"),
            # the authors' length scale (median heuristic on private rows, uncharged): non-private only
            GridSpec(
                ("dp-merf",),
                ("adult-sdgym",),
                [INF],
                FIVE_SEEDS,
                protocol="paper",
                overrides={"dp-merf": {"length_scale_rule": "median-heuristic"}},
            ),
            # ... and that median estimated privately, charged through the ledger (ours)
            GridSpec(
                ("dp-merf",),
                ("adult-sdgym",),
                [1.0],
                FIVE_SEEDS,
                protocol="paper",
                overrides={"dp-merf": {"length_scale_rule": "dp-median"}},
            ),
            # ... at 13.8, where that rule's embedding noise equals the authors' at their claimed ε = 1: like for like
            GridSpec(
                ("dp-merf",),
                ("adult-sdgym",),
                [13.8],
                FIVE_SEEDS,
                protocol="paper",
                overrides={"dp-merf": {"length_scale_rule": "dp-median"}},
            ),
            # cervical as DP-MERF's code keeps it: every row (DP-HP's grid undersamples to 0.3)
            GridSpec(("real", "dp-merf"), ("cervical-dpmerf",), [1.0, INF], FIVE_SEEDS, protocol="paper"),
            # ... and at ε = ∞ with DP-MERF supp. Table 4's non-private row (the default takes the private
            # row at every ε), alone and with the seeds' length scales (median heuristic on the private
            # rows, uncharged: non-private only); census beside its real data
            *(
                GridSpec(
                    ("dp-merf",), (name,), [INF], FIVE_SEEDS, protocol="paper", overrides={"dp-merf": {**row, **rule}}
                )
                for name, row in _DPMERF_NON_PRIVATE_ROWS.items()
                for rule in ({}, {"length_scale_rule": "median-heuristic"})
            ),
            GridSpec(("real",), ("census",), [INF], FIVE_SEEDS, protocol="paper"),
            GridSpec(("real", "dp-hp"), ("adult-dphp-logs",), [1.0, INF], FIVE_SEEDS, protocol="paper"),
            # the seeds' length scales (median heuristic on the private rows, uncharged): non-private only
            GridSpec(
                ("dp-hp",),
                ("adult-dphp-logs", "cervical"),
                [INF],
                FIVE_SEEDS,
                protocol="paper",
                overrides={"dp-hp": {"length_scale_rule": "median-heuristic"}},
            ),
            # each coordinate centred on its public midpoint before the HP features (public, no privacy cost)
            GridSpec(
                ("dp-hp",),
                ("adult-dphp-logs", "cervical"),
                [1.0, INF],
                FIVE_SEEDS,
                protocol="paper",
                overrides={"dp-hp": {"kernel_inputs": "centred"}},
            ),
            # the authors' z-scored input file, as a classifier-side step: each classifier z-scores its
            # training rows (the synthetic ones) first
            GridSpec(
                ("real", "dp-hp"),
                ("adult-dphp-logs",),
                [1.0],
                FIVE_SEEDS,
                protocol="paper",
                evaluator_overrides={"downstream": {"scaling": "standard"}},
            ),
            GridSpec(
                ("dp-hp",),
                ("adult-dphp-logs",),
                [1.0],
                FIVE_SEEDS,
                protocol="paper",
                overrides={"dp-hp": {"kernel_inputs": "centred"}},
                evaluator_overrides={"downstream": {"scaling": "standard"}},
            ),
            # ... and with the authors' own length scales too (median heuristic, uncharged: ε = ∞ only): their
            # kernel set-up on their file, as near as a typed model space gets
            GridSpec(
                ("dp-hp",),
                ("adult-dphp-logs",),
                [INF],
                FIVE_SEEDS,
                protocol="paper",
                overrides={"dp-hp": {"kernel_inputs": "centred", "length_scale_rule": "median-heuristic"}},
                evaluator_overrides={"downstream": {"scaling": "standard"}},
            ),
            # the authors' file itself: every column z-scored (uncharged statistics of the rows, an ablation);
            # their kernel, generator and classifiers all saw these z-scores. Every method of DP-HP Table 2's
            # adult row (and the trivial baselines) on it, so that the row is calibrated (issue 58)
            GridSpec(
                ("real", "dp-hp", "dp-merf", "dp-gan", "dp-cgan", "independent", "uniform"),
                ("adult-dphp-zscored",),
                [1.0],
                FIVE_SEEDS,
                protocol="paper",
            ),
            # census with the codes the seeds' arrays carry (SDGym's frequency codebook): under the paper protocol a
            # sigmoid head emits codes 0 and 1 only, the two most frequent values there, often rare ones in
            # census-income.names' order (issue 58)
            GridSpec(("dp-hp", "real", "dp-merf"), ("census-sdgym",), [INF, 1.0], FIVE_SEEDS, protocol="paper"),
            # intrusion with protocol, service and flag as the seeds' code reads them: numbers, SDGym's frequency codes
            # (ours: categorical in alphabetical order, so a sigmoid head emits only services aol/auth, flags OTH/REJ)
            GridSpec(("dp-merf", "real", "dp-hp"), ("intrusion-sdgym",), [INF, 1.0], FIVE_SEEDS, protocol="paper"),
            # ... and a generator that emits numerical columns within their public ranges (O(1) units, as on the
            # authors' z-scored file) instead of raw units that 200 Adam steps cannot reach
            GridSpec(
                ("dp-hp",),
                ("adult-dphp-logs",),
                [1.0],
                FIVE_SEEDS,
                protocol="paper",
                overrides={"dp-hp": {"kernel_inputs": "centred", "numerical_outputs": "public-range"}},
                evaluator_overrides={"downstream": {"scaling": "standard"}},
            ),
        ),
        (
            ("ROC (hard labels)", "downstream.paper.roc_auc"),
            ("PRC (hard labels)", "downstream.paper.pr_auc"),
            ("ROC (seeds' code)", "downstream.test_selected_best.roc_auc"),
            ("PRC (seeds' code)", "downstream.test_selected_best.pr_auc"),
            ("F1 (hard labels)", "downstream.paper.f1_weighted"),
            ("F1 (seeds' code)", "downstream.test_selected_best.f1_weighted"),
        ),
        {
            "adult-sdgym": published("dpmerf-table1")["adult"],
            "cervical-dpmerf": published("dpmerf-table1")["cervical"],
            "census": published("dpmerf-table1")["census"],
            "adult-dphp-logs": rows_of(published("dphp-table2"), "adult", ("real", "dp-hp")),
            "adult-dphp-zscored": rows_of(
                published("dphp-table2"), "adult", ("real", "dp-cgan", "dp-gan", "dp-merf", "dp-hp")
            ),
            "cervical": rows_of(merged("dphp-table2", "dphp-table7"), "cervical", ("dp-hp", "dp-merf")),
            "census-sdgym": rows_of(merged("dphp-table2", "dphp-table7"), "census", ("real", "dp-hp", "dp-merf")),
            "intrusion-sdgym": rows_of(merged("dphp-table2", "dphp-table7"), "intrusion", ("real", "dp-hp", "dp-merf")),
        },
        "DP-MERF (arXiv:2002.11603) Table 1 (adult-sdgym, cervical-dpmerf, census: hard labels), DP-HP (arXiv:2106.05042) "
        "Tables 2 and 7 (adult-dphp-logs, cervical, census-sdgym, intrusion-sdgym: test-selected)",
        references={
            **{name: {("dp-hp", 1.0): _AUTHORS_DPHP_ADULT} for name in ("adult-dphp-logs", "adult-dphp-zscored")},
            # their claimed ε = 1 adds the noise of our 12.9 (13.8 with dp-median's split): shown at all three
            "cervical-dpmerf": {
                ("dp-merf", 1.0): _AUTHORS_DPMERF_CERVICAL,
                ("dp-merf", INF): _AUTHORS_DPMERF_CERVICAL_NONPRIVATE,
            },
            "adult-sdgym": {
                ("dp-merf", 1.0): _AUTHORS_DPMERF_ADULT,
                ("dp-merf", 12.9): _AUTHORS_DPMERF_ADULT_NOISE,
                ("dp-merf", 13.8): _AUTHORS_DPMERF_ADULT_NOISE,
            },
        },
        references_note=_AUTHORS_NOTE,
        calibration_notes={
            "adult-dphp-logs": "adult.p was z-scored: the row whose classifiers z-score their training rows "
            "(downstream.scaling=standard) is the like-for-like one",
            "adult-dphp-zscored": "1.1 seed-sd above the paper, as with z-scoring classifiers: the authors' z-scored "
            "file is the like-for-like real-data row (the rest is within what today's "
            "scikit-learn and a 5-run mean printed without its sd allow)",
            "adult-dphp-logs [protocol paper, downstream.scaling=standard]": "1.1 seed-sd above the paper, where the unscaled row is 4.7 below: z-scoring is the difference. The "
            "rest is within what today's scikit-learn and a 5-run mean printed without its sd allow",
            # the seeds' own census arrays: the same real-data miss as census's, one cause fewer
            "census-sdgym": f"the same miss as census's own codes (DP-HP Table 2): {CENSUS}",
            "cervical-dpmerf": "ROC agrees; PRC does not: with 5–14 positives among 151 test rows, hard-label PRC "
            "moves ±0.04 a seed, and our base forest, GBM and XGBoost follow DP-HP's settings "
            "(DP-MERF used scikit-learn 0.21's defaults). Unexplained beyond that",
        },
    ),
    Preset(
        "privacy-utility",
        "beyond the seeds: utility against ε",
        "cervical, the mirror's credit-card and ISOLET samples, Adult and discretized Adult, and the large tables "
        "(Census, KDD intrusion with its 5 classes, the Covertype subset) at five ε, kernel methods "
        "against the trivial baselines; the output's "
        "privacy and fidelity are scored afterwards from the stored samples by `python -m bench evaluate "
        "--experiment privacy-utility --evaluators privacy,fidelity` (and, on cervical, the shadow-model attack: "
        "`--datasets cervical --evaluators shadow-mia`, which refits each run's method on shadow sets)",
        "privacy-utility",
        (
            GridSpec(("real", "dp-merf", "dp-hp", *BASELINES), ("cervical",), [0.1, 0.3, 1.0, 3.0, 10.0], FIVE_SEEDS),
            GridSpec(
                ("real", "dp-merf", "dp-hp", *BASELINES), ("credit-sample",), [0.1, 0.3, 1.0, 3.0, 10.0], FIVE_SEEDS
            ),
            GridSpec(
                ("real", "dp-merf", "dp-hp", *BASELINES), ("isolet-subset",), [0.1, 0.3, 1.0, 3.0, 10.0], FIVE_SEEDS
            ),
            GridSpec(
                ("real", "dp-merf", "mst", *BASELINES), ("adult-discrete",), [0.1, 0.3, 1.0, 3.0, 10.0], FIVE_SEEDS
            ),
            GridSpec(("real", "dp-merf", "dp-hp", *BASELINES), ("adult",), [0.1, 0.3, 1.0, 3.0, 10.0], FIVE_SEEDS),
            GridSpec(
                ("real", "dp-merf", "dp-hp", *BASELINES),
                ("census", "intrusion", "covtype-subset"),
                [0.1, 0.3, 1.0, 3.0, 10.0],
                FIVE_SEEDS,
            ),
        ),
        (
            ("ROC (scores)", "downstream.roc_auc"),
            ("PRC (scores)", "downstream.pr_auc"),
            ("F1 (weighted; multi-class)", "downstream.f1_weighted"),
            ("3-way TV", "marginals.tv_3"),
        ),
        # utility (ROC on the binary tables, weighted F1 on intrusion's 5 classes) and the attack's AUC
        # against ε per dataset (issue 30): where the output starts to give rows away
        plot_metrics=("downstream.roc_auc", "downstream.f1_weighted", "marginals.tv_3", "privacy.mia_auc"),
        triad=True,
        shares=("table2",),
    ),
    Preset(
        "external",
        "beyond the seeds: other libraries' DP generators by the same yardstick (issue 60)",
        "smartnoise-synth 1.0.8's MST, AIM, MWEM, DP-CTGAN and PATE-CTGAN and synthcity 0.2.12's AIM and DP-GAN, "
        "each in its own environment with its ε as the library claims it, beside our MST, AIM, PrivBayes, DP-MERF, DP-HP and the trivial baselines, on "
        "discretized Adult, cervical and Adult at ε ∈ {0.3, 1, 3} (the built-ins' cells that preset `privacy-utility` "
        "has, the same cells, are read from its experiment, not fitted again); a library's failure (no bounds, a "
        "timeout, a crash) is a failed cell with its reason. The output's privacy is scored afterwards (`python -m bench "
        "evaluate --experiment external --evaluators privacy,fidelity`) and each outside generator's claim "
        "audited from its output (`python -m bench audit --method smartnoise-mst --dataset adult-discrete "
        "--black-box`)",
        "external",
        (
            GridSpec(
                (*_OUTSIDE, "mst", "aim", "privbayes", "dp-merf", "dp-hp", *BASELINES),
                ("adult-discrete",),
                [0.3, 1.0, 3.0],
                FIVE_SEEDS,
            ),
            GridSpec((*_OUTSIDE, "dp-merf", "dp-hp", *BASELINES), ("cervical", "adult"), [0.3, 1.0, 3.0], FIVE_SEEDS),
        ),
        (
            ("2-way TV", "marginals.tv_2"),
            ("3-way TV", "marginals.tv_3"),
            ("ROC (scores)", "downstream.roc_auc"),
            ("PRC (scores)", "downstream.pr_auc"),
        ),
        plot_metrics=("marginals.tv_2", "downstream.roc_auc"),
        triad=True,
        # its built-ins on cervical, adult and discretized Adult are privacy-utility's cells (180 of 540)
        shares=("privacy-utility",),
    ),
)
