"""Shards: ``run --shard I/N`` and ``merge`` give the bytes of an unsharded run (receipt aside).

Two layers. The property test over item records draws every suite's records, splits them into N
shards the way ``run --shard`` does, writes and reads each part as a file, merges, and compares
bytes with the unsharded results: it holds for any item set and shard count because every metric
comes from the suites' own ``score``. The end-to-end tests run the real CLI on random subsets of
the built-in fixtures with the reference memory, and gate the merged file with ``check``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membench_gate.config import parse_suite_options
from membench_gate.errors import GateError
from membench_gate.model.results import Cell, Receipt, Results, dumps_results, parse_results
from membench_gate.run.merge import merge
from membench_gate.run.shard import Shard
from membench_gate.suites import registry
from membench_gate.suites.common.suite import Records
from tests.support.cli import assert_error_verdict, run_cli
from tests.support.gaterepo import blessed_origin
from tests.support.gitrepos import clone
from tests.support.paths import REPO

# Hypothesis over item records, and the CLI run and merged on real fixtures.
pytestmark = pytest.mark.slow

CONFIG = {
    "suites": {
        "veto": {"fixtures": ["builtin"], "k": 5},
        "abstention": {"fixtures": ["builtin"], "k": 5, "lambdas": [1, 2.5, 10],
                       "shuffle_seed": 7},
        "push": {"fixtures": ["builtin"], "budget": 3},
        "writeback": {"fixtures": ["builtin"], "k": 5},
        "recall": {"fixtures": ["builtin"], "k": 5},
    },
    "include_holdout": False,
    "adapter": {"python": "membench_gate.reference:ReferenceMemory", "options": {}},
}


def without_receipt(text: str) -> dict[str, Any]:
    data = json.loads(text)
    data.pop("receipt")
    return data


# -- records -> results, as the runner assembles them ---------------------------------------------

def assemble(records: dict[str, Records], shard: Shard | None) -> Results:
    """Results of a run whose suites recorded ``records`` (only ``shard``'s items when given)."""
    cells: dict[str, Cell] = {}
    items: dict[str, dict[str, dict[str, Any]]] = {}
    digests: dict[str, dict[str, str]] = {}
    for suite, suite_records in records.items():
        kept = {cell: {i: r for i, r in recs.items() if shard is None or shard.holds(suite, i)}
                for cell, recs in suite_records.items()}
        run = registry()[suite].score({c: r for c, r in kept.items() if r},
                                      parse_suite_options(suite, CONFIG["suites"][suite], "CONFIG"))
        for name, cell in run.cells.items():
            cells[name] = Cell(metrics=cell.metrics, gold_total=cell.gold_total, failed=cell.failed)
            digests[name] = {i: f"d-{suite}-{i}" for i in run.items[name]}
        items.update(run.items)
    return Results(schema_version=1, fixtures_hash="f" * 64, config=CONFIG, cells=cells,
                   digests=digests, items=items,
                   receipt=Receipt(tool_version="t", git_sha="a" * 40,
                                   shard=str(shard) if shard else None))


ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-._", min_size=1, max_size=10)
scores = st.one_of(st.none(), st.floats(min_value=-5, max_value=5, allow_nan=False))
ranks = st.one_of(st.none(), st.integers(min_value=1, max_value=5))
judged = st.sampled_from(["correct", "wrong", "abstain"])


@st.composite
def all_records(draw: st.DrawFn) -> dict[str, Records]:
    """Records of every suite, as each suite's ``run`` would keep them (random item sets)."""
    out: dict[str, Records] = {}
    scenarios = draw(st.lists(ids, max_size=12, unique=True))
    if scenarios:
        out["veto"] = {
            f"veto/{condition}": {s: {"rank": draw(ranks), "score": draw(scores),
                                      "top": draw(st.one_of(st.none(), ids)), "trap": "direct"}
                                  for s in scenarios}
            for condition in ("files_known", "files_unknown")
        }
    probes = draw(st.lists(ids, max_size=15, unique=True))
    if probes:
        out["abstention"] = {"abstention/default": {p: {
            "judged": draw(judged), "answerable": draw(st.booleans()),
            "abstained": draw(st.booleans()), "rank": draw(ranks), "top": None,
            "score": draw(scores), "judged_floor_off": draw(judged),
            "judged_shuffled": draw(judged),
        } for p in probes}}
    pages = ["a", "b", "c", "d"]
    turns = draw(st.lists(ids, max_size=12, unique=True))
    push: Records = {}
    for turn in turns:
        # One turn's record, in each cell item that records it: the turn item of
        # push/know_to_ask, a gold-slug item per gold page (or the stay-silent record) of
        # push/push. A turn's slug items may fall in different shards.
        injected = draw(st.lists(st.sampled_from(pages), max_size=3, unique=True))
        expect = draw(st.sampled_from(["retrieve", "silent"]))
        gold = draw(st.lists(st.sampled_from(pages), min_size=1, max_size=2, unique=True)) \
            if expect == "retrieve" else []
        detail = {
            "turn": f"c.{turn}", "asked": "…", "category": None, "expect": expect,
            "gold": gold, "acceptable": draw(st.lists(st.sampled_from(pages), max_size=1)),
            "injected": injected, "text": None,
            "foreign": sorted(draw(st.sets(st.sampled_from(injected))) if injected else []),
            "relevant": sorted(draw(st.sets(st.sampled_from(injected))) if injected else []),
            "tokens": draw(st.integers(min_value=0, max_value=50)),
        }
        push.setdefault("push/know_to_ask", {})[f"c.{turn}"] = detail
        for slug in gold:
            push.setdefault("push/push", {})[f"c.{turn}#{slug}"] = {**detail, "slug": slug}
        if not gold:
            push.setdefault("push/push", {})[f"c.{turn}"] = detail
    if push:
        out["push"] = push
    facts = draw(st.lists(ids, max_size=10, unique=True))
    probes_wb = draw(st.lists(ids, max_size=6, unique=True))
    # A few memories that many facts' searches return: one hit satisfies at most one gold fact
    # of its session, so a fact's judgement depends on the facts before it, maybe in other shards.
    memories = [{"id": f"m{n}", "score": 1.0, "text": text, "entity": "ana",
                 "provenance": {"source": "default", "session": "s", "turn": str(n % 2)}}
                for n, text in enumerate(["x y", "x", "y z", "x y z"])]
    hits = st.lists(st.sampled_from(memories), max_size=3, unique_by=lambda m: m["id"])
    keywords = st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=2, unique=True)
    writeback: Records = {}
    if facts:
        writeback["writeback/fidelity"] = {
            f"s.{f}": ({"kind": "fact", "session": draw(st.sampled_from(["s", "t"])),
                        "order": order, "keywords": draw(keywords), "entity": "Ana",
                        "provenance": {"source": "default", "session": "s", "turn": "0"},
                        "hits": draw(hits)} if draw(st.booleans())
                       else {"kind": "non-fact (quoted)", "keywords": draw(keywords),
                             "hits": draw(hits)})
            for order, f in enumerate(facts)
        }
    if probes_wb:
        writeback["writeback/continuity"] = {
            f"s.{p}": ({"keywords": draw(keywords), "hits": draw(hits)} if draw(st.booleans())
                       else {"kind": "decision", "pair": draw(st.sampled_from(["p", "q"])),
                             "expected": ["a"], "keywords": draw(keywords),
                             "injected": draw(st.lists(st.sampled_from(pages), max_size=2,
                                                       unique=True)),
                             "foreign": draw(st.lists(st.sampled_from(pages), max_size=1)),
                             "seeded": ["m0"], "hits": draw(hits)})
            for p in probes_wb
        }
    if writeback:
        out["writeback"] = writeback
    queries = draw(st.lists(ids, max_size=12, unique=True))
    recall: Records = {}
    for query in queries:
        gold = draw(st.lists(st.sampled_from(["g1", "g2", "g3", "s1"]), max_size=3, unique=True))
        record: dict[str, Any] = {"answerable": bool(gold), "abstained": draw(st.booleans()),
                                  "gold": gold, "score": draw(scores)}
        if gold:
            matched = draw(st.lists(st.sampled_from(gold), unique=True))
            credited = sorted(draw(st.lists(st.integers(1, 5), min_size=len(matched),
                                            max_size=len(matched), unique=True)))
            record.update(matched=sorted(matched), credited=credited,
                          all=len(matched) == len(gold), rank=credited[0] if credited else None)
        cell = draw(st.sampled_from(["recall/default", "recall/temporal"]))
        recall.setdefault(cell, {})[query] = record
    if recall:
        out["recall"] = recall
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(all_records(), st.integers(min_value=1, max_value=9))
def test_merging_shards_gives_the_bytes_of_an_unsharded_run(records: dict[str, Records],
                                                            count: int) -> None:
    whole = dumps_results(assemble(records, None))
    parts = []
    for index in range(1, count + 1):
        text = dumps_results(assemble(records, Shard(index, count)))
        parts.append((f"part-{index}.json", parse_results(text, f"part-{index}.json")))
    merged = dumps_results(merge(parts[::-1]))  # the order of the parts does not matter
    assert without_receipt(merged) == without_receipt(whole)
    assert json.loads(merged)["receipt"]["merged_shards"] == count
    assert json.loads(merged)["receipt"]["shard"] is None  # a whole run, written as such


