"""A results file is re-derived, never trusted wholesale (docs/gate.md, "Fail closed").

``check --results``, ``bless --results`` and ``merge`` recompute every cell from the item records
and replay every suite on the answers the items recorded, over the working tree's fixtures. Each
test edits a real run's file the way someone forging a verdict would — cells, a ``failed`` list, a
metric, an item's outcome or rank (with every cell recomputed to match, as the suites' own
``score`` does), an item removed or added, a digest — and gates it with the real CLI: exit 4 and
one line naming the file and the cell or item. The control is the same file unedited, which
passes with the verdict of running the suites.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from membench_gate.config import parse_suite_options
from membench_gate.model.canonical import canonical_dumps
from membench_gate.suites import registry
from membench_gate.suites.common.fixtures import keyword_in
from tests.support.cli import assert_error_verdict, run_cli
from tests.support.gitrepos import bare_origin, clone, commit
from tests.support.paths import REPO

# A memory that drops its best hit: items fail that passed at the base.
WORSE = '''\
from membench_gate import Answer
from membench_gate.reference import ReferenceMemory


class Worse(ReferenceMemory):
    def search(self, query):
        answer = super().search(query)
        return Answer(hits=answer.hits[1:], abstain=answer.abstain)
'''


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare origin whose main gates every built-in suite (this repository's own config) with a
    blessed baseline."""
    from tests.support.cli import seed_repo

    root = tmp_path_factory.mktemp("rederived")
    config = (REPO / "membench.toml").read_text(encoding="utf-8")
    return bare_origin(seed_repo(root / "seed", {"membench.toml": config}))


@pytest.fixture(scope="module")
def repo(origin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of ``origin`` holding one honest run's results, ``results.json`` (untracked)."""
    work = clone(f"file://{origin}", tmp_path_factory.mktemp("work") / "work")
    done = run_cli("run", "--out", "results.json", cwd=work)
    assert done.returncode == 0, done.stderr
    return work


@pytest.fixture
def honest(repo: Path) -> dict[str, Any]:
    return json.loads((repo / "results.json").read_text(encoding="utf-8"))


def write(repo: Path, name: str, data: dict[str, Any]) -> str:
    (repo / name).write_text(canonical_dumps(data), encoding="utf-8")
    return name


def rescore(data: dict[str, Any]) -> dict[str, Any]:
    """What a careful editor does after editing item records: every outcome and cell recomputed
    with the suites' own ``score``, so the cells follow from the items and only replaying the
    recorded answers over the fixtures can tell."""
    by_suite: dict[str, dict[str, Any]] = {}
    for cell, items in data["items"].items():
        suite = cell.split("/", 1)[0]
        if cell not in registry()[suite].derived:
            by_suite.setdefault(suite, {})[cell] = items
    for suite, records in by_suite.items():
        options = parse_suite_options(suite, data["config"]["suites"][suite], "test")
        run = registry()[suite].score(records, options)
        for name, cell in run.cells.items():
            data["cells"][name] = {"metrics": cell.metrics, "gold_total": cell.gold_total,
                                   "failed": cell.failed}
        data["items"].update(run.items)
    return data


def gate(repo: Path, *args: str) -> tuple[int, list[str]]:
    done = run_cli(*args, cwd=repo)
    return done.returncode, done.stderr.strip().splitlines()


def check_results(repo: Path, name: str) -> tuple[int, list[str]]:
    return gate(repo, "check", "--results", name, "--base-ref", "HEAD")


def assert_refused(result: tuple[int, list[str]], where: str, *words: str) -> None:
    """Exit 4 and one line naming ``where`` (the file and the cell or item) and ``words``."""
    code, lines = result
    assert code == 4, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"membench-gate: error: {where}"), lines[0]
    for word in words:
        assert word in lines[0], lines[0]


def first_failing(data: dict[str, Any], cell: str) -> str:
    return data["cells"][cell]["failed"][0]


# -- the control -------------------------------------------------------------------------------

def test_an_untampered_file_passes_like_running_the_suites(repo: Path) -> None:
    code, lines = check_results(repo, "results.json")
    ran = run_cli("check", "--base-ref", "HEAD", cwd=repo)
    assert (code, ran.returncode) == (0, 0), lines + ran.stderr.splitlines()
    blessed = run_cli("bless", "--results", "results.json", "--base-ref", "HEAD", cwd=repo)
    assert blessed.returncode == 0, blessed.stderr


def test_rescoring_an_honest_file_changes_nothing(honest: dict[str, Any]) -> None:
    # The tests' careful editor is the suites' own arithmetic: alone, it leaves a run as it was.
    assert canonical_dumps(rescore(copy.deepcopy(honest))) == canonical_dumps(honest)


# -- cells that do not follow from their items ---------------------------------------------------

