"""check and bless through the real CLI, on real git repositories (bare origin, clones, a
GitHub-style merge commit in a depth-1 checkout, event payloads). Every exit code is reached."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.support import gaterepo
from tests.support.cli import cli_env, run_cli, seed_repo, without_progress
from tests.support.configs import JUSTIFICATION, LEAKY_ADAPTER
from tests.support.gitrepos import actions_checkout, bare_origin, clone, commit, git, init
from tests.support.paths import REPO


def config_text(tau: float = 0.35, k: int = 5, extra: str = "",
                adapter: str = "membench_gate.reference:ReferenceMemory") -> str:
    return gaterepo.config_text(tau=tau, adapter=adapter, k=k, extra=extra)


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare origin whose main has a blessed baseline (tau 0.35)."""
    seed = seed_repo(tmp_path_factory.mktemp("origin") / "seed", {"membench.toml": config_text()})
    return bare_origin(seed)


def verdict_of(repo: Path, *args: str, env: Mapping[str, str] | None = None
               ) -> tuple[int, dict, str]:
    out = repo / "verdict.json"
    out.unlink(missing_ok=True)
    done = run_cli("check", "--json", str(out), *args, env=env, cwd=repo)
    data = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, data, done.stdout + done.stderr


def test_pass_on_an_unchanged_pr(work: Path) -> None:
    code, verdict, out = verdict_of(work, "--report", "report.md")
    assert code == 0, out
    assert verdict["verdict"] == "pass" and verdict["mode"] == "same-hash"
    assert verdict["base"]["how"] == "remote-default-branch"
    assert (work / "report.md").read_text().startswith("## membench-gate: ✅ PASS")


def test_regression_then_bless_then_pass(work: Path) -> None:
    commit(work, "raise tau", {"membench.toml": config_text(tau=0.4)})
    code, verdict, out = verdict_of(work)
    assert code == 1, out
    assert verdict["verdict"] == "regression"
    assert "abstention/default" in verdict["newly_failed"]
    assert "membench-gate bless" in out  # tells what to do next

    before = (work / "baselines/main.json").read_bytes()
    refused = run_cli("bless", "--justification", "update baseline", cwd=work)
    assert refused.returncode == 1
    assert "justification" in refused.stderr and "Traceback" not in refused.stderr
    assert (work / "baselines/main.json").read_bytes() == before  # nothing written

    done = run_cli("bless", "--justification", JUSTIFICATION, cwd=work)
    assert done.returncode == 0, done.stderr
    first = (work / "baselines/main.json").read_bytes()
    again = run_cli("bless", cwd=work)  # re-running keeps the recorded reason: byte-identical
    assert again.returncode == 0, again.stderr
    assert (work / "baselines/main.json").read_bytes() == first
    recorded = json.loads(first)["justification"]
    assert "abstention/default:net_at_1" in recorded["breaches"]

    code, verdict, out = verdict_of(work)
    assert code == 0, out
    assert verdict["blessed"] is True


def test_allow_regression_is_local_only(work: Path) -> None:
    commit(work, "raise tau", {"membench.toml": config_text(tau=0.4)})
    code, verdict, _ = verdict_of(work, "--allow-regression", "trying a stricter floor")
    assert code == 0 and verdict["allowed_regression"] == "trying a stricter floor"
    for var in ("CI", "GITHUB_ACTIONS"):
        code, _, out = verdict_of(work, "--allow-regression", "x", env={var: "true"})
        assert code == 4
        assert "local only" in out and "Traceback" not in out


def test_changed_suite_option_requires_bless(work: Path) -> None:
    commit(work, "k=3", {"membench.toml": config_text(k=3)})
    code, verdict, _ = verdict_of(work)
    assert (code, verdict["verdict"], verdict["mode"]) == (2, "bless-required", "corpus-bless")


def test_deleted_baseline_requires_bless(work: Path) -> None:
    commit(work, "drop baseline", {"baselines/main.json": None})
    code, verdict, _ = verdict_of(work)
    assert code == 2 and "deleted" in verdict["notes"][0]