# -- merge refuses what it cannot merge exactly ---------------------------------------------------

def _parts(count: int = 3) -> list[tuple[str, Results]]:
    records = {
        "veto": {"veto/files_known": {f"s{i}": {"rank": i % 4 or None, "score": 0.5, "top": None,
                                                "trap": "direct"} for i in range(30)}},
        "abstention": {"abstention/default": {f"p{i}": {
            "judged": ("correct", "wrong", "abstain")[i % 3], "answerable": i % 2 == 0,
            "abstained": i % 3 == 2, "rank": None, "top": None, "score": None,
            "judged_floor_off": "wrong", "judged_shuffled": "wrong"} for i in range(30)}},
    }
    return [(f"part-{i}.json", parse_results(dumps_results(assemble(records, Shard(i, count))),
                                             f"part-{i}.json")) for i in range(1, count + 1)]


def _with(results: Results, **update: Any) -> Results:
    return parse_results(dumps_results(results.model_copy(update=update)), "x")


def test_merge_refuses_parts_it_cannot_merge_exactly() -> None:
    parts = _parts()
    (a, pa), (b, pb), (c, pc) = parts

    with pytest.raises(GateError, match=r"^merge: shard 3 of 3 missing$"):
        merge([(a, pa), (b, pb)])
    with pytest.raises(GateError, match=r"part-2.json: receipt.shard: shard 2/3 is also part-2"):
        merge([(a, pa), (b, pb), (b, pb), (c, pc)])
    other = _with(pc, fixtures_hash="e" * 64)
    with pytest.raises(GateError, match=r"part-3.json: fixtures_hash differs from part-1.json"):
        merge([(a, pa), (b, pb), (c, other)])
    config = {**CONFIG, "include_holdout": True}
    with pytest.raises(GateError, match=r"part-3.json: config differs from part-1.json"):
        merge([(a, pa), (b, pb), (c, _with(pc, config=config))])
    four = _with(pc, receipt=pc.receipt.model_copy(update={"shard": "3/4"}))
    with pytest.raises(GateError, match=r"part-3.json: receipt.shard: 3/4 is not one of 3 shards"):
        merge([(a, pa), (b, pb), (c, four)])
    unsharded = _with(pc, receipt=pc.receipt.model_copy(update={"shard": None}))
    with pytest.raises(GateError, match=r"part-3.json: receipt.shard: not a shard"):
        merge([(a, pa), (b, pb), (c, unsharded)])
    commit = _with(pc, receipt=pc.receipt.model_copy(update={"git_sha": "b" * 40}))
    with pytest.raises(GateError, match=r"part-3.json: receipt.git_sha .* shards of different"):
        merge([(a, pa), (b, pb), (c, commit)])

    # An item of shard 1 smuggled into part 2 (as a duplicate, or as the only copy).
    cell = "veto/files_known"
    stolen = next(iter(pa.items[cell]))
    doubled = pb.items[cell] | {stolen: pa.items[cell][stolen]}
    with pytest.raises(GateError, match=rf"part-2.json: items.{cell}: item '{stolen}' is not in"):
        merge([(a, pa), (b, _with(pb, items=pb.items | {cell: doubled})), (c, pc)])

    # A part whose cells were edited after the run.
    edited = pc.cells[cell].model_copy(update={"metrics": {**pc.cells[cell].metrics, "mrr": 1}})
    with pytest.raises(GateError, match=rf"part-3.json: cells.{cell}: does not follow from"):
        merge([(a, pa), (b, pb), (c, _with(pc, cells=pc.cells | {cell: edited}))])


