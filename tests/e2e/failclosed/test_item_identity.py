"""A gold item is its content, item keys are unique, and invariants are always measured — through
the CLI on real git repositories (a bare origin, a pull request's clone, CI mode).

Each attack is a pull request that makes the memory worse and hides it with edits a reviewer reads
as routine — reworded fixtures, colliding ids, a dropped suite — and each has its control: the same
change made honestly (with a justification naming what it changes) passes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from membench_gate.files import data_dir
from membench_gate.model.results import dumps_baseline, parse_results
from tests.support.cli import run_cli
from tests.support.gitrepos import bare_origin, commit, pr_clone
from tests.support.memrepo import PROBES, check, config_text, fixture_files, gate, memory_origin


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return memory_origin(tmp_path_factory.mktemp("origin"))


def commit_run_as_baseline(repo: Path, justification: dict | None = None) -> None:
    """What a PR author can always do by hand: commit this run's numbers as the baseline."""
    done = gate(repo, "run", "--out", str(repo.parent / "r.json"))
    assert done.returncode == 0, done.stderr
    results = parse_results((repo.parent / "r.json").read_bytes(), "r.json")
    data = json.loads(dumps_baseline(results.to_baseline()))
    if justification is not None:
        data["justification"] = justification
    commit(repo, "baseline by hand", {"baselines/main.json": json.dumps(data, indent=2) + "\n"})


# A coarser embedding (4 buckets): the unanswerable p3 and the (abstained) p4 now collide with
# f1 and are answered wrongly.
WORSE = config_text().replace("tau = 0.3", "tau = 0.3\ndims = 4")
# Both reworded so that no token reaches the embedder: the worse memory abstains on them again,
# as the base's memory did, and every metric is back at the base's.
REWORDED = [dict(p) for p in PROBES]
REWORDED[2]["question"] = "Is it so?"
REWORDED[3]["question"] = "Do we?"


def test_a_newly_failing_item_reworded_until_it_passes_is_a_changed_item(work: Path) -> None:
    """Issue seen: a worse memory made probes fail; the PR reworded exactly those until they
    passed and blessed: no breach, exit 0. Rule 7 only looked at items that failed at base."""
    commit(work, "worse memory", {"membench.toml": WORSE})
    assert check(work, ci=True).code == 1  # the regression itself, before any rewording
    commit(work, "reword p3", fixture_files(probes=REWORDED))
    done = gate(work, "bless")
    assert done.returncode == 1 and "abstention/default#p3" in done.stderr, done.stderr
    commit_run_as_baseline(work)
    result = check(work, ci=True)
    assert result.code == 1, result.stderr
    changed = [b for b in result.verdict["breaches"] if b["kind"] == "item-changed"]
    assert sorted((b["key"], b["base"], b["head"]) for b in changed) == [
        ("abstention/default#p3", "pass", "pass"), ("abstention/default#p4", "fail", "fail")]
    # The reworded items score as at the base and so does every gated metric: only the items'
    # identity gives the regression away.
    assert [b["kind"] for b in result.verdict["breaches"]] == ["item-changed"] * 2
    assert "abstention/default#p3" in result.files["report.md"]


def test_a_reworded_item_with_a_justification_naming_its_cell_passes(work: Path) -> None:
    """The honest control: a reworded probe, blessed with a reason naming its cell."""
    commit(work, "reword p3", fixture_files(probes=REWORDED))
    why = ("The abstention/default probes about the docs CDN and lunch were reworded to the "
           "shorter questions our support channel actually receives from customers")
    done = gate(work, "bless", "--justification", why)
    assert done.returncode == 0, done.stderr
    commit(work, "bless", {})
    result = check(work, ci=True)
    assert (result.code, result.verdict["blessed"]) == (0, True), result.stderr
    assert result.verdict["justification_check"]["status"] == "passed"


# -- every item key is unique within its suite, composite keys included ---------------------------

def _session(ident: str, fact: str) -> dict:
    return {"id": ident, "source": "work",
            "turns": [{"id": "t1", "speaker": "Priya", "text": "Atlas launches on May 12."}],
            "gold_facts": [{"id": fact, "keywords": ["Atlas", "May 12"], "entity": "atlas",
                            "turn": "t1"}]}


def _conversation(ident: str, slug: str) -> dict:
    return {"id": ident, "source": "work",
            "pages": [{"slug": slug, "text": "Priya Raman runs the payments team.",
                       "aliases": ["Priya"], "source": "work"}],
            "turns": [{"id": "t1", "text": "Ask Priya about the payments team.",
                       "expect": "retrieve", "gold": [slug]}]}


