"""Red team of issue 21: a pull request author who wants a worse memory to land, through the CLI
in CI mode on real git repositories (a bare origin, a pull request's clone, GitHub's merge commit
checked out at depth 1).

Each attack is a test asserting what docs/gate.md and the design promise. Each has its control:
the same worse memory without the hiding edit is caught, or the same honest change without the
odd repository shape passes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from membench_gate.model.results import dumps_baseline, parse_results
from tests.support.cli import seed_repo
from tests.support.gaterepo import push_pr
from tests.support.gitrepos import bare_origin, commit, git, github_env, pr_clone
from tests.support.memrepo import check, gate
from tests.support.paths import BUILTIN

# Drops the source filter in the "oss" conversations (conv-06 and conv-10 of the built-in push
# fixtures): it injects a page of another source on every turn there, a source-isolation
# violation, and behaves like the reference memory everywhere else.
LEAKY = '''\
from membench_gate.reference import ReferenceMemory


class Leaky(ReferenceMemory):
    def ingest(self, records):
        super().ingest(records)
        self.foreign = sorted(r.id for r in records if r.source != "oss")

    def push(self, query):
        if query.source == "oss":
            return self.foreign[:1] + super().push(query)[:2]
        return super().push(query)
'''

# Returns only its best hit: with k = 5 the suite now measures recall@1.
TOP_ONE = '''\
from membench_gate.reference import ReferenceMemory


class TopOne(ReferenceMemory):
    def search(self, query):
        answer = super().search(query)
        return type(answer)(hits=list(answer.hits)[:1], abstain=answer.abstain)
'''

LEAKING = ("conv-06", "conv-10", "conv-13")  # the conversations whose source is "oss"
PUSH = """\
[adapter]
python = "{adapter}"
{veto}[suites.push]
fixtures = ["{folder}"]
budget = 3
"""
VETO = '[suites.veto]\nfixtures = ["builtin"]\nk = {k}\n'


def push_config(adapter: str = "membench_gate.reference:ReferenceMemory", folder: str = "fx/push",
                veto: bool = False, k: int = 5) -> str:
    return PUSH.format(adapter=adapter, folder=folder, veto=VETO.format(k=k) if veto else "")


def push_fixtures(folder: str = "fx/push") -> dict[str, str]:
    """The built-in push conversations as files of the repository, under ``folder``."""
    return {f"{folder}/conversations/{path.name}": path.read_text(encoding="utf-8")
            for path in sorted((BUILTIN / "push" / "conversations").glob("*.json"))}


def conversation(repo: Path, name: str, folder: str = "fx/push") -> tuple[Path, dict]:
    path = repo / folder / "conversations" / f"{name}.json"
    return path, json.loads(path.read_text(encoding="utf-8"))


def bless(repo: Path, justification: str | None = None) -> None:
    args = ["bless"] + (["--justification", justification] if justification else [])
    done = gate(repo, *args, ci=True)
    assert done.returncode == 0, done.stdout + done.stderr
    commit(repo, "bless baseline", {})


def refused_then_committed_by_hand(repo: Path, justification: str | None, *needles: str) -> None:
    """``bless`` refuses (naming each needle); the author commits this run's numbers as the
    baseline by hand anyway, with the justification the bless would have recorded."""
    args = ["bless"] + (["--justification", justification] if justification else [])
    done = gate(repo, *args, ci=True)
    assert done.returncode == 1, done.stdout + done.stderr
    for needle in needles:
        assert needle in done.stderr, (needle, done.stderr)
    out = repo.parent / f"{repo.name}-run.json"
    assert gate(repo, "run", "--out", str(out)).returncode == 0
    results = parse_results(out.read_bytes(), str(out))
    data = json.loads(dumps_baseline(results.to_baseline()))
    if justification:
        data["justification"] = {"text": justification, "breaches": []}
    commit(repo, "baseline by hand", {"baselines/main.json": json.dumps(data, indent=2) + "\n"})


@pytest.fixture(scope="module")
def push_origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare origin whose main gates the built-in push conversations (copied into fx/push) on
    the reference memory, blessed: no source-isolation violation."""
    root = tmp_path_factory.mktemp("push-origin")
    return bare_origin(seed_repo(root / "seed", {"membench.toml": push_config(),
                                                 **push_fixtures()}))


# -- 1. a source-isolation leak made blessable by holding out (or dropping) the leaking items ----

HOLDOUT_REASON = ("Conversations conv-06, conv-10 and conv-13 move to the holdout set of the push "
                  "cells so "
                  "tuning never sees them; push_precision, know_to_ask_failure_rate, push_recall "
                  "and false_fire_rate shift with the smaller mix")


def _leaky_pr(origin: Path, tmp_path: Path, hide: bool) -> Path:
    """The feature branch of a pull request bringing the leaky memory, blessed; ``hide`` marks
    the two leaking conversations ``"holdout": true`` first."""
    dev = pr_clone(origin, tmp_path / "dev", branch="feature")
    files = {"leaky.py": LEAKY, "membench.toml": push_config("leaky:Leaky")}
    commit(dev, "a leaky memory", files)
    if hide:
        for name in LEAKING:
            path, data = conversation(dev, name)
            path.write_text(json.dumps({**data, "holdout": True}, indent=2) + "\n")
        commit(dev, "hold out two conversations", {})
    return dev


