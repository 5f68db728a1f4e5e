"""The base side fails closed: a pull request never decides where its yardstick is read from.

Through the CLI on real git repositories: a bare origin, clones, depth-1 single-branch clones, a
config or baseline moved or replaced by a symlink, a base with a gate but no baseline, no base
at all. Each test asserts the exit code and the files the check leaves behind.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from membench_gate.model.results import dumps_baseline, parse_results
from tests.support.gitrepos import bare_origin, clone, commit, git, init, pr_clone
from tests.support.memrepo import (
    TAU_REASON,
    check,
    config_text,
    fixture_files,
    gate,
    memory_origin,
    memory_repo,
)

FLOOR = '[floors]\n"abstention/default:net_at_1" = 0.2\n'


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare origin whose main has the small memory, blessed (net_at_1 = 0.5), floor 0.2."""
    return memory_origin(tmp_path_factory.mktemp("origin"),
                         {"membench.toml": config_text(extra=FLOOR)})


# -- the baseline path comes from the base's config ---------------------------------------------

def test_moving_the_baseline_is_a_breach_compared_at_the_base_path(work: Path) -> None:
    """Issue seen: `[gate] baseline` moved and blessed there gave PASS in bootstrap mode."""
    moved = config_text(tau=0.2, extra='[gate]\nbaseline = "bench/new.json"\n' + FLOOR)
    commit(work, "move the baseline and raise tau", {"membench.toml": moved})
    done = gate(work, "bless", "--base-ref", "origin/main")
    assert done.returncode == 1 and "--justification is required" in done.stderr
    assert not (work / "bench/new.json").exists()
    done = gate(work, "bless", "--base-ref", "origin/main", "--justification", TAU_REASON)
    assert done.returncode == 1  # the reason must name the move too
    assert "does not name 'baseline-moved' or its cell 'gate'" in done.stderr
    why = TAU_REASON + "; the gate baseline moved to bench/new.json with the benchmark folder"
    done = gate(work, "bless", "--justification", why)
    assert done.returncode == 0, done.stderr
    blessed = json.loads((work / "bench/new.json").read_text())
    assert "gate:baseline-moved" in blessed["justification"]["breaches"]
    commit(work, "bless at the new path", {})

    result = check(work, ci=True)
    assert result.code == 0, result.stderr
    assert result.verdict["mode"] == "same-hash"  # compared, never a bootstrap
    assert result.verdict["blessed"] is True and "gate:baseline-moved" in result.breach_keys()
    moved_breach = next(b for b in result.verdict["breaches"] if b["kind"] == "baseline-moved")
    assert (moved_breach["base"], moved_breach["head"]) == ("baselines/main.json",
                                                             "bench/new.json")
    # The base's baseline is what --base-out hands over, read at the base's path.
    assert json.loads(result.files["base.json"])["config"]["adapter"]["options"]["tau"] == 0.3


def test_moving_the_config_away_keeps_the_base_gate_as_the_yardstick(work: Path) -> None:
    """Issue seen: a PR that moved membench.toml into bench/, dropped the floors, raised tau and
    blessed a baseline beside it passed in CI as a bootstrap ("baseline introduced")."""
    (work / "bench").mkdir()
    git(work, "rm", "-q", "membench.toml", "baselines/main.json")
    moved = config_text(tau=0.2, extra='[gate]\nbaseline = "baseline.json"\n').replace(
        'fixtures = ["fx"]', 'fixtures = ["../fx"]')
    commit(work, "move the gate into bench/", {"bench/membench.toml": moved})
    done = gate(work, "bless", "--config", "bench/membench.toml")
    assert done.returncode == 1 and "--justification is required" in done.stderr
    # The pull request writes the baseline beside its config itself.
    assert gate(work, "run", "--config", "bench/membench.toml", "--out", "r.json").returncode == 0
    results = parse_results((work / "r.json").read_bytes(), "r.json")
    (work / "r.json").unlink()
    commit(work, "a baseline beside it", {"bench/baseline.json": dumps_baseline(
        results.to_baseline())})

    result = check(work, "--config", "bench/membench.toml", ci=True)
    assert result.code == 1, result.stdout + result.stderr
    # Compared with the base's baseline, never a bootstrap; the fixtures option now reads
    # "../fx", which is a change of the measurement like any other.
    assert result.verdict["mode"] == "corpus-bless"
    assert {"gate:baseline-moved", "abstention:option:fixtures"} <= set(result.breach_keys())
    moved_breach = next(b for b in result.verdict["breaches"] if b["kind"] == "baseline-moved")
    assert (moved_breach["base"], moved_breach["head"]) == ("baselines/main.json",
                                                             "bench/baseline.json")
    assert "abstention/default:net_at_1" in result.breach_keys()  # the tau regression

    # Decided from the commit, not the work tree: an untracked file at the root changes nothing.
    (work / "membench.toml").write_text(config_text(), encoding="utf-8")
    assert check(work, "--config", "bench/membench.toml", ci=True).code == 1
    (work / "membench.toml").unlink()

    # With a config still at the default path, bench/ holds a second gate of the repository,
    # new in this pull request: introduced like any first gate (rule 10), not compared with the
    # other gate's baseline.
    commit(work, "a second gate at the root", {"membench.toml": config_text()})
    result = check(work, "--config", "bench/membench.toml", ci=True)
    assert (result.code, result.verdict["mode"]) == (0, "bootstrap"), result.stdout
    assert "gate:baseline-moved" not in result.breach_keys()


