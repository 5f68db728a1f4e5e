"""The writeback suite's scoring from item records alone (hand-computed numbers), its fixtures'
pairs and the page/twin rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from membench_gate.errors import GateError
from membench_gate.model.measurement import digest
from membench_gate.suites.common.fixtures import load_suite
from membench_gate.suites.common.pages import Page, page_ids, page_records
from membench_gate.suites.writeback.options import WritebackOptions
from membench_gate.suites.writeback.scoring import score

OPTIONS = WritebackOptions()
PROVENANCE = {"source": "work", "session": "s", "turn": "t1"}


def hit(ident: str, text: str, entity: str | None = "Ana",
        provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": ident, "score": 1.0, "text": text, "entity": entity,
            "provenance": PROVENANCE if provenance is None else provenance}


def fact(order: int, keywords: list[str], hits: list[dict[str, Any]], session: str = "s",
         entity: str = "Ana") -> dict[str, Any]:
    return {"kind": "fact", "session": session, "order": order, "keywords": keywords,
            "entity": entity, "provenance": PROVENANCE, "asked": " ".join(keywords),
            "hits": hits, "abstained": False}


def decision(pair: str, expected: list[str], keywords: list[str], injected: list[str],
             hits: list[dict[str, Any]], foreign: list[str] | None = None,
             seeded: list[str] | None = None) -> dict[str, Any]:
    return {"kind": "decision", "pair": pair, "expected": expected, "keywords": keywords,
            "injected": injected, "foreign": foreign or [], "seeded": seeded or [],
            "asked": " ".join(keywords) or None, "hits": hits, "abstained": False}


# -- fidelity ------------------------------------------------------------------------------------

def test_one_merged_memory_stands_for_one_gold_fact_only() -> None:
    merged = hit("m1", "Ana moved to Lisbon and adopted a cat")
    run = score({"writeback/fidelity": {
        "s.f1": fact(0, ["Lisbon"], [merged]),
        "s.f2": fact(1, ["cat"], [merged]),  # the same hit: taken by f1
        "s.f3": fact(2, ["Lisbon"], [merged, hit("m2", "Ana lives in Lisbon now")]),
    }}, OPTIONS)
    cell, items = run.cells["writeback/fidelity"], run.items["writeback/fidelity"]
    assert items["s.f2"]["survived"] is False
    assert (items["s.f3"]["survived"], items["s.f3"]["rank"]) == (True, 2)  # the next free hit
    assert cell.metrics == {"write_back_fidelity": 2 / 3, "provenance_accuracy": 1.0}
    assert cell.failed == ["s.f2"]


def test_the_greedy_follows_the_gold_fact_order_not_the_item_ids() -> None:
    merged = hit("m1", "Ana moved to Lisbon and adopted a cat")
    run = score({"writeback/fidelity": {
        "s.a": fact(1, ["cat"], [merged]),
        "s.b": fact(0, ["Lisbon"], [merged]),  # earlier in the session: takes the hit first
    }}, OPTIONS)
    assert run.cells["writeback/fidelity"].failed == ["s.a"]


def test_hits_are_taken_per_session_and_need_the_entity() -> None:
    shared = hit("m1", "Ana moved to Lisbon")
    run = score({"writeback/fidelity": {
        "s.f1": fact(0, ["Lisbon"], [shared]),
        "t.f1": fact(0, ["Lisbon"], [shared], session="t"),  # another session: not taken
        "s.f2": fact(1, ["Lisbon"], [hit("m2", "Bo moved to Lisbon", entity="Bo")]),
    }}, OPTIONS)
    items = run.items["writeback/fidelity"]
    assert [items[i]["survived"] for i in ("s.f1", "t.f1", "s.f2")] == [True, True, False]


def test_provenance_is_the_taken_hits_with_the_turn() -> None:
    wrong_turn = {**PROVENANCE, "turn": "t2"}
    run = score({"writeback/fidelity": {
        "s.f1": fact(0, ["Lisbon"], [hit("m1", "Ana: Lisbon", provenance=wrong_turn)]),
        "s.f2": fact(1, ["cat"], [hit("m2", "Ana has a cat")]),
        "s.f3": fact(2, ["dog"], [hit("m3", "Ana has a cat")]),  # does not survive
        "s.n1": {"kind": "non-fact (quoted)", "keywords": ["cat"], "turn": "t3",
                 "hits": [hit("m2", "Ana has a cat")], "abstained": False},
    }}, OPTIONS)
    cell, items = run.cells["writeback/fidelity"], run.items["writeback/fidelity"]
    assert cell.metrics == {"write_back_fidelity": 2 / 3, "provenance_accuracy": 1 / 2,
                            "non_fact_leak_rate": 1.0}
    assert cell.failed == ["s.f1", "s.f3", "s.n1"]
    assert items["s.f1"]["survived"] and not items["s.f1"]["provenance_ok"]


def test_shares_are_one_when_there_is_nothing_to_share() -> None:
    nothing = score({"writeback/fidelity": {"s.f1": fact(0, ["x"], [])}}, OPTIONS)
    assert nothing.cells["writeback/fidelity"].metrics == {"write_back_fidelity": 0.0,
                                                          "provenance_accuracy": 1.0}
    only_non_facts = score({"writeback/fidelity": {"s.n1": {
        "kind": "non-fact (hypothetical)", "keywords": ["x"], "turn": "t1", "hits": [],
        "abstained": False}}}, OPTIONS)
    assert only_non_facts.cells["writeback/fidelity"].metrics == {
        "write_back_fidelity": 1.0, "provenance_accuracy": 1.0, "non_fact_leak_rate": 0.0}


def test_a_recorded_judgement_is_recomputed_not_trusted() -> None:
    forged = {**fact(0, ["Lisbon"], []), "survived": True, "provenance_ok": True, "rank": 1}
    run = score({"writeback/fidelity": {"s.f1": forged}}, OPTIONS)
    assert run.items["writeback/fidelity"]["s.f1"]["survived"] is False
    assert run.cells["writeback/fidelity"].failed == ["s.f1"]


# -- continuity ----------------------------------------------------------------------------------

def test_a_decision_passes_by_either_arm() -> None:
    written = hit("w1", "We pass on Widget Co this round")
    run = score({"writeback/continuity": {
        "p/pointer": decision("p", ["companies/widget"], ["pass", "Series A"],
                              ["companies/widget"], [written]),
        "p/fact": decision("p", ["companies/widget"], ["pass", "Widget Co"], [], [written]),
        "q/neither": decision("q", ["companies/kestrel"], ["hold off"], ["people/ana"],
                              [written]),
        "q/keywordless": decision("q", ["companies/kestrel"], [], [], []),
        "s.p1": {"keywords": ["Widget"], "asked": "?", "hits": [written], "abstained": False},
    }}, OPTIONS)
    cell, items = run.cells["writeback/continuity"], run.items["writeback/continuity"]
    assert cell.failed == ["q/keywordless", "q/neither"]
    assert cell.metrics == {"continuity_rate": 3 / 5, "source_isolation_violations": 0.0}
    assert (items["p/pointer"]["pointer"], items["p/pointer"]["rank"]) == (["companies/widget"],
                                                                           None)
    assert (items["p/fact"]["pointer"], items["p/fact"]["rank"]) == ([], 1)


def test_a_seeded_page_holding_the_keywords_is_not_a_written_fact() -> None:
    page = hit("companies/widget", "Widget Co: we pass on pre-seed rounds")
    run = score({"writeback/continuity": {
        "p/d1": decision("p", ["companies/widget"], ["pass", "Widget"], [], [page],
                         seeded=["companies/widget"]),
    }}, OPTIONS)
    assert run.cells["writeback/continuity"].failed == ["p/d1"]


def test_a_foreign_twin_does_not_count_and_is_counted_once_per_pair() -> None:
    foreign = ["people/mateo@personal"]
    run = score({"writeback/continuity": {
        "p/d1": decision("p", ["people/mateo@work"], [], foreign, [], foreign=foreign),
        "p/d2": decision("p", ["people/mateo@work"], [], foreign, [], foreign=foreign),
        "q/d1": decision("q", ["people/mateo@work"], [], ["people/mateo@work"], []),
    }}, OPTIONS)
    cell = run.cells["writeback/continuity"]
    assert cell.failed == ["p/d1", "p/d2"]
    assert cell.metrics["source_isolation_violations"] == 1.0
    probes_only = score({"writeback/continuity": {
        "s.p1": {"keywords": ["x"], "asked": "?", "hits": [], "abstained": False}}}, OPTIONS)
    assert "source_isolation_violations" not in probes_only.cells["writeback/continuity"].metrics


# -- pages and pairs -----------------------------------------------------------------------------

def test_a_slug_seeded_in_several_sources_is_one_record_per_copy() -> None:
    pages = [Page(slug="people/mateo", text="work copy", source="work"),
             Page(slug="people/mateo", text="home copy", source="personal"),
             Page(slug="places/porto", text="office", source="work")]
    ids = page_ids(pages, "here")
    assert ids == {("people/mateo", "work"): "people/mateo@work",
                   ("people/mateo", "personal"): "people/mateo@personal",
                   ("places/porto", "work"): "places/porto"}
    records = page_records(pages, ids)
    assert [(r.id, r.entity, r.source) for r in records] == [
        ("people/mateo@work", "people/mateo", "work"),
        ("people/mateo@personal", "people/mateo", "personal"),
        ("places/porto", "places/porto", "work")]
    with pytest.raises(GateError, match=r"here: duplicate page id 'places/porto \(source work\)'"):
        page_ids([*pages, Page(slug="places/porto", text="again", source="work")], "here")


def _pair(**changes: Any) -> dict[str, Any]:
    pair: dict[str, Any] = {
        "id": "c1", "source": "work",
        "pages": [{"slug": "people/mateo", "text": "work", "source": "work"},
                  {"slug": "people/mateo", "text": "home", "source": "personal"}],
        "writer": {"id": "c1-w", "turns": [{"id": "1", "speaker": "Sam", "at":
                                            "2026-03-09T16:00:00Z", "text": "We pass."}]},
        "reader": {"id": "c1-r", "turns": [{"id": "1", "text": "Where did we land?"},
                                           {"id": "2", "role": "assistant", "text": "Hm."}]},
        "decisions": [{"id": "d1", "expected": ["people/mateo"], "keywords": ["pass"]}],
    }
    pair.update(changes)
    return pair


def _load(tmp_path: Path, *pairs: dict[str, Any], sessions: bool = False,
          holdout: bool = False) -> Any:
    (tmp_path / "pairs").mkdir(exist_ok=True)
    for index, pair in enumerate(pairs):
        (tmp_path / "pairs" / f"{index}.json").write_text(json.dumps(pair), encoding="utf-8")
    if sessions:
        (tmp_path / "sessions").mkdir(exist_ok=True)
    return load_suite("writeback", ["."], tmp_path, include_holdout=holdout)


def test_a_pairs_only_folder_loads_with_twin_ids_and_digests(tmp_path: Path) -> None:
    fx = _load(tmp_path, _pair())
    assert set(fx.digests) == {"c1/d1"}
    assert fx.page_ids["c1"][("people/mateo", "personal")] == "people/mateo@personal"
    assert set(fx.corpus) == {"c1/pages/people/mateo@work", "c1/pages/people/mateo@personal",
                              "c1/c1-w/1", "c1/c1-r/1", "c1/c1-r/2"}
    before = fx.digests["c1/d1"]
    edited = _pair(reader={"id": "c1-r", "turns": [{"id": "1", "text": "Where did we land?"},
                                                  {"id": "2", "role": "user", "text": "Hm."}]})
    assert _load(tmp_path, edited).digests["c1/d1"] != before  # the role is in the digest


@pytest.mark.parametrize(("changes", "message"), [
    ({"decisions": [{"id": "d1", "expected": ["people/ana"]}]},
     "decision d1: expected slug 'people/ana' is not a page of the pair's source 'work'"),
    ({"decisions": [{"id": "d1"}]}, "decision d1: needs expected slugs, keywords or both"),
    ({"reader": {"id": "c1-w", "turns": [{"id": "1", "text": "x"}]}},
     "writer and reader have the same id 'c1-w'"),
    ({"reader": {"id": "r", "turns": [{"id": "1", "role": "bot", "text": "x"}]}}, "role"),
    ({"writer": {"id": "w", "turns": [{"id": "1", "speaker": "S", "at": "soon", "text": "x"}]}},
     "'soon' is not an ISO date or time"),
])
def test_a_broken_pair_is_an_error_naming_it(tmp_path: Path, changes: dict[str, Any],
                                             message: str) -> None:
    with pytest.raises(GateError, match=r"pairs/0\.json") as error:
        _load(tmp_path, _pair(**changes))
    assert message in str(error.value)


def test_composite_keys_are_unique_across_sessions_and_pairs(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "s.json").write_text(json.dumps({
        "id": "a", "turns": [{"id": "t", "speaker": "S", "text": "x"}], "gold_facts": [],
        "probes": [{"id": "b/c", "question": "?", "keywords": ["x"]}]}), encoding="utf-8")
    with pytest.raises(GateError, match=r"duplicate writeback item .* id 'a\.b/c'"):
        _load(tmp_path, _pair(id="a.b", decisions=[{"id": "c", "keywords": ["x"]}]))


def test_a_held_out_pair_or_decision_has_no_digest_unless_included(tmp_path: Path) -> None:
    pairs = (_pair(), _pair(id="c2", holdout=True),
             _pair(id="c3", decisions=[{"id": "d1", "keywords": ["x"], "holdout": True},
                                       {"id": "d2", "keywords": ["y"]}]))
    assert set(_load(tmp_path, *pairs).digests) == {"c1/d1", "c3/d2"}
    assert set(_load(tmp_path, *pairs, holdout=True).digests) == {"c1/d1", "c2/d1", "c3/d1",
                                                                  "c3/d2"}


def test_a_folder_with_neither_subfolder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(GateError, match=r"\./sessions or \./pairs: folder not found"):
        load_suite("writeback", ["."], tmp_path, include_holdout=False)


# -- sessions with pages -------------------------------------------------------------------------

def _session(**changes: Any) -> dict[str, Any]:
    session: dict[str, Any] = {
        "id": "s1", "source": "work",
        "turns": [{"id": "t1", "speaker": "Sam", "text": "Ola moved to Lisbon."}],
        "gold_facts": [{"id": "f1", "keywords": ["Lisbon"], "entity": "people/ola",
                        "turn": "t1"}],
    }
    session.update(changes)
    return session


PAGES = [{"slug": "people/ola", "text": "Ola, work", "source": "work"},
         {"slug": "people/ola", "text": "Ola, home", "source": "personal"},
         {"slug": "places/lisbon", "text": "A city", "source": "work", "holdout": True}]


def _load_sessions(tmp_path: Path, *sessions: dict[str, Any], holdout: bool = False) -> Any:
    folder = tmp_path / "sessions"
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    for index, session in enumerate(sessions):
        (folder / f"{index}.json").write_text(json.dumps(session), encoding="utf-8")
    return load_suite("writeback", ["."], tmp_path, include_holdout=holdout)


def test_a_session_without_pages_digests_as_before_pages_existed(tmp_path: Path) -> None:
    plain = _load_sessions(tmp_path, _session())
    assert (plain.digests, plain.corpus) == (_load_sessions(tmp_path, _session(pages=[])).digests,
                                             _load_sessions(tmp_path, _session(pages=[])).corpus)
    # The digest a page-less session had before sessions could carry pages (scorer version 3).
    assert plain.digests["s1.f1"] == digest({
        "source": "work", "session": "s1", "item": {**_session()["gold_facts"][0],
                                                     "holdout": False},
        "turns": [{**_session()["turns"][0], "holdout": False}]})
    assert plain.session_page_ids == {"s1": {}}


def test_session_pages_have_record_ids_digests_and_corpus_items(tmp_path: Path) -> None:
    plain = _load_sessions(tmp_path, _session())
    fx = _load_sessions(tmp_path, _session(pages=PAGES))
    assert fx.session_page_ids["s1"] == {("people/ola", "work"): "people/ola@work",
                                         ("people/ola", "personal"): "people/ola@personal",
                                         ("places/lisbon", "work"): "places/lisbon"}
    assert fx.digests["s1.f1"] != plain.digests["s1.f1"]  # the pages are in the digest
    # The held-out page is not ingested, nor in the digest or the corpus, unless included.
    assert [p.slug for p in fx.sessions[0].pages] == ["people/ola", "people/ola"]
    assert set(fx.corpus) == {"s1/t1", "s1/pages/people/ola@work", "s1/pages/people/ola@personal"}
    edited = [{**PAGES[0], "text": "Ola, edited"}, *PAGES[1:]]
    assert _load_sessions(tmp_path, _session(pages=edited)).digests["s1.f1"] != \
        fx.digests["s1.f1"]
    held = [*PAGES[:2], {**PAGES[2], "text": "edited"}]
    assert _load_sessions(tmp_path, _session(pages=held)).digests == fx.digests
    full = _load_sessions(tmp_path, _session(pages=PAGES), holdout=True)
    assert "s1/pages/places/lisbon" in full.corpus and len(full.sessions[0].pages) == 3
    assert full.digests["s1.f1"] != fx.digests["s1.f1"]


def test_session_page_corpus_keys_are_unique_across_files(tmp_path: Path) -> None:
    clash = _session(id="a", turns=[{"id": "pages/x", "speaker": "S", "text": "x"}],
                     gold_facts=[])
    with pytest.raises(GateError, match=r"duplicate writeback corpus item .* id 'a/pages/x'"):
        # Two turns' keys (as before sessions had pages).
        _load_sessions(tmp_path, clash, _session(id="a/pages", turns=[
            {"id": "x", "speaker": "S", "text": "y"}], gold_facts=[]))
    with pytest.raises(GateError, match=r"duplicate writeback corpus item .* id 'a/pages/x'"):
        # A page's key against a turn's of another file (session "a/pages", turn "x")...
        _load_sessions(tmp_path,
                       _session(id="a", gold_facts=[], pages=[{"slug": "x", "text": "p"}]),
                       _session(id="a/pages", turns=[{"id": "x", "speaker": "S", "text": "y"}],
                                gold_facts=[]))
    with pytest.raises(GateError, match=r"duplicate writeback corpus item .* id 'a/pages/x'"):
        # ...and against a turn of its own session.
        _load_sessions(tmp_path, {**clash, "pages": [{"slug": "x", "text": "p"}]})
    with pytest.raises(GateError, match=r"sessions/0\.json: session s1: duplicate page id"):
        _load_sessions(tmp_path, _session(pages=[PAGES[0], PAGES[0]]))


# -- the gold-fact order -------------------------------------------------------------------------

ORDERED = {
    "turns": [{"id": "t1", "speaker": "Sam", "text": "Ola moved to Lisbon in May with a cat."}],
    "gold_facts": [{"id": f"f{n}", "keywords": [word], "entity": "people/ola", "turn": "t1"}
                   for n, word in enumerate(("Lisbon", "May", "cat"), 1)],
    "probes": [{"id": "p1", "question": "Where does Ola live?", "keywords": ["Lisbon"]}],
}


def test_reordering_gold_facts_changes_the_digest_of_each_fact_it_moves(tmp_path: Path) -> None:
    # The greedy takes the facts in gold_facts order, so the hits a fact may take depend on the
    # facts before it: swapping f2 and f3 is an item change of both (gated as item-changed),
    # not the same items scored anew. f1 and the probe have the same facts before them.
    fx = _load_sessions(tmp_path, _session(**ORDERED))
    f1, f2, f3 = ORDERED["gold_facts"]
    swapped = _load_sessions(tmp_path, _session(**{**ORDERED, "gold_facts": [f1, f3, f2]}))
    assert {key for key in fx.digests if swapped.digests[key] != fx.digests[key]} == \
        {"s1.f2", "s1.f3"}
    # A fact appended changes no fact before it; one held out is not scored, so takes no hit.
    f4 = {**f1, "id": "f4", "keywords": ["moved"]}
    assert _load_sessions(tmp_path, _session(**{**ORDERED, "gold_facts": [f1, f2, f3, f4]})) \
        .digests.items() > fx.digests.items()
    held = _session(**{**ORDERED, "gold_facts": [{**f4, "holdout": True}, f1, f2, f3]})
    assert _load_sessions(tmp_path, held).digests == fx.digests
    assert _load_sessions(tmp_path, held, holdout=True).digests["s1.f1"] != fx.digests["s1.f1"]


def test_a_seeded_page_satisfies_no_fact_and_leaks_no_non_fact() -> None:
    page = hit("people/ola", "Ola moved to Lisbon", entity="people/ola", provenance={})
    written = hit("s/t1/1", "Ola moved to Lisbon", entity="people/ola")
    seeded = {"seeded": ["people/ola"]}
    run = score({"writeback/fidelity": {
        "s.f1": {**fact(0, ["Lisbon"], [page, written], entity="people/ola"), **seeded},
        "s.f2": {**fact(1, ["moved"], [page], entity="people/ola"), **seeded},
        "s.n1": {"kind": "non-fact (retracted)", "keywords": ["Lisbon"], "turn": "t1",
                 "asked": "Lisbon", "hits": [page], "abstained": False, **seeded},
    }, "writeback/continuity": {
        "s.p1": {"keywords": ["Lisbon"], "asked": "?", "hits": [page], "abstained": False,
                 **seeded}}}, OPTIONS)
    items = run.items["writeback/fidelity"]
    # f1 takes the written hit (rank 2), never the page ranked first.
    assert (items["s.f1"]["rank"], items["s.f2"]["rank"]) == (2, None)
    assert run.cells["writeback/fidelity"].failed == ["s.f2"]
    assert run.cells["writeback/fidelity"].metrics["non_fact_leak_rate"] == 0.0
    assert run.cells["writeback/continuity"].failed == ["s.p1"]
    # Without the record of what was seeded, the page would count (what "seeded" is recorded for).
    bare = score({"writeback/fidelity": {
        "s.f2": fact(1, ["moved"], [page], entity="people/ola")}}, OPTIONS)
    assert bare.items["writeback/fidelity"]["s.f2"]["survived"] is True
