"""Every worker answers the capabilities worker 1 answered; its name may differ."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from membench_gate.adapter.rpc import RULES, AdapterClient, Capabilities


class Broke(Exception):
    pass


def _client(name: str, **caps: bool) -> AdapterClient:
    process: Any = SimpleNamespace(violation=lambda where, rule, why: Broke(rule, why))
    return AdapterClient(process, name, Capabilities(**caps))


def test_a_worker_with_another_name_and_the_same_capabilities_is_alike() -> None:
    _client("memory (worker 2)", push=True).alike(_client("memory", push=True))


@pytest.mark.parametrize("caps", [{"push": False}, {"push": True, "write": True},
                                  {"push": True, "workers": False}])
def test_other_capabilities_are_the_alike_rules_violation(caps: dict[str, bool]) -> None:
    with pytest.raises(Broke) as raised:
        _client("memory", **caps).alike(_client("memory", push=True))
    rule, why = raised.value.args
    assert rule == "alike" and RULES[rule].startswith("every worker is the same adapter")
    assert why.endswith('the first worker\'s capabilities {"push": true, "write": false, '
                        '"workers": true}'), why
