"""Constants several layers share: names users write and defaults the docs promise."""

from __future__ import annotations

DEFAULT_CONFIG = "membench.toml"
DEFAULT_BASELINE = "baselines/main.json"
# A fixtures entry naming the folder this package ships for a suite.
BUILTIN = "builtin"
# The adapter a config without [adapter] python or command runs.
REFERENCE_ADAPTER = "membench_gate.reference:ReferenceMemory"
# Names of the variables the gate set in its own environment for itself alone (comma-separated):
# withheld from every process it starts, which gets the environment as the user gave it.
GATE_ONLY_VARIABLE = "MEMBENCH_GATE_ONLY"
# The significance level of the statistical gate of stochastic cells when no [live] alpha is set.
DEFAULT_ALPHA = 0.05
# Adapter processes one run may start at once ([adapter] workers, --jobs).
MAX_WORKERS = 64
