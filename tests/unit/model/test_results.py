"""Baseline and results files from elsewhere: refused when they cannot be trusted."""

from __future__ import annotations

import pytest

from membench_gate.errors import GateError


def test_a_baseline_with_a_boolean_schema_version_is_refused() -> None:
    from membench_gate.model.results import parse_baseline

    with pytest.raises(GateError) as caught:
        parse_baseline('{"schema_version": true}', "b.json")
    assert caught.value.exit_code == 3


def test_a_verdict_file_read_as_results_or_baseline_says_what_it_is() -> None:
    # What a failed run leaves at its --out, handed to merge or check --results.
    from membench_gate.model.results import parse_baseline, parse_results

    verdict = '{"verdict": "error", "exit_code": 4, "notes": ["adapter crashed"]}'
    with pytest.raises(GateError, match=r"^r\.json: a verdict file \(verdict 'error'\), not a "
                                        r"results file: the command that wrote it failed"):
        parse_results(verdict, "r.json")
    with pytest.raises(GateError, match=r"^b\.json: a verdict file \(verdict 'error'\), not a "
                                        "baseline"):
        parse_baseline(verdict, "b.json")
