"""Built-in datasets; each module defines one and registers it here."""

from bench.registry import DATASETS
from datasets.gmm2d import GaussianMixture2D

DATASETS.register(GaussianMixture2D())
