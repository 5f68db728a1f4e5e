"""RoBrain VetoBench (``corpus.json`` / ``scenarios.json``, lifecycle files included) → veto fixtures.

Decisions keep their ids, text and lifecycle: ``files_affected`` → ``files``,
``historical_relevance`` → ``relevance``, ``status`` / ``superseded_by`` as they are. A veto marked
``inherited_from`` is dropped: it belongs to the superseded decision, and the suite carries it
forward through ``superseded_by``. Scenarios: ``files_in_scope`` → ``files``; the live judge's
``rejected_markers`` / ``accepted_markers`` are not used. VetoBench names the rejected option
loosely ("Redis" for the veto "staying on Redis"); our fixtures need one of the decision's own
``rejected[].option`` (or, for a stale trap, one of its predecessors'), so the closest one is taken
— exact, then contained, then fuzzy — and every remapping is listed in ``SOURCE.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process, utils

from membench_gate.importers.common import Fields, Imported, SourceError, read_json, read_json_array

CORPUS = ("RoBrain VetoBench corpus.json: a JSON array of {id, decision, rationale, rejected: "
          "[{option, reason}], files_affected, created_at, reviewed_at?, historical_relevance, "
          "status?, superseded_by?}")
SCENARIOS = ("RoBrain VetoBench scenarios.json: {as_of, scenarios: [{id, veto_decision_id, trap, "
             "task, files_in_scope, rejected_option}]}")
TRAPS = ("direct", "implicit", "stale-named", "stale-unnamed")


def _date(fields: Fields, key: str, required: bool) -> str | None:
    from membench_gate.suites.common.fixtures import parse_time

    value = fields.text(key, required)
    if value is not None:
        try:
            parse_time(value, key)
        except ValueError as exc:
            raise fields.fail(f"field {key!r}: {value!r} is not an ISO 8601 date") from exc
    return value


def _strings(fields: Fields, key: str) -> list[str]:
    values = fields.array(key)
    if not all(isinstance(v, str) for v in values):
        raise fields.fail(f"field {key!r} must be a list of strings")
    return list(values)


def _decision(obj: Any, where: str) -> tuple[dict[str, Any], int]:
    fields = Fields(obj, where, CORPUS)
    rejected, inherited = [], 0
    for index, raw in enumerate(fields.array("rejected")):
        veto = Fields(raw, f"{where}: rejected[{index}]", "a veto {option, reason}")
        if veto.has("inherited_from"):
            inherited += 1
            continue
        rejected.append({"option": veto.text("option"), "reason": veto.text("reason")})
    relevance = fields.number("historical_relevance")
    if not 0 <= relevance <= 1:
        raise fields.fail(f"historical_relevance {relevance} must be between 0 and 1")
    decision: dict[str, Any] = {
        "id": fields.id("id"),
        "decision": fields.text("decision"),
        "rationale": fields.text("rationale", required=False) or "",
        "rejected": rejected,
        "files": _strings(fields, "files_affected"),
        "created_at": _date(fields, "created_at", True),
        "reviewed_at": _date(fields, "reviewed_at", False),
        "relevance": relevance,
    }
    status = fields.text("status", required=False)
    if status is not None:
        if status not in ("active", "superseded"):
            raise fields.fail(f"status {status!r} must be 'active' or 'superseded'")
        decision["status"] = status
    successor = fields.obj.get("superseded_by")
    if successor is not None:
        decision["superseded_by"] = fields.id("superseded_by")
    return decision, inherited


def _chain(decisions: dict[str, dict[str, Any]], current: str) -> list[dict[str, Any]]:
    """The decision and every decision it supersedes, directly or through a chain."""
    replaced: dict[str, list[str]] = {}
    for d in decisions.values():
        if d.get("superseded_by"):
            replaced.setdefault(d["superseded_by"], []).append(d["id"])
    chain, frontier = [current], [current]
    while frontier:
        frontier = [i for f in frontier for i in sorted(replaced.get(f, ())) if i not in chain]
        chain += frontier
    return [decisions[i] for i in chain]


def _option(wanted: str, candidates: list[str]) -> tuple[str, str]:
    """The recorded veto that ``wanted`` names, and how it was matched."""
    for option in candidates:
        if option == wanted:
            return option, "exact"
    low = wanted.casefold()
    for option in candidates:
        if option.casefold() == low:
            return option, "case"
    for option in candidates:
        if low in option.casefold() or option.casefold() in low:
            return option, "contained"
    best = process.extractOne(wanted, candidates, scorer=fuzz.WRatio, processor=utils.default_process)
    return best[0], f"closest ({best[1]:.0f}/100)"


def convert(sources: list[Path]) -> Imported:
    corpus_path, scenarios_path = sources
    raw_corpus = read_json_array(corpus_path, CORPUS, "decisions")
    decisions: dict[str, dict[str, Any]] = {}
    inherited = 0
    for index, obj in enumerate(raw_corpus):
        decision, dropped = _decision(obj, f"{corpus_path.name}: item {index + 1}")
        if decision["id"] in decisions:
            raise SourceError(f"{corpus_path.name}: item {index + 1}: id {decision['id']!r} appears "
                              "twice")
        decisions[decision["id"]] = decision
        inherited += dropped
    for d in decisions.values():
        if d.get("superseded_by") is not None and d["superseded_by"] not in decisions:
            raise SourceError(f"{corpus_path.name}: decision {d['id']}: superseded_by "
                              f"{d['superseded_by']!r} is not a decision of the corpus")

    raw = read_json(scenarios_path, SCENARIOS)
    head = Fields(raw, scenarios_path.name, SCENARIOS)
    as_of = _date(head, "as_of", True)
    scenarios: list[dict[str, Any]] = []
    notes: list[str] = []
    for index, obj in enumerate(head.array("scenarios")):
        fields = Fields(obj, f"{scenarios_path.name}: scenarios[{index}]", SCENARIOS)
        ident = fields.id("id")
        trap = fields.text("trap")
        if trap not in TRAPS:
            raise fields.fail(f"trap {trap!r} must be one of {', '.join(TRAPS)}")
        target = fields.id("veto_decision_id")
        if target not in decisions:
            raise fields.fail(f"veto_decision_id {target!r} is not a decision of the corpus")
        chain = _chain(decisions, target) if trap.startswith("stale-") else [decisions[target]]
        candidates = [r["option"] for d in chain for r in d["rejected"]]
        if not candidates:
            raise fields.fail(f"veto decision {target!r} records no rejected option")
        wanted = fields.text("rejected_option")
        option, how = _option(wanted, candidates)
        if how != "exact":
            notes.append(f"scenario {ident}: rejected_option {wanted!r} → {option!r} ({how})")
        scenarios.append({"id": ident, "task": fields.text("task"),
                          "files": _strings(fields, "files_in_scope"),
                          "veto_decision_id": target, "trap": trap, "rejected_option": option})
    if inherited:
        notes.append(f"{inherited} inherited veto(es) (inherited_from) dropped: the suite carries "
                     "vetoes forward through superseded_by")
    lifecycle = sum(1 for s in scenarios if s["trap"].startswith("stale-"))
    return Imported(
        format="vetobench", suite="veto",
        files={"decisions.json": list(decisions.values()),
               "scenarios.json": {"as_of": as_of, "scenarios": scenarios}},
        sources=[corpus_path, scenarios_path],
        mapping={
            "decisions": "id, decision, rationale, rejected[{option, reason}], created_at, "
                         "reviewed_at, status, superseded_by as they are",
            "decisions.files": "files_affected",
            "decisions.relevance": "historical_relevance",
            "scenarios": "id, task, veto_decision_id, trap as they are; as_of as it is",
            "scenarios.files": "files_in_scope",
            "scenarios.rejected_option": "the decision's (or, for stale traps, a predecessor's) "
                                         "rejected[].option that rejected_option names",
            "not used": "rejected_markers, accepted_markers (the live judge's), rejected[] "
                        "entries with inherited_from",
        },
        counts={"decisions": len(decisions), "scenarios": len(scenarios),
                "lifecycle scenarios": lifecycle},
        notes=notes,
    )
