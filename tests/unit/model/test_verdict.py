"""The verdict models: item breaches held per cell and kind must read, count and serialize exactly
like one breach per item, and the gate's fast paths must agree with a plain computation."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membench_gate.gate.rules import breach_keys, decide
from membench_gate.model.canonical import canonical_dumps
from membench_gate.model.results import Baseline, Cell
from membench_gate.model.verdict import Breach, Breaches, ItemBreaches, Verdict

ids = st.text(alphabet="abc:#<>@|_ -1", min_size=1, max_size=6)
cells = st.sampled_from(["veto/files_known", "veto/files_unknown", "abstention/default"])
item_kinds = st.sampled_from(["newly-failed", "item-removed", "item-changed"])
other_kinds = st.sampled_from(["metric", "zero", "floor", "cell-missing", "option"])
labels = st.sampled_from(["pass", "fail", "present", None])


@st.composite
def breach_lists(draw: st.DrawFn) -> list[Breach]:
    """Item breaches in runs (the gate's shape) and alone, between other breaches."""
    out: list[Breach] = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            cell, kind = draw(cells), draw(item_kinds)
            base, head = draw(labels), draw(labels)
            detail = draw(st.sampled_from(["passed at base", "removed"]))
            out += [Breach(key=f"{cell}#{i}", kind=kind, base=base, head=head, detail=detail)
                    for i in draw(st.lists(ids, max_size=8))]
        else:
            out.append(Breach(key=f"{draw(cells)}:mrr", kind=draw(other_kinds),
                              base=draw(st.one_of(st.none(), st.floats(-2, 2), labels)),
                              head=draw(st.one_of(st.none(), st.floats(-2, 2))),
                              detail="moved"))
    return out


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(breach_lists())
def test_breaches_read_count_and_serialize_like_the_list_they_hold(plain: list[Breach]) -> None:
    held = Breaches(plain)
    assert len(held) == len(plain)
    assert list(held) == plain
    assert held == plain and Breaches(held.entries) == held
    assert list(held.iter_keys()) == [b.key for b in plain]
    for index in range(-len(plain), len(plain)):
        assert held[index] == plain[index]
    assert held[1:-1] == plain[1:-1] and held[::2] == plain[::2]
    # Runs are folded: no two neighbouring runs could have been one.
    runs = [e for e in held.entries if isinstance(e, ItemBreaches)]
    assert all(e.ids for e in runs)
    assert sum(len(e.ids) for e in runs) == sum(1 for b in plain if "#" in b.key)
    for mode in ("python", "json"):
        for exclude_none in (False, True):
            assert held.dicts(mode, exclude_none) == [
                b.model_dump(mode=mode, exclude_none=exclude_none) for b in plain]


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(breach_lists())
def test_the_verdict_file_is_one_breach_per_item_and_reads_back_the_same(
        plain: list[Breach]) -> None:
    verdict = Verdict(verdict="regression", exit_code=1, mode="same-hash", breaches=plain)
    written = verdict.model_dump(mode="json")
    assert written["breaches"] == [b.model_dump(mode="json") for b in plain]
    text = verdict.model_dump_json()
    assert json.loads(text)["breaches"] == [b.model_dump(mode="json") for b in plain]
    again = Verdict.model_validate_json(text)
    assert again == verdict and again.model_dump_json() == text
    assert canonical_dumps(again.model_dump(mode="json")) == \
        canonical_dumps(verdict.model_dump(mode="json"))
    # A plain list put in place (model_copy does not validate) is written the same way.
    copied = verdict.model_copy(update={"breaches": list(plain)})
    assert copied.model_dump_json() == text


@st.composite
def run_pairs(draw: st.DrawFn) -> tuple[Baseline, Baseline]:
    """A base and a head over the same cells (maybe a changed corpus), hundreds of items."""
    base_cells, head_cells, base_digests, head_digests = {}, {}, {}, {}
    same_hash = draw(st.booleans())
    for cell in draw(st.lists(cells, min_size=1, max_size=3, unique=True)):
        n = draw(st.integers(0, 400))
        items = [f"item-{i:04d}" for i in range(n)]
        rand = draw(st.randoms(use_true_random=False))
        base_failed = [i for i in items if rand.random() < 0.3]
        kept = items if same_hash else [i for i in items if rand.random() > 0.1]
        head_failed = [i for i in kept if rand.random() < 0.3]
        base_cells[cell] = Cell(metrics={"mrr": 0.5}, gold_total=n, failed=base_failed)
        head_cells[cell] = Cell(metrics={"mrr": 0.5}, gold_total=len(kept), failed=head_failed)
        base_digests[cell] = dict.fromkeys(items, "d")
        head_digests[cell] = {i: "d" if same_hash or rand.random() > 0.2 else "e" for i in kept}
    make = Baseline.model_validate
    base = make({"schema_version": 1, "fixtures_hash": "h", "config": {}, "cells": base_cells,
                 "digests": base_digests})
    head = make({"schema_version": 1, "fixtures_hash": "h" if same_hash else "h2", "config": {},
                 "cells": head_cells, "digests": head_digests})
    return base, head


def _expected_items(base: Baseline, head: Baseline) -> list[dict[str, object]]:
    """Item breaches of the gate rules (docs/gate.md, rules 5 and 7), computed one item at a
    time, in the order the verdict lists them."""
    out: list[dict[str, object]] = []
    same_hash = base.fixtures_hash == head.fixtures_hash
    for cell in sorted(base.cells):
        was, now = base.digests[cell], head.digests[cell]
        was_failed, is_failed = set(base.cells[cell].failed), set(head.cells[cell].failed)
        if not same_hash:
            for i in sorted(was):
                if i not in now:
                    out.append({"key": f"{cell}#{i}", "kind": "item-removed", "base": "present",
                                "head": None, "detail": "gold item removed from the fixtures"})
            # A gold item is its content: every changed one, grouped by its outcomes.
            for before, after in (("fail", "pass"), ("pass", "fail"), ("fail", "fail"),
                                  ("pass", "pass")):
                for i in sorted(was):
                    if i in now and now[i] != was[i] \
                            and ("fail" if i in was_failed else "pass") == before \
                            and ("fail" if i in is_failed else "pass") == after:
                        out.append({"key": f"{cell}#{i}", "kind": "item-changed",
                                    "base": before, "head": after,
                                    "detail": "gold item content changed: gated as the old item "
                                              "removed and a new one added, whatever either "
                                              "scored"})
        for i in sorted(is_failed - was_failed):
            if same_hash or (i in was and i in now and was[i] == now[i]):
                out.append({"key": f"{cell}#{i}", "kind": "newly-failed", "base": "pass",
                            "head": "fail", "detail": "passed in the base baseline, fails now"})
    return out


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(run_pairs())
def test_item_breaches_and_counts_match_a_plain_computation(pair: tuple[Baseline, Baseline]
                                                            ) -> None:
    base, head = pair
    verdict = decide(base, base, head)
    expected = _expected_items(base, head)
    written = [b for b in verdict.model_dump(mode="json")["breaches"]
               if b["kind"] in ("newly-failed", "item-removed", "item-changed")]
    assert written == expected
    assert len(verdict.breaches) == len(verdict.model_dump(mode="json")["breaches"])
    assert [b.key for b in verdict.breaches if "#" in b.key] == [b["key"] for b in expected]
    newly = {c: [k.partition("#")[2] for k in (b["key"] for b in expected
                                               if b["kind"] == "newly-failed")
                 if k.startswith(f"{c}#")] for c in base.cells}
    assert verdict.newly_failed == {c: v for c, v in newly.items() if v}
    assert breach_keys(verdict) == sorted(b.key for b in verdict.breaches)
    if verdict.breaches:
        assert verdict.justification_check.breaches == breach_keys(verdict)


numbers = st.one_of(st.sampled_from([0.5, 0.50004, 0.50005, 0.5000499, 1.0, 1, 0.49995]),
                    st.floats(0, 1))


@st.composite
def near_baselines(draw: st.DrawFn) -> tuple[Baseline, Baseline]:
    """Two baselines that differ in small ways, or not at all."""
    def one() -> Baseline:
        cell_map = {c: Cell(metrics={"mrr": draw(numbers), "net_at_1": draw(numbers)},
                            gold_total=draw(st.sampled_from([3, 4])),
                            failed=draw(st.sampled_from([[], ["a"], ["a", "b"]])))
                    for c in draw(st.sampled_from([["veto/files_known"],
                                                   ["veto/files_known", "push/default"]]))}
        return Baseline(schema_version=1, fixtures_hash=draw(st.sampled_from(["h", "g"])),
                        config={"suites": {"veto": {"k": draw(numbers)}},
                                "x": draw(st.sampled_from([None, 1, True]))},
                        cells=cell_map,
                        digests={"veto/files_known": {"a": draw(st.sampled_from(["d", "e"]))}},
                        corpus=draw(st.sampled_from([{}, {"veto": {"c": "d"}}])))
    return one(), one()


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(near_baselines())
def test_same_content_says_what_the_canonical_forms_say(pair: tuple[Baseline, Baseline]) -> None:
    a, b = pair
    assert a.same_content(b) == (a.comparable() == b.comparable())
    assert a.same_content(a) and b.same_content(b)


def test_same_content_knows_every_field_of_a_cell() -> None:
    # same_content compares a cell's fields one by one: a new field must be added there too.
    assert set(Cell.model_fields) == {"metrics", "gold_total", "failed", "repeats", "passes"}
