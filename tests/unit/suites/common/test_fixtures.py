"""The built-in fixtures' gold is valid and big enough; hashing and the holdout split behave.

The validity checks read the JSON files directly (not through the package's loader), so a loader bug
cannot hide a broken fixture.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from membench_gate.config import parse_config
from membench_gate.reference.embed import tokenize
from membench_gate.run.measure import measurement_hash
from membench_gate.run.runner import load_fixtures
from membench_gate.suites.common.fixtures import load_suite
from tests.support.paths import REPO

FIXTURES = REPO / "fixtures"


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def decisions() -> list[dict[str, Any]]:
    return read(FIXTURES / "veto" / "decisions.json")


def scenario_file() -> dict[str, Any]:
    return read(FIXTURES / "veto" / "scenarios.json")


def facts() -> list[dict[str, Any]]:
    return read(FIXTURES / "abstention" / "facts.json")


def probes() -> list[dict[str, Any]]:
    return read(FIXTURES / "abstention" / "probes.json")


def recall_corpus() -> list[dict[str, Any]]:
    return read(FIXTURES / "recall" / "corpus.json")


def recall_queries() -> list[dict[str, Any]]:
    return read(FIXTURES / "recall" / "queries.json")


def superseded(by_id: dict[str, dict[str, Any]], current: str) -> list[str]:
    """Decisions ``current`` replaces, directly or through a chain."""
    found: list[str] = []
    frontier = [current]
    while frontier:
        frontier = [d["id"] for d in by_id.values() if d.get("superseded_by") in frontier]
        found += frontier
    return found


def conversations() -> list[dict[str, Any]]:
    return [read(p) for p in sorted((FIXTURES / "push" / "conversations").glob("*.json"))]


def no_duplicates(ids: list[str]) -> list[str]:
    return sorted(i for i, n in Counter(ids).items() if n > 1)


# -- gold validity -------------------------------------------------------------------------------


def test_veto_gold_is_valid() -> None:
    by_id = {d["id"]: d for d in decisions()}
    scenarios = scenario_file()["scenarios"]
    assert no_duplicates([d["id"] for d in decisions()] + [s["id"] for s in scenarios]) == []
    for scenario in scenarios:
        decision = by_id.get(scenario["veto_decision_id"])
        assert decision is not None, scenario["id"]
        assert scenario["trap"] in ("direct", "implicit", "stale-named", "stale-unnamed")
        chain = [decision]
        if scenario["trap"].startswith("stale-"):
            # The current decision, and a veto of its own or one still standing from a
            # decision it replaced.
            assert decision.get("status", "active") == "active", scenario["id"]
            chain += [by_id[i] for i in superseded(by_id, decision["id"])]
            assert len(chain) > 1, scenario["id"]
        rejected = {r["option"]: r["reason"] for d in chain for r in d["rejected"]}
        assert scenario["rejected_option"] in rejected, scenario["id"]
        assert rejected[scenario["rejected_option"]].strip(), scenario["id"]
    for d in decisions():
        if d.get("superseded_by"):
            assert d["status"] == "superseded" and d["superseded_by"] in by_id, d["id"]


def test_recall_gold_is_valid() -> None:
    corpus, queries = recall_corpus(), recall_queries()
    sessions = {c["session"] for c in corpus}
    assert no_duplicates([c["id"] for c in corpus] + [q["id"] for q in queries]) == []
    assert not sessions & {c["id"] for c in corpus}
    known = sessions | {c["id"] for c in corpus}
    session_of = {c["id"]: c["session"] for c in corpus}
    for query in queries:
        assert set(query["gold"]) <= known, query["id"]
        gold_sessions = {session_of.get(g, g) for g in query["gold"]}
        assert gold_sessions <= set(query["haystack"]), query["id"]


def test_abstention_gold_is_valid() -> None:
    fact_ids = [f["id"] for f in facts()]
    probe_ids = [p["id"] for p in probes()]
    assert no_duplicates(fact_ids + probe_ids) == []
    known = set(fact_ids)
    for probe in probes():
        assert probe["gold_fact_id"] is None or probe["gold_fact_id"] in known, probe["id"]


def test_push_gold_is_valid() -> None:
    convs = conversations()
    assert no_duplicates([c["id"] for c in convs]) == []
    for conv in convs:
        pages = [(p["slug"], p["source"]) for p in conv["pages"]]
        assert no_duplicates([f"{slug} {source}" for slug, source in pages]) == [], conv["id"]
        assert no_duplicates([t["id"] for t in conv["turns"]]) == [], conv["id"]
        for turn in conv["turns"]:
            where = f"{conv['id']}.{turn['id']}"
            if turn.get("role") == "assistant":
                assert not {"expect", "gold", "acceptable"} & set(turn), where
                continue
            for slug in turn.get("gold", []):  # gold is a page of the conversation's source
                assert (slug, conv["source"]) in pages, (where, slug)
            assert (turn.get("expect") == "retrieve") == bool(turn.get("gold")), where


# -- sizes and shape -----------------------------------------------------------------------------


def test_veto_counts() -> None:
    decs = decisions()
    scenarios = scenario_file()["scenarios"]
    assert len(decs) >= 24
    assert sum(1 for d in decs if d["rejected"] and all(r["reason"] for r in d["rejected"])) >= 10
    assert len(scenarios) >= 12
    assert {s["trap"] for s in scenarios} == {"direct", "implicit", "stale-named",
                                              "stale-unnamed"}
    # Lifecycle: both stale traps, a chain of three decisions, a veto carried forward from a
    # superseded decision.
    lifecycle = [s for s in scenarios if s["trap"].startswith("stale-")]
    assert len(lifecycle) >= 6
    assert {s["trap"] for s in lifecycle} == {"stale-named", "stale-unnamed"}
    by_id_all = {d["id"]: d for d in decs}
    assert max(len(superseded(by_id_all, s["veto_decision_id"])) for s in lifecycle) >= 2
    assert any(s["rejected_option"] not in {r["option"] for r in
                                            by_id_all[s["veto_decision_id"]]["rejected"]}
               for s in lifecycle)
    # The hard, honest cases: a task that shares no word with the decision that vetoes it.
    by_id = {d["id"]: d for d in decs}
    disjoint = [s["id"] for s in scenarios
                if not set(tokenize(s["task"])) & set(tokenize(by_id[s["veto_decision_id"]]
                                                                ["decision"]))]
    assert disjoint


def test_abstention_counts() -> None:
    assert len(facts()) >= 150
    all_probes = probes()
    assert len(all_probes) >= 240
    answerable = sum(1 for p in all_probes if p["gold_fact_id"] is not None)
    unanswerable = len(all_probes) - answerable
    assert 1.7 <= answerable / unanswerable <= 2.3  # about two to one
    # Near misses, not noise: unanswerable questions talk about things the facts talk about.
    vocabulary = set().union(*(tokenize(f["text"]) for f in facts()))
    related = sum(1 for p in all_probes
                  if p["gold_fact_id"] is None and set(tokenize(p["question"])) & vocabulary)
    assert related >= 0.9 * unanswerable


def test_push_counts() -> None:
    convs = conversations()
    assert len(convs) >= 8
    assert len({c["source"] for c in convs}) >= 2
    turns = [t for c in convs for t in c["turns"]]
    assert len(turns) >= 60
    kinds = Counter(t.get("expect") for t in turns if t.get("role", "user") == "user")
    assert kinds["silent"] > 0 and kinds["retrieve"] > 0
    assert kinds[None] >= 2  # user turns pushed as context, not scored
    assert sum(1 for t in turns if t.get("role") == "assistant") >= 3
    assert sum(1 for t in turns if t.get("at")) >= len(turns) / 2
    # Cross-source temptations: a page of another source is stored with the conversation...
    assert sum(1 for c in convs if any(p["source"] != c["source"] for p in c["pages"])) >= 2
    # ... and a slug seeded in two sources (a twin) whose own copy is gold.
    twins = [c for c in convs if len({p["slug"] for p in c["pages"]}) < len(c["pages"])]
    assert any(not c.get("holdout") for c in twins)
    seeded = {(c["id"], p["slug"]) for c in convs for p in c["pages"]}
    assert any((c["id"], slug) not in seeded for c in convs for t in c["turns"]
               for slug in t.get("acceptable", []))  # an acceptable slug never seeded
    assert any(c.get("suites") == ["push"] for c in convs)
    assert any(len(t.get("gold", [])) >= 3 for t in turns)
    assert all(c.get("category") for c in convs)


def test_recall_counts() -> None:
    corpus, queries = recall_corpus(), recall_queries()
    sessions = Counter(c["session"] for c in corpus)
    assert len(corpus) >= 120 and len(sessions) >= 20
    histories = Counter(tuple(q["haystack"]) for q in queries)
    assert len(histories) >= 3 and all(len(h) >= 8 for h in histories)
    categories = Counter(q["category"] for q in queries)
    assert {"temporal", "knowledge-update", "multi-session"} <= set(categories)
    assert sum(1 for q in queries if not q["gold"]) >= 6
    assert sum(1 for q in queries if len(q["gold"]) > 1) >= 6
    assert all(q.get("as_of") for q in queries)


def _holdout_share(items: list[dict[str, Any]]) -> float:
    return sum(1 for i in items if i.get("holdout")) / len(items)


@pytest.mark.parametrize("suite", ["veto", "abstention", "push", "recall"])
def test_holdout_share_is_about_fifteen_percent(suite: str) -> None:
    gold = {
        "veto": lambda: scenario_file()["scenarios"],
        "abstention": probes,
        "push": lambda: [t for c in conversations() for t in c["turns"]],
        "recall": recall_queries,
    }[suite]()
    assert 0.10 <= _holdout_share(gold) <= 0.20


# -- the loader agrees with the files --------------------------------------------------------------


@pytest.mark.parametrize("suite", ["veto", "abstention", "push", "recall"])
def test_holdout_items_are_excluded_unless_included(suite: str) -> None:
    excluded = load_suite(suite, ["builtin"], REPO, include_holdout=False)
    included = load_suite(suite, ["builtin"], REPO, include_holdout=True)
    # An item is held out when it, or the item its gold points at, carries "holdout": true.
    if suite == "veto":
        held_decisions = {d["id"] for d in decisions() if d.get("holdout")}
        gold = {s["id"]: s.get("holdout", False) or s["veto_decision_id"] in held_decisions
                for s in scenario_file()["scenarios"]}
    elif suite == "abstention":
        held_facts = {f["id"] for f in facts() if f.get("holdout")}
        gold = {p["id"]: p.get("holdout", False) or p["gold_fact_id"] in held_facts
                for p in probes()}
    elif suite == "recall":
        held = {c["id"] for c in recall_corpus() if c.get("holdout")}
        held |= {c["session"] for c in recall_corpus() if c.get("holdout")}
        gold = {q["id"]: q.get("holdout", False) or bool(set(q["gold"]) & held)
                for q in recall_queries()}
    else:
        gold = {}
        for c in conversations():
            for t in (t for t in c["turns"] if t.get("expect")):
                held = t.get("holdout", False) or c.get("holdout", False)
                ids = [f"{c['id']}.{t['id']}"] if "know_to_ask" in c.get("suites", ["know_to_ask"]) \
                    or t["expect"] == "silent" else []
                if "push" in c.get("suites", ["push"]) and t["expect"] == "retrieve":
                    ids += [f"{c['id']}.{t['id']}#{slug}" for slug in t["gold"]]
                gold.update(dict.fromkeys(ids, held))
    assert set(included.digests) == set(gold)
    assert set(excluded.digests) == {i for i, held in gold.items() if not held}


# -- fixtures_hash -------------------------------------------------------------------------------


def _setup(tmp_path: Path) -> Path:
    for suite in ("veto", "abstention", "push"):
        shutil.copytree(FIXTURES / suite, tmp_path / "fx" / suite)
    return tmp_path / "fx"


def _hash(tmp_path: Path, k: int = 5, lambdas: str = "[1, 2, 5, 10]", budget: int = 3,
          include_holdout: bool = False, tau: float = 0.45) -> tuple[str, dict[str, Any]]:
    text = (
        f"[adapter.options]\ntau = {tau}\n"
        f'[suites.veto]\nfixtures = ["fx/veto"]\nk = {k}\n'
        f'[suites.abstention]\nfixtures = ["fx/abstention"]\nlambdas = {lambdas}\n'
        f'[suites.push]\nfixtures = ["fx/push"]\nbudget = {budget}\n'
        f"[gate]\ninclude_holdout = {str(include_holdout).lower()}\n"
    )
    config = parse_config(text, tmp_path / "membench.toml")
    digest, loaded = load_fixtures(config)
    assert measurement_hash(config) == digest  # what check --results computes from the files
    return digest, loaded


@pytest.mark.parametrize("include_holdout", [False, True])
def test_the_hash_of_the_files_alone_is_the_hash_a_run_records(include_holdout: bool) -> None:
    # check --results hashes the fixture files without validating them: for every suite (named
    # files and per-document folders alike) it must come to the hash of a validating load.
    config = parse_config((REPO / "membench.toml").read_text(encoding="utf-8"),
                          REPO / "membench.toml").with_holdout(include_holdout)
    assert set(config.suites) == {"veto", "abstention", "push", "writeback", "recall"}
    assert measurement_hash(config) == load_fixtures(config)[0]


def test_hash_ignores_formatting_but_not_content(tmp_path: Path) -> None:
    fx = _setup(tmp_path)
    original, loaded = _hash(tmp_path)
    assert original == _hash(tmp_path)[0]

    # Re-indented (and keys reordered): the same measurement.
    facts_path = fx / "abstention" / "facts.json"
    data = read(facts_path)
    facts_path.write_text(json.dumps([dict(reversed(list(f.items()))) for f in data], indent=7),
                          encoding="utf-8")
    assert _hash(tmp_path)[0] == original

    # One fact's text changes: another measurement, and only the probes reading it change digest.
    target = next(p["gold_fact_id"] for p in probes()
                  if p["gold_fact_id"] and not p.get("holdout"))
    for fact in data:
        if fact["id"] == target:
            fact["text"] += " (since 2025)"
    facts_path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    changed, reloaded = _hash(tmp_path)
    assert changed != original
    before, after = loaded["abstention"].digests, reloaded["abstention"].digests
    differing = {i for i in before if before[i] != after[i]}
    assert differing == {p["id"] for p in probes()
                         if p["gold_fact_id"] == target and p["id"] in before}
    assert loaded["veto"].digests == reloaded["veto"].digests


@pytest.mark.parametrize("change", [
    {"k": 6}, {"lambdas": "[1, 2, 5]"}, {"budget": 2}, {"include_holdout": True},
])
def test_hash_covers_options_and_holdout(tmp_path: Path, change: dict[str, Any]) -> None:
    _setup(tmp_path)
    assert _hash(tmp_path, **change)[0] != _hash(tmp_path)[0]


def test_hash_ignores_the_adapter(tmp_path: Path) -> None:
    _setup(tmp_path)
    assert _hash(tmp_path, tau=0.2)[0] == _hash(tmp_path)[0]


def test_hash_changes_with_a_holdout_flag(tmp_path: Path) -> None:
    fx = _setup(tmp_path)
    original = _hash(tmp_path)[0]
    path = fx / "veto" / "scenarios.json"
    data = read(path)
    data["scenarios"][0]["holdout"] = not data["scenarios"][0].get("holdout", False)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    assert _hash(tmp_path)[0] != original


def test_hash_changes_when_a_conversation_file_is_added(tmp_path: Path) -> None:
    fx = _setup(tmp_path)
    original = _hash(tmp_path)[0]
    conv = read(fx / "push" / "conversations" / "conv-01.json")
    conv["id"] = "conv-99"
    (fx / "push" / "conversations" / "conv-99.json").write_text(json.dumps(conv),
                                                                encoding="utf-8")
    assert _hash(tmp_path)[0] != original