def test_cells_edited_to_the_base_values_while_items_fail(origin: Path, tmp_path: Path) -> None:
    work = clone(f"file://{origin}", tmp_path / "work")
    config = (work / "membench.toml").read_text(encoding="utf-8").replace(
        'python = "membench_gate.reference:ReferenceMemory"', 'python = "worse:Worse"')
    commit(work, "a worse memory", {"worse.py": WORSE, "membench.toml": config})
    assert run_cli("run", "--out", "worse.json", cwd=work).returncode == 0
    # The control: honestly, this memory regresses, with --results as when the suites run.
    code, lines = check_results(work, "worse.json")
    ran = run_cli("check", "--base-ref", "HEAD", cwd=work)
    assert (code, ran.returncode) == (1, 1), lines
    data = json.loads((work / "worse.json").read_text(encoding="utf-8"))
    base = json.loads((work / "baselines/main.json").read_text(encoding="utf-8"))
    data["cells"] = base["cells"]  # the base's cells over this run's items
    assert_refused(check_results(work, write(work, "forged.json", data)),
                   "forged.json: cells.", "does not follow from its items")


def test_a_trimmed_failed_list_is_named(repo: Path, honest: dict[str, Any]) -> None:
    cell = "veto/files_unknown"
    dropped = honest["cells"][cell]["failed"].pop(0)
    assert_refused(check_results(repo, write(repo, "trimmed.json", honest)),
                   f"trimmed.json: cells.{cell}: does not follow from its items",
                   f"failed leaves out '{dropped}', which fails")


def test_an_edited_metric_is_named(repo: Path, honest: dict[str, Any]) -> None:
    cell = "recall/temporal"
    honest["cells"][cell]["metrics"]["recall_any_at_k"] = 1
    assert_refused(check_results(repo, write(repo, "metric.json", honest)),
                   f"metric.json: cells.{cell}: does not follow from its items",
                   "metrics.recall_any_at_k is 1, they give 0.5714")


def test_a_results_file_of_another_config_is_still_held_to_its_items(
        repo: Path, honest: dict[str, Any]) -> None:
    # Another config is INCONCLUSIVE (exit 3): the fixtures cannot be compared, the cells can.
    honest["config"]["adapter"]["options"] = {"tau": 0.9}
    assert check_results(repo, write(repo, "other.json", honest))[0] == 3
    honest["cells"]["veto/files_known"]["metrics"]["mrr"] = 1
    assert_refused(check_results(repo, write(repo, "other.json", honest)),
                   "other.json: cells.veto/files_known: does not follow from its items",
                   "metrics.mrr is 1")


# -- items that do not follow from their recorded answers ---------------------------------------

def test_an_edited_outcome_is_named(repo: Path, honest: dict[str, Any]) -> None:
    cell = "push/know_to_ask"
    item = first_failing(honest, cell)
    honest["items"][cell][item]["outcome"] = "pass"
    assert_refused(check_results(repo, write(repo, "outcome.json", honest)),
                   f"outcome.json: items.{cell}.{item}: does not follow from its recorded answer",
                   'outcome is "pass", they give "fail"')


def failing(data: dict[str, Any], cell: str, where: Callable[[dict[str, Any]], bool]) -> str:
    """The first failing item of ``cell`` whose record ``where`` accepts."""
    return next(i for i in data["cells"][cell]["failed"] if where(data["items"][cell][i]))


def _veto(record: dict[str, Any]) -> None:
    record["rank"] = 1  # a veto its hits do not hold, said to rank first


def _recall(record: dict[str, Any]) -> None:
    record.update(matched=record["gold"][:1], credited=[1], rank=1,
                  all=len(record["gold"]) == 1)


def _judged(record: dict[str, Any]) -> None:
    record["judged"] = "correct"


