"""Built-in evaluators; each module defines one and registers it here."""

from bench.registry import EVALUATORS
from evaluators.downstream import DownstreamClassifiers
from evaluators.fid import FrechetInceptionDistance
from evaluators.marginals import MarginalErrors
from evaluators.nll import NegativeLogLikelihood

EVALUATORS.register(NegativeLogLikelihood())
EVALUATORS.register(DownstreamClassifiers())
EVALUATORS.register(MarginalErrors())
EVALUATORS.register(FrechetInceptionDistance())
