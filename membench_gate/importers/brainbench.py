"""BrainBench (gbrain's ``fixtures/*.fixture.json`` + sealed ``gold/*.gold.json``) → push, writeback
and continuity fixture folders, with the ``[suites.*]`` tables whose cells are BrainBench's.

A fixture and its gold are joined by ``fixture_id`` (schema version 1). A fixture in the
``know-to-ask`` or ``push`` suite becomes a conversation (``push/conversations``), one in
``write-back`` a session (``writeback/sessions``), and a writer and a reader sharing a ``pair_id`` a
continuity pair (``continuity/pairs``); a fixture may become several. Every field of the source has
a home or a note in ``SOURCE.json`` saying how many were not carried and why; an unknown field, a
missing or duplicate join, or another schema version is an error naming the file and the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from membench_gate.importers.common import Fields, Imported, SourceError, iso, read_json, tally_notes

SCHEMA_VERSION = 1
FIXTURE = ("a BrainBench fixture (schema_version 1): {schema_version, fixture_id, suites, category?, "
           "holdout?, sources?, active_source?, seed_pages?: [{slug, content, source_id?}], "
           "seed_facts?, turns: [{turn_id, role, text, ts?}], continuity?: {pair_id, pair_role}}")
GOLD = ("BrainBench gold: {fixture_id, turns: {<turn_id>: {should_retrieve, gold_slugs?, "
        "acceptable_slugs?, gold_facts?: [{gist, fact, entity_slug, match_keywords, kind?}]}}, "
        "continuity?: {pair_id, decisions: [{decision_id, expected_slugs, match_keywords}]}}")
FIXTURE_KEYS = {"schema_version", "fixture_id", "suites", "category", "holdout", "sources",
                "active_source", "seed_pages", "seed_facts", "turns", "continuity"}
PAGE_KEYS = {"slug", "content", "source_id"}
SEED_FACT_KEYS = {"fact", "entity_slug", "source", "source_session", "source_id"}
TURN_KEYS = {"turn_id", "role", "text", "ts"}
GOLD_KEYS = {"fixture_id", "turns", "continuity"}
TURN_GOLD_KEYS = {"should_retrieve", "gold_slugs", "acceptable_slugs", "gold_facts"}
GOLD_FACT_KEYS = {"gist", "fact", "entity_slug", "match_keywords", "kind"}
DECISION_KEYS = {"decision_id", "expected_slugs", "match_keywords"}
KINDS = ("event", "preference", "commitment", "belief", "fact")
# BrainBench's suite names → the push suite's cells a conversation belongs to.
PUSH_CELLS = {"know-to-ask": "know_to_ask", "push": "push"}
SUITES = (*PUSH_CELLS, "write-back", "continuity")
DEFAULT_SOURCE = "default"
PUSH_BUDGET = 3  # gbrain's retrieval reflex injects at most 3 pages a turn (its default)
_FIXTURE_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_FILE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Where each kind of item goes under OUT: the folders suites.toml names and re-import replaces.
PUSH, WRITEBACK, CONTINUITY = "push", "writeback", "continuity"
SUBFOLDERS = {PUSH: "conversations", WRITEBACK: "sessions", CONTINUITY: "pairs"}


@dataclass
class _Fixture:
    id: str
    file: str
    obj: dict[str, Any]
    suites: list[str]
    source: str
    pages: list[dict[str, Any]]
    turns: list[dict[str, Any]]  # {"id", "role", "text", "at"?}
    pair: tuple[str, str] | None  # (pair_id, pair_role)
    gold: dict[str, Any] = field(default_factory=dict)  # turn id -> turn gold
    decisions: list[dict[str, Any]] | None = None
    gold_file: str = ""
    repeated: int = 0  # slugs or keywords given twice in one list of the gold, kept once

    def once(self, values: list[str], fold: bool = False) -> list[str]:
        """``values`` without repeats (keywords ignoring case, as the writeback suite compares
        them): BrainBench reads a repeat as the same slug or keyword, the suites refuse it."""
        first: dict[str, str] = {}
        for value in values:
            first.setdefault(value.casefold() if fold else value, value)
        kept = list(first.values())
        self.repeated += len(values) - len(kept)
        return kept

    @property
    def holdout(self) -> bool:
        return self.obj.get("holdout") is True


def _only_keys(fields: Fields, allowed: set[str]) -> None:
    # An unknown key is refused as BrainBench's own loader refuses it (a `gold` key inside a
    # fixture breaks the seal) — and so no field of the source is ever dropped unseen.
    for key in fields.obj:
        if key not in allowed:
            raise fields.fail(f"unknown field {key!r}")


def _strings(fields: Fields, key: str, required: bool = False) -> list[str]:
    values = fields.array(key, required)
    if values is None:
        return []
    if not all(isinstance(v, str) and v for v in values):
        raise fields.fail(f"field {key!r} must be a list of non-empty strings")
    return list(values)


def _bool(fields: Fields, key: str, required: bool = False) -> bool:
    value = fields.obj.get(key)
    if value is None and not required:
        return False
    if not isinstance(value, bool):
        raise fields.fail(f"field {key!r} must be true or false")
    return value


def aliases(content: str) -> list[str]:
    """The ``aliases`` of a page's front matter (``aliases: [a, b]`` or a ``- a`` block list), as
    written; none without front matter. Other front-matter fields stay in the page's text."""
    lines = content.splitlines()
    if not lines or lines[0].strip() != "---":
        return []
    found: list[str] = []
    inside = False
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if inside and line.lstrip().startswith("- "):
            found.append(line.lstrip()[2:])
            continue
        inside = False
        key, sep, value = line.partition(":")
        if sep and key.strip() == "aliases":
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                found += value[1:-1].split(",")
            elif value:
                found.append(value)
            else:
                inside = True
    names = [name.strip().strip("'\"").strip() for name in found]
    return list(dict.fromkeys(name for name in names if name))


