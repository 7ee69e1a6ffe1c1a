"""Built-in method adapters, each declared with ``@method`` in its module — the way a user's plugin
is written. Their cards (name, description, data kinds, tags, and the ``module:attribute`` of each)
are in ``cards.json``, generated from the declarations by ``python -m bench list --write-cards
methods`` (``bench.api.cards``); a module is imported only when its method is used.

This file must stay light: it is imported by ``python -m bench list`` and ``--help``. The cards
reach the registry through the ``dpbench.methods`` entry point in ``pyproject.toml``, the same door
a third-party package uses.
"""

from bench.api.cards import read_cards

METHOD_PLUGINS = read_cards(__file__, "dpbench.methods")
PRETRAINER_PLUGINS = read_cards(__file__, "dpbench.pretrainers")
