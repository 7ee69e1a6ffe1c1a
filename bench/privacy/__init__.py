"""privacy layer of the harness."""
