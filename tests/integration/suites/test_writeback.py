"""The writeback suite (docs/suites.md) end to end through ``membench-gate run``, its fixture checks,
and the reference memory's write path rule by rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from membench_gate import Query, Session, Turn
from membench_gate.gate.rules import decide
from membench_gate.model.results import parse_results
from membench_gate.reference import ReferenceMemory
from membench_gate.reference.write import extract, sentences
from membench_gate.suites.common.fixtures import keyword_in, load_suite
from tests.support.cli import run_cli
from tests.support.configs import copy_test_adapters
from tests.support.paths import BUILTIN

# The module's fixture runs the writeback suite through the CLI.
pytestmark = pytest.mark.slow

SESSIONS = BUILTIN / "writeback" / "sessions"
PAIRS = BUILTIN / "writeback" / "pairs"


def config(folder: Path, target: str = "membench_gate.reference:ReferenceMemory",
           fixtures: str = '"builtin"', holdout: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    copy_test_adapters(folder)
    path = folder / "membench.toml"
    path.write_text(
        f'[adapter]\npython = "{target}"\n[suites.writeback]\nfixtures = [{fixtures}]\nk = 5\n'
        f"[gate]\ninclude_holdout = {'true' if holdout else 'false'}\n", encoding="utf-8")
    return path


def run(path: Path) -> dict[str, Any]:
    out = path.parent / "results.json"
    proc = run_cli("run", "--config", path, "--out", out, cwd=path.parent)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def builtin_sessions() -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(SESSIONS.glob("*.json"))]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run(config(tmp_path_factory.mktemp("wb")))


# -- the suite ----------------------------------------------------------------------------------


def test_cells_count_every_scored_item_of_the_builtin_sessions(reference: dict[str, Any]) -> None:
    scored = [s for s in builtin_sessions() if not s.get("holdout")]
    facts = [f for s in scored for f in (*s["gold_facts"], *s["non_facts"]) if not f.get("holdout")]
    probes = [p for s in scored for p in s["probes"] if not p.get("holdout")]
    pairs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(PAIRS.glob("*.json"))]
    decisions = [f"{p['id']}/{d['id']}" for p in pairs if not p.get("holdout")
                 for d in p["decisions"] if not d.get("holdout")]
    assert decisions
    assert reference["cells"]["writeback/fidelity"]["gold_total"] == len(facts)
    assert reference["cells"]["writeback/continuity"]["gold_total"] == len(probes) + len(decisions)
    assert set(decisions) < set(reference["items"]["writeback/continuity"])
    assert set(reference["items"]["writeback/fidelity"]) == {
        f"{s['id']}.{f['id']}" for s in scored
        for f in (*s["gold_facts"], *s["non_facts"]) if not f.get("holdout")}


def test_metrics_are_recomputed_from_the_items(reference: dict[str, Any]) -> None:
    items = reference["items"]["writeback/fidelity"]
    facts = [d for d in items.values() if d["kind"] == "fact"]
    non_facts = [d for d in items.values() if d["kind"].startswith("non-fact")]
    survived = [d for d in facts if d["survived"]]
    metrics = reference["cells"]["writeback/fidelity"]["metrics"]
    assert metrics["write_back_fidelity"] == round(len(survived) / len(facts), 4)
    assert metrics["provenance_accuracy"] == round(
        sum(d["provenance_ok"] for d in survived) / len(survived), 4)
    assert metrics["non_fact_leak_rate"] == round(
        sum(d["leaked"] for d in non_facts) / len(non_facts), 4)
    continuity = reference["items"]["writeback/continuity"]
    assert reference["cells"]["writeback/continuity"]["metrics"]["continuity_rate"] == round(
        sum(d["outcome"] == "pass" for d in continuity.values()) / len(continuity), 4)


def test_reference_scores_are_honest_not_perfect(reference: dict[str, Any]) -> None:
    fidelity = reference["cells"]["writeback/fidelity"]
    assert 0.5 < fidelity["metrics"]["write_back_fidelity"] < 1
    assert fidelity["metrics"]["non_fact_leak_rate"] > 0  # a musing with a mid-sentence "if"
    assert "wb-01-atlas-launch.n4" in fidelity["failed"]
    # The retraction rule dropped the claim taken back, and kept the correction.
    items = reference["items"]["writeback/fidelity"]
    assert items["wb-04-hiring-loop.n3"]["outcome"] == "pass"
    assert items["wb-04-hiring-loop.f5"]["outcome"] == "pass"
    rank = items["wb-04-hiring-loop.f5"]["rank"]
    assert items["wb-04-hiring-loop.f5"]["hits"][rank - 1]["provenance"] == {
        "source": "work", "session": "wb-04-hiring-loop", "turn": "t8"}


def test_a_verbatim_memory_leaks_every_non_fact(tmp_path: Path) -> None:
    """The fixture check guarantees a non-fact's keywords occur together only in its own turn, so
    a memory that keeps every turn word for word is charged for exactly every non-fact."""
    results = run(config(tmp_path, "adapters_for_tests:Verbatim"))
    metrics = results["cells"]["writeback/fidelity"]["metrics"]
    assert metrics["non_fact_leak_rate"] == 1
    assert metrics["provenance_accuracy"] == 1
    # Attributed to the speaker, a fact about someone else does not survive.
    items = results["items"]["writeback/fidelity"]
    assert items["wb-01-atlas-launch.f3"]["survived"] is False  # Jonas, said by Lena
    assert items["wb-01-atlas-launch.f2"]["survived"] is True  # Lena about herself


def test_holdout_sessions_are_not_written_unless_included(tmp_path: Path) -> None:
    without = run(config(tmp_path / "a"))
    with_all = run(config(tmp_path / "b", holdout=True))
    ids = set(with_all["items"]["writeback/fidelity"]) - set(without["items"]["writeback/fidelity"])
    assert {i for i in ids if i.startswith("wb-07")}
    assert not any(i.startswith("wb-07") for i in without["items"]["writeback/continuity"])
    assert without["fixtures_hash"] != with_all["fixtures_hash"]


# One memory holds both "Lisbon" and "cat" and is the best hit for each; the other sentence holds
# "Lisbon" only, from the turn the Lisbon fact is of.
LISBON = {"id": "f1", "keywords": ["Lisbon"], "entity": "Ana", "turn": "t2"}
CAT = {"id": "f2", "keywords": ["cat"], "entity": "Ana", "turn": "t1"}


def _measured(folder: Path, facts: list[dict[str, Any]]) -> Any:
    """The baseline of a run of the reference memory on one session with these gold facts."""
    (folder / "fx" / "sessions").mkdir(parents=True)
    (folder / "fx" / "sessions" / "s.json").write_text(json.dumps({
        "id": "s", "source": "work", "gold_facts": facts, "turns": [
            {"id": "t1", "speaker": "Ana", "text": "Ana moved to Lisbon and adopted a cat."},
            {"id": "t2", "speaker": "Ana",
             "text": "Ana says the rent for her flat in Lisbon went up again this spring."}]}),
        encoding="utf-8")
    run(config(folder, fixtures='"fx"'))
    return parse_results((folder / "results.json").read_bytes(), "results.json").to_baseline()


def test_reordering_gold_facts_is_an_item_change_not_a_silent_gain(tmp_path: Path) -> None:
    """Issue seen: the greedy takes a session's facts in gold_facts order, so swapping two made
    both pass, banked as a plain improvement; the items' digests ignored the order."""
    base = _measured(tmp_path / "base", [LISBON, CAT])  # Lisbon takes the shared hit: both fail
    head = _measured(tmp_path / "head", [CAT, LISBON])
    assert base.cells["writeback/fidelity"].failed == ["s.f1", "s.f2"]
    assert head.cells["writeback/fidelity"].failed == []
    verdict = decide(base, head, head)
    assert verdict.verdict == "regression"
    assert sorted((b.kind, b.key, b.base, b.head) for b in verdict.breaches) == [
        ("item-changed", "writeback/fidelity#s.f1", "fail", "pass"),
        ("item-changed", "writeback/fidelity#s.f2", "fail", "pass")]