# -- the real CLI on random subsets of the built-in fixtures ---------------------------------------

def subset_fixtures(folder: Path, keep: list[bool]) -> None:
    """veto, abstention and push fixture folders holding a subset of the built-in items."""
    def pick(values: list[Any]) -> list[Any]:
        chosen = [v for i, v in enumerate(values) if keep[i % len(keep)]]
        return chosen or values[:1]

    fx = REPO / "fixtures"
    (folder / "veto").mkdir(parents=True)
    (folder / "veto" / "decisions.json").write_bytes((fx / "veto" / "decisions.json").read_bytes())
    scenarios = json.loads((fx / "veto" / "scenarios.json").read_text(encoding="utf-8"))
    scenarios["scenarios"] = pick(scenarios["scenarios"])
    (folder / "veto" / "scenarios.json").write_text(json.dumps(scenarios), encoding="utf-8")
    (folder / "abstention").mkdir()
    (folder / "abstention" / "facts.json").write_bytes(
        (fx / "abstention" / "facts.json").read_bytes())
    probes = pick(json.loads((fx / "abstention" / "probes.json").read_text(encoding="utf-8")))
    (folder / "abstention" / "probes.json").write_text(json.dumps(probes), encoding="utf-8")
    (folder / "push" / "conversations").mkdir(parents=True)
    for path in pick(sorted((fx / "push" / "conversations").glob("*.json"))):
        (folder / "push" / "conversations" / path.name).write_bytes(path.read_bytes())


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keep=st.lists(st.booleans(), min_size=1, max_size=7), count=st.integers(2, 5))
def test_run_shards_and_merge_match_an_unsharded_run(tmp_path_factory: pytest.TempPathFactory,
                                                     keep: list[bool], count: int) -> None:
    work = tmp_path_factory.mktemp("shards")
    subset_fixtures(work / "fx", keep)
    (work / "membench.toml").write_text(
        '[adapter]\npython = "membench_gate.reference:ReferenceMemory"\n'
        '[suites.veto]\nfixtures = ["fx/veto"]\n'
        '[suites.abstention]\nfixtures = ["fx/abstention"]\n'
        '[suites.push]\nfixtures = ["fx/push"]\n', encoding="utf-8")
    done = run_cli("run", "--out", "whole.json", cwd=work)
    assert done.returncode == 0, done.stderr
    for index in range(1, count + 1):
        done = run_cli("run", "--shard", f"{index}/{count}", "--out", f"part-{index}.json", cwd=work)
        assert done.returncode == 0, done.stderr
        assert json.loads((work / f"part-{index}.json").read_text())["receipt"]["shard"] == \
            f"{index}/{count}"
    parts = [f"part-{i}.json" for i in range(count, 0, -1)]
    done = run_cli("merge", *parts, "--out", "merged.json", cwd=work)
    assert done.returncode == 0, done.stderr
    whole = (work / "whole.json").read_text(encoding="utf-8")
    merged = (work / "merged.json").read_text(encoding="utf-8")
    assert without_receipt(merged) == without_receipt(whole)
    # The controls merged exactly too, from every probe's record.
    assert json.loads(merged)["cells"]["abstention/control_shuffled"] == \
        json.loads(whole)["cells"]["abstention/control_shuffled"]


