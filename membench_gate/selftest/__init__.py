"""``membench-gate selftest``: mutants of the adapter and the sensitivity report."""