def test_moved_baseline_without_justification_is_a_regression(work: Path) -> None:
    (work / "bench").mkdir()
    git(work, "mv", "baselines/main.json", "bench/main.json")
    commit(work, "move", {"membench.toml": config_text(
        extra='[gate]\nbaseline = "bench/main.json"\n' + FLOOR)})
    result = check(work, ci=True)
    assert result.code == 1, result.stderr
    assert result.breach_keys() == ["gate:baseline-moved"]
    assert result.verdict["justification_check"]["status"] == "missing"


def test_a_symlinked_baseline_is_an_error_in_ci(work: Path) -> None:
    """Issue seen: replacing baselines/main.json by a symlink to a new file passed."""
    shutil.copy(work / "baselines/main.json", work / "baselines/mine.json")
    (work / "baselines/main.json").unlink()
    os.symlink("mine.json", work / "baselines/main.json")
    commit(work, "symlink the baseline", {})
    result = check(work, ci=True)
    result.assert_error("baselines/main.json", "symlink")


def test_a_baseline_path_through_a_symlinked_folder_is_read_where_it_names(work: Path) -> None:
    """Issue seen: `baseline = "x/../baselines/main.json"`, x a symlink into alt/deep/, named
    the base's path to the gate but baselines/main.json under alt/deep/ to the file system: the
    bless went there, baselines/ stayed untouched in the diff and a regression passed in CI."""
    (work / "alt/deep/x").mkdir(parents=True)
    (work / "alt/deep/x/.keep").touch()
    os.symlink("alt/deep/x", work / "x")
    before = (work / "baselines/main.json").read_text()
    commit(work, "route the baseline through a symlink", {"membench.toml": config_text(
        tau=0.2, extra='[gate]\nbaseline = "x/../baselines/main.json"\n' + FLOOR)})
    done = gate(work, "bless", "--justification", TAU_REASON)
    assert done.returncode == 0, done.stderr
    assert not (work / "alt/deep/baselines").exists()
    blessed = (work / "baselines/main.json").read_text()
    assert blessed != before and TAU_REASON in blessed  # the bless shows in baselines/
    commit(work, "bless", {})

    result = check(work, ci=True)
    assert result.code == 0 and result.verdict["blessed"] is True, result.stdout
    assert "gate:baseline-moved" not in result.breach_keys()  # the very path of the base


def test_a_symlinked_config_is_an_error_in_ci_and_never_drops_the_base_floors(
        work: Path) -> None:
    """Issue seen: `membench.toml -> bench/gate.toml` without [floors] let a floor breach pass."""
    (work / "bench/baselines").mkdir(parents=True)
    (work / "bench/gate.toml").write_text(config_text(tau=0.9).replace('"fx"', '"../fx"'))
    (work / "membench.toml").unlink()
    os.symlink("bench/gate.toml", work / "membench.toml")
    commit(work, "config behind a symlink, no floors", {})
    done = gate(work, "bless", "--justification", TAU_REASON + " and the floor on net_at_1")
    assert done.returncode == 1 and "floor" in done.stderr  # the base's floor still holds
    assert not (work / "bench/baselines/main.json").exists()

    result = check(work, ci=True)
    result.assert_error("membench.toml", "symlink")
    local = check(work)  # locally the config is read at the base at membench.toml itself
    assert local.code == 1, local.stderr
    floor = next(b for b in local.verdict["breaches"] if b["kind"] == "floor")
    assert floor["key"] == "abstention/default:net_at_1" and "base config" in floor["detail"]


