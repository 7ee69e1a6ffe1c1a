"""report layer of the harness."""