def test_control_a_leak_in_some_conversations_is_a_regression(push_origin: Path,
                                                              tmp_path: Path) -> None:
    dev = _leaky_pr(push_origin, tmp_path, hide=False)
    refused = gate(dev, "bless", "--justification", HOLDOUT_REASON, ci=True)
    assert refused.returncode == 1 and "source_isolation_violations" in refused.stderr
    result = check(dev, ci=True)
    assert result.code == 1
    zero = [b for b in result.verdict["breaches"] if b["kind"] == "zero"]
    assert [b["key"] for b in zero] == ["push/know_to_ask:source_isolation_violations",
                                        "push/push:source_isolation_violations"]



def test_a_leak_hidden_by_holding_out_the_leaking_conversations_is_a_regression(
        push_origin: Path, tmp_path: Path) -> None:
    """GitHub's shape: the merge commit checked out at depth 1, the base its first parent."""
    dev = _leaky_pr(push_origin, tmp_path, hide=True)
    # The leaking conversations are measured at the base's fixtures: bless refuses.
    refused_then_committed_by_hand(dev, HOLDOUT_REASON,
                                   "push/know_to_ask:source_isolation_violations")
    main_sha = git(push_origin, "rev-parse", "main")
    ci = push_pr((push_origin, main_sha), dev, tmp_path, "holdout", {})
    assert git(ci.path, "rev-parse", "--is-shallow-repository") == "true"
    result = check(ci.path, ci=True, env=github_env("pull_request", ci.event, ci.merge_sha))
    assert result.verdict["base"]["how"] == "merge-commit-parent"
    # The memory leaks on every turn of conv-06 and conv-10 (the control above): it must not land.
    assert result.code == 1, (result.stdout, result.verdict["breaches"])
    assert any(b["kind"] == "zero" for b in result.verdict["breaches"])


# -- 2. a newly failing item fixed by rewording the distractor that outranks it ------------------

DECISIONS = [
    {"id": "dec-cache", "decision": "Session data lives in Redis with a 30 minute expiry.",
     "rationale": "Sticky sessions broke every deploy.",
     "rejected": [{"option": "In-process session cache",
                   "reason": "Lost on every restart and not shared across pods."}],
     "files": ["web/session.py"]},
    {"id": "dec-notes", "decision": "Team notes: the in-process session cache for the web tier was "
     "discussed at the offsite; caching sessions in process memory keeps the web tier fast.",
     "rationale": "Meeting minutes about the session cache in process memory.",
     "files": ["docs/offsite.md"]},
    {"id": "dec-money", "decision": "Amounts are integer cents with a currency code.",
     "rationale": "Float sums drifted by a cent at month end.",
     "rejected": [{"option": "Float amounts", "reason": "Binary floats cannot hold 0.10 exactly."}],
     "files": ["billing/money.py"]},
]
SCENARIOS = {"as_of": "2025-01-01", "scenarios": [
    {"id": "scn-cache", "task": "Move the web tier's session cache into process memory so "
     "sessions are fast.", "files": ["web/session.py"], "veto_decision_id": "dec-cache",
     "trap": "direct", "rejected_option": "In-process session cache"},
    {"id": "scn-money", "task": "Store invoice amounts as float so the export is simpler.",
     "files": ["billing/money.py"], "veto_decision_id": "dec-money", "trap": "direct",
     "rejected_option": "Float amounts"},
]}
VETO_ONLY = """\
[adapter]
python = "{adapter}"
[suites.veto]
fixtures = ["fx/veto"]
k = 5
"""


@pytest.fixture
def veto_pr(tmp_path: Path) -> Path:
    """A pull request's clone of a repository gating two scenarios and one distractor decision
    (``dec-notes``) on the reference memory, bringing the top-one memory."""
    seed = seed_repo(tmp_path / "seed", {
        "membench.toml": VETO_ONLY.format(adapter="membench_gate.reference:ReferenceMemory"),
        "fx/veto/decisions.json": json.dumps(DECISIONS, indent=2),
        "fx/veto/scenarios.json": json.dumps(SCENARIOS, indent=2)})
    work = pr_clone(bare_origin(seed), tmp_path / "work")
    commit(work, "a faster memory", {"top_one.py": TOP_ONE,
                                     "membench.toml": VETO_ONLY.format(adapter="top_one:TopOne")})
    return work


def test_control_the_top_one_memory_is_a_regression(veto_pr: Path) -> None:
    result = check(veto_pr, ci=True)
    assert result.code == 1
    assert result.verdict["newly_failed"] == {"veto/files_unknown": ["scn-cache", "scn-money"]}