@pytest.mark.parametrize(("suite", "folder", "documents", "key"), [
    # "a" + "b.c" and "a.b" + "c": one writeback item key, a.b.c
    ("writeback", "sessions", {"one": _session("a", "b.c"), "two": _session("a.b", "c")},
     "'a.b.c'"),
    # "a" + "b/c" and "a/b" + "c": one push corpus key, a/b/c
    ("push", "conversations", {"one": _conversation("a", "b/c"), "two": _conversation("a/b", "c")},
     "'a/b/c'"),
])
def test_colliding_composite_keys_are_an_error_naming_both_files(
        tmp_path: Path, suite: str, folder: str, documents: dict, key: str) -> None:
    for name, document in documents.items():
        target = tmp_path / "fx" / folder / f"{name}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(document))
    (tmp_path / "membench.toml").write_text(f'[suites.{suite}]\nfixtures = ["fx"]\n')
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert f"fx/{folder}/one.json" in line and f"fx/{folder}/two.json" in line and key in line, line
    assert "Traceback" not in done.stderr
    # Control: the same documents with keys that do not collide run.
    second = documents["two"]
    second["id"] = "z"
    (tmp_path / "fx" / folder / "two.json").write_text(json.dumps(second))
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


# -- invariants are always measured --------------------------------------------------------------

LEAKY = '''\
from membench_gate.reference import ReferenceMemory


class Leaky(ReferenceMemory):
    """The reference memory, except that every push also injects a page of another source."""

    def reset(self):
        self.everything = []
        super().reset()

    def ingest(self, records):
        self.everything = [*getattr(self, "everything", []), *records]
        super().ingest(records)

    def push(self, query):
        ids = list(super().push(query))[: query.k - 1]
        foreign = [r.id for r in self.everything if r.source != query.source and r.id not in ids]
        return ids + foreign[:1]
'''

PUSH_TABLE = '[suites.push]\nfixtures = ["pushfx"]\nbudget = 3\n'


def _push_fixtures() -> dict[str, str]:
    """Two of the shipped push conversations (pages in two sources each), as the repository's
    own fixture folder ``pushfx``."""
    shipped = data_dir() / "fixtures" / "push" / "conversations"
    return {f"pushfx/conversations/{name}": (shipped / name).read_text()
            for name in ("conv-01.json", "conv-02.json")}


@pytest.fixture(scope="module")
def push_origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare origin whose main gates abstention and push (its own fixtures), blessed."""
    return bare_origin_of(tmp_path_factory.mktemp("push-origin") / "seed")


def bare_origin_of(seed: Path) -> Path:
    from tests.support.cli import seed_repo

    files = {"membench.toml": config_text(extra=PUSH_TABLE), "leaky.py": LEAKY,
             **fixture_files(), **_push_fixtures()}
    return bare_origin(seed_repo(seed, files))


DROP_REASON = ("We dropped the push/know_to_ask and push/push cells: proactive push moved to the "
               "assistant service, which runs its own conversation benchmark with its own owners")


def _drop_push(repo: Path, adapter: str | None) -> None:
    text = config_text()  # no [suites.push]
    if adapter is not None:
        text = f'[adapter]\npython = "{adapter}"\n' + text
    commit(repo, "drop the push suite", {
        "membench.toml": text,
        **{name: None for name in _push_fixtures()},
    })


def test_a_dropped_suite_is_still_measured_for_its_invariants(push_origin: Path,
                                                             tmp_path: Path) -> None:
    """Issue seen: the memory leaks across sources; the PR drops [suites.push] (and its fixture
    folder) and blesses the missing cell with one sentence: exit 0."""
    work = pr_clone(push_origin, tmp_path / "work")
    _drop_push(work, "leaky:Leaky")
    done = gate(work, "bless", "--justification", DROP_REASON)
    assert done.returncode == 1, done.stderr
    assert "push/know_to_ask:source_isolation_violations" in done.stderr
    commit_run_as_baseline(work, {"text": DROP_REASON,
                                  "breaches": ["push/know_to_ask", "push/push"]})
    result = check(work, ci=True)
    assert result.code == 1, result.stderr
    zero = next(b for b in result.verdict["breaches"] if b["kind"] == "zero")
    assert zero["key"] == "push/know_to_ask:source_isolation_violations" and zero["head"] > 0
    assert "measured with the base's suite table and fixtures" in zero["detail"]
    # The same leak with the suite kept is caught by the run itself: the two agree.
    kept = pr_clone(push_origin, tmp_path / "kept")
    text = '[adapter]\npython = "leaky:Leaky"\n' + config_text(extra=PUSH_TABLE)
    commit(kept, "leaky memory", {"membench.toml": text})
    result = check(kept, ci=True)
    assert result.code == 1
    assert next(b for b in result.verdict["breaches"] if b["kind"] == "zero")["head"] == \
        zero["head"]


def test_dropping_a_suite_whose_invariants_hold_is_blessable(push_origin: Path,
                                                              tmp_path: Path) -> None:
    """The control: an honest memory dropping the suite passes with a justification, and the
    report says the invariants were measured on the base's fixtures."""
    work = pr_clone(push_origin, tmp_path / "work")
    _drop_push(work, None)
    done = gate(work, "bless", "--justification", DROP_REASON)
    assert done.returncode == 0, done.stderr
    commit(work, "bless", {})
    result = check(work, ci=True)
    assert (result.code, result.verdict["blessed"]) == (0, True), result.stderr
    assert any(note.startswith("push/push: its invariants were measured with the base's "
                               "suite table and fixtures, which this run dropped, and hold")
               for note in result.verdict["notes"])


