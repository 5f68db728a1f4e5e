"""The behaviour suite gated end to end, through the real CLI in a real git repository, against
the fake OpenAI-compatible server on 127.0.0.1, at the shipped default repeats: a memory that
stops retrieving the veto is a ``stochastic-regression`` of ``behaviour/memory`` and the
scoreboard says so in counts, intervals and p-values; a replayed run is byte-identical (and
``--verify-determinism`` says so); the selftest of a behaviour config runs, measures its false
alarms over 200 A/A comparisons and its power against the mutants."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import cli_env, seed_repo
from tests.support.fakellm import FakeLLM
from tests.support.gitrepos import commit, git
from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # real processes, 180 LLM calls a run

KEY = "MEMBENCH_TEST_LLM_KEY"
FIXTURES = REPO / "fixtures" / "behaviour"

MEMORY = '''\
from membench_gate.reference import ReferenceMemory


class Memory(ReferenceMemory):
    """The team's memory: the reference memory as it ships."""
'''

# The regression: a refactor that keeps every decision but no longer returns, from search, the
# ones that carry a veto. The agent then never sees the warning.
REGRESSED = '''\
from membench_gate import Answer
from membench_gate.reference import ReferenceMemory


class Memory(ReferenceMemory):
    """Search drops the decisions that rejected something."""

    def reset(self):
        super().reset()
        self.vetoed = set()

    def ingest(self, records):
        self.vetoed = getattr(self, "vetoed", set()) | {
            r.id for r in records if r.meta.get("rejected")}
        super().ingest(records)

    def search(self, query):
        answer = super().search(query)
        return Answer([h for h in answer.hits if h.id not in self.vetoed], answer.abstain)
