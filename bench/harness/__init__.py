"""harness layer of the harness."""
