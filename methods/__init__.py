"""Built-in method adapters: the cards that list them (name, description, data kinds) and name
the module that implements each, imported only when the method is used (``bench.api.registry``).

This file must stay light: it is imported by ``python -m bench list`` and ``--help``. The cards
reach the registry through the ``dpbench.methods`` entry point in ``pyproject.toml``, the same door
a third-party package uses.
"""

from bench.api.registry import Plugin

METHOD_PLUGINS = (
    Plugin(
        "aim",
        "methods.aim:AIM",
        "AIM (McKenna et al. 2022): adaptive workload-aware marginal selection + Private-PGM",
        kinds=("discrete",),
        tags=("private",),
    ),
    Plugin(
        "dp-cgan",
        "methods.dp_gan:dp_cgan",
        "DP-CGAN: conditional GAN with a DP-SGD (Opacus) discriminator; labels from released proportions",
        kinds=("2d", "image", "tabular"),
        tags=("private",),
    ),
    Plugin(
        "dp-gan",
        "methods.dp_gan:DPGan",
        "DP-GAN: GAN with a DP-SGD (Opacus) discriminator; labels generated as a column",
        kinds=("2d", "image", "tabular"),
        tags=("private",),
    ),
    Plugin(
        "dp-hp",
        "methods.dp_hp:DPHermite",
        "DP-HP: Hermite-polynomial sum + subsampled product kernel embeddings, generator trained to match",
        kinds=("2d", "discrete", "image", "tabular"),
        tags=("private",),
    ),
    Plugin(
        "dp-mepf",
        "methods.dp_mepf:DPMepf",
        "DP-MEPF: mean embeddings (φ1[, φ2]) of a public-data-pretrained encoder's features, released once; generator trained to match",
        kinds=("image",),
        tags=("private",),
    ),
    Plugin(
        "dp-merf",
        "methods.dp_merf:DPMerf",
        "DP-MERF: random Fourier feature mean embedding released once, generator trained to match",
        kinds=("2d", "discrete", "image", "tabular"),
        tags=("private",),
    ),
    Plugin(
        "full-mmd",
        "methods.full_mmd:FullMMD",
        "non-private reference: generator trained with the exact mini-batch Gaussian-kernel MMD",
        kinds=("2d", "discrete", "image", "tabular"),
        tags=("non-private",),
    ),
    Plugin(
        "independent",
        "methods.baselines:Independent",
        "Trivial baseline: DP 1-way marginals (Gaussian, every column and the label), columns sampled independently",
        kinds=("discrete", "tabular"),
        tags=("private",),
    ),
    Plugin(
        "mst",
        "methods.mst:MST",
        "MST (McKenna et al. 2021): private max spanning tree of 2-way marginals + Private-PGM",
        kinds=("discrete",),
        tags=("private",),
    ),
    Plugin(
        "privbayes",
        "methods.privbayes:PrivBayes",
        "PrivBayes (Zhang et al. 2017): private Bayesian network, pure ε-DP (seeds' Table 1 baseline)",
        kinds=("discrete",),
        tags=("private",),
    ),
    Plugin(
        "real",
        "methods.real:Real",
        "Non-private upper bound: returns the real training data",
        kinds=("2d", "discrete", "image", "tabular"),
        tags=("non-private",),
    ),
    Plugin(
        "uniform",
        "methods.baselines:Uniform",
        "Trivial baseline: every column and the label uniform over its public domain; reads no row (0-DP)",
        kinds=("discrete", "tabular"),
        tags=("data-independent",),
    ),
)

PRETRAINER_PLUGINS = (
    Plugin(
        "resnet18-cifar",
        "methods.pretrain:RESNET18_CIFAR",
        "ResNet18 (CIFAR variant) trained by the harness on a declared public colour image dataset; "
        "DP-MEPF's encoder for FashionMNIST (arXiv:2205.12900 Sec. 5)",
        kinds=("image",),
    ),
)
