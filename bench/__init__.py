"""dpbench: the benchmark harness for differentially private data generators."""

__version__ = "0.1.0"
