"""Verimem's probe sets (``ANSWERABLE.jsonl`` / ``UNANSWERABLE.jsonl``) → abstention fixtures.

Each line is ``{knowledge, question}``. An answerable line's knowledge becomes a fact (identical
passages are stored once, ``fact-<n>`` in order of first appearance) and its question a probe
``ans-<line>`` with that fact as gold. An unanswerable line gives a probe ``unans-<line>`` with no
gold, and its knowledge is *not* ingested: the near-miss passage is what the question was written
against, so the memory must abstain without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from membench_gate.importers.common import Fields, Imported, SourceError, read_jsonl, tally_notes

EXPECTED = "a Verimem probe set: JSON Lines of {knowledge, question}"


def convert(sources: list[Path]) -> Imported:
    answerable_path, unanswerable_path = sources
    facts: dict[str, str] = {}  # text -> id
    probes: list[dict[str, Any]] = []
    for number, obj in read_jsonl(answerable_path, EXPECTED):
        fields = Fields(obj, f"{answerable_path.name}:{number}", EXPECTED)
        knowledge = fields.text("knowledge")
        question = fields.text("question")
        if not knowledge.strip() or not question.strip():
            raise fields.fail("knowledge and question must not be empty")
        fact = facts.setdefault(knowledge, f"fact-{len(facts) + 1:05d}")
        probes.append({"id": f"ans-{number}", "question": question, "gold_fact_id": fact})
    answerable = len(probes)
    stored_anyway = 0
    for number, obj in read_jsonl(unanswerable_path, EXPECTED):
        fields = Fields(obj, f"{unanswerable_path.name}:{number}", EXPECTED)
        knowledge = fields.text("knowledge")
        question = fields.text("question")
        if not question.strip():
            raise fields.fail("question must not be empty")
        stored_anyway += knowledge in facts
        probes.append({"id": f"unans-{number}", "question": question, "gold_fact_id": None})
    if not answerable:
        raise SourceError(f"{answerable_path}: no answerable lines ({EXPECTED})")
    return Imported(
        format="veribench", suite="abstention",
        files={"facts.json": [{"id": i, "text": t} for t, i in facts.items()],
               "probes.json": probes},
        sources=[answerable_path, unanswerable_path],
        mapping={
            "facts": "answerable lines' knowledge, identical passages once, id fact-<n> by first "
                     "appearance",
            "probes (answerable)": "id ans-<line number>, question, gold_fact_id = its passage",
            "probes (unanswerable)": "id unans-<line number>, question, gold_fact_id null; its "
                                     "knowledge is not ingested",
        },
        counts={"facts": len(facts), "answerable probes": answerable,
                "unanswerable probes": len(probes) - answerable},
        notes=tally_notes((stored_anyway, "{} unanswerable question(s) share their passage with "
                                          "an answerable line, so that passage is stored")),
    )
