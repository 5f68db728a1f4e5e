"""The push suite's fixtures and scoring, without an adapter: BrainBench's turn and gold-slug
items, twins, assistant turns and the numbers worked out by hand (docs/suites.md, "push")."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from membench_gate.errors import GateError
from membench_gate.suites.common.fixtures import load_suite
from membench_gate.suites.push.options import PushOptions
from membench_gate.suites.push.scoring import COUNTED, score, tokens
from tests.support.configs import write_json


def turn_record(turn: str, expect: str, injected: list[str], relevant: list[str],
                foreign: tuple[str, ...] = (), count: int = 0) -> dict[str, Any]:
    return {"turn": turn, "asked": "…", "category": None, "expect": expect, "gold": [],
            "acceptable": [], "injected": injected, "text": None, "foreign": list(foreign),
            "relevant": relevant, "tokens": count}


# Five turns: c.1 retrieves a of gold {a, b} plus a stray x; c.2 misses b; c.3 should stay
# silent and injects a (acceptable there: good for precision, still a false fire); c.4 stays
# silent; c.5 injects b and the foreign copy z@personal.
TURNS = {
    "c.1": turn_record("c.1", "retrieve", ["a", "x"], ["a"], count=8),
    "c.2": turn_record("c.2", "retrieve", [], []),
    "c.3": turn_record("c.3", "silent", ["a"], ["a"], count=4),
    "c.4": turn_record("c.4", "silent", [], []),
    "c.5": turn_record("c.5", "retrieve", ["b", "z@personal"], ["b"], ("z@personal",), count=10),
}


def push_records() -> dict[str, dict[str, Any]]:
    slugs = {"c.1": ("a", "b"), "c.2": ("b",), "c.5": ("b",)}
    records = {f"{t}#{s}": {**TURNS[t], "slug": s} for t, ss in slugs.items() for s in ss}
    return {**records, "c.3": TURNS["c.3"], "c.4": TURNS["c.4"]}


def test_know_to_ask_numbers_by_hand() -> None:
    cell = score({"push/know_to_ask": copy.deepcopy(TURNS)}, PushOptions()).cells[
        "push/know_to_ask"]
    assert cell.metrics == {
        "know_to_ask_failure_rate": 1 / 3,  # c.2 of c.1, c.2, c.5
        "false_fire_rate": 1 / 2,  # c.3 of c.3, c.4
        "source_isolation_violations": 1,
        "avg_injected_tokens": 22 / 5,
    }
    assert cell.gold_total == 5
    assert cell.failed == ["c.2", "c.3", "c.5"]  # c.5 hit gold, but leaked


def test_push_numbers_by_hand_count_each_turn_once() -> None:
    run = score({"push/push": push_records()}, PushOptions())
    cell = run.cells["push/push"]
    assert cell.metrics == {
        "push_recall": 2 / 4,  # c.1#a and c.5#b of four gold slugs
        # Σ relevant / Σ injected over the turns that injected: c.1 1/2, c.3 1/1, c.5 1/2;
        # c.1 counted once though two items record it.
        "push_precision": 3 / 5,
        "source_isolation_violations": 1,
        "avg_injected_tokens": 22 / 5,  # c.1 … c.5, the stay-silent ones included
    }
    assert cell.gold_total == 4  # gold slugs only: the stay-silent records are no gold item
    assert cell.failed == ["c.1#b", "c.2#b", "c.5#b"]
    assert run.items["push/push"]["c.3"]["outcome"] == COUNTED
    assert run.items["push/push"]["c.1#a"]["outcome"] == "pass"


def test_nothing_to_score_gives_the_documented_values() -> None:
    quiet = {"c.4": TURNS["c.4"]}
    push = score({"push/push": quiet}, PushOptions()).cells["push/push"]
    assert push.metrics["push_precision"] == 1 and push.metrics["push_recall"] == 1
    assert push.gold_total == 0
    know = score({"push/know_to_ask": {"c.2": TURNS["c.2"]}}, PushOptions()).cells[
        "push/know_to_ask"]
    assert know.metrics["false_fire_rate"] == 0 and know.metrics["know_to_ask_failure_rate"] == 1


def test_an_unknown_push_cell_is_refused() -> None:
    with pytest.raises(ValueError, match="push/default"):
        score({"push/default": dict(TURNS)}, PushOptions())


@pytest.mark.parametrize(("text", "expected"), [
    ("", 0), ("abcd", 1), ("abcde", 2), ("héllo", 2),
    ("😀", 1),  # one character, two UTF-16 code units
    ("😀😀😀", 2),
])
def test_tokens_are_utf16_code_units_over_four_rounded_up(text: str, expected: int) -> None:
    assert tokens(text) == expected


# --- fixtures --------------------------------------------------------------------------------


def page(slug: str, source: str = "work", **extra: Any) -> dict[str, Any]:
    return {"slug": slug, "text": f"{slug} in {source}.", "aliases": [], "source": source,
            **extra}


def conversation(**changes: Any) -> dict[str, Any]:
    conv = {
        "id": "c", "source": "work", "category": "multi-source",
        "pages": [page("nadia"), page("nadia", "personal"), page("tomas")],
        "turns": [
            {"id": "1", "role": "user", "at": "2026-03-09T16:00:00Z", "text": "Ask Nadia.",
             "expect": "retrieve", "gold": ["nadia"], "acceptable": ["never-seeded"]},
            {"id": "2", "role": "assistant", "text": "Nadia owns pricing."},
            {"id": "3", "text": "Sure."},
            {"id": "4", "text": "Thanks, bye.", "expect": "silent"},
        ],
    }
    conv.update(changes)
    return conv


def load(tmp_path: Path, *convs: dict[str, Any], include_holdout: bool = False) -> Any:
    for conv in convs:
        write_json(tmp_path / "push" / "conversations" / f"{conv['id']}.json", conv)
    return load_suite("push", ["push"], tmp_path, include_holdout)


def test_twins_are_a_record_per_copy_and_items_are_turns_and_gold_slugs(tmp_path: Path) -> None:
    fx = load(tmp_path, conversation())
    assert fx.ids["c"] == {("nadia", "work"): "nadia@work",
                           ("nadia", "personal"): "nadia@personal", ("tomas", "work"): "tomas"}
    assert sorted(fx.corpus) == ["c/nadia@personal", "c/nadia@work", "c/tomas"]
    # Turn 1 (retrieve) and 4 (silent) are scored; assistant turn 2 and user turn 3 are not.
    assert sorted(fx.digests) == ["c.1", "c.1#nadia", "c.4"]
    assert fx.digests["c.1"] == fx.digests["c.1#nadia"]


def test_suites_name_the_cells_a_conversation_is_scored_in(tmp_path: Path) -> None:
    fx = load(tmp_path, conversation(suites=["push"]))
    # The stay-silent turn is a record of push/push (its injection counts for precision).
    assert sorted(fx.digests) == ["c.1#nadia", "c.4"]
    fx = load(tmp_path, conversation(suites=["know_to_ask"]))
    assert sorted(fx.digests) == ["c.1", "c.4"]


@pytest.mark.parametrize(("turn", "message"), [
    ({"id": "9", "role": "assistant", "text": "Nadia.", "expect": "silent"},
     "turn 9: an assistant turn is context only"),
    ({"id": "9", "role": "assistant", "text": "Nadia.", "acceptable": ["nadia"]},
     "turn 9: an assistant turn is context only"),
    ({"id": "9", "text": "Nadia.", "gold": ["nadia"]}, "turn 9: gold/acceptable ids need expect"),
    ({"id": "9", "text": "Nadia.", "expect": "retrieve"}, "expect 'retrieve' needs gold ids"),
    ({"id": "9", "text": "Nadia.", "expect": "silent", "gold": ["nadia"]},
     "'silent' needs none"),
    ({"id": "9", "text": "Nadia.", "expect": "retrieve", "gold": ["grace"]},
     "gold id 'grace' is not a page of the conversation's source 'work'"),
    ({"id": "9", "text": "x", "expect": "retrieve", "gold": ["nadia", "nadia"]},
     "duplicate gold id 'nadia'"),
    ({"id": "9", "text": "x", "at": "last tuesday"}, "not an ISO date"),
    ({"id": "9", "text": "x", "role": "system"}, "role"),
])
def test_bad_turns_are_errors_naming_the_file_and_turn(tmp_path: Path, turn: dict[str, Any],
                                                       message: str) -> None:
    conv = conversation(pages=[*conversation()["pages"], page("grace", "personal")])
    conv["turns"].append(turn)
    with pytest.raises(GateError, match=r"c\.json") as caught:
        load(tmp_path, conv)
    assert message in str(caught.value)


def test_gold_seeded_only_in_another_source_is_an_error_acceptable_may_be_unseeded(
        tmp_path: Path) -> None:
    conv = conversation()
    conv["turns"][0]["acceptable"] = ["nowhere", "grace"]
    load(tmp_path, conv)  # acceptable slugs need not be seeded
    conv["pages"].append(page("grace", "personal"))
    conv["turns"][0]["gold"] = ["grace"]
    with pytest.raises(GateError, match="gold id 'grace' is not a page"):
        load(tmp_path, conv)


def test_composite_keys_stay_unique(tmp_path: Path) -> None:
    # Turn "1#nadia" and the gold slug "nadia" of turn "1" are one item id.
    conv = conversation()
    conv["turns"].append({"id": "1#nadia", "text": "Hm."})
    with pytest.raises(GateError, match=r"duplicate push item .*'c\.1#nadia'"):
        load(tmp_path, conv)
    # A literal slug "nadia@work" and the work copy of the twin "nadia" are one record id.
    with pytest.raises(GateError, match="duplicate page record id 'nadia@work'"):
        load(tmp_path, conversation(pages=[*conversation()["pages"],
                                           page("nadia@work", "personal")]))
    with pytest.raises(GateError, match=r"duplicate page id 'tomas \(source work\)'"):
        load(tmp_path, conversation(pages=[*conversation()["pages"], page("tomas")]))


def _digest_after(tmp_path: Path, change: Any) -> str:
    conv = conversation()
    change(conv)
    return load(tmp_path, conv).digests["c.4"]


@pytest.mark.parametrize("change", [
    lambda c: c["turns"][1].update(role="user"),  # an earlier turn's role
    lambda c: c["turns"][1].update(at="2026-03-09T16:01:00Z"),  # an earlier turn's time
    lambda c: c["turns"][2].update(text="Fine."),  # an unscored turn's text
    lambda c: c["turns"][3].update(at="2026-03-10T08:00:00Z"),  # the turn's own time
    lambda c: c.update(source="personal", pages=[page("nadia", "personal")],
                       turns=[{**c["turns"][0], "gold": ["nadia"]}, *c["turns"][1:]]),
])
def test_digests_cover_what_the_turn_is_measured_on(tmp_path: Path, change: Any) -> None:
    assert _digest_after(tmp_path / "a", lambda c: None) != _digest_after(tmp_path / "b", change)


def test_category_is_reported_not_measured(tmp_path: Path) -> None:
    assert _digest_after(tmp_path / "a", lambda c: None) == \
        _digest_after(tmp_path / "b", lambda c: c.update(category="other"))


def test_a_held_out_conversation_is_left_out_unless_holdout_is_included(tmp_path: Path) -> None:
    kept = conversation(id="kept")
    secret = conversation(id="secret", holdout=True)
    fx = load(tmp_path, kept, secret)
    assert [c.id for c in fx.conversations] == ["kept"]
    assert not any(k.startswith("secret") for k in (*fx.digests, *fx.corpus))
    fx = load(tmp_path, kept, secret, include_holdout=True)
    assert [c.id for c in fx.conversations] == ["kept", "secret"]


def test_a_held_out_twin_copy_keeps_the_other_copy_s_id(tmp_path: Path) -> None:
    conv = conversation(pages=[page("nadia"), page("nadia", "personal", holdout=True),
                               page("tomas")])
    fx = load(tmp_path, conv)
    assert sorted(fx.corpus) == ["c/nadia@work", "c/tomas"]