def _holding(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded hits holding every keyword of a writeback item."""
    return [h for h in record["hits"] if all(keyword_in(k, h["text"]) for k in record["keywords"])]


def _fact(record: dict[str, Any]) -> None:
    # The fact's gold entity said to be the one its hit names (survival is recomputed from the
    # hits, so an edited "survived" alone would not even move the cell).
    record["entity"] = _holding(record)[0]["entity"]


def _continuity(record: dict[str, Any]) -> None:
    record["keywords"] = [record["hits"][0]["text"].split()[0]]  # gold a hit holds


def _decision(record: dict[str, Any]) -> None:
    # A continuity decision's keywords said to be a word of what the writer's session left.
    written = next(h for h in record["hits"] if h["id"] not in record["seeded"])
    record["keywords"] = [written["text"].split()[-1].strip(".")]


def _push(record: dict[str, Any]) -> None:
    if record["expect"] == "silent":  # it fired: said to be a turn that should inject that
        record.update(expect="retrieve", gold=record["injected"][:1],
                      relevant=record["injected"][:1])
    else:  # it missed: said to be a turn that should stay silent
        record.update(expect="silent")


def _slug(record: dict[str, Any]) -> None:
    record["relevant"] = sorted({*record["relevant"], record["slug"]})  # said to be injected


EDITS: list[tuple[str, Callable[[dict[str, Any]], bool], Callable[[dict[str, Any]], None], str]] = [
    ("veto/files_known", lambda r: r["rank"] is None, _veto, "rank"),
    ("recall/temporal", lambda r: r["answerable"], _recall, "rank"),
    ("abstention/default", lambda r: True, _judged, "judged"),
    ("writeback/fidelity", lambda r: r["kind"] == "fact" and bool(_holding(r)), _fact, "entity"),
    ("writeback/continuity", lambda r: r.get("kind") != "decision" and bool(r["hits"]),
     _continuity, "keywords"),
    ("writeback/continuity", lambda r: r.get("kind") == "decision"
     and any(h["id"] not in r["seeded"] for h in r["hits"]), _decision, "keywords"),
    ("push/know_to_ask", lambda r: r["expect"] == "silent" or not r["injected"], _push,
     "expect"),
    ("push/push", lambda r: not r["foreign"], _slug, "relevant"),
]


@pytest.mark.parametrize(("cell", "where", "edit", "field"), EDITS, ids=[e[0] for e in EDITS])
def test_an_item_edited_to_pass_with_every_cell_recomputed_is_named(
        repo: Path, honest: dict[str, Any], cell: str, where: Callable[[dict[str, Any]], bool],
        edit: Callable[[dict[str, Any]], None], field: str) -> None:
    item = failing(honest, cell, where)
    edit(honest["items"][cell][item])
    forged = rescore(honest)
    assert item not in forged["cells"][cell]["failed"]  # the cells say it passes now
    assert_refused(check_results(repo, write(repo, "edited.json", forged)),
                   f"edited.json: items.{cell}.{item}: does not follow from its recorded "
                   f"answer and the fixtures ({field} is ")


def test_the_gold_of_an_item_is_the_fixtures_gold(repo: Path, honest: dict[str, Any]) -> None:
    # The gold cut down to what the hits matched: recall_all_at_k would rise.
    cell, item = next((c, i) for c, items in sorted(honest["items"].items())
                      if c.startswith("recall/") for i, r in sorted(items.items())
                      if r["answerable"] and r["matched"] and not r["all"])
    before = honest["cells"][cell]["metrics"]["recall_all_at_k"]
    record = honest["items"][cell][item]
    record.update(gold=record["matched"], all=True)
    forged = rescore(honest)
    assert forged["cells"][cell]["metrics"]["recall_all_at_k"] > before
    assert_refused(check_results(repo, write(repo, "gold.json", forged)),
                   f"gold.json: items.{cell}.{item}: does not follow", "(gold is ")


def test_the_shuffled_control_is_judged_from_its_recorded_answer(
        repo: Path, honest: dict[str, Any]) -> None:
    # controls_passing is zero-gated: what the controls made of each probe comes from the answer
    # the control got, which the probe records, not from a judgement anyone can edit.
    probes = honest["items"]["abstention/default"]
    item = min(i for i, r in probes.items() if r["judged_shuffled"] != "correct")
    for record in probes.values():
        record["judged_shuffled"] = "correct"
    forged = rescore(honest)
    assert forged["cells"]["abstention/default"]["metrics"]["controls_passing"] == 1
    assert_refused(check_results(repo, write(repo, "control.json", forged)),
                   f"control.json: items.abstention/default.{item}: does not follow",
                   '(judged_shuffled is "correct", they give ')


@pytest.mark.parametrize(("cell", "field", "value", "words"), [
    ("veto/files_known", "hits", "dec-001", "hits: expected a list of hits"),
    ("recall/temporal", "abstained", None, "abstained: expected true or false"),
    ("abstention/default", "shuffled", None,
     "shuffled: missing (the answer abstention/control_shuffled got)"),
])
def test_an_unreadable_recorded_answer_is_named(repo: Path, honest: dict[str, Any], cell: str,
                                                field: str, value: Any, words: str) -> None:
    item = min(honest["items"][cell])
    if value is None:
        del honest["items"][cell][item][field]
    else:
        honest["items"][cell][item][field] = value
    assert_refused(check_results(repo, write(repo, "answer.json", honest)),
                   f"answer.json: items.{cell}.{item}.{words}")


# -- items and digests against the fixtures ---------------------------------------------------------

def test_a_deleted_item_is_named(repo: Path, honest: dict[str, Any]) -> None:
    cell = "veto/files_known"
    item = first_failing(honest, cell)
    del honest["items"][cell][item], honest["digests"][cell][item]
    assert_refused(check_results(repo, write(repo, "deleted.json", rescore(honest))),
                   f"deleted.json: items.{cell}: item '{item}' of the fixtures is missing")


def test_an_added_item_is_named(repo: Path, honest: dict[str, Any]) -> None:
    cell = "recall/single-session"
    passing = next(i for i, r in honest["items"][cell].items() if r["outcome"] == "pass")
    honest["items"][cell]["extra-q99"] = honest["items"][cell][passing]
    honest["digests"][cell]["extra-q99"] = honest["digests"][cell][passing]
    assert_refused(check_results(repo, write(repo, "added.json", rescore(honest))),
                   f"added.json: items.{cell}: item 'extra-q99' is not a gold item of this cell")


def test_an_item_moved_to_another_cell_is_named(repo: Path, honest: dict[str, Any]) -> None:
    item = first_failing(honest, "recall/temporal")
    honest["items"]["recall/single-session"][item] = honest["items"]["recall/temporal"].pop(item)
    assert_refused(check_results(repo, write(repo, "moved.json", rescore(honest))),
                   "moved.json: items.recall/", repr(item))


@pytest.mark.parametrize(("field", "where"), [
    ("digests", lambda d: ("veto/files_known", min(d["digests"]["veto/files_known"]))),
    ("corpus", lambda d: ("veto", min(d["corpus"]["veto"]))),
])
def test_an_edited_digest_is_named(repo: Path, honest: dict[str, Any], field: str,
                                   where: Callable[[dict[str, Any]], tuple[str, str]]) -> None:
    group, item = where(honest)
    honest[field][group][item] = "0" * 16
    assert_refused(check_results(repo, write(repo, "digest.json", honest)),
                   f"digest.json: {field}.{group}.{item}: '{'0' * 16}' is not the fixtures' digest")


def test_bless_refuses_a_tampered_results_file(repo: Path, honest: dict[str, Any]) -> None:
    before = (repo / "baselines/main.json").read_bytes()
    cell = "writeback/fidelity"
    honest["cells"][cell]["metrics"]["write_back_fidelity"] = 1
    assert_refused(gate(repo, "bless", "--results", write(repo, "bless.json", honest),
                        "--base-ref", "HEAD"),
                   f"bless.json: cells.{cell}: does not follow from its items")
    assert (repo / "baselines/main.json").read_bytes() == before


# -- merge ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def parts(repo: Path) -> list[str]:
    names = [f"part-{index}.json" for index in (1, 2)]
    for index, name in enumerate(names, 1):
        done = run_cli("run", "--shard", f"{index}/2", "--out", name, cwd=repo)
        assert done.returncode == 0, done.stderr
    return names


def read(repo: Path, name: str) -> dict[str, Any]:
    return json.loads((repo / name).read_text(encoding="utf-8"))


def test_merging_untampered_parts_gates_like_the_whole_run(repo: Path, parts: list[str]) -> None:
    assert gate(repo, "merge", *parts, "--out", "merged.json")[0] == 0
    assert check_results(repo, "merged.json")[0] == 0


def test_merge_refuses_a_part_whose_cell_was_edited(repo: Path, parts: list[str]) -> None:
    data = read(repo, parts[1])
    cell = next(c for c in sorted(data["cells"]) if c.startswith("veto/"))
    data["cells"][cell]["metrics"]["mrr"] = 1
    write(repo, "edited-2.json", data)
    code, lines = gate(repo, "merge", parts[0], "edited-2.json", "--out", "bad.json")
    assert_refused((code, lines), f"edited-2.json: cells.{cell}: does not follow from its items")
    assert_error_verdict(repo / "bad.json")


def test_merge_refuses_a_part_whose_item_was_edited_to_pass(repo: Path, parts: list[str]) -> None:
    data = read(repo, parts[1])
    cell = next(c for c in sorted(data["cells"]) if c.startswith("veto/")
                and data["cells"][c]["failed"])
    item = first_failing(data, cell)
    data["items"][cell][item]["rank"] = 1
    write(repo, "edited-2.json", rescore(data))
    assert_refused(gate(repo, "merge", parts[0], "edited-2.json", "--out", "bad.json"),
                   f"edited-2.json: items.{cell}.{item}: does not follow", "rank is 1")
    assert_error_verdict(repo / "bad.json")


def test_merge_refuses_a_part_missing_an_item_of_its_shard(repo: Path, parts: list[str]) -> None:
    data = read(repo, parts[0])
    cell = "push/know_to_ask"
    item = min(data["items"][cell])
    del data["items"][cell][item], data["digests"][cell][item]
    write(repo, "short-1.json", rescore(data))
    assert_refused(gate(repo, "merge", "short-1.json", parts[1], "--out", "bad.json"),
                   f"short-1.json: items.{cell}: item '{item}' of the fixtures is missing")
