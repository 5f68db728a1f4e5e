"""``membench-gate selftest``: every gated and zero-gated metric must be breachable by a mutant,
judged by the gate's own rules; mutants give valid answers for any adapter."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from membench_gate.adapter.types import Answer, Pushed, Query, Record, Session
from membench_gate.config import load_config
from membench_gate.report.selftest import read_report, sensitivity_markdown
from membench_gate.run.runner import run
from membench_gate.selftest.mutants import MUTANTS, Mutant
from tests.support.cli import run_cli
from tests.support.configs import write_adapter_config
from tests.support.paths import REPO

# selftest runs the suites once per mutant.
pytestmark = pytest.mark.slow


def full_config(folder: Path, target: str = "membench_gate.reference:ReferenceMemory") -> Path:
    path = write_adapter_config(folder, target, {"tau": 0.35})
    path.write_text(path.read_text() + '[suites.writeback]\nfixtures = ["builtin"]\n'
                    '[suites.recall]\nfixtures = ["builtin"]\n')
    return path


@pytest.fixture(scope="module")
def selftest_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("selftest")
    proc = run_cli("selftest", "--config", full_config(folder), "--json", folder / "st.json",
                   cwd=folder)
    return proc, json.loads((folder / "st.json").read_text(encoding="utf-8"))


def test_every_gated_and_zero_metric_of_every_cell_is_breached(selftest_run: Any) -> None:
    proc, data = selftest_run
    assert proc.returncode == 0, proc.stderr
    assert data["blind"] == [] and data["covered"] == data["total"] == len(data["metrics"])
    # Every gated and zero-gated metric of the five suites, and nothing reported-only.
    assert "writeback/fidelity:non_fact_leak_rate" in data["metrics"]
    assert "push/know_to_ask:source_isolation_violations" in data["metrics"]
    assert {"push/know_to_ask:know_to_ask_failure_rate", "push/know_to_ask:false_fire_rate",
            "push/push:push_precision", "push/push:push_recall",
            "push/push:source_isolation_violations"} <= set(data["metrics"])
    assert data["kinds"]["abstention/default:controls_passing"] == "zero"
    assert not any(key.endswith((":mrr", ":coverage", ":avg_injected_tokens"))
                   for key in data["metrics"])
    assert all(data["metrics"][key] for key in data["metrics"])
    assert data["metrics"]["writeback/fidelity:provenance_accuracy"]
    assert "strip-provenance" in data["metrics"]["writeback/fidelity:provenance_accuracy"]
    for cell in ("push/know_to_ask", "push/push"):
        assert data["metrics"][f"{cell}:source_isolation_violations"] == ["inject-foreign-source"]
    assert "resurrect-superseded" in data["metrics"]["veto/lifecycle:stale_surfaced"]
    assert "never-abstain" in data["metrics"]["recall/temporal:false_answer_rate"]
    assert f"gate sensitivity {data['total']}/{data['total']} metrics" in proc.stdout
    assert re.search(r"^strip-provenance +writeback/fidelity:provenance_accuracy$", proc.stdout,
                     re.MULTILINE)


def test_the_scoreboard_line_says_n_of_n(selftest_run: Any, tmp_path: Path) -> None:
    _, data = selftest_run
    path = tmp_path / "st.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    line = sensitivity_markdown(read_report(path))
    assert f"**Gate sensitivity {data['total']}/{data['total']}**" in line
    data["blind"], data["covered"] = ["push/push:push_recall"], data["total"] - 1
    path.write_text(json.dumps(data), encoding="utf-8")
    assert "blind to push/push:push\\_recall" in sensitivity_markdown(read_report(path))


def test_a_metric_no_chosen_mutant_breaches_is_named_and_exits_1(tmp_path: Path) -> None:
    proc = run_cli("selftest", "--config", full_config(tmp_path), "--mutant", "strip-provenance",
                   "--json", tmp_path / "st.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    data = json.loads((tmp_path / "st.json").read_text(encoding="utf-8"))
    assert data["metrics"]["writeback/fidelity:provenance_accuracy"] == ["strip-provenance"]
    assert "writeback/fidelity:write_back_fidelity" in data["blind"]
    assert "blind metrics: " in proc.stdout and "veto/files_known:veto_recall_at_k" in proc.stdout


def test_an_invariant_the_adapter_already_breaks_is_not_credited(tmp_path: Path) -> None:
    """A push that already leaks across sources: no mutant can prove the invariant works."""
    path = write_adapter_config(tmp_path, "adapters_for_tests:LeakyPush")
    proc = run_cli("selftest", "--config", path, "--mutant", "inject-foreign-source",
                   "--json", tmp_path / "st.json", cwd=tmp_path)
    assert proc.returncode == 1
    data = json.loads((tmp_path / "st.json").read_text(encoding="utf-8"))
    assert data["unmutated_breaches"] == ["push/know_to_ask:source_isolation_violations",
                                          "push/push:source_isolation_violations"]
    assert "push/push:source_isolation_violations" in data["blind"]


FINDS_NOTHING = """
from membench_gate import Answer


class FindsNothing:
    def reset(self):
        pass

    def ingest(self, records):
        pass

    def search(self, query):
        return Answer([], True)