def _time(fields: Fields, key: str) -> str | None:
    from membench_gate.suites.common.fixtures import parse_time

    value = fields.text(key, required=False)
    if value is None:
        return None
    try:
        return iso(parse_time(value, key))
    except ValueError as exc:
        raise fields.fail(f"field {key!r}: {value!r} is not an ISO 8601 time") from exc


def _fixture(path: Path) -> _Fixture:
    label = f"fixtures/{path.name}"
    fields = Fields(read_json(path, FIXTURE), label, FIXTURE)
    _only_keys(fields, FIXTURE_KEYS)
    version = fields.obj.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise fields.fail(f"schema_version must be {SCHEMA_VERSION}, not {version!r}")
    fid = fields.text("fixture_id")
    if not _FIXTURE_ID.match(fid):
        raise fields.fail(f"fixture_id {fid!r} must be kebab-case (a-z, 0-9, -)")
    suites = _strings(fields, "suites", required=True)
    unknown = [s for s in suites if s not in SUITES]
    if not suites or unknown:
        raise fields.fail(f"suites must name some of {', '.join(SUITES)}"
                          + (f", not {unknown[0]!r}" if unknown else ""))
    fields.text("category", required=False)
    _bool(fields, "holdout")
    _strings(fields, "sources")
    source = fields.text("active_source", required=False) or DEFAULT_SOURCE
    pages = []
    for index, raw in enumerate(fields.array("seed_pages", required=False) or []):
        page = Fields(raw, f"{label}: seed_pages[{index}]", "a seed page {slug, content, source_id?}")
        _only_keys(page, PAGE_KEYS)
        slug, content = page.text("slug"), page.text("content")
        if not slug or not content:
            raise page.fail("slug and content must not be empty")
        # BrainBench seeds a page without source_id into "default", whatever the active source.
        pages.append({"slug": slug, "text": content, "aliases": aliases(content),
                      "source": page.text("source_id", required=False) or DEFAULT_SOURCE})
    for index, raw in enumerate(fields.array("seed_facts", required=False) or []):
        fact = Fields(raw, f"{label}: seed_facts[{index}]", "a seed fact {fact, entity_slug?, …}")
        _only_keys(fact, SEED_FACT_KEYS)
        fact.text("fact")
    turns, ids = [], set()
    for index, raw in enumerate(fields.array("turns")):
        turn = Fields(raw, f"{label}: turns[{index}]", "a turn {turn_id, role, text, ts?}")
        _only_keys(turn, TURN_KEYS)
        tid = turn.obj.get("turn_id")
        if not isinstance(tid, int) or isinstance(tid, bool):
            raise turn.fail("field 'turn_id' must be an integer")
        if tid in ids:
            raise turn.fail(f"turn_id {tid} appears twice")
        ids.add(tid)
        role = turn.text("role")
        if role not in ("user", "assistant"):
            raise turn.fail(f"role must be 'user' or 'assistant', not {role!r}")
        text = turn.text("text")
        if not text.strip():
            raise turn.fail("text must not be empty")
        at = _time(turn, "ts")
        turns.append({"id": str(tid), "role": role, "text": text, **({"at": at} if at else {})})
    if not turns:
        raise fields.fail("turns must not be empty")
    pair = None
    if fields.has("continuity"):
        cont = Fields(fields.obj["continuity"], f"{label}: continuity", "{pair_id, pair_role}")
        _only_keys(cont, {"pair_id", "pair_role"})
        pair_id, role = cont.text("pair_id"), cont.text("pair_role")
        if not _FILE_ID.match(pair_id):
            raise cont.fail(f"pair_id {pair_id!r} must be letters, digits, '.', '_' or '-'")
        if role not in ("writer", "reader"):
            raise cont.fail(f"pair_role must be 'writer' or 'reader', not {role!r}")
        pair = (pair_id, role)
    elif "continuity" in suites:
        raise fields.fail("suites include 'continuity' but there is no field 'continuity' "
                          "{pair_id, pair_role}")
    if "write-back" in suites or (pair and pair[1] == "writer"):
        # Write-back segments a conversation by time (a gap over 30 minutes): every turn needs it.
        missing = next((t["id"] for t in turns if "at" not in t), None)
        if missing is not None:
            raise fields.fail(f"turn_id {missing}: field 'ts' is required on every turn of a "
                              "write-back fixture or continuity writer")
    return _Fixture(fid, label, fields.obj, suites, source, pages, turns, pair)


