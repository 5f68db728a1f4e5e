"""bless --results (no second run), bless's refusals in plain words, and --verify-determinism
naming the first difference — through the real CLI on real git repositories."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path

from tests.e2e.cli import test_check as check_tests
from tests.e2e.cli.test_check import config_text, verdict_of
from tests.support.cli import run_cli

# The same blessed origin as the check tests.
origin = check_tests.origin

# Orders the two best hits differently from one run to the next, at equal scores: what an ANN
# store does to ties. The run count lives in a file, so it holds in or out of process.
FLAKY_ADAPTER = '''\
from pathlib import Path

from membench_gate import Answer, Hit
from membench_gate.reference import ReferenceMemory

COUNTER = Path(__file__).with_name("runs.txt")


class Flaky(ReferenceMemory):
    def __init__(self, **options):
        super().__init__(**options)
        runs = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
        COUNTER.write_text(str(runs))
        self.flip = runs % 2 == 0

    def search(self, query):
        answer = super().search(query)
        hits = list(answer.hits)
        if len(hits) >= 2:
            pair = [Hit(hits[0].id, hits[0].score), Hit(hits[1].id, hits[0].score)]
            hits[:2] = pair[::-1] if self.flip else pair
        return Answer(hits=hits, abstain=answer.abstain)
'''


def test_verify_determinism_names_the_first_differing_cell_item_and_field(work: Path) -> None:
    (work / "flaky.py").write_text(FLAKY_ADAPTER, encoding="utf-8")
    (work / "membench.toml").write_text(config_text(adapter="flaky:Flaky"), encoding="utf-8")
    code, verdict, out = verdict_of(work, "--verify-determinism")
    assert code == 3 and verdict["verdict"] == "inconclusive"
    note = verdict["notes"][0]
    assert re.search(r"first at abstention/default#probe-\d+ field hits\[0\]\.id: "
                     r"'fact-\d+' then 'fact-\d+'", note), note
    assert "sort ties by score, then id" in note
    assert "--results" not in out  # nothing suggests an option that was not used


def test_bless_results_writes_the_baseline_without_running_again(work: Path) -> None:
    (work / "membench.toml").write_text(config_text(tau=0.5), encoding="utf-8")
    done = run_cli("check", "--out", "results.json", cwd=work)
    assert done.returncode == 1, done.stdout  # tau 0.5 costs NET on abstention/default
    line = next(s.strip() for s in done.stdout.splitlines()
                if s.strip().startswith("membench-gate bless"))
    printed = shlex.split(line)
    draft = printed[printed.index("--justification") + 1]
    refused = run_cli(*printed[1:], "--results", "results.json", cwd=work)
    assert refused.returncode == 1 and "adapter calls" not in refused.stderr
    assert refused.stderr.strip() == ("membench-gate: error: bless refused: replace <write the "
                                      "reason here> in the justification with the reason for "
                                      "these changes")
    short = run_cli("bless", "--results", "results.json", "--justification", "tau raised", cwd=work)
    assert "the justification was rejected (too short: 10 characters, need 40)" in short.stderr
    reason = draft.replace("<write the reason here>", "A higher abstention floor trades "
                           "answered probes for fewer wrong answers on purpose")
    done = run_cli("bless", "--results", "results.json", "--justification", reason, cwd=work)
    assert done.returncode == 0, done.stderr
    assert "adapter calls" not in done.stderr  # the results file was blessed, nothing re-ran
    assert re.search(r"\d+ breach(es)? against the base [0-9a-f]{12} \(origin/main\), justified",
                     done.stdout)
    blessed = json.loads((work / "baselines/main.json").read_text())
    assert blessed["justification"]["text"] == reason
    assert run_cli("check", cwd=work).returncode == 0


def test_a_check_with_the_holdout_prints_the_bless_that_resolves_it(work: Path) -> None:
    # The holdout is part of the measurement: the printed bless carries the flag, and once that
    # baseline is committed the check with the holdout passes (and the one without it does not).
    done = run_cli("check", "--include-holdout", "--out", "results.json", cwd=work)
    assert done.returncode == 2, done.stdout
    line = next(s.strip() for s in done.stdout.splitlines()
                if s.strip().startswith("membench-gate bless"))
    printed = shlex.split(line)
    assert "--include-holdout" in printed and printed[printed.index("--results") + 1] == \
        "results.json"
    draft = printed[printed.index("--justification") + 1]
    reason = draft.replace("<write the reason here>", "The held-out items are gated from now "
                           "on, so every suite measures more of its fixtures")
    printed[printed.index("--justification") + 1] = reason
    blessed = run_cli(*printed[1:], cwd=work)
    assert blessed.returncode == 0, blessed.stderr
    assert json.loads((work / "baselines/main.json").read_text())["config"][
        "include_holdout"] is True
    assert run_cli("check", "--include-holdout", cwd=work).returncode == 0
    assert run_cli("check", cwd=work).returncode == 2


def test_bless_results_of_another_config_is_refused(work: Path) -> None:
    assert run_cli("run", "--out", "r.json", cwd=work).returncode == 0
    (work / "membench.toml").write_text(config_text(k=3), encoding="utf-8")
    done = run_cli("bless", "--results", "r.json", cwd=work)
    assert done.returncode == 4
    assert "bless refused: r.json was produced under another config" in done.stderr


def test_a_first_baseline_says_so_in_words(tmp_path: Path) -> None:
    from tests.support.gitrepos import init

    repo = init(tmp_path / "repo")
    (repo / "membench.toml").write_text(config_text(), encoding="utf-8")
    done = run_cli("bless", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("baseline written to baselines/main.json (8 cells); no base "
                                   "commit to compare with: a first baseline")
    assert "0 breaches" not in done.stdout


def test_a_justification_with_nothing_to_justify_is_said_so(tmp_path: Path) -> None:
    from tests.support.gitrepos import init

    repo = init(tmp_path / "repo")
    (repo / "membench.toml").write_text(config_text(), encoding="utf-8")
    done = run_cli("bless", "--justification", "short", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        "  note: nothing needed a justification: it is recorded with no breaches, and justifies "
        "none later (a check notes it and ignores it)"]
    recorded = json.loads((repo / "baselines/main.json").read_text())["justification"]
    assert recorded == {"text": "short", "breaches": []}
    # Without the flag, nothing to note: the plain line alone.
    assert run_cli("bless", cwd=repo).stdout.count("\n") == 1


def test_bless_repairs_a_broken_committed_baseline(make_repo: Callable[..., Path]) -> None:
    repo = make_repo()
    assert run_cli("bless", cwd=repo).returncode == 0
    good = (repo / "baselines/main.json").read_bytes()
    (repo / "baselines/main.json").write_text("{not json")
    assert run_cli("check", cwd=repo).returncode == 4
    done = run_cli("bless", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "ignoring the committed baseline" in done.stderr
    assert (repo / "baselines/main.json").read_bytes() == good