@pytest.mark.parametrize("link", ["gate2", "."])
def test_a_config_folder_behind_a_symlink_is_an_error_in_ci_and_keeps_the_base_gate(
        tmp_path: Path, link: str) -> None:
    """Issue seen: the base's gate at gate/membench.toml; the pull request moved gate/ to gate2/
    (or its files to the root) and put a symlink gate -> gate2 (or gate -> .) in its place, with
    a worse memory, no floors and a baseline of its own: the config's folder was resolved
    through the link, the base read at gate2/membench.toml (or membench.toml), nothing found
    there, and CI passed it as the gate's first baseline."""
    seed = init(tmp_path / "seed")
    commit(seed, "a memory gated from gate/", {
        "README.md": "memory\n", **fixture_files(),
        "gate/membench.toml": config_text(extra=FLOOR).replace('"fx"', '"../fx"')})
    assert gate(seed, "bless", "--config", "gate/membench.toml").returncode == 0
    commit(seed, "baseline", {})
    work = pr_clone(bare_origin(seed), tmp_path / "work")
    target = work / ("gate2" if link == "gate2" else "")
    if link == "gate2":
        git(work, "mv", "gate", "gate2")
    else:
        for name in ("membench.toml", "baselines"):
            git(work, "mv", f"gate/{name}", name)
    (target / "membench.toml").write_text(
        config_text(tau=0.9).replace('"fx"', '"../fx"' if link == "gate2" else '"fx"'))
    shutil.rmtree(work / "gate", ignore_errors=True)  # (the folders git mv left empty)
    os.symlink(link, work / "gate")
    commit(work, "move the gate behind a link, a worse memory, no floors", {})

    result = check(work, "--config", "gate/membench.toml", ci=True)
    result.assert_error("gate/membench.toml", "symlink gate")
    local = check(work, "--config", "gate/membench.toml")  # read at the base at the path given
    assert local.code == 1, local.stdout + local.stderr
    assert local.verdict["mode"] != "bootstrap"
    assert any(b["kind"] == "floor" for b in local.verdict["breaches"])


# -- bootstrap only where the base has no gate at all --------------------------------------------

def test_base_with_a_config_but_no_baseline_requires_a_bless_in_ci(tmp_path: Path) -> None:
    seed = memory_repo(tmp_path / "seed", bless=False)
    work = pr_clone(bare_origin(seed), tmp_path / "work")
    assert gate(work, "bless").returncode == 0
    commit(work, "first baseline", {})
    result = check(work, ci=True)
    assert result.code == 2, result.stderr
    assert result.verdict["verdict"] == "bless-required"
    assert "gate config but no baseline" in result.verdict["notes"][0]
    # A bless in this pull request cannot fix it: the next step says where the baseline goes.
    assert "the base branch has the gate but no baseline: bless there first" in result.stdout
    assert "the committed baseline does not match this run" not in result.stdout
    assert result.files["base.json"] is None  # no base baseline: the decoy is gone
    local = check(work)
    assert (local.code, local.verdict["mode"]) == (0, "bootstrap")


def test_a_pr_that_introduces_the_gate_passes_in_ci(tmp_path: Path) -> None:
    """No false alarm: the base has no gate at all, the PR brings config and baseline."""
    seed = init(tmp_path / "seed")
    commit(seed, "a memory without a gate", {"README.md": "memory\n", **fixture_files()})
    work = pr_clone(bare_origin(seed), tmp_path / "work")
    commit(work, "add the gate", {"membench.toml": config_text()})
    assert gate(work, "bless").returncode == 0
    commit(work, "first baseline", {})
    result = check(work, ci=True)
    assert result.code == 0, result.stderr
    assert (result.verdict["mode"], result.verdict["base"]["how"]) == (
        "bootstrap", "remote-default-branch")
    assert result.verdict["notes"][0].startswith("baseline introduced")
    assert json.loads(result.files["results.json"])["cells"]  # this run's results


