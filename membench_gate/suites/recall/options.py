"""``[suites.recall]`` of ``membench.toml`` (docs/config.md)."""

from __future__ import annotations

from membench_gate.suites.common.options import Count, SuiteOptions


class RecallOptions(SuiteOptions):
    k: Count = 10
