"""LoCoMo (``locomo10.json``) → recall fixtures.

Each sample is one long two-person conversation: ``conversation`` holds ``session_<n>`` lists of
``{speaker, dia_id, text}`` turns and their ``session_<n>_date_time`` (``1:56 pm on 8 May, 2023``);
``qa`` holds ``{question, answer, evidence, category}``. Turns become corpus items
``<sample_id>:<dia_id>`` (text ``"<speaker>: <text>"``, an image caption appended), sessions
``<sample_id>:session_<n>``. Each question becomes a query on its own conversation (``haystack`` =
the sample's sessions), with its evidence dia_ids as gold; category 5 (adversarial) is unanswerable.
Numeric categories are kept as the cell names (``recall/1`` … ``recall/5``): projects disagree on
their labels.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from membench_gate.importers.common import (
    Fields,
    Imported,
    SourceError,
    iso,
    read_json_array,
    recall_fixtures,
    tally_notes,
)

EXPECTED = ("locomo10.json: a JSON array of {sample_id, conversation: {session_<n>: [{speaker, "
            "dia_id, text}], session_<n>_date_time}, qa: [{question, answer, evidence, "
            "category}]}")
TURN = "a turn {speaker, dia_id, text}"
QA = "a qa item {question, answer, evidence: [dia_id], category}"
UNANSWERABLE_CATEGORY = "5"
_SESSION = re.compile(r"^session_(\d+)$")
_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$",
                   re.IGNORECASE)
_MONTHS = {name: number for number, names in enumerate((
    ("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
    ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
    ("oct", "october"), ("nov", "november"), ("dec", "december")), 1) for name in names}
DATE_FORMAT = "'1:56 pm on 8 May, 2023'"


def parse_date(value: str, where: str) -> str:
    """``1:56 pm on 8 May, 2023`` → ``2023-05-08T13:56:00Z`` (LoCoMo dates carry no zone)."""
    match = _DATE.match(value)
    month = _MONTHS.get(match.group(5).lower()) if match else None
    if not match or month is None:
        raise SourceError(f"{where}: {value!r} is not a LoCoMo date (expected {DATE_FORMAT})")
    hour, minute = int(match.group(1)), int(match.group(2))
    if not 1 <= hour <= 12:
        raise SourceError(f"{where}: {value!r}: hour must be 1-12 (expected {DATE_FORMAT})")
    hour = hour % 12 + (12 if match.group(3).lower() == "pm" else 0)
    try:
        moment = datetime(int(match.group(6)), month, int(match.group(4)), hour, minute,
                          tzinfo=timezone.utc)
    except ValueError as exc:
        raise SourceError(f"{where}: {value!r}: {exc}") from exc
    return iso(moment)


def _sessions(conv: Fields) -> list[tuple[int, str, list[Any]]]:
    found = []
    for key, value in conv.obj.items():
        match = _SESSION.match(key)
        if match:
            if not isinstance(value, list):
                raise conv.fail(f"{key} must be a list of turns")
            found.append((int(match.group(1)), key, value))
    if not found:
        raise conv.fail("no session_<n> lists")
    return sorted(found)


def convert(sources: list[Path]) -> Imported:
    (path,) = sources
    data = read_json_array(path, EXPECTED, "samples")
    corpus: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    unresolved = skipped = images = 0
    samples: set[str] = set()
    for index, obj in enumerate(data):
        label = f"{path.name}: item {index + 1}"
        sample = Fields(obj, label, EXPECTED)
        sid = sample.id("sample_id")
        label = f"{path.name}: sample {sid}"
        if sid in samples:
            raise sample.fail(f"sample_id {sid!r} appears twice")
        samples.add(sid)
        if not sample.has("conversation"):
            raise sample.fail("missing field 'conversation'")
        conv = Fields(sample.obj["conversation"], f"{label}: conversation", EXPECTED)
        haystack: list[str] = []
        dia_ids: set[str] = set()
        last = None
        for _number, key, turns in _sessions(conv):
            date = parse_date(conv.text(f"{key}_date_time"), f"{label}: {key}_date_time")
            last = max(last or date, date)
            session = f"{sid}:{key}"
            haystack.append(session)
            for position, raw in enumerate(turns):
                turn = Fields(raw, f"{label}: {key}[{position}]", TURN)
                dia = turn.id("dia_id")
                if dia in dia_ids:
                    raise turn.fail(f"dia_id {dia!r} appears twice in the conversation")
                dia_ids.add(dia)
                text = f"{turn.text('speaker')}: {turn.text('text')}"
                caption = turn.obj.get("blip_caption")
                if isinstance(caption, str) and caption.strip():
                    text += f" (image: {caption.strip()})"
                    images += 1
                corpus.append({"id": f"{sid}:{dia}", "session": session, "text": text,
                               "created_at": date})
        qa = sample.array("qa")
        for qnum, raw in enumerate(qa, 1):
            item = Fields(raw, f"{label}: qa[{qnum - 1}]", QA)
            question = item.text("question")
            category = item.id("category")
            evidence = item.array("evidence", required=category != UNANSWERABLE_CATEGORY) or []
            gold: list[str] = []
            if category != UNANSWERABLE_CATEGORY:
                for entry in evidence:
                    if not isinstance(entry, str):
                        raise item.fail("evidence must be a list of dia_id strings")
                    # Real files hold a few joined or clipped entries ("D8:6; D9:17", "D10:"):
                    # keep what names a turn, count the rest.
                    for token in filter(None, re.split(r"[;,\s]+", entry)):
                        if token in dia_ids:
                            if f"{sid}:{token}" not in gold:
                                gold.append(f"{sid}:{token}")
                        else:
                            unresolved += 1
                if not gold:
                    skipped += 1
                    continue
            queries.append({"id": f"{sid}:q{qnum}", "question": question, "gold": gold,
                            "category": category, "as_of": last, "haystack": haystack})
    return recall_fixtures(
        "locomo", path, corpus, queries,
        mapping={
            "corpus.id": "<sample_id>:<dia_id>",
            "corpus.session": "<sample_id>:session_<n>",
            "corpus.text": "'<speaker>: <text>', plus ' (image: <blip_caption>)' when present",
            "corpus.created_at": "session_<n>_date_time ('1:56 pm on 8 May, 2023', taken as UTC)",
            "queries.id": "<sample_id>:q<position in qa, from 1>",
            "queries.question": "question",
            "queries.category": "category, as a string ('1'…'5'; labels differ between "
                                "projects)",
            "queries.gold": "evidence dia_ids (turn-level); [] for category 5 (adversarial)",
            "queries.haystack": "every session of the sample",
            "queries.as_of": "the sample's latest session_<n>_date_time",
            "not used": "answer / adversarial_answer (no LLM judge), observation, "
                        "session_summary, event_summary",
        },
        counts={"conversations": len(samples), "corpus items": len(corpus),
                "image captions": images},
        notes=tally_notes(
            (unresolved, "evidence entries naming no turn of their conversation: {} (dropped)"),
            (skipped, "answerable questions with no evidence left: {} (skipped)")),
    )