"""


def test_a_metric_already_at_its_worst_is_named_as_such(tmp_path: Path) -> None:
    # Recall 0 in the unmutated run: no mutant can lower it, and the report says why it is blind.
    (tmp_path / "finds_nothing.py").write_text(FINDS_NOTHING, encoding="utf-8")
    (tmp_path / "membench.toml").write_text(
        '[adapter]\npython = "finds_nothing:FindsNothing"\n[suites.veto]\nfixtures = ["builtin"]\n',
        encoding="utf-8")
    proc = run_cli("selftest", "--mutant", "reverse-ranking", "--json", tmp_path / "st.json",
                   cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    data = json.loads((tmp_path / "st.json").read_text(encoding="utf-8"))
    worst = {"veto/files_known:veto_recall_at_k", "veto/files_unknown:veto_recall_at_k"}
    assert worst <= set(data["at_worst"]) <= set(data["blind"])
    assert "veto/lifecycle:stale_surfaced" not in data["at_worst"]  # 0 is its best, not worst
    assert "BLIND — already at its worst value" in proc.stdout
    line = sensitivity_markdown(read_report(tmp_path / "st.json"))
    assert "Already at their worst value: veto/files\\_known:veto\\_recall\\_at\\_k" in line


def test_isolation_no_answer_can_break_is_named_as_such(tmp_path: Path) -> None:
    # The built-in push conversations without their pages of another source: an injected id of
    # another source would be one never ingested, so inject-foreign-source has nothing to add.
    # The metric is still blind (exit 1), and the report says why, in the table and the comment.
    folder = tmp_path / "own" / "conversations"
    folder.mkdir(parents=True)
    for path in sorted((REPO / "fixtures" / "push" / "conversations").glob("*.json")):
        conversation = json.loads(path.read_text(encoding="utf-8"))
        conversation["pages"] = [page for page in conversation["pages"]
                                 if page.get("source", "default") == conversation["source"]]
        (folder / path.name).write_text(json.dumps(conversation), encoding="utf-8")
    (tmp_path / "membench.toml").write_text(
        '[suites.push]\nfixtures = ["own"]\n', encoding="utf-8")
    proc = run_cli("selftest", "--mutant", "inject-foreign-source", "--json",
                   tmp_path / "st.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    data = json.loads((tmp_path / "st.json").read_text(encoding="utf-8"))
    isolation = ["push/know_to_ask:source_isolation_violations",
                 "push/push:source_isolation_violations"]
    assert data["nothing_foreign"] == isolation and set(isolation) <= set(data["blind"])
    assert "push/push:push_recall" in data["blind"]  # blind too, for the usual reason
    assert "push/push:push_recall" not in data["nothing_foreign"]
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith("push/")}
    assert "BLIND — its fixtures seed nothing of another source" in rows[isolation[1]]
    assert rows["push/push:push_recall"].endswith("BLIND — no mutant breaches it")
    line = sensitivity_markdown(read_report(tmp_path / "st.json"))
    assert "Nothing of another source in the fixtures of push/know\\_to\\_ask:" in line
    # With the built-in fixtures (pages of other sources), the same mutant breaches it.
    (tmp_path / "membench.toml").write_text(
        '[suites.push]\nfixtures = ["builtin"]\n', encoding="utf-8")
    proc = run_cli("selftest", "--mutant", "inject-foreign-source", "--json",
                   tmp_path / "st.json", cwd=tmp_path)
    data = json.loads((tmp_path / "st.json").read_text(encoding="utf-8"))
    assert data["nothing_foreign"] == [] and not set(isolation) & set(data["blind"])


def test_unknown_mutant_is_an_error_and_leaves_no_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "st.json"
    stale.write_text("{}")
    proc = run_cli("selftest", "--config", full_config(tmp_path), "--mutant", "drop-hits",
                   "--json", stale, cwd=tmp_path)
    assert proc.returncode == 4
    assert "--mutant drop-hits: unknown mutant" in proc.stderr
    assert not stale.exists()


class Checked:
    """Sits above a mutant and checks that what it returns is a valid answer (docs/adapters.md)."""

    def __init__(self, inner: Mutant) -> None:
        self.inner = inner
        self.capabilities = inner.capabilities
        self.ids: set[str] = set()
        self.writing = False
        self.calls = 0

    def reset(self, item: str | None = None) -> None:
        self.ids, self.writing = set(), False
        self.inner.reset(item)

    def ingest(self, records: list[Record], item: str | None = None) -> None:
        self.ids |= {r.id for r in records}
        self.inner.ingest(records, item)

    def write(self, session: Session, item: str | None = None) -> None:
        self.writing = True
        self.inner.write(session, item)

    def search(self, query: Query, item: str) -> Answer:
        answer = self.inner.search(query, item)
        ids = [h.id for h in answer.hits]
        scores = [h.score for h in answer.hits]
        assert len(ids) <= query.k and len(set(ids)) == len(ids), (self.inner.name, item)
        assert all(math.isfinite(s) for s in scores)
        assert scores == sorted(scores, reverse=True), (self.inner.name, item)
        assert isinstance(answer.abstain, bool)
        if not self.writing:
            assert set(ids) <= self.ids, (self.inner.name, item)
        else:
            assert all(h.text is not None for h in answer.hits)
        self.calls += 1
        return answer

    def push(self, query: Query, item: str) -> list[str]:
        return self.push_answer(query, item).ids

    def push_answer(self, query: Query, item: str) -> Pushed:
        pushed = self.inner.push_answer(query, item)
        ids = pushed.ids
        assert len(ids) <= query.k and len(set(ids)) == len(ids), (self.inner.name, item)
        if not self.writing:  # (after a write, the memory's own ids are valid too)
            assert set(ids) <= self.ids, (self.inner.name, item)
        self.calls += 1
        return pushed


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_mutants_give_valid_answers(mutant: type[Mutant], tmp_path: Path) -> None:
    config = load_config(full_config(tmp_path))
    checked: list[Checked] = []

    def wrap(session: Any) -> Checked:
        checked.append(Checked(mutant(session)))
        return checked[-1]

    results = run(config, wrap=wrap)
    assert len(checked) == 5 and all(c.calls for c in checked)
    assert results.cells
