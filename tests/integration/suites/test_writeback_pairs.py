"""Continuity pairs through real adapter processes: a ``command`` adapter that logs every request
it is sent (what a pair sends, in which order, with which context), and the reference memory
behind the Python host on the built-in pairs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from membench_gate.errors import GateError
from membench_gate.model.results import Results
from membench_gate.run.rederive import rederive
from tests.support.cli import run_cli
from tests.support.paths import BUILTIN

pytestmark = pytest.mark.slow  # each test runs the CLI

# A memory in any language: it keeps what it is given and answers every search with all of it,
# best first. It logs each request line before answering.
LOGGING_ADAPTER = r'''
import json, sys
log = open(sys.argv[1], "a", encoding="utf-8")
store, push = [], False
for line in sys.stdin:
    log.write(line)
    log.flush()
    request = json.loads(line)
    method, params = request["method"], request["params"]
    result = None
    if method == "initialize":
        push = params["options"].get("push", False)
        result = {"protocol": 1, "name": "logger", "capabilities": {"push": push, "write": True}}
    elif method == "reset":
        store = []
    elif method == "ingest":
        store += [{"id": r["id"], "text": r["text"], "entity": r["entity"], "source": r["source"],
                   "provenance": None} for r in params["records"]]
    elif method == "write":
        session = params["session"]
        store += [{"id": session["id"] + "/" + t["id"], "text": t["text"], "entity": t["speaker"],
                   "source": session["source"], "provenance": {
                       "source": session["source"], "session": session["id"], "turn": t["id"]}}
                  for t in session["turns"]]
    elif method in ("search", "push"):
        query = params["query"]
        mine = [m for m in store if m["source"] == query["source"]][:query["k"]]
        hits = [{"id": m["id"], "score": 1.0 - n / 100, "text": m["text"], "entity": m["entity"],
                 "provenance": m["provenance"]} for n, m in enumerate(mine)]
        result = {"hits": hits, "abstain": False} if method == "search" else \
            {"ids": [h["id"] for h in hits]}
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)
'''

PAIR: dict[str, Any] = {
    "id": "c1", "source": "work",
    "pages": [{"slug": "people/mateo", "text": "Mateo runs the offsite.", "source": "work"},
              {"slug": "people/mateo", "text": "Mateo is my brother-in-law.",
               "source": "personal"}],
    "writer": {"id": "c1-writer", "turns": [
        {"id": "1", "speaker": "Mateo", "role": "user", "at": "2026-05-04T08:00:00Z",
         "text": "The offsite moves to Porto."},
        {"id": "2", "speaker": "assistant", "role": "assistant", "text": "Noted, Porto it is."}]},
    "reader": {"id": "c1-reader", "turns": [
        {"id": "1", "role": "user", "at": "2026-05-20T11:00:00Z", "text": "Where is the offsite?"},
        {"id": "2", "role": "assistant", "text": "Checking the notes."},
        {"id": "3", "role": "user", "text": "And who runs it?"}]},
    "decisions": [{"id": "d1", "expected": ["people/mateo"], "keywords": ["offsite", "Porto"]},
                  {"id": "d2", "keywords": ["Lisbon"]}],
}
HELD_OUT = {**PAIR, "id": "c2", "holdout": True,
            "writer": {**PAIR["writer"], "id": "c2-writer"},
            "reader": {**PAIR["reader"], "id": "c2-reader"}}


def setup(tmp_path: Path, push: bool, holdout: bool = False) -> Path:
    (tmp_path / "wb" / "pairs").mkdir(parents=True)
    for pair in (PAIR, HELD_OUT):
        (tmp_path / "wb" / "pairs" / f"{pair['id']}.json").write_text(json.dumps(pair),
                                                                     encoding="utf-8")
    (tmp_path / "adapter.py").write_text(LOGGING_ADAPTER, encoding="utf-8")
    config = tmp_path / "membench.toml"
    config.write_text(
        f"[adapter]\ncommand = [{json.dumps(sys.executable)}, \"adapter.py\", \"log.jsonl\"]\n"
        f"[adapter.options]\npush = {'true' if push else 'false'}\n"
        "[suites.writeback]\nfixtures = [\"wb\"]\nbudget = 2\n"
        f"[gate]\ninclude_holdout = {'true' if holdout else 'false'}\n", encoding="utf-8")
    return config


def results_of(config: Path) -> dict[str, Any]:
    out = config.parent / "results.json"
    proc = run_cli("run", "--config", config, "--out", out, cwd=config.parent)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def run(config: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run's results and every request the logging adapter was sent."""
    results = results_of(config)
    log = [json.loads(line) for line in (config.parent / "log.jsonl").read_text(
        encoding="utf-8").splitlines()]
    return results, log