def test_an_adapter_without_write_is_an_error_naming_the_suite(tmp_path: Path) -> None:
    path = config(tmp_path, "adapters_for_tests:Abstainer")
    proc = run_cli("run", "--config", path, cwd=tmp_path)
    assert proc.returncode == 4
    assert "suite writeback" in proc.stderr and "write(session)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_hits_without_text_are_an_error_naming_the_item(tmp_path: Path) -> None:
    proc = run_cli("run", "--config", config(tmp_path, "adapters_for_tests:TextlessWriter"),
                   cwd=tmp_path)
    assert proc.returncode == 4
    assert "suite writeback, item wb-01-atlas-launch.f1" in proc.stderr
    assert "has no text" in proc.stderr
    assert "  | textless writer: dropping the hits' text" in proc.stderr  # its stderr, as always


# -- malformed sessions ------------------------------------------------------------------------


def _one_session(tmp_path: Path, mutate: Any) -> tuple[int, str]:
    folder = tmp_path / "mine" / "sessions"
    folder.mkdir(parents=True)
    data = json.loads((SESSIONS / "wb-01.json").read_text(encoding="utf-8"))
    mutate(data)
    (folder / "s.json").write_text(json.dumps(data), encoding="utf-8")
    proc = run_cli("run", "--config", config(tmp_path, fixtures='"mine"'), cwd=tmp_path)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda d: d["gold_facts"][0].pop("entity"), "mine/sessions/s.json: gold_facts.0.entity: "
                                                 "Field required"),
    (lambda d: d["turns"][2].update(speaker=""), "mine/sessions/s.json: turns.2.speaker"),
    (lambda d: d["probes"][0].update(keywords=[]), "mine/sessions/s.json: probes.0.keywords"),
    (lambda d: d["non_facts"][0].update(kind="rumour"), "mine/sessions/s.json: non_facts.0.kind"),
    (lambda d: d["gold_facts"][1].update(keywords=["tea", "Tea"]), "keyword is repeated"),
    (lambda d: d["gold_facts"][1].update(turn="t99"),
     "session wb-01-atlas-launch: gold_facts f2: turn 't99' does not exist"),
    (lambda d: d["non_facts"][0].update(keywords=["launch"]),
     "non_facts n1: keywords also occur together in turn 't1'"),
    (lambda d: d["probes"][0].update(id="f1"), "duplicate gold fact / non-fact / probe id 'f1'"),
    (lambda d: d.update(speakers=[]), "mine/sessions/s.json: speakers: Extra inputs"),
])
def test_a_malformed_session_is_an_error_naming_file_and_field(
        tmp_path: Path, mutate: Any, expected: str) -> None:
    code, stderr = _one_session(tmp_path, mutate)
    assert code == 4
    assert expected in stderr, stderr
    assert "Traceback" not in stderr


