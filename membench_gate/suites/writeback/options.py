"""``[suites.writeback]`` of ``membench.toml`` (docs/config.md)."""

from __future__ import annotations

from membench_gate.suites.common.options import Count, SuiteOptions


class WritebackOptions(SuiteOptions):
    k: Count = 5
    budget: Count = 3  # ids a continuity pair's reader may be pushed per turn