'''


def config(url: str, mode: str = "auto") -> str:
    """A behaviour config with the shipped defaults: every condition, k = 5, repeats unset."""
    return (f'[adapter]\npython = "mem:Memory"\n[live]\nbase_url = "{url}"\nmodel = "fake-1"\n'
            f'api_key_env = "{KEY}"\ntemperature = 0.7\ncache = "live-cache.jsonl"\n'
            f'mode = "{mode}"\n[suites.behaviour]\n')


def gate(repo: Path, *args: str, key: str | None = "sk-test") -> subprocess.CompletedProcess[str]:
    env = cli_env({KEY: key} if key else {})
    if key is None:
        env.pop(KEY, None)
    return subprocess.run([sys.executable, "-m", "membench_gate", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM.for_fixtures(FIXTURES, seed=11) as server:
        yield server


@pytest.fixture
def blessed(tmp_path: Path, fake: FakeLLM) -> Path:
    """A memory repository on ``main`` with its baseline and the recorded answers committed."""
    repo = seed_repo(tmp_path / "repo", {"membench.toml": config(fake.url), "mem.py": MEMORY},
                     blessed=False)
    done = gate(repo, "bless")
    assert done.returncode == 0, done.stdout + done.stderr
    commit(repo, "bless baseline, with the recorded answers", {})
    assert len(fake.requests) == 180  # 9 scenarios x 4 conditions x the default 5 repeats
    return repo


def test_a_memory_that_stops_retrieving_the_veto_is_a_stochastic_regression(
        blessed: Path, fake: FakeLLM) -> None:
    baseline = json.loads((blessed / "baselines" / "main.json").read_text())
    memory = baseline["cells"]["behaviour/memory"]
    assert memory["repeats"] == 5 and sum(memory["passes"].values()) >= 36  # of 45
    git(blessed, "checkout", "-q", "-b", "refactor-search")
    commit(blessed, "search: leave out decisions with vetoes", {"mem.py": REGRESSED})
    done = gate(blessed, "check", "--json", "verdict.json", "--report", "report.md")
    assert done.returncode == 1, done.stdout + done.stderr
    # The unchanged conditions were answered from the committed cache; only the memory's new
    # prompts (its context changed) were new calls.
    assert len(fake.requests) == 180 + 45
    verdict = json.loads((blessed / "verdict.json").read_text())
    assert verdict["verdict"] == "regression" and verdict["mode"] == "same-hash"
    assert [(b["kind"], b["key"]) for b in verdict["breaches"]] == [
        ("stochastic-regression", "behaviour/memory")]
    breach = verdict["breaches"][0]
    assert breach["base"] >= 0.8 and breach["head"] <= 0.4
    p_value = re.search(r"one-sided exact p (< 0\.0001|= [0-9.]+), Holm-adjusted "
                        r"(< 0\.0001|[0-9.]+): significant at alpha 0\.05", breach["detail"])
    assert p_value, breach["detail"]
    tested = {t["cell"]: t for t in verdict["stochastic"]}
    assert set(tested) == {f"behaviour/{c}" for c in ("none", "conventions", "flatfile",
                                                      "memory")}
    assert tested["behaviour/memory"]["adjusted_p"] <= 0.05
    assert all(not t["significant"] for c, t in tested.items() if c != "behaviour/memory")
    assert re.search(r"behaviour/memory: \d+/45 → \d+/45 passes, p < 0\.0001 \(Holm\): a "
                     r"significant drop", done.stdout), done.stdout
    assert "items compared one to one" not in done.stdout  # every cell here is stochastic
    scoreboard_reads_as_counts(blessed / "report.md", verdict)


def p_text(value: float) -> str:
    return "< 0.0001" if value < 0.0001 else f"{value:.4f}"


def scoreboard_reads_as_counts(path: Path, verdict: dict) -> None:
    """The scoreboard of a stochastic regression, rendered as GitHub renders Markdown: the
    memory cell's counts, both Wilson intervals and both p-values as the verdict has them, the
    word "stochastic", and no claim of a per-item comparison for a stochastic cell."""
    import cmarkgfm

    html = cmarkgfm.github_flavored_markdown_to_html(path.read_text())
    text = " ".join(re.sub(r"<[^>]+>", " ", html).replace("&lt;", "<").replace("&gt;", ">")
                    .split())
    memory = next(t for t in verdict["stochastic"] if t["cell"] == "behaviour/memory")
    row = (f"behaviour/memory {memory['base_passes']}/45 ({memory['base_passes'] / 45:.0%}) "
           f"[{memory['base_interval'][0]:.3f}, {memory['base_interval'][1]:.3f}] "
           f"{memory['head_passes']}/45 ({memory['head_passes'] / 45:.0%}) "
           f"[{memory['head_interval'][0]:.3f}, {memory['head_interval'][1]:.3f}] "
           f"{p_text(memory['p_value'])} {p_text(memory['adjusted_p'])} ❌ significant drop")
    assert row in text, text
    assert (f"behaviour/memory — stochastic: {memory['head_passes']}/45 passes (9 gold items × "
            f"5 repeats), Holm-adjusted p {p_text(memory['adjusted_p'])}") in text
    assert "❌ stochastic" in text and "p = <" not in text
    # Nothing claims a per-item comparison for them: no item newly failing, the comparison said
    # to be by pooled counts, and no rate shown as a count of items ("1/9").
    assert verdict["newly_failed"] == {} and "newly failing" not in text.lower()
    assert "every gold item is compared one to one" not in text
    assert "Every cell is stochastic: each is compared by its pooled counts" in text
    assert not re.search(r"\(\d/9\)", text), text


def test_a_replayed_run_is_byte_identical_and_verify_determinism_says_so(
        blessed: Path, fake: FakeLLM) -> None:
    (blessed / "membench.toml").write_text(config(fake.url, mode="replay"), encoding="utf-8")
    outs = []
    for number in (1, 2):
        done = gate(blessed, "check", "--verify-determinism", "--json", "verdict.json",
                    "--out", f"run{number}.json", key=None)
        assert done.returncode == 0, done.stdout + done.stderr
        verdict = json.loads((blessed / "verdict.json").read_text())
        assert any(n.startswith("--verify-determinism: the suites ran twice")
                   for n in verdict["notes"])
        data = json.loads((blessed / f"run{number}.json").read_text())
        assert data["receipt"]["live"]["calls"] == 0 and data["receipt"]["live"]["cached"] == 180
        data.pop("receipt")
        outs.append(json.dumps(data, sort_keys=True))
    assert outs[0] == outs[1]
    assert len(fake.requests) == 180  # nothing asked after the bless
    # The control: the same check calling the endpoint anew (mode = "record") draws fresh
    # answers, and the two runs really differ.
    (blessed / "membench.toml").write_text(config(fake.url, mode="record"), encoding="utf-8")
    done = gate(blessed, "check", "--verify-determinism", "--json", "verdict.json")
    assert done.returncode == 3, done.stdout + done.stderr
    verdict = json.loads((blessed / "verdict.json").read_text())
    assert verdict["verdict"] == "inconclusive"
    assert "two runs of the same config differ, first at behaviour/" in done.stdout + done.stderr


def test_selftest_of_a_behaviour_config_measures_false_alarms_and_power(
        tmp_path: Path, fake: FakeLLM) -> None:
    repo = seed_repo(tmp_path / "repo", {"membench.toml": config(fake.url), "mem.py": MEMORY},
                     blessed=False)
    done = gate(repo, "selftest", "--json", "selftest.json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((repo / "selftest.json").read_text())
    null = report["null"]
    assert null["comparisons"] >= 200 and null["alpha"] == 0.05
    # At or below alpha within its sampling error: the interval's lower bound is not above it.
    assert null["interval"][0] <= 0.05 and null["false_alarms"] == round(null["rate"] * 200)
    # The mutants that change what the memory retrieves made new calls against the server, and
    # the gate sees the ones that lose the vetoes.
    assert len(fake.requests) > 180
    assert null["power"]["forget-everything"] >= 0.95
    assert null["power"]["always-abstain"] >= 0.95
    assert null["power"]["drop-best-hit"] >= 0.5
    assert "behaviour/memory:veto_respected_rate" not in report["blind"]
    assert "null comparisons" in done.stdout
