"""Built-in datasets; each module defines one and registers it here."""

from bench.core.registry import DATASETS
from datasets.adult import ADULT
from datasets.adult_discrete import ADULT_DISCRETE
from datasets.census import CENSUS
from datasets.census_discrete import CENSUS_DISCRETE
from datasets.cervical import CERVICAL
from datasets.cifar10 import CIFAR10, CIFAR10_JPEG
from datasets.covtype import COVTYPE, COVTYPE_SUBSET
from datasets.credit import CREDIT, CREDIT_SAMPLE
from datasets.epileptic import EPILEPTIC
from datasets.gmm2d import GaussianMixture2D
from datasets.intrusion import INTRUSION
from datasets.isolet import ISOLET, ISOLET_SUBSET
from datasets.mnist import FASHION_MNIST, MNIST

DATASETS.register(GaussianMixture2D())

# Tabular datasets read from the publishers' original files (seed-dphp.md §4.1, seed-dpmerf.md §4).
for _dataset in (ADULT, CENSUS, CERVICAL, CREDIT, EPILEPTIC, ISOLET, COVTYPE, INTRUSION):
    DATASETS.register(_dataset)

# Real samples of datasets whose full files are not in the local mirror; never the full name.
for _dataset in (CREDIT_SAMPLE, COVTYPE_SUBSET, ISOLET_SUBSET):
    DATASETS.register(_dataset)

# Discretized tables for α-way marginal benchmarks (seed-dphp.md Table 1).
for _dataset in (ADULT_DISCRETE, CENSUS_DISCRETE):
    DATASETS.register(_dataset)

# Image datasets with their published train/test splits (seed-dpmepf.md §4, seed-dphp.md §4.3);
# the mirror's JPEG copy of CIFAR-10 has its own name so results on it are labelled as the copy.
for _dataset in (MNIST, FASHION_MNIST, CIFAR10, CIFAR10_JPEG):
    DATASETS.register(_dataset)
