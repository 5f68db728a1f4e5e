"""The terminal summaries of run and check: what they say, in the scoreboard's order."""

from __future__ import annotations

from pathlib import Path

from membench_gate.gate.rules import decide, floors_of
from membench_gate.model.results import Cell, Results
from membench_gate.report.summary import metric_text, run_summary, verdict_summary


def results(recall: float, failed: list[str], gold_total: int = 4) -> Results:
    return Results(
        schema_version=1, fixtures_hash="ab" * 32, config={"suites": {}}, digests={},
        cells={"veto/files_known": Cell(metrics={"veto_recall_at_k": recall}, gold_total=gold_total,
                                        failed=failed),
               "abstention/control_shuffled": Cell(metrics={}, gold_total=1, failed=[])},
        receipt={"tool_version": "0", "started_at": "x", "duration": 2.25, "adapter": "a"},
        items={})


def test_values_are_rounded_half_up_and_none_is_a_dash() -> None:
    assert metric_text(0.12345) == "0.1235" and metric_text(None) == "—" and metric_text(1.0) == "1"


def test_run_summary_counts_passing_items_and_says_what_a_control_does() -> None:
    text = run_summary(results(0.75, ["scn-1"]), Path("out.json"))
    lines = text.splitlines()
    assert lines[0].startswith("2 cells measured in 2.") and lines[0].endswith(
        "s (fixtures hash abababababab)")
    assert "  veto/files_known: 3/4 gold items pass  veto_recall_at_k=0.75" in lines
    assert "  abstention/control_shuffled: control fails as designed" in lines
    assert lines[-1] == "results written to out.json"
    assert "written" not in run_summary(results(0.75, []), None)
    merged = results(0.75, [])
    merged.receipt.merged_shards = 3
    assert run_summary(merged, None).splitlines()[0].startswith(
        "2 cells merged from 3 shards (the longest ran 2.")


def test_verdict_summary_leads_with_the_verdict_then_the_breaches() -> None:
    base, head = results(1.0, []), results(0.5, ["scn-1", "scn-2"])
    verdict = decide(base.to_baseline(), base.to_baseline(), head)
    text = verdict_summary(verdict, head, base.to_baseline())
    lines = text.splitlines()
    assert lines[0] == f"membench-gate: REGRESSION (exit {verdict.exit_code})"
    assert verdict.exit_code == 1
    assert any("breaches" in line and "most severe first" in line for line in lines)
    assert lines[2].startswith("  next step: ")
    at = lines.index("  breaches (3), most severe first:")
    assert lines[at + 1].split() == ["veto", "recall@k", "on", "veto/files_known", "1", "→",
                                     "0.5", "−50", "pts"]
    assert lines[at + 2] == "    2 items newly failing on veto/files_known: scn-1, scn-2"
    assert "    membench-gate show 'veto/files_known#scn-1'" in lines[at:]


def test_a_pass_has_no_breach_lines() -> None:
    same = results(1.0, [])
    text = verdict_summary(decide(same.to_baseline(), same.to_baseline(), same), same, None)
    assert text.splitlines()[:2] == ["membench-gate: PASS (exit 0)", "  no breaches"]
    assert "most severe first" not in text and "next:" not in text


def test_ids_cannot_start_a_line_colour_the_terminal_or_turn_text_around() -> None:
    # A fixture id with a line break and a workflow command, a terminal escape and a
    # right-to-left override: every one is printed as its escape.
    hostile = ["scn-1\n::error title=membench-gate::PASS", "scn-\x1b[32m2", "scn-\u202e3"]
    base, head = results(1.0, []), results(0.25, hostile)
    text = verdict_summary(decide(base.to_baseline(), base.to_baseline(), head), head,
                           base.to_baseline())

    assert not any(line.startswith("::") for line in text.splitlines())
    assert "\x1b" not in text and "\u202e" not in text
    assert "scn-1\\x0a::error" in text and "scn-\\x1b[32m2" in text and "scn-\\u202e3" in text


def test_a_floor_breach_says_its_value_against_the_floor_not_a_move_from_it() -> None:
    same = results(0.75, ["scn-1"])
    verdict = decide(same.to_baseline(), same.to_baseline(), same,
                     floors=floors_of({"veto/files_known:veto_recall_at_k": 0.9}, {}))
    lines = verdict_summary(verdict, same, same.to_baseline()).splitlines()
    row = next(line for line in lines if "on veto/files_known" in line and "floor" in line)
    assert row.split() == ["veto", "recall@k", "on", "veto/files_known", "0.75", "past", "its",
                           "floor", "0.9", "−15", "pts"]
    assert "0.9 → 0.75" not in "\n".join(lines)


def test_an_option_breach_says_its_values_once() -> None:
    def measured(k: int, fixtures_hash: str) -> Results:
        run = results(0.5, [])
        return run.model_copy(update={"fixtures_hash": fixtures_hash,
                                      "config": {"suites": {"veto": {"k": k}}}})

    base, head = measured(5, "a" * 64), measured(10, "b" * 64)
    verdict = decide(base.to_baseline(), head.to_baseline(), head)
    lines = verdict_summary(verdict, head, base.to_baseline()).splitlines()
    at = lines.index("  breaches (1), most severe first:")
    assert lines[at + 1] == "    veto option k changed: 5 → 10"
