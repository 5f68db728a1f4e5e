"""Holdout on corpus items: not ingested, and the gold items that reference them are not scored."""

from __future__ import annotations

import json
from pathlib import Path

from membench_gate.suites.common.fixtures import load_suite


def write(folder: Path, name: str, data: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data))


def test_held_out_fact_is_not_ingested_and_its_probe_not_scored(tmp_path: Path) -> None:
    folder = tmp_path / "abst"
    write(folder, "facts.json", [{"id": "f1", "text": "The API runs on port 8080."},
                                 {"id": "f2", "text": "Deploys freeze on Fridays.", "holdout": True}])
    write(folder, "probes.json", [{"id": "p1", "question": "Which port?", "gold_fact_id": "f1"},
                                  {"id": "p2", "question": "When is the freeze?",
                                   "gold_fact_id": "f2"},
                                  {"id": "p3", "question": "Who owns billing?",
                                   "gold_fact_id": None}])
    excluded = load_suite("abstention", ["abst"], tmp_path, include_holdout=False)
    assert [f.id for f in excluded.facts] == ["f1"]
    assert sorted(excluded.digests) == ["p1", "p3"]
    included = load_suite("abstention", ["abst"], tmp_path, include_holdout=True)
    assert [f.id for f in included.facts] == ["f1", "f2"]
    assert sorted(included.digests) == ["p1", "p2", "p3"]


def test_held_out_page_is_not_ingested_and_turns_naming_it_not_scored(tmp_path: Path) -> None:
    folder = tmp_path / "push"
    write(folder / "conversations", "c.json", {
        "id": "c", "source": "work",
        "pages": [{"slug": "ana-lima", "text": "Ana runs payments.", "aliases": [],
                   "source": "work"},
                  {"slug": "bo-chen", "text": "Bo runs search.", "aliases": [], "source": "work",
                   "holdout": True}],
        "turns": [{"id": "t1", "text": "Ask Ana Lima.", "expect": "retrieve", "gold": ["ana-lima"]},
                  {"id": "t2", "text": "Ask Bo Chen.", "expect": "retrieve", "gold": ["bo-chen"]}],
    })
    fx = load_suite("push", ["push"], tmp_path, include_holdout=False)
    assert [p.slug for p in fx.conversations[0].pages] == ["ana-lima"]
    assert sorted(fx.digests) == ["c.t1", "c.t1#ana-lima"]
    assert sorted(load_suite("push", ["push"], tmp_path, include_holdout=True).digests) == [
        "c.t1", "c.t1#ana-lima", "c.t2", "c.t2#bo-chen"]
