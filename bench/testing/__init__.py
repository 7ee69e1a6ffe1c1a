"""The conformance kit: ``check_method(adapter)`` runs a method adapter through named checks every
method must pass (like scikit-learn's ``check_estimator``). The registry-wide test calls it for
every built-in; a plugin author calls it in their own tests::

    from bench.testing import check_method
    check_method(MyMethod(), data_dir="path/to/data")

The checks (``CHECKS``, each a small function of a :class:`Subject`):

- ``declaration``: name, data kinds, ``private``, hyperparameters, ``fit``.
- ``grid_cell``: one cell through the grid's worker (fit, the independent accountant's
  recomputation of the ledger, sampling), within the target ε.
- ``sample_schema``: ``sample(n)`` gives n rows in the training schema.
- ``global_seed_independence``: the same run seed under different *global* seeds (``random``,
  NumPy's and torch's global generators) gives the same synthetic data.
- ``infinite_epsilon_noiseless``: at ε = ∞ no release adds noise.
- ``noise_reaches_output``: other ledger noise gives other synthetic data.
- ``release_replay``: fit on a different dataset of the same size (every row drawn afresh from
  the public domain) with the ledger handing back the first fit's noisy values: a method whose
  only window on the rows is its releases must give the same synthetic data. This catches a
  clean value used after the noise door, noise drawn outside it, rows read without a release.
- ``sensitivity_probe``: the same replay on neighbours under replace-one (a row replaced by an
  adversarial row: the last, the most extreme, the first and a fixed random one), comparing each release's *clean* value between the two fits: a difference
  beyond the declared sensitivity (L2 for Gaussian and DP-SGD, L1 for Laplace, the largest score
  change for the exponential mechanism) proves the declaration understated. Replay keeps both
  fits on the same trajectory, so the clean values are comparable release by release.
- ``no_training_copies`` (private methods): the sample matches training rows no more than held-out
  rows (:mod:`bench.privacy.copies`) — no assumption about the code, so a copy made through any
  door shows.
- ``release_replay`` and ``sensitivity_probe`` run again at ε = 0.1 and ε = 8 (``OTHER_EPSILONS``;
  the last and the most extreme row), reported as "DATASET at ε = 8", and on all the training rows
  of the smallest test dataset (a method that switches at a size above the kit's 3,000 rows).
- ``data_independence`` (``data_independent`` methods): no release, and the same synthetic data
  on a different dataset.
- ``queries_only`` (private methods): the method reached its rows only through the handle's
  metered queries (``PrivateData.counts``, ``PrivateData.sum``), never ``data.rows(trusted=…)``,
  whose uses only the method's own arithmetic vouches for.
- ``thread_invariance`` (data kinds the method lists in ``thread_invariant_kinds``): the same
  synthetic data at 1 and at 2 torch threads, so the runner may lend the fit idle cores.
- ``audit`` (only with ``audit_runs`` > 0): ``bench audit``'s canary attack on the method's
  releases, ``audit_runs`` fits per side at ε = 4, δ = 0.05 on 100 rows; fails on a VIOLATION — an ε
  lower bound above the claim, or a fitted μ whose lower confidence bound exceeds the claimed μ.

Every fit runs behind the data wall (:func:`bench.core.walls.fit_wall`), as in a grid cell, and its
ledger looks as in production: the kit's instruments (observers, replay, noise source) are not
among its attributes.

A failing check raises :class:`ConformanceError` naming it (``[release_replay] …``); pass
``expected_failures={"check": "why"}`` to record a known failure instead (an unexpected pass of
it is a failure too). A kind whose test dataset cannot be loaded (files missing) is skipped and
named in the returned report (the registry-wide test allows none: every kind has a test dataset,
images on 300 MNIST rows).
"""

from bench.testing.kit import TEST_DATASETS, ConformanceError, ConformanceReport
from bench.testing.method import CHECKS, check_method
from bench.testing.neighbours import adversarial_neighbour, redrawn_from_public_domain
from bench.testing.others import check_dataset, check_evaluator

__all__ = [
    "CHECKS",
    "TEST_DATASETS",
    "ConformanceError",
    "ConformanceReport",
    "adversarial_neighbour",
    "check_dataset",
    "check_evaluator",
    "check_method",
    "redrawn_from_public_domain",
]