def test_newly_failing_items_fixed_by_rewording_their_distractor_do_not_pass(veto_pr: Path
                                                                             ) -> None:
    decisions = [{**d, "decision": "Picnic schedule for July.", "rationale": "Logistics only.",
                  "files": []} if d["id"] == "dec-notes" else d for d in DECISIONS]
    commit(veto_pr, "tidy the offsite notes",
           {"fx/veto/decisions.json": json.dumps(decisions, indent=2)})
    # A corpus item is its content: the reworded distractor is the old one removed.
    refused_then_committed_by_hand(veto_pr, None, "veto:corpus-removed")
    result = check(veto_pr, ci=True)
    assert result.verdict["fixture_diff"]["changed"] == {"veto:corpus": ["dec-notes"]}
    assert "veto:corpus-removed" in [b["key"] for b in result.verdict["breaches"]]
    # The memory still answers recall@1 where the gate asks recall@5: it must not pass unseen.
    assert result.code != 0, result.verdict


# -- 3. symlinks in the base's fixture folder: the invariant run ------------------------------

DROP_REASON = ("The push suite moves to the conversations service repository; push/push is "
               "no longer measured here")


def _symlinked_origin(root: Path, links: str) -> Path:
    """A bare origin gating veto (built-in) and push on fixtures where ``links`` is ``folder``
    (fx/push is a symlink to data/push) or ``files`` (the leaking conversations are symlinks to
    shared/), blessed — the way a repository dedupes fixtures it shares."""

    def setup(repo: Path) -> None:
        if links == "folder":
            for name, text in push_fixtures("data/push").items():
                (repo / name).parent.mkdir(parents=True, exist_ok=True)
                (repo / name).write_text(text, encoding="utf-8")
            (repo / "fx").mkdir()
            os.symlink("../data/push", repo / "fx" / "push")
            return
        for name, text in push_fixtures().items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text, encoding="utf-8")
        (repo / "shared").mkdir()
        for name in LEAKING:
            path = repo / "fx/push/conversations" / f"{name}.json"
            path.rename(repo / "shared" / path.name)
            os.symlink(f"../../../shared/{path.name}", path)

    seed = seed_repo(root / "seed", {"membench.toml": push_config(veto=True)}, setup)
    return bare_origin(seed)


def test_control_a_dropped_push_suite_is_measured_for_its_invariants(push_origin: Path,
                                                                     tmp_path: Path) -> None:
    """Regular files at the base: the leak is measured on the base's push fixtures."""
    work = pr_clone(push_origin, tmp_path / "work")
    commit(work, "leaky, push dropped", {
        "leaky.py": LEAKY, "membench.toml": push_config("leaky:Leaky", veto=True).split(
            "[suites.push]")[0]})
    result = check(work, ci=True)
    assert result.code == 1
    assert any(b["kind"] == "zero" for b in result.verdict["breaches"])



def test_a_dropped_suite_whose_leaking_fixtures_are_symlinks_is_still_measured(
        tmp_path: Path) -> None:
    work = pr_clone(_symlinked_origin(tmp_path, "files"), tmp_path / "work")
    commit(work, "a leaky memory", {"leaky.py": LEAKY,
                                    "membench.toml": push_config("leaky:Leaky", veto=True)})
    # Control: measured where it stands, the leak is seen (symlinks followed in the work tree).
    assert check(work, ci=True).code == 1
    commit(work, "drop push", {
        "membench.toml": push_config("leaky:Leaky", veto=True).split("[suites.push]")[0]})
    refused_then_committed_by_hand(work, DROP_REASON,
                                   "push/know_to_ask:source_isolation_violations")
    result = check(work, ci=True)
    assert result.code == 1, result.stdout
    assert any(b["kind"] == "zero" for b in result.verdict["breaches"])



def test_an_honest_pr_passes_when_the_base_fixture_folder_is_a_symlink(tmp_path: Path) -> None:
    work = pr_clone(_symlinked_origin(tmp_path, "folder"), tmp_path / "work")
    assert check(work, ci=True).code == 0  # control: the unchanged PR passes
    commit(work, "veto k 6", {"membench.toml": push_config(veto=True, k=6)})
    bless(work, "veto k raised to 6 for every veto cell because the task prompts grew longer "
                "this quarter; option k")
    result = check(work, ci=True)
    assert result.code == 0, (result.stderr, result.verdict.get("notes"))


# -- 4. the scoreboard's words for removed items ----------------------------------------------


def test_removed_items_that_passed_at_base_are_not_called_failing(push_origin: Path,
                                                                  tmp_path: Path) -> None:
    dev = _leaky_pr(push_origin, tmp_path, hide=True)
    result = check(dev, ci=True)
    removed = [b for b in result.verdict["breaches"] if b["kind"] == "item-removed"]
    assert removed and all(b["key"].startswith(("push/know_to_ask#conv-", "push/push#conv-"))
                           for b in removed)
    base = json.loads(result.files["base.json"] or "{}")
    for b in removed:  # every one of them passed at base
        cell, _, item = b["key"].partition("#")
        assert item not in base["cells"][cell]["failed"]
    assert "removed while failing at base" not in result.stdout
