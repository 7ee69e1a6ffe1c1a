"""Built-in datasets: their cards (see ``methods/__init__.py``); each loader module is imported only
when the dataset is used. Tabular datasets are read from the publishers' original files; ``*-sample``
and ``*-subset`` are real samples of datasets whose full files are not in the local mirror; the
mirror's JPEG copy of CIFAR-10 has its own name so results on it are labelled as the copy.
"""

from bench.api.registry import Plugin

DATASET_PLUGINS = (
    Plugin(
        "adult",
        "datasets.adult:ADULT",
        "UCI Adult, income >50K: 48,842 rows (adult.data + adult.test), 14 features (6 numerical, 8 categorical)",
        kinds=("tabular",),
    ),
    Plugin(
        "adult-dphp",
        "datasets.adult:ADULT_DPHP",
        "UCI Adult as DP-HP's Table 2 reads it: all 48,842 rows under both protocols, education categorical "
        "(6 numerical, 8 categorical features)",
        kinds=("tabular",),
    ),
    Plugin(
        "adult-dphp-sorted",
        "datasets.adult:ADULT_DPHP_SORTED",
        "adult-dphp with categorical codes in sorted-name order (scikit-learn LabelEncoder's, the likeliest "
        "coding of DP-HP's adult.p): the same rows and values",
        kinds=("tabular",),
    ),
    Plugin(
        "adult-dphp-logs",
        "datasets.adult:ADULT_DPHP_LOGS",
        "adult.p as DP-HP's logs evidence it: adult.data's 32,561 rows (7,841 >50K), sorted-name codes, "
        "education categorical",
        kinds=("tabular",),
    ),
    Plugin(
        "adult-dphp-zscored",
        "datasets.adult:ADULT_DPHP_ZSCORED",
        "adult-dphp-logs z-scored column by column, codes included, as DP-HP's adult.p was (the authors' "
        "preprocessing: uncharged statistics of the rows, an ablation): 14 numerical features",
        kinds=("tabular",),
    ),
    Plugin(
        "adult-sdgym",
        "datasets.adult:ADULT_SDGYM",
        "UCI Adult as DP-MERF's code reads it (SDGym): categorical codes by descending frequency in adult.data; "
        "paper protocol: SDGym's 22,561-row train part",
        kinds=("tabular",),
    ),
    Plugin(
        "adult-discrete",
        "datasets.adult_discrete:ADULT_DISCRETE",
        "Adult discretized as the seeds' Table 1 ('simple'): 22,561 rows × 15 columns incl. income",
        kinds=("discrete",),
    ),
    Plugin(
        "census",
        "datasets.census:CENSUS",
        "UCI Census-Income (KDD), income >50K: 299,285 rows (data + test), 40 features (7 numerical, 33 categorical)",
        kinds=("tabular",),
    ),
    Plugin(
        "census-discrete",
        "datasets.census_discrete:CENSUS_DISCRETE",
        "Census-Income discretized by the seeds' rule on public maxima: 199,523 rows × 41 columns incl. income",
        kinds=("discrete",),
    ),
    Plugin(
        "cervical",
        "datasets.cervical:CERVICAL",
        "UCI Cervical cancer risk factors, label Biopsy: 753 rows (858 minus rows with >=10 missing), 34 features (12 numerical, 22 binary)",
        kinds=("tabular",),
    ),
    Plugin(
        "cervical-dpmerf",
        "datasets.cervical:CERVICAL_DPMERF",
        "cervical as DP-MERF's code reads it: every row kept (no undersampling), 80/20 split",
        kinds=("tabular",),
    ),
    Plugin(
        "cifar10",
        "datasets.cifar10:CIFAR10",
        "CIFAR-10, 32×32 colour, 10 classes, original python batches: 50,000 train / 10,000 test (the published split, under both protocols)",
        kinds=("image",),
    ),
    Plugin(
        "cifar10-jpeg",
        "datasets.cifar10:CIFAR10_JPEG",
        "JPEG COPY of CIFAR-10 (quality about 75, pixels differ slightly from the original): 50,000 train / 10,000 test, 32×32 colour, 10 classes (the published split, under both protocols)",
        kinds=("image",),
    ),
    Plugin(
        "covtype",
        "datasets.covtype:COVTYPE",
        "UCI Covertype, 7 cover types: 581,012 rows, 54 features (10 numerical, 44 binary)",
        kinds=("tabular",),
    ),
    Plugin(
        "covtype-subset",
        "datasets.covtype:COVTYPE_SUBSET",
        "SUBSET of UCI Covertype: 286,048 rows of cover types 2 vs 4 (Lodgepole Pine vs Cottonwood/Willow), 10 numerical features",
        kinds=("tabular",),
    ),
    Plugin(
        "credit",
        "datasets.credit:CREDIT",
        "Kaggle credit-card fraud (creditcard.csv): 284,807 rows, 29 numerical features (Time dropped)",
        kinds=("tabular",),
    ),
    Plugin(
        "credit-sample",
        "datasets.credit:CREDIT_SAMPLE",
        "SAMPLE of Kaggle credit-card fraud: 1,722 real rows (all 492 frauds + 1,230 normal), 29 numerical features",
        kinds=("tabular",),
    ),
    Plugin(
        "epileptic",
        "datasets.epileptic:EPILEPTIC",
        "UCI Epileptic Seizure Recognition, seizure vs. rest: 11,500 rows, 178 numerical EEG features",
        kinds=("tabular",),
    ),
    Plugin(
        "fashion-mnist",
        "datasets.mnist:FASHION_MNIST",
        "Fashion-MNIST clothing, 28×28 greyscale, 10 classes: 60,000 train / 10,000 test (the published split, under both protocols)",
        kinds=("image",),
    ),
    Plugin(
        "gmm2d",
        "datasets.gmm2d:GaussianMixture2D",
        "DP-HP's 2-D mixture: 25 Gaussians (σ=0.2) on a 5×5 grid, 5 classes, 90,000 train rows",
        kinds=("2d",),
    ),
    Plugin(
        "intrusion",
        "datasets.intrusion:INTRUSION",
        "KDD Cup 1999 intrusion detection (10% file), 5 classes: 494,021 rows, 40 features",
        kinds=("tabular",),
    ),
    Plugin(
        "isolet",
        "datasets.isolet:ISOLET",
        "UCI ISOLET, vowel vs. consonant: 7,797 rows (isolet1+2+3+4 + isolet5), 617 numerical features in [-1, 1]",
        kinds=("tabular",),
    ),
    Plugin(
        "isolet-subset",
        "datasets.isolet:ISOLET_SUBSET",
        "SUBSET of UCI ISOLET (speaker group isolet1): 1,560 rows, vowel vs. consonant, 617 numerical features",
        kinds=("tabular",),
    ),
    Plugin(
        "mnist",
        "datasets.mnist:MNIST",
        "MNIST handwritten digits, 28×28 greyscale, 10 classes: 60,000 train / 10,000 test (the published split, under both protocols)",
        kinds=("image",),
    ),
)
