"""Annotations and event payload helpers of the action."""

from __future__ import annotations

import json
from pathlib import Path

from membench_gate.ci.action import _annotations
from membench_gate.ci.actions_env import MAX_ANNOTATIONS
from membench_gate.ci.settings import Context


def test_annotations_put_metrics_before_items_and_stop_at_ten() -> None:
    breaches = [{"key": f"veto/files_known#scn-{i:03d}", "kind": "newly-failed", "detail": "d"}
                for i in range(50)]
    breaches.append({"key": "abstention/default:net_at_1", "kind": "metric", "detail": "worse"})
    breaches.append({"key": "push/default:source_isolation_violations", "kind": "zero",
                     "detail": "must be 0"})
    lines = _annotations({"verdict": "regression", "breaches": breaches})
    assert len(lines) == MAX_ANNOTATIONS
    assert "source_isolation_violations" in lines[0] and "net_at_1" in lines[1]
    assert all(line.startswith("::error title=membench-gate ") for line in lines)


def test_bless_required_is_a_warning_and_pass_is_a_notice() -> None:
    [line] = _annotations({"verdict": "pass", "breaches": []})
    assert line.startswith("::notice ") and line.endswith("::no breaches")
    # A blessed breach of a passing job is no warning: the job succeeds.
    [line] = _annotations({"verdict": "pass", "breaches": [
        {"key": "abstention/default:net_at_1", "kind": "metric", "detail": "blessed"}]})
    assert line.startswith("::notice title=membench-gate metric::")
    [line] = _annotations({"verdict": "bless-required", "breaches": [], "notes": ["deleted"]})
    assert line.startswith("::warning ") and line.endswith("::deleted")


def test_pull_request_number_from_payload_or_ref(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": None}))
    env = {"GITHUB_EVENT_PATH": str(event), "GITHUB_REF": "refs/pull/42/merge"}
    assert Context.from_env(env).pull_request == 42
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    assert Context.from_env(env).pull_request == 7
    assert Context.from_env({"GITHUB_REF": "refs/heads/main"}).pull_request is None


def test_the_runners_files_are_put_back_as_the_step_found_them(tmp_path: Path) -> None:
    from membench_gate.ci.actions_env import RunnerFiles

    files = {name: tmp_path / f"{name.lower()}.txt" for name in
             ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH")}
    files["GITHUB_ENV"].write_text("EARLIER=1\n")
    for path in files.values():
        path.touch()
    runner = RunnerFiles({name: str(path) for name, path in files.items()})
    assert runner.restore() == []  # nothing changed: nothing to put back
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("the attacker's\n")
    files["GITHUB_OUTPUT"].write_text("verdict=pass\n")  # appended to
    files["GITHUB_ENV"].unlink()  # replaced by a link to a file of the attacker's choosing
    files["GITHUB_ENV"].symlink_to(elsewhere)
    files["GITHUB_PATH"].unlink()
    files["GITHUB_PATH"].mkdir()  # replaced by a folder
    assert runner.restore() == ["$GITHUB_OUTPUT", "$GITHUB_ENV", "$GITHUB_PATH"]
    assert files["GITHUB_OUTPUT"].read_text() == ""
    assert not files["GITHUB_ENV"].is_symlink() and files["GITHUB_ENV"].read_text() == "EARLIER=1\n"
    assert files["GITHUB_PATH"].is_file() and files["GITHUB_PATH"].read_text() == ""
    assert elsewhere.read_text() == "the attacker's\n"
    assert runner.append("GITHUB_OUTPUT", "verdict<<D\nregression\nD\n")
    assert not runner.append("GITHUB_STATE", "x")  # no such file in this step
    assert files["GITHUB_OUTPUT"].read_text() == "verdict<<D\nregression\nD\n"
