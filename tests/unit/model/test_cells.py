"""Cell names with and without a seam: one reading everywhere (membench_gate.model.cells)."""

from __future__ import annotations

import pytest

from membench_gate.model import cells, metrics


@pytest.mark.parametrize(("name", "seam", "suite", "condition", "scope"), [
    ("veto/files_known", "", "veto", "files_known", "veto"),
    ("claude-code/push/default", "claude-code", "push", "default", "claude-code/push"),
    ("s_1/recall/multi-session", "s_1", "recall", "multi-session", "s_1/recall"),
])
def test_a_name_taken_apart_and_put_back(name: str, seam: str, suite: str, condition: str,
                                         scope: str) -> None:
    parsed = cells.parse(name)
    assert parsed == (seam, suite, condition)
    assert (parsed.local, parsed.scope) == (f"{suite}/{condition}", scope)
    assert cells.join(seam, parsed.local) == name
    assert cells.scope_parts(scope) == (seam, suite)


def test_a_name_of_neither_form_has_no_condition() -> None:
    assert cells.parse("veto").condition == ""
    assert cells.parse("a/b/c/d").condition == ""


def test_the_registry_reads_a_seams_cell_as_its_local_cell() -> None:
    assert metrics.known_cell("cc/veto/files_known") and not metrics.known_cell("cc/veto/nope")
    assert metrics.gate_kind("cc/abstention/default", "net_at_1") == "gated"
    # NET is reported, not gated, on the controls: the condition is read past the seam.
    assert metrics.gate_kind("cc/abstention/control_shuffled", "net_at_1") == "report"
