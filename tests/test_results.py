"""Baseline and results files from elsewhere: refused when they cannot be trusted."""

from __future__ import annotations

import pytest

from membench_gate.errors import GateError


def test_a_baseline_with_a_boolean_schema_version_is_refused() -> None:
    from membench_gate.results import parse_baseline

    with pytest.raises(GateError) as caught:
        parse_baseline('{"schema_version": true}', "b.json")
    assert caught.value.exit_code == 3
