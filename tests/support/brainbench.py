"""A small corpus in BrainBench's layout (``fixtures/*.fixture.json`` + ``gold/*.gold.json``),
written for the tests, with every field and edge the importer maps; and a check of an imported
folder against the fixture formats of the push and writeback suites (docs/suites.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from membench_gate.suites.common.fixtures import parse_time

Corpus = dict[str, tuple[dict[str, Any], dict[str, Any]]]  # fixture_id -> (fixture, gold)


def page(slug: str, body: str, front: str = "", source: str | None = None) -> dict[str, Any]:
    content = f"---\ntitle: {slug.split('/')[-1]}\n{front}---\n\n{body}\n"
    return {"slug": slug, "content": content, **({"source_id": source} if source else {})}


def turn(tid: int, role: str, text: str, ts: str | None = None) -> dict[str, Any]:
    return {"turn_id": tid, "role": role, "text": text, **({"ts": ts} if ts else {})}


def fixture(fid: str, suites: list[str], turns: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"schema_version": 1, "fixture_id": fid, "suites": suites, "turns": turns, **extra}


def corpus() -> Corpus:
    """Eight fixtures: a multi-source conversation (twins, an unseeded acceptable slug, an
    assistant turn, a user turn without gold, gold on a stay-silent turn), a held-out
    know-to-ask-only one, a write-back session with a gap over 30 minutes and a fact on an
    assistant turn, a held-out one, and two continuity pairs (one held out on its reader's side
    only, its writer in no write-back suite)."""
    mira = "aliases: [mira, 'M. Vale']\n"
    return {
        "ms-twins": (fixture(
            "ms-twins", ["know-to-ask", "push"], [
                turn(1, "user", "What do I have on Mira Vale?", "2026-03-09T16:00:00Z"),
                turn(2, "assistant", "Mira founded Kestrel.", "2026-03-09T16:00:10+00:00"),
                turn(3, "user", "And the Kestrel deck?"),
                turn(4, "user", "Thanks, that is all."),
                turn(5, "user", "Anything else on Kestrel?"),
            ],
            category="multi-source", sources=["team"], active_source="team",
            seed_pages=[page("people/mira-vale", "Mira Vale, personal notes.", mira),
                        page("people/mira-vale", "Mira Vale, team copy.", mira, source="team"),
                        page("companies/kestrel", "Kestrel makes drones.",
                             "aliases:\n  - kestrel\n  - \"Kestrel Inc\"\n", source="team")]),
            {"fixture_id": "ms-twins", "turns": {
                "1": {"should_retrieve": True, "gold_slugs": ["people/mira-vale"],
                      "acceptable_slugs": ["companies/kestrel", "deals/never-seeded"]},
                "3": {"should_retrieve": True,
                      "gold_slugs": ["companies/kestrel", "people/mira-vale"]},
                "5": {"should_retrieve": False, "gold_slugs": ["companies/kestrel"]},
            }}),
        "kta-held": (fixture(
            "kta-held", ["know-to-ask"], [turn(1, "user", "Morning! How are you?")],
            category="kta-neg", holdout=True, seed_pages=[page("people/ola", "Ola.")]),
            {"fixture_id": "kta-held", "turns": {"1": {"should_retrieve": False}}}),
        "wb-gap": (fixture(
            "wb-gap", ["write-back"], [
                turn(1, "user", "Call with Ola: she prefers email.", "2026-03-02T17:00:00Z"),
                turn(2, "assistant", "Noted: Ola commits to the Friday memo.",
                     "2026-03-02T17:00:30Z"),
                turn(3, "user", "Later: Ola moved to Lisbon.", "2026-03-02T18:15:00Z"),
            ],
            category="write-back", seed_pages=[page("people/ola", "Ola.")]),
            {"fixture_id": "wb-gap", "turns": {
                "1": {"should_retrieve": False, "gold_facts": [
                    {"gist": "prefers email", "fact": "Ola prefers email",
                     "entity_slug": "people/ola", "match_keywords": ["email"],
                     "kind": "preference"}]},
                "2": {"should_retrieve": False, "gold_facts": [
                    {"gist": "memo", "fact": "Ola commits to the Friday memo",
                     "entity_slug": "people/ola", "match_keywords": ["Friday", "memo"]}]},
                "3": {"should_retrieve": False, "gold_facts": [
                    {"gist": "moved", "fact": "Ola moved to Lisbon", "entity_slug": "people/ola",
                     "match_keywords": ["Lisbon"], "kind": "event"}]},
            }}),
        "wb-held": (fixture(
            "wb-held", ["write-back"], [
                turn(1, "user", "Ola's budget is 40k.", "2026-03-03T10:00:00Z")],
            holdout=True),
            {"fixture_id": "wb-held", "turns": {"1": {"should_retrieve": False, "gold_facts": [
                {"gist": "budget", "fact": "Ola's budget is 40k", "entity_slug": "people/ola",
                 "match_keywords": ["budget", "40k"]}]}}}),
        "c1-writer": (fixture(
            "c1-writer", ["write-back", "continuity"], [
                turn(1, "user", "We pass on the Kestrel seed.", "2026-03-09T16:00:00Z")],
            category="continuity", continuity={"pair_id": "c1", "pair_role": "writer"},
            seed_pages=[page("companies/kestrel", "Kestrel makes drones.")]),
            {"fixture_id": "c1-writer", "turns": {"1": {"should_retrieve": False, "gold_facts": [
                {"gist": "pass", "fact": "Passed on the Kestrel seed",
                 "entity_slug": "companies/kestrel", "match_keywords": ["pass", "Kestrel"],
                 "kind": "commitment"}]}},
             "continuity": {"pair_id": "c1", "decisions": [
                 {"decision_id": "d1", "expected_slugs": ["companies/kestrel"],
                  "match_keywords": ["pass", "Kestrel"]}]}}),
        "c1-reader": (fixture(
            "c1-reader", ["continuity"], [turn(1, "user", "Where did we land on Kestrel?")],
            category="continuity", continuity={"pair_id": "c1", "pair_role": "reader"}),
            {"fixture_id": "c1-reader",
             "turns": {"1": {"should_retrieve": True, "gold_slugs": ["companies/kestrel"]}},
             "continuity": {"pair_id": "c1", "decisions": [
                 {"decision_id": "d1", "expected_slugs": ["companies/kestrel"],
                  "match_keywords": ["pass", "Kestrel"]}]}}),
        "c2-writer": (fixture(
            "c2-writer", ["continuity"], [
                turn(1, "user", "Ola takes the Lisbon office.", "2026-03-10T09:00:00Z")],
            category="continuity", continuity={"pair_id": "c2", "pair_role": "writer"}),
            {"fixture_id": "c2-writer", "turns": {}}),
        "c2-reader": (fixture(
            "c2-reader", ["continuity"], [turn(1, "user", "Who runs Lisbon?"),
                                          turn(2, "user", "And since when?")],
            category="continuity", holdout=True,
            continuity={"pair_id": "c2", "pair_role": "reader"},
            seed_pages=[page("people/ola", "Ola.")]),
            {"fixture_id": "c2-reader", "turns": {},
             "continuity": {"pair_id": "c2", "decisions": [
                 {"decision_id": "d1", "expected_slugs": ["people/ola"],
                  "match_keywords": ["Lisbon"]},
                 {"decision_id": "d2", "expected_slugs": [], "match_keywords": ["office"]}]}}),
    }


def write_corpus(root: Path, data: Corpus | None = None,
                 edit: Callable[[Corpus], None] | None = None) -> Path:
    """Write ``data`` (default :func:`corpus`), changed by ``edit``, in BrainBench's layout."""
    data = corpus() if data is None else data
    if edit is not None:
        edit(data)
    for sub in ("fixtures", "gold"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for fid, (fx, gold) in data.items():
        if fx:  # an empty fixture is left out: its gold file stands alone
            (root / "fixtures" / f"{fid}.fixture.json").write_text(json.dumps(fx, indent=2),
                                                                   encoding="utf-8")
        (root / "gold" / f"{fid}.gold.json").write_text(json.dumps(gold, indent=2),
                                                        encoding="utf-8")
    return root


def read_folder(out: Path, part: str, sub: str) -> dict[str, Any]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((out / part / sub).glob("*.json"))}


