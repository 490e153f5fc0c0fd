"""Course tooling, not course content: the exercise tool, test helpers, benchmarks and demos."""
