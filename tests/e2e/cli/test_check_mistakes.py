"""check on hand-made mistakes: stale results files, reformatted or hand-edited baselines, configs
in subfolders, paths outside the repository."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.gitrepos import commit


def test_results_on_edited_fixtures_are_inconclusive(make_repo: Callable[..., Path]) -> None:
    repo = make_repo()
    assert run_cli("bless", cwd=repo).returncode == 0
    commit(repo, "baseline", {})
    assert run_cli("run", "--out", "r.json", cwd=repo).returncode == 0
    probes = json.loads((repo / "fx/probes.json").read_text())
    probes[0]["question"] = "What port is billing on?"
    (repo / "fx/probes.json").write_text(json.dumps(probes))
    done = run_cli("check", "--results", "r.json", "--json", "v.json", cwd=repo)
    assert done.returncode == 3
    assert "fixtures_hash" in json.loads((repo / "v.json").read_text())["notes"][0]


def test_a_reformatted_committed_baseline_is_compared_by_content(make_repo: Callable[..., Path]) -> None:
    repo = make_repo()
    assert run_cli("bless", cwd=repo).returncode == 0
    commit(repo, "baseline", {})
    path = repo / "baselines/main.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps(data, indent=4))  # same content, reformatted: noted, not blocked
    done = run_cli("check", "--json", "v.json", cwd=repo)
    verdict = json.loads((repo / "v.json").read_text())
    assert done.returncode == 0 and "not in canonical form" in verdict["notes"][-1]
    metrics = data["cells"]["abstention/default"]["metrics"]
    metrics["net_at_1"] += 0.5  # a hand edit of content is a committed baseline that lies
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    done = run_cli("check", "--json", "v.json", cwd=repo)
    verdict = json.loads((repo / "v.json").read_text())
    assert done.returncode == 2 and verdict["notes"][0] == (
        "committed baseline does not match this run (committed → run): "
        "abstention/default:net_at_1 1.1667 → 0.6667")
    assert verdict["blessed"] is False


def test_config_in_a_subfolder_keeps_its_path_in_suggested_commands(make_repo: Callable[..., Path]) -> None:
    repo = make_repo(config_dir="gate")
    done = run_cli("check", "--config", "gate/membench.toml", "--report", "r.md", cwd=repo)
    assert done.returncode == 2, done.stderr  # bootstrap without a baseline
    assert "membench-gate bless --config gate/membench.toml" in done.stdout
    assert "--config gate/membench.toml" in (repo / "r.md").read_text()


def test_baseline_outside_the_repository_is_a_clear_error(make_repo: Callable[..., Path]) -> None:
    repo = make_repo()
    (repo / "membench.toml").write_text(
        '[suites.abstention]\nfixtures = ["fx"]\n[gate]\nbaseline = "../elsewhere.json"\n')
    done = run_cli("check", cwd=repo)
    assert done.returncode == 4
    assert "gate.baseline" in done.stderr and "outside the git repository" in done.stderr
    assert "internal error" not in done.stderr
