"""action.yml and the workflows: valid against GitHub's schemas, and no expression inside a script."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.paths import REPO

ROOT = REPO
WORKFLOWS = sorted([*ROOT.glob(".github/workflows/*.yml"), *ROOT.glob("docs/examples/*.yml")])


def check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema,
                           *map(str, files)], capture_output=True, text=True, check=False)


def test_action_yml_validates_against_the_github_actions_schema() -> None:
    done = check_jsonschema("vendor.github-actions", ROOT / "action.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_workflows_validate_against_the_github_workflows_schema() -> None:
    assert len(WORKFLOWS) >= 4  # CI, dogfood gate, and the user examples (same-repo, fork pair)
    done = check_jsonschema("vendor.github-workflows", *WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_catches_a_broken_action(tmp_path: Path) -> None:
    broken = tmp_path / "action.yml"
    broken.write_text((ROOT / "action.yml").read_text().replace("using: composite",
                                                                 "using: compost"))
    assert check_jsonschema("vendor.github-actions", broken).returncode != 0


def _run_steps(path: Path) -> list[dict]:
    data = yaml.safe_load(path.read_text())
    if "runs" in data:
        return data["runs"]["steps"]
    return [step for job in data["jobs"].values() for step in job.get("steps", [])]


@pytest.mark.parametrize("path", [ROOT / "action.yml", *WORKFLOWS], ids=lambda p: p.name)
def test_no_expression_inside_a_run_script(path: Path) -> None:
    for step in _run_steps(path):
        assert "${{" not in step.get("run", ""), f"{path.name}: {step.get('name')}"


def test_every_action_input_reaches_the_scripts_through_env() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    used = "\n".join(str(step.get("env", {})) + str(step.get("with", {}))
                     for step in action["runs"]["steps"])
    for name in action["inputs"]:
        assert f"inputs.{name}" in used, name
    expected = {"verdict", "exit-code", "mode", "base-sha", "report-path", "results-path",
                "comment-url", "isolation"}
    assert set(action["outputs"]) == expected
    assert {"config", "python-version", "install", "github-token", "comment", "comment-key",
            "fail-on-regression", "base-ref", "include-holdout", "selftest",
            "verify-determinism", "results", "budget-minutes", "seal", "workers"} == \
        set(action["inputs"])


def _checkouts(node: object) -> list[dict]:
    """Every ``actions/checkout`` step in a parsed workflow, job or list of steps."""
    if isinstance(node, dict):
        own = [node] if str(node.get("uses", "")).startswith("actions/checkout@") else []
        return own + [step for value in node.values() for step in _checkouts(value)]
    if isinstance(node, list):
        return [step for value in node for step in _checkouts(value)]
    return []


def _snippets(path: Path) -> list[object]:
    """The YAML code blocks of a Markdown file, parsed."""
    blocks = re.findall(r"^```ya?ml\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S)
    return [yaml.safe_load(block) for block in blocks]


def shipped_workflows(tmp_path: Path) -> dict[str, object]:
    """Every workflow a user or this repository runs: the repository's own, the examples, the
    snippets of the README and the docs, and what ``init`` writes (either kind of adapter)."""
    from membench_gate.commands.init import WORKFLOW, plan

    shipped: dict[str, object] = {p.relative_to(ROOT).as_posix(): yaml.safe_load(p.read_text())
                                  for p in WORKFLOWS}
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for i, snippet in enumerate(_snippets(doc)):
            shipped[f"{doc.relative_to(ROOT).as_posix()}#{i}"] = snippet
    for command in (False, True):
        text = plan(tmp_path / str(command), command)[tmp_path / str(command) / WORKFLOW]
        shipped[f"init{' --command' if command else ''}"] = yaml.safe_load(text)
    return shipped


def test_every_shipped_checkout_leaves_no_token_in_the_clone(tmp_path: Path) -> None:
    # actions/checkout persists the token in .git/config by default, where the pull request's
    # code (its install, its adapter) would read it.
    shipped = shipped_workflows(tmp_path)
    steps = {label: _checkouts(data) for label, data in shipped.items()}
    found = [label for label, found in steps.items() if found]
    assert {"README.md#0", "docs/action.md#0", "init", "init --command",
            ".github/workflows/ci.yml", ".github/workflows/membench-gate.yml",
            "docs/examples/membench-gate.yml", "docs/examples/membench-gate-fork-run.yml",
            "docs/examples/membench-gate-sharded.yml"} <= set(found), found
    keeping = [label for label, found in steps.items() for step in found
               if (step.get("with") or {}).get("persist-credentials") is not False]
    assert not keeping, keeping


def test_the_fork_comment_workflow_never_checks_out() -> None:
    # It holds a write token: the pull request's code must not be in its workspace at all.
    workflow = yaml.safe_load((ROOT / "docs/examples/membench-gate-fork-comment.yml").read_text())
    assert _checkouts(workflow) == []
    uploaded = yaml.safe_load((ROOT / "docs/examples/membench-gate-fork-run.yml").read_text())
    [upload] = [s for s in uploaded["jobs"]["gate"]["steps"]
                if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert {line.rsplit("/", 1)[-1] for line in upload["with"]["path"].splitlines()} == {
        "results.json", "verdict.json", "base.json", "step.json", "history.json"}
