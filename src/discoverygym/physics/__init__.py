"""Physics that more than one suite needs (Kepler's equation). It imports nothing of
the package, so any suite may use it without importing another suite."""
