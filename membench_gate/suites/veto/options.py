"""``[suites.veto]`` of ``membench.toml`` (docs/config.md)."""

from __future__ import annotations

from membench_gate.suites.common.options import Count, SuiteOptions


class VetoOptions(SuiteOptions):
    k: Count = 5
