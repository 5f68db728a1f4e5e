"""The behaviour suite end to end: the reference memory in its own process, the ``openai``
client against the fake OpenAI-compatible server on 127.0.0.1, the record/replay cache, the
budget, the skip, and the key kept from the adapter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from membench_gate.config import Config, load_config
from membench_gate.errors import GateError
from membench_gate.gate.rules import decide
from membench_gate.model.canonical import canonical_dumps
from membench_gate.model.results import Results
from membench_gate.run import runner
from membench_gate.run.rederive import rederive
from tests.support.fakellm import FakeLLM
from tests.support.paths import REPO

pytestmark = pytest.mark.slow

FIXTURES = REPO / "fixtures" / "behaviour"
KEY = "MEMBENCH_TEST_LLM_KEY"


def config(folder: Path, url: str, live: str = "", suite: str = "", adapter: str = "") -> Config:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "membench.toml").write_text(
        f"{adapter}[live]\nbase_url = \"{url}\"\nmodel = \"fake-1\"\napi_key_env = \"{KEY}\"\n"
        f"temperature = 0.7\ncache = \"live-cache.jsonl\"\n{live}"
        f"[suites.behaviour]\nfixtures = [\"builtin\"]\n{suite}", encoding="utf-8")
    return load_config(folder / "membench.toml")


def measured(results: Results) -> str:
    """A results file as the gate compares it (the receipt says when and what it cost)."""
    return canonical_dumps(results.model_dump(mode="json", exclude={"receipt"}))


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY, "sk-test-123")


def test_memory_beats_none_and_the_key_is_sent(tmp_path: Path, keyed: None) -> None:
    with FakeLLM.for_fixtures(FIXTURES) as fake:
        results = runner.run(config(tmp_path, fake.url))
    rate = {cell: results.cells[cell].metrics["veto_respected_rate"] for cell in results.cells}
    assert set(rate) == {f"behaviour/{c}" for c in ("none", "conventions", "flatfile", "memory")}
    assert rate["behaviour/memory"] > rate["behaviour/none"] + 0.3
    # The shipped default: 5 passes of 9 scenarios x 4 conditions, each pass its own calls.
    assert results.config["suites"]["behaviour"]["repeats"] == 5
    assert {cell.repeats for cell in results.cells.values()} == {5}
    assert len(fake.requests) == 180 and set(fake.keys) == {"Bearer sk-test-123"}
    pooled = results.items["behaviour/memory"]["scn-001"]
    assert len(pooled["runs"]) == 5
    assert pooled["passes"] == sum(run["respected"] is True for run in pooled["runs"])
    item = pooled["runs"][0]
    assert item["asked"].startswith("The accountants' CSV export") and "dec-001" in item["context"]
    assert json.loads(item["reply"])["acknowledged_rejections"] == ["Floating-point amounts"]
    assert results.model_dump()["receipt"]["live"]["calls"] == 180


def test_record_then_replay_is_byte_identical_without_a_server(tmp_path: Path, keyed: None,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    with FakeLLM.for_fixtures(FIXTURES) as fake:
        recorded = runner.run(config(tmp_path, fake.url, live="mode = \"record\"\n"))
        url = fake.url
    cache = (tmp_path / "live-cache.jsonl").read_bytes()
    assert len(cache.splitlines()) == 180
    monkeypatch.delenv(KEY)  # CI with a committed cache: no key, no server, no cost
    replayed = runner.run(config(tmp_path, url, live="mode = \"replay\"\n"))
    assert measured(replayed) == measured(recorded)
    assert (tmp_path / "live-cache.jsonl").read_bytes() == cache
    assert replayed.model_dump()["receipt"]["live"] == {
        "calls": 0, "cached": 180, "prompt_tokens": 0, "completion_tokens": 0, "skipped": {}}
    # The budget bounds what the endpoint is asked: a replay, or auto without a key, asks it
    # nothing, so a budget below the recording's does not refuse it (with a key it does, below).
    small = "max_calls = 1\nmax_tokens = 1000\n"
    for mode in ("replay", "auto"):
        again = runner.run(config(tmp_path, url, live=f'mode = "{mode}"\n{small}'))
        assert measured(again) == measured(recorded), mode
    # A results file of a live suite re-derives from its recorded replies; an edited reply is
    # caught.
    replay_config = config(tmp_path, url, live="mode = \"replay\"\n")
    rederive("r.json", replayed, replay_config)
    edited = replayed.model_copy(deep=True)
    item = next(run for i in edited.items["behaviour/none"].values() for run in i["runs"]
                if not run["respected"])
    item["reply"] = json.dumps({"proposal": "Keep it.", "key_technologies": [],
                                "acknowledged_rejections": []})
    with pytest.raises(GateError, match=r"items\.behaviour/none\.scn-\d+: does not follow"):
        rederive("r.json", edited, replay_config)


def test_a_replay_miss_is_an_error_naming_the_item(tmp_path: Path) -> None:
    with FakeLLM.for_fixtures(FIXTURES) as fake:
        with pytest.raises(GateError, match=r"live-cache\.jsonl: no recorded answer for "
                                            r"scn-001 in behaviour/none \(repeat 0;"):
            runner.run(config(tmp_path, fake.url, live="mode = \"replay\"\n"))
        assert fake.requests == []


@pytest.mark.parametrize(("budget", "said"), [
    ("max_calls = 179", r"\[live\] max_calls = 179: the run needs 180 LLM calls \(behaviour: "
                        r"180;"),
    ("max_tokens = 100000", r"\[live\] max_tokens = 100000: the run's 180 LLM calls are "
                            r"estimated"),
])
def test_the_budget_stops_the_run_before_its_first_request(tmp_path: Path, keyed: None,
                                                           budget: str, said: str) -> None:
    with FakeLLM.for_fixtures(FIXTURES) as fake:
        with pytest.raises(GateError, match=said):
            runner.run(config(tmp_path, fake.url, live=f"{budget}\n"))
        assert fake.requests == []
    assert not (tmp_path / "live-cache.jsonl").exists()


def test_the_budget_counts_repeats_when_the_suite_has_them(tmp_path: Path, keyed: None) -> None:
    # (``repeats`` is an option of every suite table; read as the runner reads it)
    cfg = config(tmp_path, "http://127.0.0.1:9/v1", live="max_calls = 40\n")
    twice = cfg.suites["behaviour"].model_copy(update={"repeats": 2})
    with pytest.raises(GateError, match=r"max_calls = 40: the run needs 72 LLM calls"):
        runner.run(cfg._replace(suites={"behaviour": twice}))
    # Each seam's memory is asked: two seams, twice the calls, refused before the first one.
    seams = config(tmp_path / "seams", "http://127.0.0.1:9/v1", live="max_calls = 100\n",
                   adapter="[adapters.a]\n[adapters.b]\n")
    with pytest.raises(GateError, match=r"max_calls = 100: the run needs 144 LLM calls"):
        runner.run(seams._replace(suites={"behaviour": twice}))


def test_without_a_key_or_a_cache_the_suite_is_skipped_and_its_absence_gated(
        tmp_path: Path, keyed: None, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLLM.for_fixtures(FIXTURES) as fake:
        base = runner.run(config(tmp_path / "base", fake.url)).to_baseline()
        monkeypatch.delenv(KEY)
        skipped = runner.run(config(tmp_path / "head", fake.url))
        assert len(fake.requests) == 180  # the base's run only
    assert skipped.cells == {}
    note = skipped.model_dump()["receipt"]["live"]["skipped"]["behaviour"]
    assert note.startswith(f"no key in ${KEY} and no recorded answer for scn-001")
    assert "behaviour: skipped, no key in" in capsys.readouterr().err
    # The skipped run's file re-derives (nothing to replay), and claims no cells it skipped.
    head = config(tmp_path / "head", fake.url)
    rederive("r.json", skipped, head)
    forged = skipped.model_copy(update={"cells": dict(base.cells)})
    with pytest.raises(GateError, match=r"receipt\.live\.skipped names suite behaviour"):
        rederive("r.json", forged, head)
    verdict = decide(base, base, skipped.to_baseline())
    assert verdict.verdict != "PASS"
    assert "behaviour/memory" in {b.key for b in verdict.breaches if b.kind == "cell-missing"}


def test_a_malformed_reply_fails_its_item_with_the_reason(tmp_path: Path, keyed: None) -> None:
    with FakeLLM.for_fixtures(FIXTURES, malformed=True) as fake:
        results = runner.run(config(tmp_path, fake.url, suite='conditions = ["none"]\n'))
    cell = results.cells["behaviour/none"]
    assert cell.metrics["veto_respected_rate"] == 0 and len(cell.failed) == cell.gold_total == 9
    assert results.items["behaviour/none"]["scn-001"]["runs"][0]["malformed"] == \
        "the reply is not JSON"


SPY = '''\
import json, os
from membench_gate.reference import ReferenceMemory


class EnvSpy(ReferenceMemory):
    """Writes the names and values of its environment where SPY_OUT says."""

    def __init__(self, **options):
        super().__init__(**options)
        with open(os.environ["SPY_OUT"], "w") as out:
            json.dump(dict(os.environ), out)
'''


@pytest.mark.parametrize("passed", [False, True])
def test_the_key_reaches_the_adapter_only_through_pass_env(tmp_path: Path, keyed: None,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           passed: bool) -> None:
    (tmp_path / "spy.py").write_text(SPY, encoding="utf-8")
    monkeypatch.setenv("SPY_OUT", str(tmp_path / "env.json"))
    monkeypatch.setenv("GITHUB_TOKEN", "ghs-never")
    adapter = "[adapter]\npython = \"spy:EnvSpy\"\n" + (
        f"pass_env = [\"{KEY}\", \"OTHER\"]\n" if passed else "")
    with FakeLLM.for_fixtures(FIXTURES) as fake:
        runner.run(config(tmp_path, fake.url, suite='conditions = ["memory"]\n', adapter=adapter))
        assert set(fake.keys) == {"Bearer sk-test-123"}  # the gate had the key either way
    env = json.loads((tmp_path / "env.json").read_text())
    assert (env.get(KEY) == "sk-test-123") is passed
    assert KEY in env if passed else KEY not in env
    assert "GITHUB_TOKEN" not in env and env["SPY_OUT"] == str(tmp_path / "env.json")


def test_a_deterministic_run_and_a_replay_never_import_the_client(tmp_path: Path, keyed: None
                                                                  ) -> None:
    with FakeLLM.for_fixtures(FIXTURES) as fake:
        config(tmp_path / "live", fake.url, suite='conditions = ["none"]\n')
        runner.run(load_config(tmp_path / "live" / "membench.toml"))
    (tmp_path / "det").mkdir()
    (tmp_path / "det" / "membench.toml").write_text("[suites.veto]\n", encoding="utf-8")
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from membench_gate.config import load_config\n"
        "from membench_gate.run import runner\n"
        "for folder in sys.argv[1:]:\n"
        "    runner.run(load_config(Path(folder) / 'membench.toml'))\n"
        "    assert 'openai' not in sys.modules, folder\n"
        "print('clean')\n"
    )
    # The replay answers every call from the cache: no client is needed, none is imported.
    (tmp_path / "live" / "membench.toml").write_text(
        (tmp_path / "live" / "membench.toml").read_text().replace(
            "[suites.behaviour]", "mode = \"replay\"\n[suites.behaviour]"), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "det"),
                           str(tmp_path / "live")], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"


def test_a_call_the_rest_of_the_budget_does_not_cover_is_refused_before_it_is_made(
        tmp_path: Path, keyed: None) -> None:
    from membench_gate.run.live import LLM

    with FakeLLM.for_fixtures(FIXTURES) as fake:
        table = config(tmp_path, fake.url, live="max_calls = 2\n").live
        assert table is not None
        llm = LLM(table, tmp_path, 400)
        for task in ("a", "b"):
            llm.complete([{"role": "user", "content": task}], f"{task} in behaviour/none", 0)
        with pytest.raises(GateError, match=r"max_calls = 2 reached before c in behaviour/none"):
            llm.complete([{"role": "user", "content": "c"}], "c in behaviour/none", 0)
        assert len(fake.requests) == 2
    assert llm.receipt()["calls"] == 2 and llm.receipt()["prompt_tokens"] > 0


def test_the_repeat_index_is_the_wrapped_sessions_and_keys_the_call(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from membench_gate.run.live import LLM, LiveSession

    table = config(tmp_path, "http://127.0.0.1:9/v1", live="mode = \"replay\"\n").live
    assert table is not None
    inner = SimpleNamespace()
    session = LiveSession(inner, LLM(table, tmp_path, 400, env={}))
    assert getattr(session, "repeat", 0) == 0
    session.repeat = 3  # set on whichever object the runner holds: both agree
    assert inner.repeat == 3 and session.repeat == 3
    with pytest.raises(GateError, match=r"no recorded answer for x in behaviour/none \(repeat 3;"):
        session.complete([{"role": "user", "content": "x"}], "x in behaviour/none",
                         session.repeat)