def test_results_from_another_config_are_inconclusive(work: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text(config_text(tau=0.3))
    done = run_cli("run", "--config", str(other), "--out", str(tmp_path / "r.json"), cwd=work)
    assert done.returncode == 0, done.stderr
    code, verdict, _ = verdict_of(work, "--results", str(tmp_path / "r.json"))
    assert (code, verdict["verdict"]) == (3, "inconclusive")
    # The same results under the matching config are gated normally.
    done = run_cli("run", "--out", str(tmp_path / "same.json"), cwd=work)
    code, verdict, _ = verdict_of(work, "--results", str(tmp_path / "same.json"))
    assert (code, verdict["verdict"]) == (0, "pass")


_CHECK_LEAVES_NO_CHILD = """
import os, sys
from membench_gate.cli.main import main

code = main(sys.argv[1:])
try:
    os.waitpid(-1, os.WNOHANG)
    left = True
except ChildProcessError:
    left = False
print(code, left)
"""


def test_check_results_from_another_folder_and_its_git_processes(work: Path, tmp_path: Path
                                                                ) -> None:
    # check --results starts its git processes for the config's folder before anything else: run
    # from outside the repository with --config, the base is read all the same, and whether the
    # check gates or fails, no git process is left behind (a fresh interpreter has no other child).
    results = tmp_path / "r.json"
    assert run_cli("run", "--out", str(results), cwd=work).returncode == 0
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    config = str(work / "membench.toml")
    for given, expected in ((results, "0 False"), (broken, "4 False")):
        done = subprocess.run(
            [sys.executable, "-c", _CHECK_LEAVES_NO_CHILD, "check", "--config", config,
             "--results", str(given), "--json", str(tmp_path / "v.json")],
            cwd=tmp_path, env=cli_env(), capture_output=True, text=True, check=False)
        assert done.stdout.splitlines()[-1] == expected, done.stdout + done.stderr
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["verdict"] == "error" and "broken.json" in verdict["notes"][0]
    code, verdict, out = verdict_of(tmp_path, "--config", config, "--results", str(results))
    assert (code, verdict["base"]["how"]) == (0, "remote-default-branch"), out


def _spy_plugin(folder: Path, mark: Path) -> Path:
    """An installed distribution that registers a pydantic plugin, which leaves ``mark`` behind
    when pydantic loads it."""
    info = folder / "spy_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: spy-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nspy = spy_plugin:plugin\n")
    (folder / "spy_plugin.py").write_text(
        f"from pathlib import Path\nPath({str(mark)!r}).write_text('loaded')\n"
        "class Plugin:\n    def new_schema_validator(self, *args, **kwargs):\n"
        "        return None, None, None\nplugin = Plugin()\n")
    return folder


