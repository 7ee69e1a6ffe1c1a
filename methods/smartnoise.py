"""smartnoise-synth's synthesizers (OpenDP; Rosenblatt et al.), run as outside generators
(``bench.api.external``): each in smartnoise-synth 1.0.8's own environment, built on first use, its
(ε, δ) the library's own claim. The library pins ``mbi < 2``, ``opacus < 0.15`` and ``pandas < 3``,
which conflict with this project's, so it cannot share our environment (issue 60).

Every bound and category comes from the dataset's public schema (``methods/drivers/smartnoise.py``):
the library's own preprocessing, which infers bounds from the rows unless it is paid ε, never runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.api import DataKind
from bench.api.external import Environment, external_method
from bench.core.params import HyperParameters, Setting

# dill: the driver keeps the fitted synthesizer between fit and sample, and MST holds lambdas
SMARTNOISE = Environment("smartnoise-synth-1.0.8", ("smartnoise-synth==1.0.8", "dill==0.4.1"))
# run by the environment's Python, never imported here (methods/drivers/ holds no plugin module)
DRIVER = Path(__file__).parent / "drivers" / "smartnoise.py"
LIBRARY = "smartnoise-synth 1.0.8"


@dataclass(frozen=True)
class CubeParams:
    bins: int  # equal-width bins of a numerical column's public range (cube-style synthesizers)


CUBE_PARAMETERS = HyperParameters(
    CubeParams,
    defaults={
        "bins": Setting(
            10, "bench's choice: smartnoise-synth's BinTransformer default (snsynth/transform/bin.py, bins=10)"
        )
    },
)


@dataclass(frozen=True)
class GanParams:
    batch_size: int  # rows a step (the library asserts it even); above the training rows it fails its fit
    epochs: int


def _gan_parameters(module: str) -> HyperParameters:
    source = f"smartnoise-synth 1.0.8's default (snsynth/pytorch/nn/{module}.py __init__)"
    return HyperParameters(GanParams, defaults={"batch_size": Setting(500, source), "epochs": Setting(300, source)})


def _smartnoise(synthesizer: str, what: str, hyperparameters: HyperParameters | None = None):
    """smartnoise-synth's ``synthesizer`` as the outside generator ``smartnoise-<synthesizer>``."""
    return external_method(
        f"smartnoise-{synthesizer}",
        f"smartnoise-synth 1.0.8's {what}, in its own environment",
        kinds={DataKind.DISCRETE, DataKind.TABULAR},
        environment=SMARTNOISE,
        driver=DRIVER,
        synthesizer=synthesizer,
        library=LIBRARY,
        hyperparameters=hyperparameters,
    )


smartnoise_mst = _smartnoise("mst", "MST (McKenna et al. 2021)", CUBE_PARAMETERS)
smartnoise_aim = _smartnoise("aim", "AIM (McKenna et al. 2022)", CUBE_PARAMETERS)
smartnoise_mwem = _smartnoise("mwem", "MWEM (Hardt et al. 2012)", CUBE_PARAMETERS)
smartnoise_dpctgan = _smartnoise(
    "dpctgan", "DP-CTGAN (Rosenblatt et al. 2020; DP-SGD by opacus 0.14)", _gan_parameters("dpctgan")
)
smartnoise_patectgan = _smartnoise("patectgan", "PATE-CTGAN (Rosenblatt et al. 2020)", _gan_parameters("patectgan"))
