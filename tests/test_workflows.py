"""action.yml and the workflows: valid against GitHub's schemas, and no expression inside a script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
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
            "verify-determinism", "results", "seal"} == set(action["inputs"])