def test_the_gate_validates_without_pydantic_plugins(work: Path, tmp_path: Path) -> None:
    # A pydantic plugin that the job's environment registers runs inside every validation of a
    # process that loads it; the gate's own process loads none.
    mark = tmp_path / "loaded"
    site = _spy_plugin(tmp_path / "site", mark)
    env = {"PYTHONPATH": os.pathsep.join([str(REPO), str(site)])}
    control = subprocess.run(
        [sys.executable, "-c", "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int"],
        env=cli_env(env), capture_output=True, text=True, check=False)
    assert control.returncode == 0 and mark.exists(), control.stderr  # the plugin is found
    mark.unlink()

    assert run_cli("run", "--out", str(tmp_path / "r.json"), cwd=work).returncode == 0
    code, verdict, out = verdict_of(work, "--results", str(tmp_path / "r.json"), env=env)
    assert (code, verdict["verdict"]) == (0, "pass"), out
    assert not mark.exists()
    # The action's step builds no model while it imports, so its own call takes effect too.
    done = subprocess.run(
        [sys.executable, "-c", "import sys, membench_gate.action\n"
                               "print('pydantic.plugin._loader' in sys.modules)"],
        env=cli_env(env), capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "False", done.stderr


def test_a_malformed_schema_version_at_base_is_an_error(work: Path) -> None:
    # "1" is not a version this tool does not know: it is a field of the wrong type (rule 3's
    # INCONCLUSIVE is for a well-formed unknown version only).
    git(work, "checkout", "-q", "main")
    data = json.loads((work / "baselines/main.json").read_text())
    commit(work, "a string version", {"baselines/main.json": json.dumps(
        {**data, "schema_version": "1"})})
    git(work, "checkout", "-q", "-b", "pr2")
    commit(work, "restore", {"baselines/main.json": json.dumps(data)})
    code, verdict, out = verdict_of(work, "--base-ref", "refs/heads/main")
    assert code == 4 and verdict["verdict"] == "error", out
    assert verdict["notes"][0].endswith("baselines/main.json at base "
                                        f"{git(work, 'rev-parse', 'main')[:12]}: schema_version: "
                                        "must be an integer, got '1'"), verdict["notes"]


def test_a_results_file_of_an_unknown_schema_version_is_inconclusive_said_so(
        work: Path) -> None:
    assert run_cli("run", "--out", "r.json", cwd=work).returncode == 0
    data = json.loads((work / "r.json").read_text())
    (work / "r.json").write_text(json.dumps({**data, "schema_version": 99}))
    done = run_cli("check", "--results", "r.json", "--json", "v.json", cwd=work)
    assert done.returncode == 3, done.stderr
    assert without_progress(done.stderr)[0] == (
        "membench-gate: inconclusive: r.json: schema_version 99 is not known to this version "
        "(expected 1)"), done.stderr
    assert "error:" not in done.stderr


def test_unknown_schema_version_at_base_is_inconclusive(work: Path) -> None:
    git(work, "checkout", "-q", "main")
    data = json.loads((work / "baselines/main.json").read_text())
    data["schema_version"] = 99
    commit(work, "future baseline", {"baselines/main.json": json.dumps(data)})
    git(work, "checkout", "-q", "-b", "pr2")
    commit(work, "restore", {"baselines/main.json": json.dumps({**data, "schema_version": 1})})
    # The local main, ahead of origin's: a bare "main" would be ambiguous (docs/gate.md).
    code, verdict, out = verdict_of(work, "--base-ref", "refs/heads/main")
    assert code == 3 and "schema_version" in verdict["notes"][0]
    # Not a bootstrap: the base has a baseline, of a version this one cannot read.
    assert verdict["mode"] is None and "no baseline at the base commit" not in out
    # A pull request that leaves that baseline as it is: the same file, still the base's case.
    git(work, "checkout", "-q", "-b", "pr3", "main")
    code, verdict, out = verdict_of(work, "--base-ref", "refs/heads/main")
    assert code == 3 and "schema_version 99 is not known" in verdict["notes"][0], out
    assert "working tree's baseline" not in out


def test_a_working_tree_baseline_of_an_unknown_version_is_an_error_bless_repairs(
        work: Path) -> None:
    # Rule 3's INCONCLUSIVE is for the base's baseline; the working tree's is the pull request's
    # own file: an ERROR naming it, and bless writes it again.
    data = json.loads((work / "baselines/main.json").read_text())
    (work / "baselines/main.json").write_text(json.dumps({**data, "schema_version": 99}))
    code, verdict, out = verdict_of(work)
    assert code == 4 and verdict["verdict"] == "error", out
    assert verdict["notes"][0].startswith(
        "baselines/main.json: schema_version 99 is not known to this version (expected 1) — "
        "the working tree's baseline"), verdict["notes"]
    assert run_cli("bless", cwd=work).returncode == 0
    assert verdict_of(work)[0] == 0


def test_zero_gated_breach_refuses_bless_and_fails_check(work: Path) -> None:
    extra = ""
    commit(work, "leaky adapter", {
        "leaky.py": LEAKY_ADAPTER,
        "membench.toml": config_text(extra=extra, adapter="leaky:Leaky"),
    })
    before = (work / "baselines/main.json").read_bytes()
    refused = run_cli("bless", "--justification", JUSTIFICATION, cwd=work)
    assert refused.returncode == 1
    assert "source_isolation_violations" in refused.stderr
    assert (work / "baselines/main.json").read_bytes() == before
    code, verdict, _ = verdict_of(work)
    assert code == 1
    assert any(b["kind"] == "zero" for b in verdict["breaches"])


def test_floor_removed_by_the_pr_is_enforced_from_the_base(origin: Path, tmp_path: Path) -> None:
    repo = clone(f"file://{origin}", tmp_path / "floors")
    floor = '[floors]\n"abstention/default:net_at_1" = 0.25\n'
    commit(repo, "add a floor", {"membench.toml": config_text(extra=floor)})
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/floors-main")
    git(repo, "checkout", "-q", "-b", "pr")
    commit(repo, "drop floor, raise tau", {"membench.toml": config_text(tau=0.9)})
    refused = run_cli("bless", "--base-ref", "floors-main", "--justification", JUSTIFICATION, cwd=repo)
    assert refused.returncode == 1 and "floor" in refused.stderr
    # No justification can bless a floor: the summary does not ask for one.
    assert "justification:" not in refused.stdout, refused.stdout
    code, verdict, _ = verdict_of(repo, "--base-ref", "floors-main")
    assert code == 1
    assert next(b["kind"] for b in verdict["breaches"] if b["key"].endswith(":net_at_1")) == "floor"


def test_a_base_floor_a_pr_stops_measuring_says_so_and_what_resolves_it(origin: Path,
                                                                        tmp_path: Path) -> None:
    repo = clone(f"file://{origin}", tmp_path / "floors")
    floor = '[floors]\n"push/push:push_recall" = 0.1\n'
    commit(repo, "add a floor", {"membench.toml": config_text(extra=floor)})
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/push-floor-main")
    git(repo, "checkout", "-q", "-b", "pr")
    dropped = config_text().replace('[suites.push]\nfixtures = ["builtin"]\n', "")
    commit(repo, "drop the push suite", {"membench.toml": dropped})
    code, verdict, out = verdict_of(repo, "--base-ref", "push-floor-main")
    # Still fails closed: disabling a suite does not escape the base's floor on it.
    assert code == 1, out
    [floor_breach] = [b for b in verdict["breaches"] if b["kind"] == "floor"]
    assert floor_breach["detail"] == ("floor >= 0.1 (base config), but this run does not measure "
                                      "push_recall on push/push: suite push is not enabled")
    lines = out.splitlines()
    assert lines[1] == "  floor on push recall on push/push: not measured by this run · " \
        "push/know_to_ask not measured · push/push not measured"
    step = lines[2]
    assert step.startswith("  next step: the floor on push recall on push/push names a metric "
                           "this run does not measure (suite push is not enabled): measure it "
                           "again"), step
    assert "fix the code" not in out and "a floor of the base branch's config holds" in step


def test_a_base_floor_no_run_can_meet_is_an_error_naming_it(origin: Path, tmp_path: Path) -> None:
    repo = clone(f"file://{origin}", tmp_path / "impossible")
    floor = '[floors]\n"push/push:controls_passing" = 0\n'
    git(repo, "checkout", "-q", "-b", "impossible-main")
    commit(repo, "a floor no run can meet", {"membench.toml": config_text(extra=floor)})
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/impossible-main")
    git(repo, "checkout", "-q", "-b", "pr")
    commit(repo, "drop it here", {"membench.toml": config_text()})
    code, verdict, out = verdict_of(repo, "--base-ref", "impossible-main")
    # Refused as the config is read (the base's too): one line naming the base's key, exit 4 —
    # never a pass, and no more a "fix the code" floor breach.
    assert code == 4 and verdict["verdict"] == "error", out
    base = git(repo, "rev-parse", "impossible-main")[:12]
    assert out.strip() == (f"membench-gate: error: membench.toml at base {base}: floors."
                           "'push/push:controls_passing': controls_passing is a metric of the "
                           "abstention suite: no push cell reports it")


def test_merge_commit_in_a_depth_one_checkout(origin: Path, tmp_path: Path) -> None:
    """GitHub's pull_request checkout: HEAD is refs/pull/N/merge at depth 1; base = 1st parent."""
    dev = clone(f"file://{origin}", tmp_path / "dev")
    main_sha = git(dev, "rev-parse", "HEAD")
    git(dev, "checkout", "-q", "-b", "feature")
    commit(dev, "raise tau", {"membench.toml": config_text(tau=0.4)})
    git(dev, "checkout", "-q", "--detach", main_sha)
    git(dev, "merge", "-q", "--no-ff", "-m", "Merge feature into main", "feature")
    merge_sha = git(dev, "rev-parse", "HEAD")
    git(dev, "push", "-q", "origin", f"{merge_sha}:refs/pull/7/merge")
    ci = actions_checkout(f"file://{origin}", tmp_path / "ci", "refs/pull/7/merge")
    assert git(ci, "rev-parse", "--is-shallow-repository") == "true"
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_SHA": merge_sha}
    code, verdict, out = verdict_of(ci, env=env)
    assert verdict["base"] == {"how": "merge-commit-parent", "ref": "HEAD^1", "sha": main_sha}
    assert code == 1, out  # the PR raised tau without a bless


def test_pr_head_checkout_uses_the_event_base_sha(origin: Path, tmp_path: Path) -> None:
    dev = clone(f"file://{origin}", tmp_path / "dev")
    main_sha = git(dev, "rev-parse", "HEAD")
    git(dev, "checkout", "-q", "-b", "feature")
    head = commit(dev, "docs", {"README.md": "memory, documented\n"})
    git(dev, "push", "-q", "origin", "feature")
    ci = actions_checkout(f"file://{origin}", tmp_path / "ci", head)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"base": {"sha": main_sha, "ref": "main"},
                                                  "head": {"sha": head}}}))
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_SHA": head,
           "GITHUB_EVENT_PATH": str(event)}
    code, verdict, out = verdict_of(ci, env=env)
    assert code == 0, out
    assert (verdict["base"]["how"], verdict["base"]["sha"]) == ("event-base-sha", main_sha)