def test_a_keyword_is_contained_ignoring_case() -> None:
    # DESIGN §5a: a hit's text "contains every keyword (case-insensitive)".
    assert keyword_in("tea", "Green TEA, please.")
    assert keyword_in("launch", "Atlas launched on May 12")
    assert keyword_in("7:30pm", "at 7:30pm sharp")
    assert keyword_in("dark theme", "in the dark  theme")  # however the spaces run
    assert not keyword_in("7:30pm", "at 7:30 pm sharp")
    assert not keyword_in("may 12", "on May 1")


# -- the reference write path ------------------------------------------------------------------


def _session(*turns: tuple[str, str]) -> Session:
    return Session("s", "work", tuple(Turn(f"t{i}", who, text)
                                      for i, (who, text) in enumerate(turns, 1)))


def test_sentences_split_at_stops_but_not_after_abbreviations() -> None:
    assert sentences("Dr. Lee said hi. We ship on May 12! Ready?\nYes") == [
        "Dr. Lee said hi.", "We ship on May 12!", "Ready?", "Yes"]


def test_write_keeps_statements_with_entity_and_provenance() -> None:
    records = extract(_session(
        ("Priya", "I only drink green tea before noon. Thanks!"),
        ("Marco", "Dana runs the mobile team. She prefers async standups."),
        ("Marco", "Priya owns the launch checklist."),
    ))
    assert [(r.text, r.entity) for r in records] == [
        ("I only drink green tea before noon.", "Priya"),
        ("Dana runs the mobile team.", "Dana"),
        ("She prefers async standups.", "Dana"),
        ("Priya owns the launch checklist.", "Priya"),
    ]
    assert records[3].meta["provenance"] == {"source": "work", "session": "s", "turn": "t3"}


