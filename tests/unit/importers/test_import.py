"""``membench-gate import`` on small samples of each format, written for these tests (never the
published data): the mapping, deterministic bytes, SOURCE.json, and one-line errors."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from membench_gate.cli.main import main
from membench_gate.suites.common.fixtures import load_suite
from tests.support.paths import TESTS

SAMPLES = TESTS / "data" / "import"
ARGS = {
    "longmemeval": ["longmemeval_sample.json"],
    "locomo": ["locomo_sample.json"],
    "vetobench": ["vetobench_corpus.json", "vetobench_scenarios.json"],
    "veribench": ["veribench_answerable.jsonl", "veribench_unanswerable.jsonl"],
}
SUITE = {"longmemeval": "recall", "locomo": "recall", "vetobench": "veto",
         "veribench": "abstention"}


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def do_import(fmt: str, out: Path, sources: list[Path] | None = None) -> int:
    paths = sources or [SAMPLES / name for name in ARGS[fmt]]
    return main(["import", fmt, *map(str, paths), "--out", str(out)])


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


@pytest.mark.parametrize("fmt", sorted(ARGS))
def test_import_is_deterministic_and_loads_as_fixtures(fmt: str, tmp_path: Path) -> None:
    assert do_import(fmt, tmp_path / "a") == 0
    assert do_import(fmt, tmp_path / "b") == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    fixtures = load_suite(SUITE[fmt], [str(tmp_path / "a")], tmp_path, include_holdout=False)
    assert fixtures.digests


@pytest.mark.parametrize("fmt", sorted(ARGS))
def test_source_json_names_every_input_with_its_sha256(fmt: str, tmp_path: Path) -> None:
    assert do_import(fmt, tmp_path) == 0
    source = read(tmp_path / "SOURCE.json")
    assert source["format"] == fmt and source["suite"] == SUITE[fmt]
    assert [i["file"] for i in source["inputs"]] == ARGS[fmt]
    for entry in source["inputs"]:
        expected = hashlib.sha256((SAMPLES / entry["file"]).read_bytes()).hexdigest()
        assert entry["sha256"] == expected
    assert source["mapping"]


def test_longmemeval_mapping(tmp_path: Path) -> None:
    assert do_import("longmemeval", tmp_path) == 0
    corpus = read(tmp_path / "corpus.json")
    queries = {q["id"]: q for q in read(tmp_path / "queries.json")}
    # Sessions shared between questions are stored once; the empty turn is skipped.
    assert len({c["session"] for c in corpus}) == 5
    assert "answer_move_1:3" not in {c["id"] for c in corpus}
    gym = next(c for c in corpus if c["id"] == "answer_gym_1:1")
    assert gym["created_at"] == "2023-03-05T10:02:00Z" and "$68 a month" in gym["text"]
    q = queries["q-gym-01"]
    assert q["gold"] == ["answer_gym_1", "answer_gym_2"]
    assert q["category"] == "knowledge-update"
    assert q["as_of"] == "2023-06-10T09:15:00Z"
    assert q["haystack"] == ["sharegpt_aa11", "answer_gym_1", "ultrachat_bb22", "answer_gym_2"]
    assert queries["q-move-02_abs"]["gold"] == []
    assert queries["q-move-02"]["gold"] == ["answer_move_1"]


def test_longmemeval_same_session_id_with_other_turns_is_kept_apart(tmp_path: Path) -> None:
    data = read(SAMPLES / "longmemeval_sample.json")
    data[1]["haystack_sessions"][0] = [{"role": "user", "content": "A different chat."}]
    src = tmp_path / "changed.json"
    src.write_text(json.dumps(data), encoding="utf-8")
    assert do_import("longmemeval", tmp_path / "out", [src]) == 0
    queries = {q["id"]: q for q in read(tmp_path / "out" / "queries.json")}
    first, second = queries["q-gym-01"]["haystack"][0], queries["q-move-02"]["haystack"][0]
    assert first == "sharegpt_aa11" and second.startswith("sharegpt_aa11~")
    assert "kept apart" in " ".join(read(tmp_path / "out" / "SOURCE.json")["notes"])


def test_locomo_mapping(tmp_path: Path) -> None:
    assert do_import("locomo", tmp_path) == 0
    corpus = {c["id"]: c for c in read(tmp_path / "corpus.json")}
    queries = {q["id"]: q for q in read(tmp_path / "queries.json")}
    assert corpus["conv-demo:D1:1"]["text"].startswith("Rosa: ")
    assert corpus["conv-demo:D1:1"]["created_at"] == "2023-05-08T13:56:00Z"
    assert corpus["conv-demo:D10:1"]["session"] == "conv-demo:session_10"
    assert "(image: a photo of a blue road bike" in corpus["conv-demo:D1:4"]["text"]
    assert queries["conv-demo:q1"]["category"] == "1"
    assert queries["conv-demo:q1"]["gold"] == ["conv-demo:D1:3", "conv-demo:D10:1"]
    # A joined evidence entry is split; category 5 is unanswerable; an item with no
    # resolvable evidence is skipped (and counted).
    assert queries["conv-demo:q3"]["gold"] == ["conv-demo:D1:4", "conv-demo:D2:3"]
    assert queries["conv-demo:q4"]["gold"] == []
    assert "conv-demo:q5" not in queries
    assert queries["conv-demo:q2"]["as_of"] == "2023-06-03T09:05:00Z"
    assert queries["conv-demo:q2"]["haystack"] == [
        "conv-demo:session_1", "conv-demo:session_2", "conv-demo:session_10"]


def test_vetobench_mapping(tmp_path: Path) -> None:
    assert do_import("vetobench", tmp_path) == 0
    decisions = {d["id"]: d for d in read(tmp_path / "decisions.json")}
    scenarios = {s["id"]: s for s in read(tmp_path / "scenarios.json")["scenarios"]}
    assert decisions["V1"]["files"] == ["src/jobs/queue.ts"]
    assert decisions["V1"]["relevance"] == 0.5
    assert decisions["V2"]["status"] == "superseded" and decisions["V2"]["superseded_by"] == "V3"
    # The inherited veto belongs to V2: it is carried through superseded_by, not duplicated.
    assert [r["option"] for r in decisions["V3"]["rejected"]] == ["keeping avatars in the database"]
    assert scenarios["sV1"]["rejected_option"] == "RabbitMQ"
    assert scenarios["sV2"]["rejected_option"] == "keeping avatars in the database"
    assert scenarios["sV3"]["rejected_option"] == "local disk on the app server"
    assert scenarios["sV3"]["files"] == ["src/users/avatar.ts"]
    assert "rejected_markers" not in scenarios["sV1"]
    notes = " ".join(read(tmp_path / "SOURCE.json")["notes"])
    assert "'Local disk' → 'local disk on the app server'" in notes


def test_veribench_mapping(tmp_path: Path) -> None:
    assert do_import("veribench", tmp_path) == 0
    facts = read(tmp_path / "facts.json")
    probes = {p["id"]: p for p in read(tmp_path / "probes.json")}
    # The same passage twice is one fact; the unanswerable side's own passage is not stored.
    assert [f["id"] for f in facts] == ["fact-00001", "fact-00002"]
    assert not any("ferry" in f["text"] for f in facts)
    assert probes["ans-1"]["gold_fact_id"] == probes["ans-2"]["gold_fact_id"] == "fact-00001"
    assert probes["unans-1"]["gold_fact_id"] is None
    assert sorted(probes) == ["ans-1", "ans-2", "ans-3", "unans-1", "unans-2"]


def _broken(tmp_path: Path, name: str, edit: Any) -> Path:
    text = (SAMPLES / name).read_text(encoding="utf-8")
    if name.endswith(".jsonl"):
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        edit(rows)
        out = "".join(json.dumps(r) + "\n" for r in rows)
    else:
        data = json.loads(text)
        edit(data)
        out = json.dumps(data)
    path = tmp_path / name
    path.write_text(out, encoding="utf-8")
    return path


@pytest.mark.parametrize(("fmt", "name", "edit", "expected"), [
    ("longmemeval", "longmemeval_sample.json", lambda d: d[0].pop("haystack_sessions"),
     "item 1 (q-gym-01): missing field 'haystack_sessions' (expected a LongMemEval file"),
    ("longmemeval", "longmemeval_sample.json",
     lambda d: d[1].update(question_date="2023-05-01 12:00"),
     "question_date: '2023-05-01 12:00' is not a LongMemEval date (expected "
     "'2023/05/20 (Sat) 02:21')"),
    ("longmemeval", "longmemeval_sample.json", lambda d: d[0]["haystack_dates"].pop(),
     "must be parallel lists"),
    ("longmemeval", "longmemeval_sample.json",
     lambda d: d[3]["haystack_sessions"][0][1].pop("content"),
     "haystack_sessions[0]: turn 2: missing field 'content' (expected a turn {role, content"),
    ("longmemeval", "longmemeval_sample.json", lambda d: d[1].update(answer_session_ids=["x"]),
     "answer_session_ids: 'x' is not one of its haystack_session_ids"),
    ("locomo", "locomo_sample.json", lambda d: d[0]["conversation"].pop("session_2_date_time"),
     "sample conv-demo: conversation: missing field 'session_2_date_time' (expected locomo10.json"),
    ("locomo", "locomo_sample.json",
     lambda d: d[0]["conversation"].update(session_1_date_time="May 8, 2023"),
     "is not a LoCoMo date (expected '1:56 pm on 8 May, 2023')"),
    ("locomo", "locomo_sample.json", lambda d: d[0]["qa"][0].pop("category"),
     "qa[0]: missing field 'category' (expected a qa item"),
    ("locomo", "locomo_sample.json", lambda d: d[0]["conversation"]["session_1"][0].pop("dia_id"),
     "session_1[0]: missing field 'dia_id' (expected a turn {speaker, dia_id, text})"),
    ("vetobench", "vetobench_corpus.json", lambda d: d[0].pop("files_affected"),
     "vetobench_corpus.json: item 1: missing field 'files_affected' (expected RoBrain VetoBench "
     "corpus.json"),
    ("vetobench", "vetobench_corpus.json", lambda d: d[1].update(superseded_by="V9"),
     "decision V2: superseded_by 'V9' is not a decision of the corpus"),
    ("vetobench", "vetobench_scenarios.json", lambda d: d["scenarios"][0].pop("files_in_scope"),
     "scenarios[0]: missing field 'files_in_scope' (expected RoBrain VetoBench scenarios.json"),
    ("vetobench", "vetobench_scenarios.json", lambda d: d["scenarios"][1].update(
        veto_decision_id="V2"),
     "a stale-named trap's veto_decision_id must be the current (active) decision"),
    ("veribench", "veribench_answerable.jsonl", lambda rows: rows[1].pop("knowledge"),
     "veribench_answerable.jsonl:2: missing field 'knowledge' (expected a Verimem probe set: "
     "JSON Lines of {knowledge, question})"),
])
def test_wrong_file_is_one_line_naming_the_field(
        fmt: str, name: str, edit: Any, expected: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    broken = _broken(tmp_path, name, edit)
    sources = [broken if n == name else SAMPLES / n for n in ARGS[fmt]]
    out = tmp_path / "out"
    assert do_import(fmt, out, sources) == 4
    assert expected in error_line(capsys)
    assert not out.exists()  # nothing half-written


def test_wrong_number_of_sources_and_not_json(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "vetobench", str(SAMPLES / "vetobench_corpus.json"),
                 "--out", str(tmp_path / "o")]) == 4
    assert "expected 2 source file(s) (CORPUS SCENARIOS), got 1" in error_line(capsys)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["import", "locomo", str(bad), "--out", str(tmp_path / "o")]) == 4
    assert "invalid JSON" in error_line(capsys)
    assert main(["import", "mem0", str(bad), "--out", str(tmp_path / "o")]) == 4
    assert "invalid choice: 'mem0'" in error_line(capsys)


def test_reimport_replaces_the_files_in_place(tmp_path: Path) -> None:
    out = tmp_path / "data"
    assert do_import("locomo", out) == 0
    (out / "queries.json").write_text("[]\n", encoding="utf-8")
    assert do_import("locomo", out) == 0
    assert len(read(out / "queries.json")) == 4


@pytest.mark.slow
def test_imported_folder_runs_in_the_recall_suite(tmp_path: Path) -> None:
    for fmt in ("longmemeval", "locomo"):
        assert do_import(fmt, tmp_path / fmt) == 0
    shutil.copy(SAMPLES / "locomo_sample.json", tmp_path / "unrelated.json")
    config = tmp_path / "membench.toml"
    config.write_text('[suites.recall]\nfixtures = ["longmemeval", "locomo"]\nk = 5\n'
                      '[adapter.options]\ntau = 0.0\n', encoding="utf-8")
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "r.json")]) == 0
    cells = read(tmp_path / "r.json")["cells"]
    assert {"recall/1", "recall/5", "recall/knowledge-update", "recall/temporal-reasoning"} <= \
        set(cells)
    # tau = 0 never abstains: every unanswerable query is answered.
    assert cells["recall/5"]["metrics"] == {"false_answer_rate": 1}
