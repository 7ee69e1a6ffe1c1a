"""Built-in evaluators: their cards (see ``methods/__init__.py``); each evaluator module is imported
only when the evaluator is used. Tag ``named-only``: run only when ``--evaluators`` names it.
"""

from bench.api.registry import Plugin

EVALUATOR_PLUGINS = (
    Plugin(
        "downstream",
        "evaluators.downstream:DownstreamClassifiers",
        "train 12 classifiers on synthetic rows, test on the real test split (ROC/PRC binary, F1 multi-class)",
        kinds=("tabular",),
    ),
    Plugin(
        "effective-size",
        "evaluators.effective_size:EffectiveSize",
        "mean accuracy of the 12 image classifiers vs the number of synthetic training images (the seeds' Fig. 3)",
        kinds=("image",),
        tags=("named-only",),
    ),
    Plugin(
        "fid",
        "evaluators.fid:FrechetInceptionDistance",
        "Fréchet Inception Distance (pytorch-fid InceptionV3 pool3; 5,000 synthetic images vs the real test split, or the training split under --protocol paper); lower is better",
        kinds=("image",),
    ),
    Plugin(
        "image-downstream",
        "evaluators.image_downstream:ImageDownstreamClassifiers",
        "train the seeds' 12 image classifiers (DP-HP Table 10) on synthetic images, accuracy on the real test images",
        kinds=("image",),
    ),
    Plugin(
        "image-downstream-10pct",
        "evaluators:image_downstream_10pct",
        "image-downstream on a class-balanced 10% subset of the synthetic images (the seeds' --sampling-rate-synth check)",
        kinds=("image",),
        tags=("named-only",),
    ),
    Plugin(
        "marginals",
        "evaluators.marginals:MarginalErrors",
        "mean TV distance of all α-way marginals (discretized data); lower is better",
        kinds=("discrete",),
    ),
    Plugin(
        "prdc",
        "evaluators.prdc:PrecisionRecallDensityCoverage",
        "precision/recall (Kynkäänniemi et al. 2019) and density/coverage (Naeem et al. 2020), k = 5, on FID's Inception pool3 features: fidelity and diversity separately; higher is better",
        kinds=("image",),
        tags=("named-only",),
    ),
    Plugin(
        "privacy",
        "evaluators.privacy:OutputPrivacy",
        "output privacy: distance to closest record vs a holdout (share, copies, DCR, NNDR) and membership-inference AUC (DOMIAS, GAN-Leaks); lower AUC is better",
        kinds=("2d", "discrete", "tabular"),
        tags=("named-only",),
    ),
    Plugin(
        "shadow-mia",
        "evaluators.shadow_attack:ShadowModelAttack",
        "membership inference by shadow models: the run's method refitted on reference rows plus half the candidates, "
        "a classifier of nearest-synthetic-row distances learnt from the shadows; lower AUC is better",
        kinds=("2d", "discrete", "tabular"),
        tags=("named-only",),
    ),
    Plugin(
        "fidelity",
        "evaluators.fidelity:Fidelity",
        "fidelity on the table: column shapes (KS/TV), column pairs (correlation/contingency), detection AUC (C2ST)",
        kinds=("2d", "discrete", "tabular"),
        tags=("named-only",),
    ),
    Plugin(
        "nll",
        "evaluators.nll:NegativeLogLikelihood",
        "NLL of generated samples under the true density (gmm2d); lower is better",
        kinds=("2d",),
    ),
)


def image_downstream_10pct():
    """The image suite trained on a 10% sample of the synthetic images (DP-MEPF reports it)."""
    from evaluators.image_downstream import with_fraction

    return with_fraction(0.1, "image-downstream-10pct")