# -- inputs before the pull request's code ------------------------------------------------------

TAMPERING = '''\
from pathlib import Path

from membench_gate.reference import ReferenceMemory


class Tampering(ReferenceMemory):
    """The reference memory, whose start-up rewrites what the gate reads: the committed
    baseline (garbage) and the fixtures (p4 made easy)."""

    def __init__(self, **options):
        Path("baselines/main.json").write_text("{ not a baseline")
        probes = Path("fx/probes.json")
        probes.write_text(probes.read_text().replace("What time is lunch served?",
                                                     "When do staging deploys run every weekday?"))
        super().__init__(**options)
'''


def test_what_the_adapter_rewrites_at_start_up_was_read_before_it_started(work: Path) -> None:
    """The base, the committed baseline and the fixtures are read before any code of the pull
    request runs: an adapter that rewrites them when it starts changes nothing."""
    text = '[adapter]\npython = "tampering:Tampering"\n' + config_text()
    commit(work, "a tampering memory", {"tampering.py": TAMPERING, "membench.toml": text})
    result = check(work, ci=True)
    assert result.code == 0, (result.stderr, result.verdict["breaches"])
    assert result.verdict["mode"] == "same-hash"
    assert json.loads(result.files["results.json"])["cells"]["abstention/default"]["failed"] == \
        ["p4"]  # measured on the fixtures as committed: p4 still fails
    # The control: the adapter did run its tampering.
    assert (work / "baselines" / "main.json").read_text() == "{ not a baseline"
    assert "When do staging deploys" in (work / "fx" / "probes.json").read_text()


def test_the_base_fixtures_are_read_from_a_shallow_merge_commit_checkout(push_origin: Path,
                                                                          tmp_path: Path) -> None:
    """The same attack as GitHub runs it: the merge commit checked out at depth 1, the base
    commit (and its fixture folder) fetched on demand."""
    from tests.support.gaterepo import push_pr
    from tests.support.gitrepos import git, github_env

    main_sha = git(push_origin, "rev-parse", "main")
    dev = pr_clone(push_origin, tmp_path / "dev", branch="feature")
    text = '[adapter]\npython = "leaky:Leaky"\n' + config_text()
    ci = push_pr((push_origin, main_sha), dev, tmp_path, "drop",
                 {"membench.toml": text, **{name: None for name in _push_fixtures()}})
    assert git(ci.path, "rev-parse", "--is-shallow-repository") == "true"
    assert not (ci.path / "pushfx").exists()
    env = github_env("pull_request", ci.event, ci.merge_sha)
    result = check(ci.path, ci=True, env=env)
    # The baseline was not re-blessed: BLESS REQUIRED at least — but the leak is a REGRESSION,
    # which comes first, measured on the base's fixtures fetched from origin.
    assert result.code == 1, result.stderr
    assert result.verdict["base"]["sha"] == main_sha
    zero = next(b for b in result.verdict["breaches"] if b["kind"] == "zero")
    assert zero["key"] == "push/know_to_ask:source_isolation_violations" and zero["head"] > 0
