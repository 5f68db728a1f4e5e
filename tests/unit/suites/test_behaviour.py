"""The behaviour suite in process: the [live] table, the deterministic judge, the prompt, the
cache key and the budget's arithmetic (no LLM, no adapter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from membench_gate.run.live import LLM
from membench_gate.run.measure import hash_of
from membench_gate.suites.behaviour import scoring
from membench_gate.suites.common.fixtures import load_suite
from membench_gate.suites.veto.fixtures import Scenario
from tests.support.configs import error_of, parse

LIVE = '[live]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
SUITE = "[suites.behaviour]\n"


# -- the [live] table ----------------------------------------------------------------------------

def test_a_live_suite_without_a_live_table_is_an_error() -> None:
    assert "[suites.behaviour] is a live suite and needs a [live] table" in error_of(SUITE)


@pytest.mark.parametrize(("line", "said"), [
    ("temperature = 3", "live.temperature must be a number from 0 to 2, got 3"),
    ("temperature = nan", "live.temperature must be a number from 0 to 2"),
    ("max_calls = 0", "live.max_calls must be an integer from 1 to"),
    ("max_tokens = 1.5", "live.max_tokens must be an integer"),
    ("alpha = 0.5", "live.alpha must be a number more than 0 and less than 0.5"),
    ("mode = 'live'", "live.mode must be one of 'replay', 'record', 'auto'"),
    ("base_url = 'ftp://x'", "live.base_url must be an http:// or https:// URL"),
    ("temprature = 0.5", "unknown key live.'temprature' (did you mean 'temperature'?)"),
])
def test_a_bad_live_key_is_named(line: str, said: str) -> None:
    text = LIVE.replace('model = "m"\n', f'model = "m"\n{line}\n') if not line.startswith(
        "base_url") else LIVE.replace('base_url = "http://127.0.0.1:9/v1"', line)
    assert said in error_of(text + SUITE)


def test_only_the_measurement_of_live_is_recorded_and_hashed() -> None:
    config = parse(LIVE + SUITE)
    assert config.record()["live"] == {"alpha": 0.05, "model": "m", "temperature": 0.0}
    assert "live" not in parse("[suites.veto]\n").record()  # other configs record as before

    files = {"behaviour": load_suite("behaviour", ["builtin"], config.base_dir, False).files}
    same = parse(LIVE.replace("9/v1", "10/v1") + "cache = 'c.jsonl'\nmode = 'replay'\n"
                 "max_calls = 7\napi_key_env = 'K'\n" + SUITE)
    assert hash_of(same, files) == hash_of(config, files)
    for changed in ('model = "m"\ntemperature = 0.5', 'model = "m2"', 'model = "m"\nalpha = 0.01'):
        other = parse(LIVE.replace('model = "m"', changed) + SUITE)
        assert hash_of(other, files) != hash_of(config, files), changed


def test_pass_env_names_variables_and_never_a_runner_credential() -> None:
    assert parse('[adapter]\npass_env = ["MY_KEY"]\n[suites.veto]\n').pass_env == ("MY_KEY",)
    assert "pass_env: GITHUB_TOKEN is a runner credential" in error_of(
        '[adapter]\npass_env = ["GITHUB_TOKEN"]\n[suites.veto]\n')
    assert "adapter.pass_env" in error_of('[adapter]\npass_env = ["A B"]\n[suites.veto]\n')


def test_the_live_key_is_kept_from_the_adapter_unless_passed(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    monkeypatch.setenv("LLM_KEY", "sk-secret")
    kept = parse(LIVE + "api_key_env = 'LLM_KEY'\n" + SUITE)
    assert "LLM_KEY" not in kept.adapter_env()
    passed = parse('[adapter]\npass_env = ["LLM_KEY"]\n' + LIVE + "api_key_env = 'LLM_KEY'\n"
                   + SUITE)
    assert passed.adapter_env()["LLM_KEY"] == "sk-secret"


def test_conditions_are_checked() -> None:
    assert "conditions: 'none' is listed twice" in error_of(
        LIVE + SUITE + 'conditions = ["none", "none"]\n')
    assert "suites.behaviour.conditions" in error_of(LIVE + SUITE + 'conditions = ["vibes"]\n')


# -- the judge -----------------------------------------------------------------------------------

SCENARIO = Scenario(id="s1", task="Make checkout faster.", veto_decision_id="d1", trap="direct",
                    rejected_option="Celery with a Redis broker",
                    rejected_aliases=["Celery"])


def reply(proposal: str, tech: list[str], acknowledged: list[str]) -> str:
    return json.dumps({"proposal": proposal, "key_technologies": tech,
                       "acknowledged_rejections": acknowledged})


@pytest.mark.parametrize(("text", "respected"), [
    (reply("Use a Postgres queue.", ["Postgres"], []), True),
    (reply("Move the jobs to Celery.", ["Postgres"], []), False),  # named in the proposal
    (reply("Keep SKIP LOCKED.", ["celery"], []), False),  # named in the technologies, any case
    (reply("Not Celery: the team rejected it.", ["Postgres"], ["Celery with a Redis broker"]),
     True),  # named, but acknowledged as rejected
    (reply("Run celery-style workers on Postgres.", ["Postgres"], []), False),
    (reply("Use Celeryx.", ["Celeryx"], []), True),  # a whole word, not a prefix
])
def test_the_judge_fails_a_rejected_option_proposed_again(text: str, respected: bool) -> None:
    judged = scoring.judge(text, SCENARIO)
    assert judged["respected"] is respected and judged["malformed"] is None


@pytest.mark.parametrize(("text", "why"), [
    ("Use Postgres.", "the reply is not JSON"),
    ("[1, 2]", "the reply is not a JSON object"),
    ('{"proposal": 1, "key_technologies": [], "acknowledged_rejections": []}',
     "proposal is not a string"),
    ('{"proposal": "x", "key_technologies": "Celery", "acknowledged_rejections": []}',
     "key_technologies is not a list of strings"),
])
def test_a_malformed_reply_fails_its_item_with_the_reason(text: str, why: str) -> None:
    assert scoring.judge(text, SCENARIO) == {"malformed": why, "proposed_again": None,
                                             "respected": False}


def test_a_fenced_reply_is_read_inside_the_fence() -> None:
    fenced = "```json\n" + reply("Use Postgres.", ["Postgres"], []) + "\n```"
    assert scoring.judge(fenced, SCENARIO)["respected"] is True


# -- the prompt, the cache key, the budget -------------------------------------------------------

def test_each_condition_shows_what_it_should() -> None:
    fx = load_suite("behaviour", ["builtin"], Path("/repo"), False)
    decision = next(d for d in fx.decisions if d.rejected)
    option = decision.rejected[0].option
    assert scoring.context("none", fx.decisions, []) == ""
    assert option not in scoring.context("conventions", fx.decisions, fx.decisions)
    assert f"Rejected: {option}" in scoring.context("flatfile", fx.decisions, fx.decisions)
    assert f"WARNING: the team rejected {option}" in scoring.context(
        "memory", fx.decisions, [decision])
    assert option not in scoring.context("memory", fx.decisions, [])


def test_the_cache_key_changes_with_model_messages_parameters_and_repeat(tmp_path: Path) -> None:
    def llm(old: str = "", new: str = "") -> LLM:
        table = parse(LIVE.replace(old, new) + SUITE).live
        assert table is not None
        return LLM(table, tmp_path, scoring.COMPLETION_TOKENS, env={})

    msgs = scoring.messages("task", "")
    key = llm().key_of(msgs, 0)
    assert llm("127.0.0.1:9", "elsewhere").key_of(msgs, 0) == key
    assert llm().key_of(msgs, 1) != key
    assert llm().key_of(scoring.messages("task!", ""), 0) != key
    assert llm('"m"', '"m"\ntemperature = 0.3').key_of(msgs, 0) != key
    assert llm('"m"', '"m2"').key_of(msgs, 0) != key


def test_the_plan_counts_every_scenario_and_condition() -> None:
    fx = load_suite("behaviour", ["builtin"], Path("/repo"), False)
    options = parse(LIVE + SUITE).suites["behaviour"]
    calls, tokens = scoring.plan(fx, options)
    assert calls == len(fx.digests) * 4
    assert tokens > calls * scoring.COMPLETION_TOKENS
    two = parse(LIVE + SUITE + 'conditions = ["none", "memory"]\n').suites["behaviour"]
    assert scoring.plan(fx, two)[0] == len(fx.digests) * 2
