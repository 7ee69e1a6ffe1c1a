"""Built-in evaluators; each module defines one and registers it here."""

from bench.core.registry import EVALUATORS
from evaluators.downstream import DownstreamClassifiers
from evaluators.effective_size import EffectiveSize
from evaluators.fid import FrechetInceptionDistance
from evaluators.image_downstream import registered as image_downstream_evaluators
from evaluators.marginals import MarginalErrors
from evaluators.nll import NegativeLogLikelihood

EVALUATORS.register(NegativeLogLikelihood())
EVALUATORS.register(DownstreamClassifiers())
EVALUATORS.register(MarginalErrors())
EVALUATORS.register(FrechetInceptionDistance())
for evaluator in image_downstream_evaluators():
    EVALUATORS.register(evaluator)
EVALUATORS.register(EffectiveSize())
