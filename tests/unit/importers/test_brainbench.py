"""``membench-gate import brainbench DIR``: the mapping on a corpus written for these tests (every
field and edge), the counts, SOURCE.json and suites.toml, deterministic bytes, one-line errors and
nothing written on a bad input — and, when a copy of BrainBench's own corpus sits beside the
checkout, its counts."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from membench_gate.cli.main import main
from membench_gate.importers.brainbench import aliases
from tests.support.brainbench import Corpus, check_formats, read_folder, write_corpus

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# A copy of BrainBench's corpus beside the checkout (never part of it: users bring their own).
SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "brainbench"


def do_import(src: Path, out: Path) -> int:
    return main(["import", "brainbench", str(src), "--out", str(out)])


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    out = tmp_path / "bench" / "bb"
    assert do_import(write_corpus(tmp_path / "corpus"), out) == 0
    return out


def test_conversations_carry_roles_times_twins_and_gold(imported: Path) -> None:
    conv = read_folder(imported, "push", "conversations")["ms-twins"]
    assert conv["source"] == "team" and conv["category"] == "multi-source"
    assert conv["suites"] == ["know_to_ask", "push"] and conv["holdout"] is False
    # Twins: one page per (slug, source); a page without source_id is in "default", as
    # BrainBench seeds it, whatever the active source.
    assert [(p["slug"], p["source"]) for p in conv["pages"]] == [
        ("people/mira-vale", "default"), ("people/mira-vale", "team"), ("companies/kestrel", "team")]
    assert conv["pages"][0]["aliases"] == ["mira", "M. Vale"]
    assert conv["pages"][2]["aliases"] == ["kestrel", "Kestrel Inc"]
    assert conv["pages"][2]["text"].startswith("---\ntitle: kestrel\naliases:")
    turns = {t["id"]: t for t in conv["turns"]}
    assert turns["1"] == {"id": "1", "role": "user", "at": "2026-03-09T16:00:00Z",
                          "text": "What do I have on Mira Vale?", "expect": "retrieve",
                          "gold": ["people/mira-vale"],
                          "acceptable": ["companies/kestrel", "deals/never-seeded"]}
    # An assistant turn is context only; its time is normalised to UTC "Z".
    assert turns["2"] == {"id": "2", "role": "assistant", "at": "2026-03-09T16:00:10Z",
                          "text": "Mira founded Kestrel."}
    assert turns["3"]["gold"] == ["companies/kestrel", "people/mira-vale"] and "at" not in turns["3"]
    assert "expect" not in turns["4"]  # a user turn without gold: pushed, not scored
    # Gold on a stay-silent turn counts only for precision in BrainBench: an acceptable slug.
    assert turns["5"]["expect"] == "silent" and turns["5"]["acceptable"] == ["companies/kestrel"]
    assert "gold" not in turns["5"]
    held = read_folder(imported, "push", "conversations")["kta-held"]
    assert held["holdout"] is True and held["suites"] == ["know_to_ask"]
    assert held["turns"][0]["expect"] == "silent"
    # Fixtures in no retrieval suite are no conversation.
    assert sorted(read_folder(imported, "push", "conversations")) == ["kta-held", "ms-twins"]


def test_sessions_carry_speakers_times_and_gold_facts(imported: Path) -> None:
    sessions = read_folder(imported, "writeback", "sessions")
    assert sorted(sessions) == ["c1-writer", "wb-gap", "wb-held"]  # c2-writer: no write-back
    wb = sessions["wb-gap"]
    assert wb["source"] == "default" and wb["category"] == "write-back" and not wb["holdout"]
    assert [t["at"] for t in wb["turns"]] == ["2026-03-02T17:00:00Z", "2026-03-02T17:00:30Z",
                                              "2026-03-02T18:15:00Z"]  # a gap over 30 minutes
    assert wb["turns"][1] == {"id": "2", "speaker": "assistant", "role": "assistant",
                              "at": "2026-03-02T17:00:30Z",
                              "text": "Noted: Ola commits to the Friday memo."}
    assert wb["gold_facts"] == [
        {"id": "t1-1", "turn": "1", "entity": "people/ola", "keywords": ["email"],
         "gist": "prefers email", "kind": "preference"},
        {"id": "t2-1", "turn": "2", "entity": "people/ola", "keywords": ["Friday", "memo"],
         "gist": "memo"},
        {"id": "t3-1", "turn": "3", "entity": "people/ola", "keywords": ["Lisbon"],
         "gist": "moved", "kind": "event"}]
    # The fixture's seed pages, mapped as the pairs' are, are ingested before the write.
    assert wb["pages"] == [{"slug": "people/ola", "text": "---\ntitle: ola\n---\n\nOla.\n",
                            "aliases": [], "source": "default"}]
    assert sessions["wb-held"]["holdout"] is True and "pages" not in sessions["wb-held"]
    assert sessions["c1-writer"]["gold_facts"][0]["keywords"] == ["pass", "Kestrel"]
    assert sessions["c1-writer"]["pages"] == read_folder(imported, "continuity",
                                                         "pairs")["c1"]["pages"]


def test_pairs_join_writer_and_reader(imported: Path) -> None:
    pairs = read_folder(imported, "continuity", "pairs")
    c1 = pairs["c1"]
    assert c1["source"] == "default" and c1["holdout"] is False and c1["category"] == "continuity"
    assert [p["slug"] for p in c1["pages"]] == ["companies/kestrel"]
    assert c1["writer"] == {"id": "c1-writer", "turns": [
        {"id": "1", "speaker": "user", "role": "user", "at": "2026-03-09T16:00:00Z",
         "text": "We pass on the Kestrel seed."}]}
    assert c1["reader"] == {"id": "c1-reader", "turns": [
        {"id": "1", "role": "user", "text": "Where did we land on Kestrel?"}]}
    assert c1["decisions"] == [{"id": "d1", "expected": ["companies/kestrel"],
                                "keywords": ["pass", "Kestrel"]}]
    c2 = pairs["c2"]
    assert c2["holdout"] is True  # its reader is held out, its writer is not
    assert [p["slug"] for p in c2["pages"]] == ["people/ola"]  # the reader's own pages
    assert [d["id"] for d in c2["decisions"]] == ["d1", "d2"]


def test_output_keeps_the_fixture_formats(imported: Path) -> None:
    check_formats(imported)


def test_counts_notes_and_inputs_in_source_json(imported: Path, tmp_path: Path) -> None:
    source = read(imported / "SOURCE.json")
    assert source["format"] == "brainbench"
    counts = source["counts"]
    assert (counts["push/know_to_ask items"], counts["push/know_to_ask items with holdout"]) == (3, 4)
    assert (counts["push/push items"], counts["push/push items with holdout"]) == (3, 3)
    assert (counts["writeback/fidelity items"],
            counts["writeback/fidelity items with holdout"]) == (4, 5)
    assert (counts["writeback/continuity items"],
            counts["writeback/continuity items with holdout"]) == (1, 3)
    assert (counts["fixtures"], counts["conversations"], counts["sessions"], counts["pairs"]) == \
        (8, 2, 3, 2)
    names = [i["file"] for i in source["inputs"]]
    assert names[0] == "fixtures/c1-reader.fixture.json" and names[-1] == "gold/wb-held.gold.json"
    assert len(names) == 16
    corpus = tmp_path / "corpus"
    for entry in source["inputs"]:
        assert entry["sha256"] == hashlib.sha256((corpus / entry["file"]).read_bytes()).hexdigest()
    notes = "\n".join(source["notes"])
    for expected in (
            "schema_version 1 on all 8 fixtures",
            "(twins): 1",
            "acceptable slugs naming no page seeded in the conversation's source: 1",
            "gold slugs on stay-silent turns: 1",
            "continuity readers' turns with retrieval gold: 1",
            "gold facts' 'fact' sentences: 5",
            "seed pages of write-back fixtures: 2 (carried in their sessions",
            "fixtures declaring 'sources': 1",
            "continuity writers' gold with their own decisions: 1"):
        assert expected in notes
    assert "differing from the reader's" not in notes and "repeated" not in notes


def test_repeated_slugs_and_keywords_are_kept_once(tmp_path: Path) -> None:
    def repeat(data: Corpus) -> None:
        data["ms-twins"][1]["turns"]["3"]["gold_slugs"].append("companies/kestrel")
        data["wb-gap"][1]["turns"]["2"]["gold_facts"][0]["match_keywords"].append("MEMO")
    out = tmp_path / "bb"
    assert do_import(write_corpus(tmp_path / "corpus", edit=repeat), out) == 0
    turn = read_folder(out, "push", "conversations")["ms-twins"]["turns"][2]
    assert turn["gold"] == ["companies/kestrel", "people/mira-vale"]
    fact = read_folder(out, "writeback", "sessions")["wb-gap"]["gold_facts"][1]
    assert fact["keywords"] == ["Friday", "memo"]
    assert "slugs or keywords repeated in one list of the gold: 2 (kept once)" in \
        read(out / "SOURCE.json")["notes"]


def test_suites_toml_names_the_folders_and_the_cells(imported: Path) -> None:
    text = (imported / "suites.toml").read_text(encoding="utf-8")
    assert tomllib.loads(text) == {"suites": {
        "push": {"fixtures": ["bb/push"], "budget": 3},
        "writeback": {"fixtures": ["bb/writeback", "bb/continuity"]}}}
    assert "push/know_to_ask = know-to-ask, push/push = push" in text
    assert "writeback/fidelity = write-back, writeback/continuity = continuity" in text


def test_import_is_deterministic(tmp_path: Path) -> None:
    src = write_corpus(tmp_path / "corpus")
    assert do_import(src, tmp_path / "1" / "bb") == 0
    assert do_import(src, tmp_path / "2" / "bb") == 0
    first = sorted(p.relative_to(tmp_path / "1") for p in (tmp_path / "1").rglob("*") if p.is_file())
    assert first == sorted(p.relative_to(tmp_path / "2") for p in (tmp_path / "2").rglob("*")
                           if p.is_file())
    assert len(first) == 9
    for rel in first:
        assert (tmp_path / "1" / rel).read_bytes() == (tmp_path / "2" / rel).read_bytes()


def test_reimport_replaces_the_folders_and_a_bad_one_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bb"
    assert do_import(write_corpus(tmp_path / "a"), out) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def bad(data: Corpus) -> None:
        data["wb-gap"][0]["schema_version"] = 2
    assert do_import(write_corpus(tmp_path / "b", edit=bad), out) == 4
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    capsys.readouterr()

    def fewer(data: Corpus) -> None:
        del data["kta-held"]
    assert do_import(write_corpus(tmp_path / "c", edit=fewer), out) == 0
    assert sorted(read_folder(out, "push", "conversations")) == ["ms-twins"]


def _drop_reader(data: Corpus) -> None:
    del data["c1-reader"]


def _orphan_gold(data: Corpus) -> None:
    data["ghost"] = ({}, {"fixture_id": "ghost", "turns": {}})


def _edit(fid: str, side: int, change: Any) -> Any:
    def edit(data: Corpus) -> None:
        change(data[fid][side])
    return edit


CASES = [
    ("bad schema version", _edit("wb-gap", 0, lambda f: f.update(schema_version=2)),
     "fixtures/wb-gap.fixture.json: schema_version must be 1, not 2 (expected a BrainBench "
     "fixture"),
    ("gold without fixture", _orphan_gold,
     "gold/ghost.gold.json: fixture_id 'ghost' names no fixture"),
    ("missing reader", _drop_reader,
     "fixtures/c1-writer.fixture.json: continuity pair 'c1' has no reader"),
    ("second writer", _edit("c2-writer", 0, lambda f: f.update(continuity={
        "pair_id": "c1", "pair_role": "writer"})), "continuity pair 'c1' has a second writer"),
    ("sealed gold inline", _edit("ms-twins", 0, lambda f: f["turns"][0].update(gold=["x"])),
     "fixtures/ms-twins.fixture.json: turns[0]: unknown field 'gold'"),
    ("unknown gold field", _edit("wb-gap", 1, lambda g: g["turns"]["1"].update(score=1)),
     "gold/wb-gap.gold.json: turns['1']: unknown field 'score'"),
    ("retrieval gold on an assistant turn",
     _edit("ms-twins", 1, lambda g: g["turns"].update({"2": {"should_retrieve": True,
                                                             "gold_slugs": ["people/mira-vale"]}})),
     "gold/ms-twins.gold.json: turns['2']: retrieval gold on an assistant turn"),
    ("retrieve without gold", _edit("ms-twins", 1, lambda g: g["turns"]["3"].pop("gold_slugs")),
     "turns['3']: should_retrieve is true but gold_slugs is empty"),
    ("gold not seeded in the active source",
     _edit("ms-twins", 0, lambda f: f.update(active_source="default")),
     "gold/ms-twins.gold.json: turns['3']: gold slug 'companies/kestrel' is not seeded in source "
     "'default' by fixtures/ms-twins.fixture.json"),
    ("gold on no turn", _edit("wb-gap", 1, lambda g: g["turns"].update({"9": {
        "should_retrieve": False}})), "gold/wb-gap.gold.json: turns['9']: no turn_id 9"),
    ("write-back turn without ts", _edit("wb-gap", 0, lambda f: f["turns"][2].pop("ts")),
     "fixtures/wb-gap.fixture.json: turn_id 3: field 'ts' is required on every turn"),
    ("bad ts", _edit("ms-twins", 0, lambda f: f["turns"][0].update(ts="yesterday")),
     "turns[0]: field 'ts': 'yesterday' is not an ISO 8601 time"),
    ("null entity", _edit("wb-gap", 1, lambda g: g["turns"]["1"]["gold_facts"][0].update(
        entity_slug=None)), "turns['1']: gold_facts[0]: entity_slug is null"),
    ("reader without decisions", _edit("c1-reader", 1, lambda g: g.pop("continuity")),
     "gold/c1-reader.gold.json: missing field 'continuity'"),
    ("bad role", _edit("wb-gap", 0, lambda f: f["turns"][0].update(role="system")),
     "turns[0]: role must be 'user' or 'assistant', not 'system'"),
    ("turn_id not an integer", _edit("wb-gap", 0, lambda f: f["turns"][0].update(turn_id="1")),
     "turns[0]: field 'turn_id' must be an integer"),
    ("pair of two sources", _edit("c1-reader", 0, lambda f: f.update(active_source="team")),
     "fixtures/c1-reader.fixture.json: active_source 'team' differs from its writer's 'default'"),
    ("unknown suite", _edit("wb-gap", 0, lambda f: f.update(suites=["recall"])),
     "suites must name some of know-to-ask, push, write-back, continuity, not 'recall'"),
    # Caught by loading the output as a run will: the suites' own rules.
    ("page record ids collide", _edit("ms-twins", 0, lambda f: f["seed_pages"].append(
        {"slug": "people/mira-vale@team", "content": "A slug that looks like a twin's id."})),
     "out/push/conversations/ms-twins.json: conversation ms-twins: duplicate page record id "
     "'people/mira-vale@team'"),
    ("keyword without letters", _edit("wb-gap", 1, lambda g: g["turns"]["3"]["gold_facts"][0]
                                      .update(match_keywords=["Lisbon", "--"])),
     "out/writeback/sessions/wb-gap.json: gold_facts.2.keywords: a keyword has no "
     "letters or digits"),
    ("continuity without a pair", _edit("c2-writer", 0, lambda f: f.pop("continuity")),
     "fixtures/c2-writer.fixture.json: suites include 'continuity' but there is no field "
     "'continuity'"),
    ("gold for another fixture", _edit("wb-gap", 1, lambda g: g.update(fixture_id="wb-held")),
     "fixture_id 'wb-held' also has gold/wb-gap.gold.json"),
]


@pytest.mark.parametrize(("case", "edit", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_wrong_corpus_is_one_line_and_writes_nothing(
        case: str, edit: Any, expected: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    src = write_corpus(tmp_path / "corpus", edit=edit)
    out = tmp_path / "out"
    assert do_import(src, out) == 4
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert expected in err
    assert not out.exists()


def test_a_fixture_without_gold_and_a_missing_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_corpus(tmp_path / "corpus")
    (src / "gold" / "wb-gap.gold.json").unlink()
    assert do_import(src, tmp_path / "out") == 4
    assert "fixtures/wb-gap.fixture.json: no gold/*.gold.json with fixture_id 'wb-gap'" in \
        capsys.readouterr().err
    assert do_import(tmp_path / "nowhere", tmp_path / "out") == 4
    assert "fixtures: folder not found (expected a BrainBench corpus" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("content", "expected"), [
    ("---\ntitle: A\naliases: [a, 'b c', \"d\"]\n---\nbody aliases: [x]\n", ["a", "b c", "d"]),
    ("---\naliases:\n  - a\n  - 'b'\ntype: person\n- c\n---\n", ["a", "b"]),
    ("---\naliases: solo\n---\n", ["solo"]),
    ("---\naliases: []\n---\n", []),
    ("no front matter\naliases: [a]\n", []),
    ("---\ntitle: A\n---\n", []),
])
def test_aliases_come_from_the_front_matter_only(content: str, expected: list[str]) -> None:
    assert aliases(content) == expected


@pytest.mark.slow
@pytest.mark.skipif(not SHARED.is_dir(), reason="no copy of BrainBench's corpus beside the checkout")
def test_brainbench_corpus_counts_match_brainbench(tmp_path: Path) -> None:
    out = tmp_path / "brainbench"
    assert do_import(SHARED, out) == 0
    counts = read(out / "SOURCE.json")["counts"]
    got = {cell: (counts[f"{cell} items"], counts[f"{cell} items with holdout"])
           for cell in ("push/know_to_ask", "push/push", "writeback/fidelity",
                        "writeback/continuity")}
    assert got == {"push/know_to_ask": (149, 172), "push/push": (96, 112),
                   "writeback/fidelity": (58, 69), "writeback/continuity": (12, 16)}
    assert counts["fixtures"] == 142
    check_formats(out)
    # The reference memory resolves the sessions' entities against their seed pages: every fact
    # survives but two whose sentences name no page ("I committed to sending her …", "Also she
    # said …": the pronoun is not the sentence's first word).
    config = tmp_path / "membench.toml"
    config.write_text((out / "suites.toml").read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "r.json")]) == 0
    fidelity = read(tmp_path / "r.json")["cells"]["writeback/fidelity"]
    assert fidelity["failed"] == ["wb-001-pricing-concern.t4-1", "wb-001-pricing-concern.t4-2"]


@pytest.mark.slow
def test_the_pasted_tables_run_the_reference_memory_on_the_import(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    assert do_import(write_corpus(tmp_path / "corpus"), bench / "bb") == 0
    text = (bench / "bb" / "suites.toml").read_text(encoding="utf-8")
    config = bench / "membench.toml"
    config.write_text(text, encoding="utf-8")
    counts = read(bench / "bb" / "SOURCE.json")["counts"]
    for flags, mode in (([], "items"), (["--include-holdout"], "items with holdout")):
        out = tmp_path / f"results-{len(flags)}.json"
        assert main(["run", "--config", str(config), "--out", str(out), *flags]) == 0
        cells = read(out)["cells"]
        for cell in ("push/know_to_ask", "push/push", "writeback/fidelity",
                     "writeback/continuity"):
            assert cells[cell]["gold_total"] == counts[f"{cell} {mode}"], (cell, mode)
        assert cells["push/push"]["metrics"]["source_isolation_violations"] == 0
        # Named by their pages' slugs: the held-out session's fact has no page to name it by.
        assert cells["writeback/fidelity"]["metrics"]["write_back_fidelity"] == \
            (1.0 if not flags else 0.8)
