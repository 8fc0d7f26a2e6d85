"""Real local servers used by the integration tests and benchmarks."""