def calls(log: list[dict[str, Any]]) -> list[str]:
    return [r["method"] for r in log if r["method"] not in ("initialize", "shutdown")]


def test_reader_turns_are_pushed_after_the_write_without_a_reset(tmp_path: Path) -> None:
    results, log = run(setup(tmp_path, push=True))
    # reset, the pages, the writer, a push per reader user turn, then the fact arm's searches.
    assert calls(log) == ["reset", "ingest", "write", "push", "push", "search", "search"]
    ingest = next(r for r in log if r["method"] == "ingest")["params"]["records"]
    assert [(r["id"], r["entity"], r["source"]) for r in ingest] == [
        ("people/mateo@work", "people/mateo", "work"),
        ("people/mateo@personal", "people/mateo", "personal")]
    written = next(r for r in log if r["method"] == "write")["params"]["session"]
    assert written["id"] == "c1-writer" and written["source"] == "work"
    assert [(t["role"], t["at"]) for t in written["turns"]] == [
        ("user", "2026-05-04T08:00:00Z"), ("assistant", None)]
    pushes = [r["params"]["query"] for r in log if r["method"] == "push"]
    # The assistant turn is context only: never pushed, but in the next push's context.
    assert [q["text"] for q in pushes] == ["Where is the offsite?", "And who runs it?"]
    assert {q["k"] for q in pushes} == {2}  # [suites.writeback] budget
    assert pushes[1]["context"] == ["Where is the offsite?", "Checking the notes."]
    assert pushes[1]["context_turns"] == [
        {"role": "user", "text": "Where is the offsite?", "at": "2026-05-20T11:00:00Z"},
        {"role": "assistant", "text": "Checking the notes.", "at": None}]
    searches = [r["params"]["query"]["text"] for r in log if r["method"] == "search"]
    assert searches == ["offsite Porto", "Lisbon"]
    # The held-out pair was never sent at all.
    assert "c2" not in json.dumps(log)
    cell = results["cells"]["writeback/continuity"]
    # d1: the own copy was pushed (pointer arm); d2: nothing written holds "Lisbon".
    assert cell["failed"] == ["c1/d2"] and cell["gold_total"] == 2
    assert cell["metrics"] == {"continuity_rate": 0.5, "source_isolation_violations": 0}
    assert results["items"]["writeback/continuity"]["c1/d1"]["pointer"] == ["people/mateo@work"]


def test_without_push_a_reader_turn_injects_the_search_hits(tmp_path: Path) -> None:
    results, log = run(setup(tmp_path, push=False))
    assert calls(log) == ["reset", "ingest", "write", "search", "search", "search", "search"]
    asked = [r["params"]["query"] for r in log if r["method"] == "search"]
    assert [q["text"] for q in asked[:2]] == ["Where is the offsite?", "And who runs it?"]
    assert asked[0]["k"] == 2 and asked[2]["k"] == 5  # the budget, then the suite's k
    item = results["items"]["writeback/continuity"]["c1/d1"]
    assert item["injected"] == ["people/mateo@work", "c1-writer/1"]


