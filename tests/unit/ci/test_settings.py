"""The environment and the action's inputs, read once: defaults, validation, the event payload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from membench_gate.ci.settings import Context, Settings
from membench_gate.errors import GateError


def test_outside_actions_everything_takes_its_default() -> None:
    settings = Settings.from_env({})
    assert settings == Settings()
    assert (settings.comment, settings.comment_key, settings.config) == ("update", "default", "membench.toml")
    assert settings.fail_on_regression is True and settings.include_holdout is False
    assert settings.context.actions is False and settings.context.event == {}
    assert settings.context.output_path is None and settings.out_dir == Path("membench-gate")


def test_inputs_come_from_the_variables_action_yml_sets(tmp_path: Path) -> None:
    settings = Settings.from_env({
        "MEMBENCH_CONFIG": " gate.toml ", "MEMBENCH_COMMENT": "recreate", "MEMBENCH_COMMENT_KEY": "veto",
        "MEMBENCH_FAIL_ON_REGRESSION": "False", "MEMBENCH_BASE_REF": "origin/main",
        "MEMBENCH_INCLUDE_HOLDOUT": "yes", "RUNNER_TEMP": str(tmp_path), "GITHUB_ACTIONS": "true",
        "GITHUB_TOKEN": "t0k", "GITHUB_API_URL": "https://ghe.example.com/api/v3",
    })
    assert (settings.config, settings.comment, settings.comment_key) == ("gate.toml", "recreate", "veto")
    assert settings.fail_on_regression is False and settings.include_holdout is True
    assert settings.base_ref == "origin/main" and settings.out_dir == tmp_path / "membench-gate"
    assert settings.context.actions is True and settings.context.token == "t0k"
    assert settings.context.api_url == "https://ghe.example.com/api/v3"


@pytest.mark.parametrize(("name", "value", "message"), [
    ("MEMBENCH_FAIL_ON_REGRESSION", "maybe", "input fail-on-regression: expected true or false, got 'maybe'"),
    ("MEMBENCH_INCLUDE_HOLDOUT", "2", "input include-holdout: expected true or false, got '2'"),
    ("MEMBENCH_COMMENT", "sometimes", "input comment: expected update, recreate or off, got 'sometimes'"),
    ("MEMBENCH_WORKERS", "0", "input workers: expected a whole number from 1 to 64, or empty for "
                              "the runner's cores (at most 4), got '0'"),
])
def test_a_bad_input_is_one_line_naming_it(name: str, value: str, message: str) -> None:
    with pytest.raises(GateError) as info:
        Settings.from_env({name: value})
    assert str(info.value) == message


def test_the_input_workers_defaults_to_the_cores_at_most_4(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert Settings.from_env({}).workers == 4
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert Settings.from_env({}).workers == 1
    assert Settings.from_env({"MEMBENCH_WORKERS": " 3 "}).workers == 3


def test_the_event_payload_is_read_on_first_use(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    context = Context.from_env({"GITHUB_EVENT_PATH": str(event)})  # not there yet: building never fails
    event.write_text(json.dumps({"pull_request": {"number": 12}}))
    assert context.pull_request == 12


@pytest.mark.parametrize(("text", "message"), [("{", "cannot read the event payload"),
                                               ("[1]", "the event payload is not a JSON object")])
def test_a_broken_event_payload_is_a_gate_error_naming_the_file(tmp_path: Path, text: str,
                                                                message: str) -> None:
    event = tmp_path / "event.json"
    event.write_text(text)
    with pytest.raises(GateError, match=message) as info:
        _ = Context.from_env({"GITHUB_EVENT_PATH": str(event)}).event
    assert str(event) in str(info.value)


def test_verify_determinism_input_is_a_checked_flag() -> None:
    assert Settings.from_env({"MEMBENCH_VERIFY_DETERMINISM": "true"}).verify_determinism
    assert not Settings.from_env({}).verify_determinism
    with pytest.raises(GateError, match="input verify-determinism: expected true or false"):
        Settings.from_env({"MEMBENCH_VERIFY_DETERMINISM": "twice"})


@pytest.mark.parametrize(("env", "ci"), [
    ({}, False), ({"CI": "true"}, True), ({"CI": "0"}, False), ({"CI": " Off "}, False),
    ({"GITHUB_ACTIONS": "true"}, True), ({"CI": "false", "GITHUB_ACTIONS": "1"}, True),
    ({"CI": "yes-please"}, True),
])
def test_ci_is_either_variable_set_to_anything_but_a_false_word(env: dict[str, str], ci: bool) -> None:
    assert Context.from_env(env).ci is ci


def test_the_context_keeps_the_run_sha_and_the_environment_for_child_processes() -> None:
    env = {"GITHUB_SHA": "a" * 40, "PATH": "/bin"}
    context = Context.from_env(env)
    assert context.sha == "a" * 40
    assert context.environ == env
    assert context == Context.from_env({"GITHUB_SHA": "a" * 40})  # not part of what it says
