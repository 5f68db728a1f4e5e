"""Baseline and results files from elsewhere: refused when they cannot be trusted."""

from __future__ import annotations

import pytest

from membench_gate.errors import GateError


@pytest.mark.parametrize(("version", "shown"), [
    ('"1"', "'1'"), ("true", "True"), ("1.0", "1.0"), ("null", "None"), ("[1]", "[1]"),
    ('"' + "9" * 60 + '"', "'" + "9" * 39 + "…"),
])
def test_a_schema_version_of_the_wrong_type_is_an_error(version: str, shown: str) -> None:
    # Malformed, like any field of the wrong type (exit 4): not a version to be unknown.
    from membench_gate.model.results import parse_baseline, parse_results

    for parse in (parse_baseline, parse_results):
        with pytest.raises(GateError) as caught:
            parse(f'{{"schema_version": {version}}}', "b.json")
        assert caught.value.exit_code == 4
        assert str(caught.value) == f"b.json: schema_version: must be an integer, got {shown}"


def test_a_well_formed_but_unknown_schema_version_is_inconclusive() -> None:
    from membench_gate.model.results import parse_baseline

    with pytest.raises(GateError) as caught:
        parse_baseline('{"schema_version": 2}', "b.json")
    assert caught.value.exit_code == 3
    assert str(caught.value) == "b.json: schema_version 2 is not known to this version (expected 1)"


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


def test_a_justification_without_its_breaches_is_refused_like_a_missing_field() -> None:
    # DESIGN §7: justification {text, breaches}. Every justification bless writes has both.
    from membench_gate.model.results import Baseline, Justification, dumps_baseline, parse_baseline

    head = '{"schema_version": 1, "fixtures_hash": "f", "config": {}, "cells": {}, '
    with pytest.raises(GateError) as caught:
        parse_baseline(head + '"justification": {"text": "x"}}', "b.json")
    assert (str(caught.value), caught.value.exit_code) == (
        "b.json: justification.breaches: Field required", 4)
    with pytest.raises(GateError, match=r"^b\.json: justification\.extra: Extra inputs"):
        parse_baseline(head + '"justification": {"text": "x", "breaches": [], "extra": 1}}',
                       "b.json")
    # What the gate writes, with nothing breached too, reads back as it was.
    for keys in ([], ["veto/files_known:veto_recall_at_k"]):
        written = dumps_baseline(Baseline(schema_version=1, fixtures_hash="f", config={},
                                          cells={}, justification=Justification(
                                              text="why", breaches=keys)))
        assert parse_baseline(written, "b.json").justification == Justification(text="why",
                                                                                breaches=keys)