# -- no base in CI -----------------------------------------------------------------------------

def test_single_branch_depth_one_clone_asks_the_remote_for_its_default_branch(
        origin: Path, tmp_path: Path) -> None:
    """Issue seen: a depth-1 single-branch clone with no event payload passed a baseline that
    was blessed where no base was visible."""
    dev = pr_clone(origin, tmp_path / "dev", branch="feature")
    commit(dev, "raise tau", {"membench.toml": config_text(tau=0.2, extra=FLOOR)})
    git(dev, "push", "-q", "origin", "feature")
    ci = clone(f"file://{origin}", tmp_path / "ci", "--depth=1", "--single-branch",
               "--branch", "feature")
    assert git(ci, "branch", "-r") == "origin/feature"  # no origin/HEAD, no origin/main
    # Blessed where no base is visible: written without comparison to anything.
    git(ci, "remote", "set-url", "origin", str(tmp_path / "nowhere"))
    assert gate(ci, "bless").returncode == 0
    git(ci, "remote", "set-url", "origin", f"file://{origin}")
    commit(ci, "bless with no base", {})

    result = check(ci, ci=True, env={"GITHUB_EVENT_NAME": "workflow_dispatch"})
    assert result.code == 1, result.stderr  # compared with origin's main: a regression
    assert result.verdict["base"]["how"] == "remote-default-branch"
    assert result.verdict["base"]["ref"] == "origin/main"
    assert result.verdict["base"]["sha"] == git(ci, "rev-parse", "origin/main")
    assert any(k.startswith("abstention/default") for k in result.breach_keys())


def test_no_base_in_ci_is_an_error_naming_what_was_tried(origin: Path, tmp_path: Path) -> None:
    ci = clone(f"file://{origin}", tmp_path / "ci", "--depth=1", "--single-branch")
    git(ci, "checkout", "-q", "-b", "feature")
    git(ci, "branch", "-q", "-D", "main")
    git(ci, "update-ref", "-d", "refs/remotes/origin/main")
    git(ci, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    result = check(ci, ci=True, env={"GITHUB_EVENT_NAME": "push"})
    result.assert_error("no base commit", "ls-remote --symref origin HEAD",
                        "GITHUB_EVENT_NAME=push", "--base-ref")
    local = check(ci)  # locally a bootstrap, and it says so
    assert (local.code, local.verdict["mode"]) == (0, "bootstrap")
    assert local.verdict["notes"][0].startswith("baseline introduced")


def test_no_commit_at_all_in_ci_is_an_error(tmp_path: Path) -> None:
    repo = init(tmp_path / "fresh")
    (repo / "membench.toml").write_text(config_text())
    for name, text in fixture_files().items():
        (repo / name).parent.mkdir(exist_ok=True)
        (repo / name).write_text(text)
    result = check(repo, ci=True)
    result.assert_error("no base commit")


# -- honest pull requests still pass -------------------------------------------------------------

def test_a_readme_change_passes_in_ci(work: Path) -> None:
    commit(work, "docs", {"README.md": "memory, documented\n"})
    result = check(work, ci=True)
    assert result.code == 0, result.stderr
    assert result.verdict["verdict"] == "pass" and result.verdict["breaches"] == []
    assert result.files["report.md"].startswith("## membench-gate: ✅ PASS")


BETTER = """\
import dataclasses

from membench_gate.reference import ReferenceMemory


class Better(ReferenceMemory):
    \"\"\"Enriches what it stores with when people ask about it: finds p4's fact.\"\"\"

    def ingest(self, records):
        super().ingest([dataclasses.replace(r, text=r.text + " Lunch is served then.")
                        if r.text.startswith("Staging") else r for r in records])
"""


def test_an_improvement_passes_in_ci(work: Path) -> None:
    improved = config_text(extra=FLOOR).replace("[adapter.options]",
                                                '[adapter]\npython = "better:Better"\n'
                                                "[adapter.options]")
    commit(work, "a better memory", {"better.py": BETTER, "membench.toml": improved})
    result = check(work, ci=True)
    assert result.code == 0, (result.stderr, result.verdict)
    assert result.verdict["breaches"] == []
    assert result.verdict["fixed"] == {"abstention/default": ["p4"]}
    assert "abstention/default:net_at_1" in [i["key"] for i in result.verdict["improvements"]]