def test_no_remote_uses_the_local_branch(tmp_path: Path) -> None:
    repo = init(tmp_path / "solo")
    commit(repo, "memory", {"membench.toml": config_text()})
    assert run_cli("bless", cwd=repo).returncode == 0
    commit(repo, "baseline", {})
    git(repo, "checkout", "-q", "-b", "work")
    commit(repo, "raise tau", {"membench.toml": config_text(tau=0.4)})
    code, verdict, _ = verdict_of(repo)
    assert (code, verdict["base"]["how"], verdict["base"]["ref"]) == (1, "local-branch", "main")


def test_bootstrap(tmp_path: Path) -> None:
    repo = init(tmp_path / "fresh")
    commit(repo, "memory", {"membench.toml": config_text()})
    git(repo, "checkout", "-q", "-b", "add-gate")
    code, verdict, _ = verdict_of(repo)
    assert (code, verdict["mode"]) == (2, "bootstrap")  # never a silent pass
    assert run_cli("bless", cwd=repo).returncode == 0
    code, verdict, _ = verdict_of(repo)
    assert (code, verdict["mode"]) == (0, "bootstrap")
    assert "baseline introduced" in verdict["notes"][0]


def test_unfetchable_base_is_a_clear_error(work: Path) -> None:
    code, verdict, out = verdict_of(work, "--base-ref", "0123456789abcdef0123456789abcdef01234567")
    assert code == 4 and (verdict["verdict"], verdict["exit_code"]) == ("error", 4)
    assert "0123456789abcdef0123456789abcdef01234567" in verdict["notes"][0]  # the file says why
    assert "0123456789abcdef0123456789abcdef01234567" in out
    said = [line for line in without_progress(out.strip()) if " adapter calls done in " not in line]
    assert "Traceback" not in out and len(said) == 1


def test_verify_determinism_passes_on_the_reference_memory(work: Path) -> None:
    code, _, out = verdict_of(work, "--verify-determinism")
    assert code == 0, out


def test_corrupt_committed_baseline_is_an_error_naming_the_file(work: Path) -> None:
    (work / "baselines/main.json").write_text('{"schema_version": 1, "cells": ')
    code, _, out = verdict_of(work)
    assert code == 4 and "baselines/main.json:1:" in out and "Traceback" not in out


def test_this_repositorys_own_baseline_matches_a_fresh_run() -> None:
    """The dogfood: `membench-gate check` on this repo passes only while the baseline is current."""
    from membench_gate.config import load_config
    from membench_gate.model.results import parse_baseline
    from membench_gate.run.runner import run

    root = REPO
    config = load_config(root / "membench.toml")
    committed = parse_baseline((root / "baselines/main.json").read_bytes(), "baselines/main.json")
    assert run(config).to_baseline().comparable() == committed.comparable()