def _gold(path: Path) -> tuple[str, Fields]:
    fields = Fields(read_json(path, GOLD), f"gold/{path.name}", GOLD)
    _only_keys(fields, GOLD_KEYS)
    return fields.text("fixture_id"), fields


def _join(fx: _Fixture, gold: Fields) -> None:
    """Check the gold against its fixture and attach it."""
    turns = Fields(gold.obj.get("turns"), f"{gold.where}: turns", GOLD)
    roles = {t["id"]: t["role"] for t in fx.turns}
    retrieval = any(s in PUSH_CELLS for s in fx.suites)
    for key, raw in turns.obj.items():
        where = f"{gold.where}: turns[{key!r}]"
        if key not in roles:
            raise SourceError(f"{where}: no turn_id {key} in {fx.file} (expected {GOLD})")
        tg = Fields(raw, where, GOLD)
        _only_keys(tg, TURN_GOLD_KEYS)
        retrieve = _bool(tg, "should_retrieve", required=True)
        slugs = fx.once(_strings(tg, "gold_slugs"))
        acceptable = fx.once(_strings(tg, "acceptable_slugs"))
        if roles[key] == "assistant" and (retrieve or tg.has("gold_slugs")
                                          or tg.has("acceptable_slugs")):
            raise tg.fail("retrieval gold on an assistant turn (only user turns are pushed)")
        if retrieval and retrieve and not slugs:
            raise tg.fail("should_retrieve is true but gold_slugs is empty")
        facts = []
        for index, fraw in enumerate(tg.array("gold_facts", required=False) or []):
            gf = Fields(fraw, f"{where}: gold_facts[{index}]", GOLD)
            _only_keys(gf, GOLD_FACT_KEYS)
            gist, _fact = gf.text("gist"), gf.text("fact")
            entity = gf.text("entity_slug", required=False)
            if entity is None:
                raise gf.fail("entity_slug is null: a writeback gold fact needs its entity")
            keywords = fx.once(_strings(gf, "match_keywords", required=True), fold=True)
            if not keywords:
                raise gf.fail("match_keywords must not be empty")
            kind = gf.text("kind", required=False)
            if kind is not None and kind not in KINDS:
                raise gf.fail(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
            facts.append({"gist": gist, "entity": entity, "keywords": keywords,
                          **({"kind": kind} if kind else {})})
        fx.gold[key] = {"retrieve": retrieve, "gold": slugs, "acceptable": acceptable,
                        "facts": facts}
    if gold.has("continuity"):
        if fx.pair is None:
            raise gold.fail(f"field 'continuity' but {fx.file} has no continuity block")
        cont = Fields(gold.obj["continuity"], f"{gold.where}: continuity", GOLD)
        _only_keys(cont, {"pair_id", "decisions"})
        if cont.text("pair_id") != fx.pair[0]:
            raise cont.fail(f"pair_id {cont.obj['pair_id']!r} is not the fixture's {fx.pair[0]!r}")
        decisions, seen = [], set()
        for index, draw in enumerate(cont.array("decisions")):
            d = Fields(draw, f"{cont.where}: decisions[{index}]", GOLD)
            _only_keys(d, DECISION_KEYS)
            did = d.text("decision_id")
            if not _FILE_ID.match(did) or did in seen:
                raise d.fail(f"decision_id {did!r} must be unique and letters, digits, '.', '_' "
                             "or '-'")
            seen.add(did)
            decisions.append({
                "id": did, "expected": fx.once(_strings(d, "expected_slugs", required=True)),
                "keywords": fx.once(_strings(d, "match_keywords", required=True), fold=True)})
        if not decisions:
            raise cont.fail("decisions must not be empty")
        fx.decisions = decisions
    elif fx.pair and fx.pair[1] == "reader":
        raise gold.fail("missing field 'continuity' (a continuity reader's decisions)")
    fx.gold_file = gold.where


def _load(folder: Path) -> tuple[list[_Fixture], list[Path]]:
    fixtures_dir, gold_dir = folder / "fixtures", folder / "gold"
    for sub in (fixtures_dir, gold_dir):
        if not sub.is_dir():
            raise SourceError(f"{sub}: folder not found (expected a BrainBench corpus: "
                              "fixtures/*.fixture.json and gold/*.gold.json)")
    fixture_paths = sorted(fixtures_dir.glob("*.fixture.json"))
    gold_paths = sorted(gold_dir.glob("*.gold.json"))
    if not fixture_paths:
        raise SourceError(f"{fixtures_dir}: no *.fixture.json files (expected {FIXTURE})")
    golds: dict[str, Fields] = {}
    for path in gold_paths:
        fid, fields = _gold(path)
        if fid in golds:
            raise fields.fail(f"fixture_id {fid!r} also has {golds[fid].where}")
        golds[fid] = fields
    fixtures: dict[str, _Fixture] = {}
    for path in fixture_paths:
        fx = _fixture(path)
        if fx.id in fixtures:
            raise SourceError(f"{fx.file}: fixture_id {fx.id!r} also in {fixtures[fx.id].file} "
                              f"(expected {FIXTURE})")
        if fx.id not in golds:
            raise SourceError(f"{fx.file}: no gold/*.gold.json with fixture_id {fx.id!r} "
                              f"(expected {GOLD})")
        _join(fx, golds[fx.id])
        fixtures[fx.id] = fx
    orphan = next((g for fid, g in golds.items() if fid not in fixtures), None)
    if orphan is not None:
        raise orphan.fail(f"fixture_id {orphan.obj['fixture_id']!r} names no fixture")
    return list(fixtures.values()), [*fixture_paths, *gold_paths]


def _conversation(fx: _Fixture, tally: dict[str, int]) -> dict[str, Any]:
    seeded = {p["slug"] for p in fx.pages if p["source"] == fx.source}
    turns = []
    for turn in fx.turns:
        out = dict(turn)
        tg = fx.gold.get(turn["id"])
        if turn["role"] == "user" and tg is not None:
            missing = next((s for s in tg["gold"] if s not in seeded), None)
            if tg["retrieve"] and missing:
                raise SourceError(f"{fx.gold_file}: turns[{turn['id']!r}]: gold slug {missing!r} "
                                  f"is not seeded in source {fx.source!r} by {fx.file}")
            acceptable = list(tg["acceptable"])
            if not tg["retrieve"]:
                # On a stay-silent turn BrainBench counts a gold slug only in push precision,
                # exactly as an acceptable one.
                tally["silent_gold"] += len(tg["gold"])
                acceptable += [s for s in tg["gold"] if s not in acceptable]
            tally["unseeded_acceptable"] += sum(s not in seeded for s in acceptable)
            out["expect"] = "retrieve" if tg["retrieve"] else "silent"
            if tg["retrieve"]:
                out["gold"] = tg["gold"]
            if acceptable:
                out["acceptable"] = acceptable
        turns.append(out)
    tally["twins"] += _twins(fx.pages)
    return {"id": fx.id, "source": fx.source, "suites": [PUSH_CELLS[s] for s in fx.suites
                                                          if s in PUSH_CELLS],
            "holdout": fx.holdout, **_category(fx), "pages": fx.pages, "turns": turns}


def _category(fx: _Fixture) -> dict[str, Any]:
    category = fx.obj.get("category")
    return {"category": category} if category is not None else {}


def _twins(pages: list[dict[str, Any]]) -> int:
    sources: dict[str, set[str]] = {}
    for page in pages:
        sources.setdefault(page["slug"], set()).add(page["source"])
    return sum(len(s) > 1 for s in sources.values())


def _spoken(fx: _Fixture) -> list[dict[str, Any]]:
    return [{"id": t["id"], "speaker": t["role"], **t} for t in fx.turns]


def _session(fx: _Fixture) -> dict[str, Any]:
    facts = []
    for turn in fx.turns:
        tg = fx.gold.get(turn["id"])
        for number, fact in enumerate(tg["facts"] if tg else [], 1):
            facts.append({"id": f"t{turn['id']}-{number}", "turn": turn["id"], **fact})
    return {"id": fx.id, "source": fx.source, "holdout": fx.holdout, **_category(fx),
            **({"pages": fx.pages} if fx.pages else {}), "turns": _spoken(fx),
            "gold_facts": facts}


def _pair(pair_id: str, writer: _Fixture, reader: _Fixture, tally: dict[str, int]) -> dict[str, Any]:
    if writer.source != reader.source:
        raise SourceError(f"{reader.file}: active_source {reader.source!r} differs from its "
                          f"writer's {writer.source!r} ({writer.file}): a pair has one source")
    pages: dict[tuple[str, str], dict[str, Any]] = {}
    for side in (writer, reader):
        for page in side.pages:
            key = (page["slug"], page["source"])
            if key in pages and pages[key] != page:
                raise SourceError(f"{reader.file}: seed page {page['slug']!r} in source "
                                  f"{page['source']!r} differs from the writer's ({writer.file})")
            pages[key] = page
    if writer.decisions is not None:
        tally["writer_decisions"] += 1
        tally["writer_decisions_differ"] += writer.decisions != reader.decisions
    tally["twins"] += _twins(list(pages.values()))
    return {"id": pair_id, "source": reader.source, "holdout": writer.holdout or reader.holdout,
            **(_category(reader) or _category(writer)), "pages": list(pages.values()),
            "writer": {"id": writer.id, "turns": _spoken(writer)},
            "reader": {"id": reader.id, "turns": reader.turns},
            "decisions": reader.decisions or []}


def _pairs(fixtures: list[_Fixture]) -> dict[str, tuple[_Fixture, _Fixture]]:
    sides: dict[str, dict[str, _Fixture]] = {}
    for fx in fixtures:
        if fx.pair is None:
            continue
        pair_id, role = fx.pair
        other = sides.setdefault(pair_id, {}).get(role)
        if other is not None:
            raise SourceError(f"{fx.file}: continuity pair {pair_id!r} has a second {role} "
                              f"(also {other.file})")
        sides[pair_id][role] = fx
    for pair_id, found in sides.items():
        for role in ("writer", "reader"):
            if role not in found:
                known = next(iter(found.values()))
                raise SourceError(f"{known.file}: continuity pair {pair_id!r} has no {role} "
                                  f"(expected a fixture with continuity.pair_role {role!r})")
    return {pair_id: (found["writer"], found["reader"]) for pair_id, found in sorted(sides.items())}


def counts(conversations: Iterable[dict[str, Any]], sessions: Iterable[dict[str, Any]],
           pairs: Iterable[dict[str, Any]], include_holdout: bool) -> dict[str, int]:
    """BrainBench's gold items per cell, counted from the fixtures written: know-to-ask turn
    items, push gold-slug items, write-back gold facts and continuity decisions."""
    kept = [c for c in conversations if include_holdout or not c["holdout"]]
    scored = [(c, t) for c in kept for t in c["turns"] if "expect" in t]
    return {
        "push/know_to_ask": sum(1 for c, _ in scored if "know_to_ask" in c["suites"]),
        "push/push": sum(len(t.get("gold", [])) for c, t in scored if "push" in c["suites"]),
        "writeback/fidelity": sum(len(s["gold_facts"]) for s in sessions
                                  if include_holdout or not s["holdout"]),
        "writeback/continuity": sum(len(p["decisions"]) for p in pairs
                                    if include_holdout or not p["holdout"]),
    }


def suites_toml(out: Path, parts: dict[str, list[Any]], total: int) -> str:
    """The ``[suites.*]`` tables to paste into ``membench.toml`` beside OUT (paths relative to the
    folder holding OUT), naming only folders that hold items."""
    name = out.resolve().name
    lines = [
        f"# BrainBench ({total} fixtures) as imported by `membench-gate import brainbench`.",
        f"# Paste into the membench.toml of the folder that holds {name}/ (paths are relative to it).",
        "# The cells are BrainBench's: push/know_to_ask = know-to-ask, push/push = push,",
        "# writeback/fidelity = write-back, writeback/continuity = continuity.",
    ]
    if parts[PUSH]:
        lines += ["", "[suites.push]", f'fixtures = ["{name}/{PUSH}"]',
                  f"budget = {PUSH_BUDGET}  # pages a turn, as gbrain's retrieval reflex injects at most"]
    writeback = [f'"{name}/{part}"' for part in (WRITEBACK, CONTINUITY) if parts[part]]
    if writeback:
        lines += ["", "[suites.writeback]", f"fixtures = [{', '.join(writeback)}]"]
    return "\n".join(lines) + "\n"


MAPPING = {
    "join": "fixtures/<name>.fixture.json with the gold/*.gold.json of the same fixture_id; "
            "schema_version 1 (checked)",
    "push/conversations": "fixtures whose suites include know-to-ask or push; suites → "
                          "know_to_ask / push; active_source → source (default 'default'); "
                          "category and holdout carried",
    "pages": "seed_pages: slug, content → text, source_id → source (default 'default', as "
             "BrainBench seeds it), aliases = the front matter's aliases list (title and other "
             "front-matter fields stay in the text)",
    "turns": "turn_id → id, role, text, ts → at (ISO 8601 UTC)",
    "push gold": "should_retrieve true → expect 'retrieve', gold = gold_slugs, acceptable = "
                 "acceptable_slugs; false → expect 'silent' (its gold_slugs counted as acceptable, "
                 "as BrainBench's push precision counts them); a user turn without gold → no expect "
                 "(pushed, not scored)",
    "writeback/sessions": "fixtures whose suites include write-back: pages = seed_pages (as "
                          "above), turns with speaker = role, "
                          "role, at; source = active_source; gold_facts of every turn → id "
                          "t<turn_id>-<n>, keywords = match_keywords, entity = entity_slug, turn, "
                          "kind, gist",
    "continuity/pairs": "a writer and a reader of one continuity.pair_id: id = pair_id, pages of "
                        "both sides, writer {id, turns}, reader {id, turns}, decisions = the "
                        "reader's gold continuity.decisions (decision_id → id, expected_slugs → "
                        "expected, match_keywords → keywords); holdout when either side is held "
                        "out; source = the shared active_source",
    "cells": "push/know_to_ask = know-to-ask, push/push = push, writeback/fidelity = write-back, "
             "writeback/continuity = continuity",
}


def convert(sources: list[Path]) -> Imported:
    (folder,) = sources
    fixtures, paths = _load(folder)
    tally = dict.fromkeys(("silent_gold", "unseeded_acceptable", "twins", "writer_decisions",
                           "writer_decisions_differ"), 0)
    pairs = _pairs(fixtures)
    parts: dict[str, list[Any]] = {
        PUSH: [_conversation(fx, tally) for fx in fixtures if any(s in PUSH_CELLS for s in fx.suites)],
        WRITEBACK: [_session(fx) for fx in fixtures if "write-back" in fx.suites],
        CONTINUITY: [_pair(pid, w, r, tally) for pid, (w, r) in pairs.items()],
    }
    conversations = {fx.id for fx in fixtures if any(s in PUSH_CELLS for s in fx.suites)}
    readers = [pair[1] for pair in pairs.values()]

    def gold_turns(fxs: Iterable[_Fixture]) -> int:
        return sum(1 for fx in fxs for tg in fx.gold.values()
                   if tg["retrieve"] or tg["gold"] or tg["acceptable"])

    gate = counts(parts[PUSH], parts[WRITEBACK], parts[CONTINUITY], include_holdout=False)
    full = counts(parts[PUSH], parts[WRITEBACK], parts[CONTINUITY], include_holdout=True)
    files = {f"{part}/{SUBFOLDERS[part]}/{item['id']}.json": item
             for part, items in parts.items() for item in items}
    return Imported(
        format="brainbench", suite="push, writeback",
        files=files,
        sources=paths, root=folder,
        mapping=MAPPING,
        counts={"fixtures": len(fixtures), "conversations": len(parts[PUSH]),
                "sessions": len(parts[WRITEBACK]), "pairs": len(parts[CONTINUITY]),
                "held-out fixtures": sum(fx.holdout for fx in fixtures),
                **{f"{cell} items": n for cell, n in gate.items()},
                **{f"{cell} items with holdout": n for cell, n in full.items()}},
        notes=tally_notes(
            (len(fixtures), "schema_version 1 on all {} fixtures (checked, not carried)"),
            (tally["twins"], "slugs seeded in several sources of one conversation or pair "
                             "(twins): {} (one record per copy, id '<slug>@<source>')"),
            (tally["unseeded_acceptable"], "acceptable slugs naming no page seeded in the "
                                           "conversation's source: {} (kept: they count for "
                                           "precision when injected)"),
            (tally["silent_gold"], "gold slugs on stay-silent turns: {} (written as acceptable: "
                                   "BrainBench counts them only in push precision)"),
            (gold_turns(readers), "continuity readers' turns with retrieval gold: {} (not carried: "
                                  "BrainBench scores a reader only through its pair's decisions)"),
            (gold_turns(fx for fx in fixtures if fx.id not in conversations
                        and not (fx.pair and fx.pair[1] == "reader")),
             "turns with retrieval gold in fixtures of no retrieval suite, readers aside: {} "
             "(not carried: BrainBench never scores them)"),
            (sum(1 for fx in fixtures if fx.id not in conversations for tg in fx.gold.values()
                 if not (tg["retrieve"] or tg["gold"] or tg["acceptable"])),
             "should_retrieve false flags in fixtures of no retrieval suite: {} (not carried: "
             "BrainBench never scores them)"),
            (sum(len(tg["facts"]) for fx in fixtures if "write-back" not in fx.suites
                 for tg in fx.gold.values()),
             "gold facts of fixtures outside write-back: {} (not carried: BrainBench does not "
             "score them)"),
            (sum(len(tg["facts"]) for fx in fixtures if "write-back" in fx.suites
                 for tg in fx.gold.values()),
             "gold facts' 'fact' sentences: {} (not carried: BrainBench's hermetic extractor "
             "stores that text; here the memory's own write path writes, and gist is kept)"),
            (sum(len(fx.pages) for fx in fixtures if "write-back" in fx.suites),
             "seed pages of write-back fixtures: {} (carried in their sessions, ingested before "
             "the write: BrainBench's pipeline resolves a fact's entity_slug against them)"),
            (sum(len(fx.obj.get("seed_facts") or []) for fx in fixtures),
             "seed facts: {} (not carried: no fixture format here seeds facts)"),
            (sum(1 for fx in fixtures if fx.obj.get("sources")),
             "fixtures declaring 'sources': {} (not carried: a source exists here when a page or "
             "the conversation names it)"),
            (sum(fx.repeated for fx in fixtures), "slugs or keywords repeated in one list of the "
                                                  "gold: {} (kept once)"),
            (tally["writer_decisions"], "continuity writers' gold with their own decisions: {} "
                                        "(the reader's decisions are scored, as in BrainBench)"),
            (tally["writer_decisions_differ"], "of them differing from the reader's: {} (the "
                                               "writer's copy is not carried)"),
        ),
        render=lambda out: {"suites.toml": suites_toml(out, parts, len(fixtures))},
        replaces=tuple(f"{part}/{sub}" for part, sub in SUBFOLDERS.items()),
        # Load what was written as a run will, before anything is written.
        loads={suite: folders for suite, folders in (
            ("push", [PUSH] if parts[PUSH] else []),
            ("writeback", [part for part in (WRITEBACK, CONTINUITY) if parts[part]])) if folders},
        enable="paste the tables of {out}/suites.toml into membench.toml",
    )
