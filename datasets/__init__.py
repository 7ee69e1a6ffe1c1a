"""Built-in datasets: their cards, generated into ``cards.json`` (see ``methods/__init__.py``);
each loader module is imported only when the dataset is used. Tabular datasets are read from the
publishers' original files; ``*-sample`` and ``*-subset`` are real samples of datasets whose full
files are not in the local mirror; the mirror's JPEG copy of CIFAR-10 has its own name so results
on it are labelled as the copy.
"""

from bench.api.cards import read_cards

DATASET_PLUGINS = read_cards(__file__, "dpbench.datasets")
