"""Foreign data and hand-made mistakes: small corpora, numpy adapters, hand-edited baselines,
stale results files, configs in subfolders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gitrepos import ISOLATED_ENV, LEAKY_VARS, commit, init

from membench_gate.adapter import Answer, Hit, answer_to_wire
from membench_gate.errors import GateError
from membench_gate.gate import decide
from membench_gate.results import Baseline, Cell, Justification
from membench_gate.suites.abstention import derangement

SMALL_FACTS = [{"id": "f1", "text": "The billing API listens on port 8443."},
               {"id": "f2", "text": "Deploys are frozen on Fridays after 3pm."}]
SMALL_PROBES = [{"id": "p1", "question": "Which port does the billing API listen on?",
                 "gold_fact_id": "f1"},
                {"id": "p2", "question": "When are deploys frozen?", "gold_fact_id": "f2"},
                {"id": "p3", "question": "Who owns the search cluster?", "gold_fact_id": None}]


def gate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in LEAKY_VARS and k != "CI" and not k.startswith("GITHUB_")} | ISOLATED_ENV
    return subprocess.run([sys.executable, "-m", "membench_gate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)


def small_repo(root: Path, config_dir: str = ".") -> Path:
    repo = init(root / "repo")
    folder = repo / config_dir
    (folder / "fx").mkdir(parents=True)
    (folder / "fx/facts.json").write_text(json.dumps(SMALL_FACTS))
    (folder / "fx/probes.json").write_text(json.dumps(SMALL_PROBES))
    (folder / "membench.toml").write_text(
        '[adapter.options]\ntau = 0.3\n[suites.abstention]\nfixtures = ["fx"]\nk = 1\n')
    commit(repo, "memory", {})
    return repo


@pytest.mark.parametrize("n", range(2, 12))
def test_the_shuffled_control_moves_every_fact(n: int) -> None:
    ids = [f"f{i}" for i in range(n)]
    shuffled = derangement(ids, seed=7)
    assert sorted(shuffled) == sorted(ids)
    assert all(a != b for a, b in zip(ids, shuffled, strict=True))


def test_a_two_fact_corpus_still_has_failing_controls(tmp_path: Path) -> None:
    # With k = 1 a two-fact corpus can tell right from wrong (with k >= the corpus, it cannot,
    # and the controls rightly say so); a shuffle that left a fact in place would pass.
    repo = small_repo(tmp_path)
    done = gate(repo, "run", "--out", "r.json")
    assert done.returncode == 0, done.stderr
    cells = json.loads((repo / "r.json").read_text())["cells"]
    assert cells["abstention/default"]["metrics"]["controls_passing"] == 0
    assert cells["abstention/control_shuffled"]["failed"] == []


def test_numpy_scalars_from_an_adapter_are_accepted() -> None:
    # What the host sends for a Python adapter: numpy scores and bools become JSON numbers/bools.
    wire = answer_to_wire(Answer(hits=[Hit("f1", np.float32(0.5))], abstain=np.False_))
    assert wire == {"hits": [{"id": "f1", "score": 0.5}], "abstain": False}
    assert type(wire["hits"][0]["score"]) is float
    with pytest.raises(ValueError, match="not a number"):
        answer_to_wire(Answer(hits=[Hit("f1", "high")], abstain=False))  # type: ignore[arg-type]


def test_results_on_edited_fixtures_are_inconclusive(tmp_path: Path) -> None:
    repo = small_repo(tmp_path)
    assert gate(repo, "bless").returncode == 0
    commit(repo, "baseline", {})
    assert gate(repo, "run", "--out", "r.json").returncode == 0
    probes = json.loads((repo / "fx/probes.json").read_text())
    probes[0]["question"] = "What port is billing on?"
    (repo / "fx/probes.json").write_text(json.dumps(probes))
    done = gate(repo, "check", "--results", "r.json", "--json", "v.json")
    assert done.returncode == 3
    assert "fixtures_hash" in json.loads((repo / "v.json").read_text())["notes"][0]


def test_a_reformatted_committed_baseline_is_compared_by_content(tmp_path: Path) -> None:
    repo = small_repo(tmp_path)
    assert gate(repo, "bless").returncode == 0
    commit(repo, "baseline", {})
    path = repo / "baselines/main.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps(data, indent=4))  # same content, reformatted: noted, not blocked
    done = gate(repo, "check", "--json", "v.json")
    verdict = json.loads((repo / "v.json").read_text())
    assert done.returncode == 0 and "not in canonical form" in verdict["notes"][-1]
    metrics = data["cells"]["abstention/default"]["metrics"]
    metrics["net_at_1"] += 0.5  # a hand edit of content is a committed baseline that lies
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    done = gate(repo, "check", "--json", "v.json")
    verdict = json.loads((repo / "v.json").read_text())
    assert done.returncode == 2 and verdict["notes"][0] == "committed baseline does not match this run"
    assert verdict["blessed"] is False


def test_bless_repairs_a_broken_committed_baseline(tmp_path: Path) -> None:
    repo = small_repo(tmp_path)
    assert gate(repo, "bless").returncode == 0
    good = (repo / "baselines/main.json").read_bytes()
    (repo / "baselines/main.json").write_text("{not json")
    assert gate(repo, "check").returncode == 4
    done = gate(repo, "bless")
    assert done.returncode == 0, done.stderr
    assert "ignoring the committed baseline" in done.stderr
    assert (repo / "baselines/main.json").read_bytes() == good


def test_blessed_is_false_when_a_bless_is_required() -> None:
    cell = Cell(metrics={"veto_recall_at_k": 0.9}, gold_total=2, failed=[])
    base = Baseline(schema_version=1, fixtures_hash="h", config={}, cells={"veto/files_known": cell})
    worse = base.model_copy(update={"cells": {"veto/files_known": Cell(
        metrics={"veto_recall_at_k": 0.5}, gold_total=2, failed=["a"])}})
    lie = base.model_copy(update={
        "cells": {"veto/files_known": Cell(metrics={"veto_recall_at_k": 0.7}, gold_total=2,
                                           failed=[])},
        "justification": Justification(
            text="veto/files_known veto_recall_at_k fell because the ranking changed a lot",
            breaches=["veto/files_known#a", "veto/files_known:veto_recall_at_k"])})
    verdict = decide(base, lie, worse)
    assert verdict.verdict == "bless-required" and verdict.blessed is False


def test_config_in_a_subfolder_keeps_its_path_in_suggested_commands(tmp_path: Path) -> None:
    repo = small_repo(tmp_path, config_dir="gate")
    done = gate(repo, "check", "--config", "gate/membench.toml", "--report", "r.md")
    assert done.returncode == 2, done.stderr  # bootstrap without a baseline
    assert "membench-gate bless --config gate/membench.toml" in done.stdout
    assert "--config gate/membench.toml" in (repo / "r.md").read_text()


def test_baseline_outside_the_repository_is_a_clear_error(tmp_path: Path) -> None:
    repo = small_repo(tmp_path)
    (repo / "membench.toml").write_text(
        '[suites.abstention]\nfixtures = ["fx"]\n[gate]\nbaseline = "../elsewhere.json"\n')
    done = gate(repo, "check")
    assert done.returncode == 4
    assert "gate.baseline" in done.stderr and "outside the git repository" in done.stderr
    assert "internal error" not in done.stderr


@pytest.mark.parametrize(("mutate", "needle"), [
    (lambda f, p: f[0].update(holdout="yes"), "holdout"),
    (lambda f, p: p[0].update(id="f2"), "duplicate"),
    (lambda f, p: p[0].update(gold_fact_id=7), "gold_fact_id"),
])
def test_fixture_mistakes_are_errors_not_conversions(tmp_path: Path, mutate, needle: str) -> None:
    repo = small_repo(tmp_path)
    facts, probes = json.loads(json.dumps(SMALL_FACTS)), json.loads(json.dumps(SMALL_PROBES))
    mutate(facts, probes)
    (repo / "fx/facts.json").write_text(json.dumps(facts))
    (repo / "fx/probes.json").write_text(json.dumps(probes))
    done = gate(repo, "run", "--out", "r.json")
    assert done.returncode == 4 and needle in done.stderr, done.stderr
    assert not (repo / "r.json").exists()


def test_a_floor_on_an_unknown_cell_is_a_config_error(tmp_path: Path) -> None:
    repo = small_repo(tmp_path)
    (repo / "membench.toml").write_text(
        '[suites.abstention]\nfixtures = ["fx"]\n'
        '[floors]\n"veto/files_knwn:veto_recall_at_k" = 0.5\n')
    done = gate(repo, "run")
    assert done.returncode == 4 and "did you mean 'veto/files_known'" in done.stderr


def test_a_baseline_with_a_boolean_schema_version_is_refused(tmp_path: Path) -> None:
    from membench_gate.results import parse_baseline

    with pytest.raises(GateError) as caught:
        parse_baseline('{"schema_version": true}', "b.json")
    assert caught.value.exit_code == 3
