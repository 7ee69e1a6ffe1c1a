"""Built-in method adapters; each module defines one and registers it here."""

from bench.core.registry import METHODS
from methods.aim import AIM
from methods.baselines import Independent, Uniform
from methods.dp_gan import DPGan, dp_cgan
from methods.dp_hp import DPHermite
from methods.dp_merf import DPMerf
from methods.dp_mepf import DPMepf
from methods.full_mmd import FullMMD
from methods.mst import MST
from methods.privbayes import PrivBayes
from methods.real import Real

METHODS.register(Real())
METHODS.register(DPMerf())
METHODS.register(DPHermite())
METHODS.register(DPMepf())
METHODS.register(DPGan())
METHODS.register(dp_cgan())
METHODS.register(MST())
METHODS.register(PrivBayes())
METHODS.register(AIM())
METHODS.register(FullMMD())
METHODS.register(Uniform())
METHODS.register(Independent())
