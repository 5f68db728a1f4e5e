"""LongMemEval (``longmemeval_s``, ``_m``, ``_oracle``) → recall fixtures.

Each question brings its own haystack: ``haystack_sessions`` (lists of ``{role, content,
has_answer?}`` turns) parallel to ``haystack_session_ids`` and ``haystack_dates``. Every turn becomes
a corpus item ``<session id>:<turn number>`` in session ``<session id>``; the question becomes a
query whose ``haystack`` is its sessions, so the recall suite scores it the way LongMemEval does —
against its own history only. Gold is session-level (``answer_session_ids``); a question id ending
in ``_abs`` is unanswerable (``gold: []``). Sessions shared between questions are stored once; a
session id that comes back with different turns is kept apart as ``<id>~<content hash>``.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from membench_gate.importers.common import (
    Fields,
    Imported,
    SourceError,
    category_name,
    iso,
    read_json_array,
    recall_fixtures,
    tally_notes,
)

EXPECTED = ("a LongMemEval file: a JSON array of {question_id, question_type, question, "
            "question_date, haystack_session_ids, haystack_dates, haystack_sessions, "
            "answer_session_ids}")
TURN = "a turn {role, content, has_answer?}"
_DATE = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(\d{1,2}):(\d{2})\s*$")
DATE_FORMAT = "'2023/05/20 (Sat) 02:21'"


def parse_date(value: str, where: str) -> str:
    """``2023/05/20 (Sat) 02:21`` → ``2023-05-20T02:21:00Z`` (LongMemEval dates carry no zone)."""
    match = _DATE.match(value)
    if not match:
        raise SourceError(f"{where}: {value!r} is not a LongMemEval date (expected {DATE_FORMAT})")
    year, month, day, hour, minute = (int(g) for g in match.groups())
    try:
        return iso(datetime(year, month, day, hour, minute, tzinfo=timezone.utc))
    except ValueError as exc:
        raise SourceError(f"{where}: {value!r}: {exc}") from exc


def _turns(raw: Any, where: str) -> list[tuple[str, str]]:
    if not isinstance(raw, list):
        raise SourceError(f"{where}: a session must be a list of turns (expected {TURN})")
    turns = []
    for index, obj in enumerate(raw):
        fields = Fields(obj, f"{where}: turn {index + 1}", TURN)
        fields.text("role")
        turns.append((fields.obj["role"], fields.text("content")))
    return turns


def convert(sources: list[Path]) -> Imported:
    (path,) = sources
    data = read_json_array(path, EXPECTED, "questions")
    corpus: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    stored: dict[str, str] = {}  # session key -> content hash
    renamed = empty = 0
    seen_questions: set[str] = set()
    for index, obj in enumerate(data):
        label = f"{path.name}: item {index + 1}"
        if isinstance(obj, dict) and isinstance(obj.get("question_id"), (str, int)):
            label += f" ({obj['question_id']})"
        fields = Fields(obj, label, EXPECTED)
        qid = fields.id("question_id")
        if qid in seen_questions:
            raise fields.fail(f"question_id {qid!r} appears twice")
        seen_questions.add(qid)
        qtype = fields.text("question_type")
        question = fields.text("question")
        as_of = parse_date(fields.text("question_date"), f"{label}: question_date")
        ids = fields.array("haystack_session_ids")
        dates = fields.array("haystack_dates")
        sessions = fields.array("haystack_sessions")
        answers = fields.array("answer_session_ids")
        if not len(ids) == len(dates) == len(sessions):
            raise fields.fail(f"haystack_session_ids ({len(ids)}), haystack_dates ({len(dates)}) "
                              f"and haystack_sessions ({len(sessions)}) must be parallel lists")
        keys: dict[str, str] = {}  # this question's session id -> stored key
        haystack: list[str] = []
        for position, (sid, date, raw) in enumerate(zip(ids, dates, sessions, strict=True)):
            where = f"{label}: haystack_sessions[{position}]"
            if not isinstance(sid, (str, int)) or not isinstance(date, str):
                raise fields.fail(f"haystack_session_ids[{position}] must be a string and "
                                  f"haystack_dates[{position}] a date like {DATE_FORMAT}")
            sid = str(sid)
            created = parse_date(date, f"{label}: haystack_dates[{position}]")
            turns = _turns(raw, where)
            content = hashlib.sha256(
                json.dumps([created, turns], ensure_ascii=False).encode()).hexdigest()
            key = sid
            if key in stored and stored[key] != content:
                key = f"{sid}~{content[:10]}"
                renamed += key not in stored
            if key not in stored:
                stored[key] = content
                for number, (_role, text) in enumerate(turns, 1):
                    if not text.strip():
                        empty += 1
                        continue
                    corpus.append({"id": f"{key}:{number}", "session": key, "text": text,
                                   "created_at": created})
            if key not in keys.values():
                haystack.append(key)
            keys[sid] = key
        gold: list[str] = []
        if not qid.endswith("_abs"):
            for answer in answers:
                if str(answer) not in keys:
                    raise fields.fail(f"answer_session_ids: {answer!r} is not one of its "
                                      "haystack_session_ids")
                if keys[str(answer)] not in gold:
                    gold.append(keys[str(answer)])
            if not gold:
                raise fields.fail("answer_session_ids is empty for an answerable question "
                                  "(only ids ending in _abs are unanswerable)")
        queries.append({"id": qid, "question": question, "gold": gold,
                        "category": category_name(qtype), "as_of": as_of,
                        "haystack": haystack})
    # Sessions whose turns were all empty have no items; a haystack only lists sessions with some.
    present = {item["session"] for item in corpus}
    for query in queries:
        query["haystack"] = [s for s in query["haystack"] if s in present]
        missing = [g for g in query["gold"] if g not in present]
        if missing:
            raise SourceError(f"{path.name}: question {query['id']}: answer session "
                              f"{missing[0]!r} has no non-empty turn")
    return recall_fixtures(
        "longmemeval", path, corpus, queries,
        mapping={
            "corpus.id": "<haystack session id>:<turn number, from 1>",
            "corpus.session": "haystack_session_ids[i]",
            "corpus.text": "haystack_sessions[i][j].content (role not included)",
            "corpus.created_at": "haystack_dates[i] ('2023/05/20 (Sat) 02:21', taken as UTC)",
            "queries.id": "question_id",
            "queries.question": "question",
            "queries.category": "question_type",
            "queries.as_of": "question_date (taken as UTC)",
            "queries.haystack": "haystack_session_ids (sessions shared between questions are "
                                "stored once)",
            "queries.gold": "answer_session_ids (session-level); [] when question_id ends in _abs",
            "not used": "answer (no LLM judge), has_answer (gold is session-level)",
        },
        counts={"sessions": len(present), "corpus items": len(corpus)},
        notes=tally_notes(
            (renamed, "{} session id(s) came back with different turns and were kept apart as "
                      "<id>~<content hash>"),
            (empty, "{} empty turn(s) skipped")),
    )
