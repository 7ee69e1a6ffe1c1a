"""core layer of the harness."""