def _time(value: Any) -> None:
    assert value is None or (isinstance(value, str) and value.endswith("Z"))
    if value is not None:
        parse_time(value, "at")


def _pages(pages: list[dict[str, Any]]) -> set[tuple[str, str]]:
    keys = set()
    for p in pages:
        assert set(p) == {"slug", "text", "aliases", "source"}
        assert p["slug"] and p["text"] and all(isinstance(a, str) and a for a in p["aliases"])
        assert (p["slug"], p["source"]) not in keys, "pages are unique by (slug, source)"
        keys.add((p["slug"], p["source"]))
    return keys


def _spoken(turns: list[dict[str, Any]]) -> None:
    for t in turns:
        assert set(t) <= {"id", "speaker", "role", "at", "text"} and t["speaker"] == t["role"]
        _time(t.get("at"))


def check_formats(out: Path) -> None:
    """Every file under ``out`` keeps the agreed push / writeback fixture formats (the suites'
    loaders hold the same rules; this is the importer's own reading of them)."""
    for conv in read_folder(out, "push", "conversations").values():
        assert set(conv) <= {"id", "source", "category", "suites", "holdout", "pages", "turns"}
        assert set(conv["suites"]) <= {"know_to_ask", "push"} and conv["suites"]
        seeded = {slug for slug, source in _pages(conv["pages"]) if source == conv["source"]}
        for t in conv["turns"]:
            assert set(t) <= {"id", "role", "at", "text", "expect", "gold", "acceptable"}
            _time(t.get("at"))
            if t["role"] == "assistant":
                assert not {"expect", "gold", "acceptable"} & set(t)
            if t.get("expect") == "retrieve":
                assert t["gold"] and set(t["gold"]) <= seeded
            else:
                assert "gold" not in t
    for session in read_folder(out, "writeback", "sessions").values():
        assert set(session) <= {"id", "source", "category", "holdout", "pages", "turns",
                                "gold_facts"}
        _pages(session.get("pages", []))
        _spoken(session["turns"])
        turns = {t["id"] for t in session["turns"]}
        for fact in session["gold_facts"]:
            assert set(fact) <= {"id", "keywords", "entity", "turn", "kind", "gist"}
            assert fact["turn"] in turns and fact["entity"] and fact["keywords"]
    for pair in read_folder(out, "continuity", "pairs").values():
        assert {"id", "holdout", "source", "pages", "writer", "reader", "decisions"} <= set(pair)
        assert set(pair) <= {"id", "category", "holdout", "source", "pages", "writer", "reader",
                             "decisions"}
        _pages(pair["pages"])
        _spoken(pair["writer"]["turns"])
        for t in pair["reader"]["turns"]:
            assert set(t) <= {"id", "role", "at", "text"}
        for decision in pair["decisions"]:
            assert set(decision) == {"id", "expected", "keywords"}
