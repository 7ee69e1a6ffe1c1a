"""dpbench: the benchmark harness for differentially private data generators."""

__version__ = "0.1.0"


def run_cell(*args, **kwargs):
    """Run one (method, dataset, ε, seed) cell in this process; see :func:`bench.harness.api.run_cell`.
    Imported lazily so that ``import bench`` stays light."""
    from bench.harness.api import run_cell as run

    return run(*args, **kwargs)
