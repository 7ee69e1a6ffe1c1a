"""synthcity's DP generators (Qian, Cebere and van der Schaar; NeurIPS 2023 Datasets and
Benchmarks), run as outside generators (``bench.api.external``): each in synthcity 0.2.12's own
environment, built on first use, its (ε, δ) the library's own claim. synthcity pins
``torch < 2.3`` and ``numpy < 2``, which conflict with this project's, so the environment shares
nothing with ours (``inherit_site_packages=False``: this interpreter's numpy-2 builds would not load
beside numpy 1): its first build downloads about 3.4 GB (torch 2.2.2 with its CUDA 12.1 wheels)
into about 7 GB. ``opacus`` is pinned to 1.5.2 because synthcity allows 1.5.4, which needs
torch ≥ 2.4. The runner builds it before the grid's first synthcity cell, outside the cells'
walls (``DeclaredMethod.prepare``): a cell cannot, since synthcity needs sdists built (nflows,
arfpy, pykeops, keopscore, autograd-gamma, feather-format) and setuptools moves each wheel it builds
with ``os.rename`` across folders, which Landlock (the cell's data wall) refuses to every walled
process (EXDEV). To build it ahead of a run::

    DPBENCH_ENV_DIR=... python -c "from methods.synthcity import SYNTHCITY; SYNTHCITY.ensure()"

Two of synthcity's privacy plugins are adapted, each with what ``methods/drivers/synthcity.py``
changes so that nothing is inferred from the rows:

- ``synthcity-aim``: synthcity's AIM mechanism (its ``plugins/core/models/aim.py``, a copy of
  private-pgm's; ρ-zCDP converted to (ε, δ), add/remove neighbours), run once in the fit on the
  public domain and sampled from its released table. The plugin itself takes its domain from the
  rows (``nunique``) and reruns the whole mechanism, rows kept, on every ``generate`` call.
- ``synthcity-dpgan``: the DP-GAN plugin (opacus DP-SGD on the discriminator, noise calibrated by
  ``make_private_with_epsilon`` for ``n_iter`` epochs, PRV accountant, add/remove neighbours, fixed
  shuffled batches accounted as if Poisson-sampled), with a tabular encoder fitted on the public
  domain, uniformly shuffled batches, no early stopping and no filtering of the sample by the
  rows' ranges (the plugin's defaults: an encoder fitted on the rows, batches and generation
  conditionals drawn by the rows' category frequencies from 80 % of them, early stopping on a
  detection score over the other 20 %, samples filtered to the rows' ranges — none of them DP).

Not adapted: ``pategan`` (its student discriminator is trained on the real rows in the clear, and
its accountant skips the batches whose noisy vote is mostly "real"), ``privbayes`` (Laplace noise
of scale 2(d−K)/(nε) added to counts, n times too little, and only to the non-empty cells),
``adsgan`` and ``decaf`` (not DP).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.api import DataKind
from bench.api.external import Environment, external_method
from bench.core.params import HyperParameters, Setting

SYNTHCITY = Environment(
    "synthcity-0.2.12",
    ("synthcity==0.2.12", "torch==2.2.2", "torchvision==0.17.2", "opacus==1.5.2"),
    inherit_site_packages=False,
)
# run by the environment's Python, never imported here (methods/drivers/ holds no plugin module)
DRIVER = Path(__file__).parent / "drivers" / "synthcity.py"
LIBRARY = "synthcity 0.2.12"


@dataclass(frozen=True)
class AimParams:
    degree: int  # the workload: every set of this many columns
    max_cells: int  # … whose domain has at most this many cells
    max_model_size: int  # MB, the graphical model's limit
    rounds_per_column: int  # AIM's rounds, per column (≥ 1: below, its one-way measurements alone overspend ρ)
    bins: int  # equal-width bins of a numerical column's public range


_AIM_SOURCE = "synthcity 0.2.12's default (plugins/privacy/plugin_aim.py __init__)"
AIM_PARAMETERS = HyperParameters(
    AimParams,
    defaults={
        "degree": Setting(2, _AIM_SOURCE),
        "max_cells": Setting(1000, _AIM_SOURCE),
        "max_model_size": Setting(80, _AIM_SOURCE),
        "rounds_per_column": Setting(
            16, "synthcity 0.2.12's default (plugins/core/models/aim.py AIM.run: 16 × columns)"
        ),
        "bins": Setting(10, "bench's choice, as smartnoise-aim's"),
    },
    profiles={"smoke": {"rounds_per_column": 1}},
)


@dataclass(frozen=True)
class DpganParams:
    n_iter: int  # epochs
    batch_size: int
    lr: float
    dp_max_grad_norm: float


_DPGAN_SOURCE = "synthcity 0.2.12's default (plugins/privacy/plugin_dpgan.py __init__)"
DPGAN_PARAMETERS = HyperParameters(
    DpganParams,
    defaults={
        "n_iter": Setting(2000, _DPGAN_SOURCE),
        "batch_size": Setting(200, _DPGAN_SOURCE),
        "lr": Setting(1e-3, _DPGAN_SOURCE),
        "dp_max_grad_norm": Setting(2.0, _DPGAN_SOURCE),
    },
    profiles={"smoke": {"n_iter": 1, "batch_size": 1000}},
)


def _synthcity(plugin: str, what: str, hyperparameters: HyperParameters, kinds: set[DataKind]):
    """synthcity's plugin ``plugin`` as the outside generator ``synthcity-<plugin>``."""
    return external_method(
        f"synthcity-{plugin}",
        f"synthcity 0.2.12's {what}, in its own environment",
        kinds=kinds,
        environment=SYNTHCITY,
        driver=DRIVER,
        synthesizer=plugin,
        library=LIBRARY,
        hyperparameters=hyperparameters,
    )


synthcity_aim = _synthcity(
    "aim", "AIM (McKenna et al. 2022) on the public domain", AIM_PARAMETERS, {DataKind.DISCRETE, DataKind.TABULAR}
)
synthcity_dpgan = _synthcity(
    "dpgan", "DP-GAN (Xie et al. 2018; DP-SGD by opacus 1.5.2)", DPGAN_PARAMETERS, {DataKind.DISCRETE, DataKind.TABULAR}
)
