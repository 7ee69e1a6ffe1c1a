"""Built-in evaluators: their cards, generated into ``cards.json`` (see ``methods/__init__.py``);
each evaluator module is imported only when the evaluator is used. Tag ``named-only``: run only
when ``--evaluators`` names it.
"""

from bench.api.cards import read_cards

EVALUATOR_PLUGINS = read_cards(__file__, "dpbench.evaluators")
