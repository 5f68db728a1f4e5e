"""The recall suite and the veto lifecycle: scoring rules on small hand-made fixtures, through the
same loader and adapter session a run uses, with scripted adapters whose answers are known."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from membench_gate import Answer, Hit, Query, Record
from membench_gate.errors import GateError
from membench_gate.reference import ReferenceMemory
from membench_gate.suites.common.fixtures import load_suite
from membench_gate.suites.recall import scoring as recall
from membench_gate.suites.recall.options import RecallOptions
from membench_gate.suites.veto import scoring as veto
from membench_gate.suites.veto.options import VetoOptions


def write(folder: Path, name: str, data: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data), encoding="utf-8")


class Scripted:
    """A suite session (the methods a suite calls) answering each question with the ids scripted
    for it (those ingested, in order); records every call so tests see what was reset and
    ingested."""

    def __init__(self, script: dict[str, list[str]], abstain: set[str] | None = None) -> None:
        self.script = script
        self.abstain = abstain or set()
        self.calls: list[tuple[str, Any]] = []
        self.stored: dict[str, Record] = {}

    def reset(self, item: str | None = None) -> None:
        self.calls.append(("reset", None))
        self.stored = {}

    def ingest(self, records: Sequence[Record], item: str | None = None) -> None:
        self.calls.append(("ingest", [r.id for r in records]))
        self.stored.update({r.id: r for r in records})

    def search(self, query: Query, item: str) -> Answer:
        self.calls.append(("search", query))
        ids = [i for i in self.script.get(query.text, []) if i in self.stored][: query.k]
        hits = [Hit(i, 1.0 - n / 100) for n, i in enumerate(ids)]
        return Answer(hits=hits, abstain=query.text in self.abstain)


CORPUS = [
    {"id": "a1", "session": "A", "text": "I adopted a cat named Miso.", "created_at": "2024-01-02"},
    {"id": "a2", "session": "A", "text": "Miso likes the window seat."},
    {"id": "b1", "session": "B", "text": "Miso is now on a kidney diet."},
    {"id": "c1", "session": "C", "text": "We booked flights to Lisbon."},
    {"id": "c2", "session": "C", "text": "The Lisbon hotel is near Alfama.", "holdout": True},
    {"id": "d1", "session": "D", "text": "Unrelated chat about tomatoes."},
]


def recall_folder(tmp_path: Path, queries: list[dict[str, Any]],
                  corpus: list[dict[str, Any]] | None = None) -> Path:
    folder = tmp_path / "rec"
    write(folder, "corpus.json", corpus if corpus is not None else CORPUS)
    write(folder, "queries.json", queries)
    return folder


def run_recall(tmp_path: Path, queries: list[dict[str, Any]], adapter: Scripted, k: int = 3,
               include_holdout: bool = False) -> Any:
    recall_folder(tmp_path, queries)
    fx = load_suite("recall", ["rec"], tmp_path, include_holdout)
    return recall.run(fx, adapter, RecallOptions(k=k))


def test_session_gold_matches_any_turn_of_the_session(tmp_path: Path) -> None:
    queries = [{"id": "q1", "question": "cat name?", "gold": ["A"]},
               {"id": "q2", "question": "diet?", "gold": ["b1", "A"]},
               {"id": "q3", "question": "hotel?", "gold": ["c1"]}]
    adapter = Scripted({"cat name?": ["d1", "a2"], "diet?": ["b1", "d1", "c1"],
                        "hotel?": ["d1", "a1", "b1", "c1"]})
    run = run_recall(tmp_path, queries, adapter)
    cell = run.cells["recall/default"]
    assert cell.gold_total == 3 and cell.failed == ["q3"]  # c1 ranks 4th, beyond k = 3
    items = run.items["recall/default"]
    assert items["q1"]["rank"] == 2 and items["q1"]["matched"] == ["A"]
    assert items["q2"]["matched"] == ["b1"] and not items["q2"]["all"]
    assert cell.metrics["recall_any_at_k"] == pytest.approx(2 / 3)
    assert cell.metrics["recall_all_at_k"] == pytest.approx(1 / 3)
    ndcg_q1 = (1 / math.log2(3)) / 1.0
    ndcg_q2 = 1.0 / (1 + 1 / math.log2(3))
    assert cell.metrics["ndcg_at_k"] == pytest.approx((ndcg_q1 + ndcg_q2 + 0) / 3)
    assert "false_answer_rate" not in cell.metrics  # no unanswerable query


def test_gold_id_credited_once_however_many_turns_match(tmp_path: Path) -> None:
    adapter = Scripted({"cat?": ["a1", "a2"]})
    run = run_recall(tmp_path, [{"id": "q", "question": "cat?", "gold": ["A", "B"]}], adapter)
    detail = run.items["recall/default"]["q"]
    assert detail["matched"] == ["A"] and not detail["all"]
    assert detail["ndcg"] == pytest.approx(1.0 / (1 + 1 / math.log2(3)))


def test_unanswerable_passes_only_when_abstaining(tmp_path: Path) -> None:
    queries = [{"id": "u1", "question": "dog?", "gold": [], "category": "abs"},
               {"id": "u2", "question": "car?", "gold": [], "category": "abs"}]
    adapter = Scripted({"dog?": ["a1"], "car?": ["a1"]}, abstain={"dog?"})
    run = run_recall(tmp_path, queries, adapter)
    cell = run.cells["recall/abs"]
    assert cell.failed == ["u2"]
    assert cell.metrics == {"false_answer_rate": 0.5}  # no answerable query: no recall metrics


def test_cells_per_category(tmp_path: Path) -> None:
    queries = [{"id": "q1", "question": "cat?", "gold": ["A"], "category": "single"},
               {"id": "q2", "question": "diet?", "gold": ["B"], "category": "update"},
               {"id": "q3", "question": "x?", "gold": ["A"]}]
    run = run_recall(tmp_path, queries, Scripted({"cat?": ["a1"]}))
    assert sorted(run.cells) == ["recall/default", "recall/single", "recall/update"]
    assert run.cells["recall/update"].failed == ["q2"]


def test_haystack_isolation_and_shared_ingest(tmp_path: Path) -> None:
    queries = [{"id": "q1", "question": "cat?", "gold": ["A"], "haystack": ["A", "D"]},
               {"id": "q2", "question": "trip?", "gold": ["c1"], "haystack": ["C", "D"]},
               {"id": "q3", "question": "window?", "gold": ["a2"], "haystack": ["D", "A"]},
               {"id": "q4", "question": "diet?", "gold": ["b1"]}]
    adapter = Scripted({"cat?": ["b1", "a1"], "trip?": ["c1"], "window?": ["a2"],
                        "diet?": ["b1"]})
    run = run_recall(tmp_path, queries, adapter)
    ingests = [ids for verb, ids in adapter.calls if verb == "ingest"]
    # Same haystack (as a set of sessions) = one ingest, in corpus order; held-out c2 never goes
    # in; a query without a haystack gets the whole corpus.
    assert ingests == [["a1", "a2", "d1"], ["c1", "d1"], ["a1", "a2", "b1", "c1", "d1"]]
    assert [verb for verb, _ in adapter.calls].count("reset") == 3
    searched = [q.text for verb, q in adapter.calls if verb == "search"]
    assert searched == ["cat?", "window?", "trip?", "diet?"]
    # b1 was not in q1's haystack, so it cannot come back; a1 ranks first.
    assert run.items["recall/default"]["q1"]["rank"] == 1
    assert run.cells["recall/default"].failed == []


def test_as_of_and_meta_reach_the_adapter(tmp_path: Path) -> None:
    queries = [{"id": "q1", "question": "cat?", "gold": ["A"], "as_of": "2024-03-01"}]
    adapter = Scripted({})
    run_recall(tmp_path, queries, adapter)
    query = next(q for verb, q in adapter.calls if verb == "search")
    assert query.as_of == datetime(2024, 3, 1, tzinfo=timezone.utc) and query.k == 3
    assert adapter.stored["a1"].meta == {"session": "A"}
    assert adapter.stored["a1"].created_at == datetime(2024, 1, 2, tzinfo=timezone.utc)


def test_holdout(tmp_path: Path) -> None:
    queries = [{"id": "q1", "question": "cat?", "gold": ["A"]},
               {"id": "q2", "question": "hotel?", "gold": ["c2"]},
               {"id": "q3", "question": "trip?", "gold": ["C"]},
               {"id": "q4", "question": "diet?", "gold": ["B"], "holdout": True}]
    recall_folder(tmp_path, queries)
    excluded = load_suite("recall", ["rec"], tmp_path, include_holdout=False)
    # q2 names a held-out item, q3 a session holding one, q4 is held out itself.
    assert sorted(excluded.digests) == ["q1"]
    assert "c2" not in {c.id for c in excluded.history}
    # Every corpus item ingested has its own content digest (distractors included).
    assert sorted(excluded.corpus) == ["a1", "a2", "b1", "c1", "d1"]
    included = load_suite("recall", ["rec"], tmp_path, include_holdout=True)
    assert sorted(included.digests) == ["q1", "q2", "q3", "q4"]


def test_digest_changes_with_the_gold_text_only(tmp_path: Path) -> None:
    queries = [{"id": "q1", "question": "cat?", "gold": ["A"]},
               {"id": "q2", "question": "trip?", "gold": ["c1"]}]
    recall_folder(tmp_path, queries)
    before = load_suite("recall", ["rec"], tmp_path, False).digests
    corpus = [dict(c) for c in CORPUS]
    corpus[1]["text"] = "Miso likes the sofa."
    recall_folder(tmp_path, queries, corpus)
    after = load_suite("recall", ["rec"], tmp_path, False).digests
    assert before["q1"] != after["q1"] and before["q2"] == after["q2"]


@pytest.mark.parametrize(("queries", "corpus", "message"), [
    ([{"id": "q", "question": "?", "gold": ["zz"]}], None,
     "query q: gold id 'zz' is neither a corpus item nor a session"),
    ([{"id": "q", "question": "?", "gold": ["A"], "haystack": ["A", "Q"]}], None,
     "query q: haystack session 'Q' does not exist"),
    ([{"id": "q", "question": "?", "gold": ["b1"], "haystack": ["A"]}], None,
     "query q: gold session 'B' is not in its haystack"),
    ([{"id": "q", "question": "?", "gold": ["A"], "category": "multi session"}], None,
     "category 'multi session' must be letters"),
    ([{"id": "q", "question": "?", "gold": ["A", "A"]}], None, "gold lists an id twice"),
    ([{"id": "q", "question": "?", "gold": []}],
     [*CORPUS, {"id": "A", "session": "Z", "text": "clash"}],
     "session 'A' is also a corpus item id"),
    ([{"id": "a1", "question": "?", "gold": []}], None, "duplicate recall item id 'a1'"),
    ([{"id": "q", "question": "?", "gold": ["Z"]}],
     [*CORPUS, {"id": "z1", "session": "Z", "text": "work chat", "source": "work"}],
     "gold item 'z1' is in source 'work'; queries search source 'default'"),
])
def test_bad_recall_fixtures_are_one_line_errors(tmp_path: Path, queries: list[dict[str, Any]],
                                                 corpus: list[dict[str, Any]] | None,
                                                 message: str) -> None:
    recall_folder(tmp_path, queries, corpus)
    with pytest.raises(GateError, match=None) as info:
        load_suite("recall", ["rec"], tmp_path, False)
    assert message in str(info.value) and "\n" not in str(info.value)


# -- veto lifecycle -----------------------------------------------------------------------------


def decision(ident: str, text: str, rejected: list[str], **extra: Any) -> dict[str, Any]:
    return {"id": ident, "decision": text, "rationale": "", "files": ["src/cache.ts"],
            "rejected": [{"option": o, "reason": "see the incident"} for o in rejected],
            "created_at": "2026-01-01", "reviewed_at": None, "relevance": 0.5, **extra}


LIFECYCLE = [
    decision("L1", "Cache sessions in Redis", ["in-process cache"], status="superseded",
             superseded_by="L2"),
    decision("L2", "Cache sessions in memcached", ["Redis Cluster"], status="superseded",
             superseded_by="L3"),
    decision("L3", "Cache sessions in a Postgres UNLOGGED table", ["staying on memcached"]),
    decision("X1", "Use pnpm workspaces", ["npm workspaces"]),
]


def scenario(ident: str, trap: str, target: str, option: str, **extra: Any) -> dict[str, Any]:
    return {"id": ident, "task": f"task {ident}", "files": ["src/cache.ts"],
            "veto_decision_id": target, "trap": trap, "rejected_option": option, **extra}


def veto_folder(tmp_path: Path, scenarios: list[dict[str, Any]],
                decisions: list[dict[str, Any]] | None = None) -> None:
    folder = tmp_path / "veto"
    write(folder, "decisions.json", decisions if decisions is not None else LIFECYCLE)
    write(folder, "scenarios.json", {"as_of": "2026-07-01", "scenarios": scenarios})


def run_veto(tmp_path: Path, scenarios: list[dict[str, Any]], adapter: Scripted) -> Any:
    veto_folder(tmp_path, scenarios)
    fx = load_suite("veto", ["veto"], tmp_path, False)
    return veto.run(fx, adapter, VetoOptions(k=3))


def test_lifecycle_pass_rule_follows_supersession_chains(tmp_path: Path) -> None:
    scenarios = [scenario("s1", "stale-named", "L3", "staying on memcached"),
                 scenario("s2", "stale-unnamed", "L3", "in-process cache"),  # inherited veto
                 scenario("s3", "stale-named", "L3", "Redis Cluster"),
                 scenario("s4", "stale-unnamed", "L3", "staying on memcached"),
                 scenario("d1", "direct", "X1", "npm workspaces")]
    adapter = Scripted({"task s1": ["L3", "L1"],          # current first: pass
                        "task s2": ["L1", "L3"],          # grandparent above: fail
                        "task s3": ["X1", "L2"],          # current missing, stale shown: fail
                        "task s4": ["X1", "L3", "L2"],    # current found, stale below: pass
                        "task d1": ["X1"]})
    run = run_veto(tmp_path, scenarios, adapter)
    cell = run.cells["veto/lifecycle"]
    assert cell.gold_total == 4 and cell.failed == ["s2", "s3"]
    assert cell.metrics["stale_surfaced"] == 0.5
    assert cell.metrics["veto_recall_at_k"] == 0.75
    assert run.items["veto/lifecycle"]["s2"]["stale_above"] == ["L1"]
    # Lifecycle scenarios are scored once, with files; direct/implicit ones in the other cells.
    assert set(run.cells["veto/files_known"].metrics) == {"veto_recall_at_k", "mrr"}
    assert run.cells["veto/files_known"].gold_total == 1
    searched = [q for verb, q in adapter.calls if verb == "search" and q.text == "task s1"]
    assert len(searched) == 1 and searched[0].files == ("src/cache.ts",)


def test_lifecycle_reaches_the_adapter_in_meta(tmp_path: Path) -> None:
    adapter = Scripted({})
    run_veto(tmp_path, [scenario("s1", "stale-named", "L3", "staying on memcached")], adapter)
    assert adapter.stored["L1"].meta == {"rejected": ["in-process cache"], "status": "superseded",
                                         "superseded_by": "L2"}
    assert adapter.stored["L3"].meta == {"rejected": ["staying on memcached"],
                                         "status": "active", "superseded_by": None}


def test_a_cell_without_items_is_absent(tmp_path: Path) -> None:
    lifecycle_only = run_veto(tmp_path, [scenario("s1", "stale-named", "L3", "Redis Cluster")],
                              Scripted({}))
    assert sorted(lifecycle_only.cells) == ["veto/lifecycle"]
    plain = run_veto(tmp_path, [scenario("d1", "direct", "X1", "npm workspaces")], Scripted({}))
    assert sorted(plain.cells) == ["veto/files_known", "veto/files_unknown"]


@pytest.mark.parametrize(("decisions", "scenarios", "message"), [
    ([*LIFECYCLE[:3], decision("X1", "pnpm", ["npm"], superseded_by="L3")],
     [scenario("d", "direct", "L3", "staying on memcached")],
     "decision X1: superseded_by is set but status is 'active'"),
    ([*LIFECYCLE[:3], decision("X1", "pnpm", ["npm"], status="superseded", superseded_by="Q")],
     [scenario("d", "direct", "L3", "staying on memcached")],
     "decision X1: superseded_by 'Q' does not exist"),
    ([decision("A", "a", ["x"], status="superseded", superseded_by="B"),
      decision("B", "b", ["y"], status="superseded", superseded_by="A")],
     [scenario("d", "direct", "A", "x")], "superseded_by forms a cycle"),
    (LIFECYCLE, [scenario("s", "stale-named", "L2", "Redis Cluster")],
     "a stale-named trap's veto_decision_id must be the current (active) decision; L2 is "
     "superseded"),
    (LIFECYCLE, [scenario("s", "stale-unnamed", "X1", "npm workspaces")],
     "a stale-unnamed trap needs a decision superseded by X1"),
    (LIFECYCLE, [scenario("s", "direct", "L3", "in-process cache")],
     "rejected_option 'in-process cache' is not rejected by L3"),
    (LIFECYCLE, [scenario("s", "stale-named", "L3", "npm workspaces")],
     "is not rejected by L3 or the decisions it supersedes"),
])
def test_bad_lifecycle_fixtures(tmp_path: Path, decisions: list[dict[str, Any]],
                                scenarios: list[dict[str, Any]], message: str) -> None:
    veto_folder(tmp_path, scenarios, decisions)
    with pytest.raises(GateError) as info:
        load_suite("veto", ["veto"], tmp_path, False)
    assert message in str(info.value)


def test_decisions_without_lifecycle_keep_their_digests(tmp_path: Path) -> None:
    plain = [{k: v for k, v in d.items() if k not in ("status", "superseded_by")}
             for d in LIFECYCLE[3:]]
    veto_folder(tmp_path, [scenario("d", "direct", "X1", "npm workspaces")], plain)
    before = load_suite("veto", ["veto"], tmp_path, False).digests
    veto_folder(tmp_path, [scenario("d", "direct", "X1", "npm workspaces")],
                [{**plain[0], "status": "active"}])
    assert load_suite("veto", ["veto"], tmp_path, False).digests == before


# -- the reference memory's lifecycle ------------------------------------------------------------


def rec(ident: str, text: str, rejected: list[str], status: str = "active",
        superseded_by: str | None = None) -> Record:
    return Record(id=ident, text=text, meta={"rejected": rejected, "status": status,
                                             "superseded_by": superseded_by})


OLD = rec("old", "Cache user sessions in Redis for fast session lookups", ["in-process cache"],
          "superseded", "new")
NEW = rec("new", "Move the session cache to a Postgres unlogged table", ["staying on Redis"])
OTHER = rec("other", "Sessions expire after thirty minutes of inactivity", [])


@pytest.mark.parametrize("order", [[OLD, NEW, OTHER], [NEW, OTHER, OLD]])
def test_reference_demotes_superseded_whatever_the_order(order: list[Record]) -> None:
    memory = ReferenceMemory()
    for record in order:  # one ingest call each: lifecycle applies across calls
        memory.ingest([record])
    hits = [h.id for h in memory.search(Query(text="cache user sessions in Redis", k=3)).hits]
    assert hits[-1] == "old" and set(hits) == {"old", "new", "other"}


def test_reference_replacement_carries_the_still_standing_veto() -> None:
    query = Query(text="use an in-process cache for sessions", k=3)
    memory = ReferenceMemory()
    memory.ingest([OLD, NEW, OTHER])
    with_lifecycle = memory.search(query).hits
    plain = ReferenceMemory()
    plain.ingest([Record(id=r.id, text=r.text) for r in (OLD, NEW, OTHER)])
    without = plain.search(query).hits
    rank = [h.id for h in with_lifecycle].index("new")
    assert rank == 0 and [h.id for h in without].index("new") > 0


def test_reference_does_not_carry_a_veto_the_replacement_overturns() -> None:
    old = rec("old", "Run services on EC2 instances", ["ECS Fargate"], "superseded", "new")
    new = rec("new", "Run all services on ECS Fargate", [])
    memory = ReferenceMemory()
    memory.ingest([old, new])
    fresh = ReferenceMemory()
    fresh.ingest([Record(id="new", text=new.text)])
    query = Query(text="ECS Fargate services", k=2)
    score = next(h.score for h in memory.search(query).hits if h.id == "new")
    assert score == pytest.approx(fresh.search(query).hits[0].score)