def test_a_held_out_pair_is_sent_when_the_run_includes_holdout(tmp_path: Path) -> None:
    results, log = run(setup(tmp_path, push=True, holdout=True))
    assert calls(log).count("write") == 2
    assert any(r["method"] == "write" and r["params"]["session"]["id"] == "c2-writer"
               for r in log)
    assert set(results["items"]["writeback/continuity"]) == {"c1/d1", "c1/d2", "c2/d1",
                                                            "c2/d2"}


def test_the_reference_memory_passes_one_pair_by_each_arm_alone(tmp_path: Path) -> None:
    config = tmp_path / "membench.toml"
    config.write_text('[adapter]\npython = "membench_gate.reference:ReferenceMemory"\n'
                      '[suites.writeback]\nfixtures = ["builtin"]\n', encoding="utf-8")
    results = results_of(config)
    items = results["items"]["writeback/continuity"]
    arms = {i: (bool(r["pointer"]), r["rank"] is not None) for i, r in items.items()
            if r.get("kind") == "decision"}
    pairs = sorted(p.stem for p in (BUILTIN / "writeback" / "pairs").glob("*.json"))
    assert pairs == ["cont-01", "cont-02", "cont-03", "cont-04", "cont-05"]
    assert arms == {"cont-01-widget-pass/d1": (True, False),  # pointer arm only
                    "cont-02-seed-lead/d1": (False, True),  # fact arm only
                    "cont-03-offsite-twin/d1": (True, True),
                    "cont-04-renewal-confirmed/d1": (False, False)}  # cont-05 is held out
    assert items["cont-03-offsite-twin/d1"]["pointer"] == ["people/mateo@work"]



SESSION: dict[str, Any] = {
    "id": "s1", "source": "work",
    "pages": [{"slug": "people/ola", "text": "Ola moved to Lisbon.", "source": "work"}],
    "turns": [{"id": "t1", "speaker": "Sam", "text": "Ola moved to Lisbon in May."}],
    "gold_facts": [{"id": "f1", "keywords": ["Lisbon"], "entity": "people/ola", "turn": "t1"}],
}


def test_a_session_with_pages_ingests_them_before_the_write(tmp_path: Path) -> None:
    (tmp_path / "wb" / "sessions").mkdir(parents=True)
    (tmp_path / "wb" / "sessions" / "s1.json").write_text(json.dumps(SESSION), encoding="utf-8")
    (tmp_path / "adapter.py").write_text(LOGGING_ADAPTER, encoding="utf-8")
    config = tmp_path / "membench.toml"
    config.write_text(
        f"[adapter]\ncommand = [{json.dumps(sys.executable)}, \"adapter.py\", \"log.jsonl\"]\n"
        "[suites.writeback]\nfixtures = [\"wb\"]\n", encoding="utf-8")
    results, log = run(config)
    assert calls(log) == ["reset", "ingest", "write", "search"]
    ingest = next(r for r in log if r["method"] == "ingest")["params"]["records"]
    assert [(r["id"], r["entity"], r["source"]) for r in ingest] == [
        ("people/ola", "people/ola", "work")]
    # The logger answers with the page first: it holds the keyword and the entity, but it was
    # seeded, not written; the written turn is about "Sam". The fact does not survive.
    item = results["items"]["writeback/fidelity"]["s1.f1"]
    assert [h["id"] for h in item["hits"]] == ["people/ola", "s1/t1"]
    assert item["seeded"] == ["people/ola"] and item["survived"] is False
    # Re-derivation holds it: the cell follows from the items, and an item stripped of what was
    # seeded no longer gives the stated cell.
    parsed = Results.model_validate(results)
    rederive("results.json", parsed, None)
    del parsed.items["writeback/fidelity"]["s1.f1"]["seeded"]
    with pytest.raises(GateError, match=r"writeback/fidelity"):
        rederive("results.json", parsed, None)