def test_check_gates_merged_shards_and_refuses_a_part(tmp_path: Path) -> None:
    origin, _ = blessed_origin(tmp_path / "origin")
    repo = clone(f"file://{origin}", tmp_path / "work")
    for index in (1, 2):
        done = run_cli("run", "--shard", f"{index}/2", "--out", f"part-{index}.json", cwd=repo)
        assert done.returncode == 0, done.stderr
    done = run_cli("merge", "part-1.json", "part-2.json", "--out", "merged.json", cwd=repo)
    assert done.returncode == 0, done.stderr

    done = run_cli("check", "--results", "merged.json", "--base-ref", "HEAD", cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS" in done.stdout

    # Isolation is what the shards' runs said: a part that claims "sealed" beside an unsealed
    # one merges to unsealed, and a check in CI reports the file's, not its own process's.
    part = json.loads((repo / "part-1.json").read_text(encoding="utf-8"))
    assert part["receipt"]["isolation"] == "unsealed"  # (a local run)
    part["receipt"]["isolation"] = "sealed"
    (repo / "sealed-1.json").write_text(json.dumps(part), encoding="utf-8")
    done = run_cli("merge", "sealed-1.json", "part-2.json", "--out", "mixed.json", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert json.loads((repo / "mixed.json").read_text())["receipt"]["isolation"] == "unsealed"
    part2 = json.loads((repo / "part-2.json").read_text(encoding="utf-8"))
    part2["receipt"]["isolation"] = "sealed"
    (repo / "sealed-2.json").write_text(json.dumps(part2), encoding="utf-8")
    done = run_cli("merge", "sealed-1.json", "sealed-2.json", "--out", "sealed.json", cwd=repo)
    assert json.loads((repo / "sealed.json").read_text())["receipt"]["isolation"] == "sealed"
    for name in ("mixed.json", "sealed.json"):  # this check's process is unsealed: so is its verdict
        done = run_cli("check", "--results", name, "--base-ref", "HEAD", "--json", "v.json",
                       cwd=repo, env={"CI": "true"})
        assert done.returncode == 0, done.stderr
        assert json.loads((repo / "v.json").read_text())["isolation"] == "unsealed", name

    done = run_cli("check", "--results", "part-1.json", "--base-ref", "HEAD", cwd=repo)
    assert done.returncode == 4
    assert done.stderr.strip().splitlines() == [
        "membench-gate: error: part-1.json: receipt.shard: shard 1/2 of a run, not a whole run "
        "(membench-gate merge the shards first)"]

    # A merged file whose items were changed after the fact does not pass: merge recomputes,
    # so a part edited to look better is refused rather than averaged in.
    part = json.loads((repo / "part-2.json").read_text(encoding="utf-8"))
    cell = next(c for c, items in part["items"].items() if c == "abstention/default" and items)
    probe = next(iter(part["items"][cell]))
    part["items"][cell][probe]["judged"] = "correct" if \
        part["items"][cell][probe]["judged"] != "correct" else "wrong"
    (repo / "part-2.json").write_text(json.dumps(part), encoding="utf-8")
    done = run_cli("merge", "part-1.json", "part-2.json", "--out", "bad.json", cwd=repo)
    assert done.returncode == 4
    assert done.stderr.startswith("membench-gate: error: part-2.json: cells.abstention/")
    assert_error_verdict(repo / "bad.json")

    # A failed merge over an earlier merge's file: that file is not left to be gated as this one.
    done = run_cli("merge", "part-1.json", "--out", "merged.json", cwd=repo)
    assert (done.returncode, done.stderr.strip()) == (
        4, "membench-gate: error: merge: shard 2 of 2 missing")
    assert_error_verdict(repo / "merged.json")
    done = run_cli("check", "--results", "merged.json", "--base-ref", "HEAD", cwd=repo)
    assert done.returncode == 4


def test_bad_shard_usage_exits_4(tmp_path: Path) -> None:
    for value in ("0/2", "3/2", "x"):
        done = run_cli("run", "--shard", value, cwd=REPO)
        assert done.returncode == 4
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    done = run_cli("merge", "--out", "x.json", cwd=tmp_path)
    assert done.returncode == 4
    done = run_cli("merge", "missing.json", "--out", "x.json", cwd=tmp_path)
    assert done.returncode == 4
    assert done.stderr.strip() == "membench-gate: error: missing.json: file not found"
    # --out naming a part is refused before anything is read or written: the part stays.
    (tmp_path / "p1.json").write_text("a part\n")
    done = run_cli("merge", "p1.json", "p2.json", "--out", "./p1.json", cwd=tmp_path)
    assert done.returncode == 4 and "is one of the parts to merge" in done.stderr
    assert (tmp_path / "p1.json").read_text() == "a part\n"