@pytest.mark.parametrize("text", [
    "If we cut the banner, we could ship a day earlier.",
    "Suppose we dropped Windows builds entirely.",
    "Hypothetically, a rewrite would be faster.",
    "Tom claims the vendor will waive the fee.",
    'Her note said "the venue is booked" already.',
    "Apparently the cluster is ready now.",
    "Can we ship on Friday instead?",
])
def test_write_skips_what_is_not_a_fact(text: str) -> None:
    assert extract(_session(("Ana", text))) == []


def test_a_retraction_removes_what_it_takes_back_and_keeps_the_correction() -> None:
    records = extract(_session(
        ("Omar", "Tomasz joined in May. Tomasz lives in Gdansk."),
        ("Wei", "Farah starts in October."),
        ("Omar", "Correction: Tomasz lives in Warsaw."),
    ))
    assert [r.text for r in records] == [
        "Tomasz joined in May.", "Farah starts in October.", "Tomasz lives in Warsaw."]


def test_written_memories_come_back_with_text_entity_and_provenance() -> None:
    memory = ReferenceMemory()
    memory.write(_session(("Lena", "I prefer the dark theme for onboarding screens.")))
    hit = memory.search(Query("What theme does Lena prefer?", 3, source="work")).hits[0]
    assert (hit.text, hit.entity) == ("I prefer the dark theme for onboarding screens.", "Lena")
    assert hit.provenance == {"source": "work", "session": "s", "turn": "t1"}
    assert memory.search(Query("dark theme", 3, source="personal")).hits == []


def test_every_turn_written_has_a_content_digest() -> None:
    fx = load_suite("writeback", ["builtin"], BUILTIN.parent, include_holdout=False)
    turns = {f"{s['id']}/{t['id']}" for s in builtin_sessions() if not s.get("holdout")
             for t in s["turns"] if not t.get("holdout")}
    pairs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(PAIRS.glob("*.json"))]
    turns |= {f"{p['id']}/{p[side]['id']}/{t['id']}" for p in pairs if not p.get("holdout")
              for side in ("writer", "reader") for t in p[side]["turns"]}
    turns |= {f"{p['id']}/pages/{page['slug']}" for p in pairs if not p.get("holdout")
              for page in p["pages"] if not p["id"].startswith("cont-03")}
    turns |= {"cont-03-offsite-twin/pages/people/mateo@work",
              "cont-03-offsite-twin/pages/people/mateo@personal",
              "cont-03-offsite-twin/pages/places/porto-office"}
    assert set(fx.corpus) == turns
    assert len(set(fx.corpus.values())) == len(turns)  # each digest is its own turn's
    everything = load_suite("writeback", ["builtin"], BUILTIN.parent, include_holdout=True)
    assert set(everything.corpus) > set(fx.corpus)
