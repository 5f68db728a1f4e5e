"""``membench-gate doctor`` and the example adapters: the first commands an adapter author runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.paths import REPO

NODE_EXAMPLE = REPO / "examples" / "node-memory"

# Adapters that break one rule each: the doctor must name that rule, and only fail there.
FAULTY = '''
import dataclasses
from pathlib import Path

from membench_gate import Answer, Hit
from membench_gate.reference import ReferenceMemory


class TiesInArbitraryOrder(ReferenceMemory):
    """Equal scores come back in a different order in each process (like an ANN index)."""

    def __init__(self, **options):
        super().__init__(**options)
        counter = Path("processes-started")
        self.started = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(self.started + 1))

    def search(self, query):
        answer = super().search(query)
        flip = self.started % 2 == 1
        hits = sorted(answer.hits, key=lambda h: (-round(h.score, 6), h.id), reverse=False)
        if flip:
            hits = sorted(hits, key=lambda h: (-round(h.score, 6), [-ord(c) for c in h.id]))
        return Answer(hits, answer.abstain)


class DropsHitsWhenAbstaining(ReferenceMemory):
    def search(self, query):
        answer = super().search(query)
        return Answer([] if answer.abstain else answer.hits, answer.abstain)


class DenseDropsHits:
    """Scores every word (no stop list, like a dense retriever) and, below its floor, abstains
    and drops the candidates it found."""

    def __init__(self, **options):
        self.records = []

    def reset(self):
        self.records = []

    def ingest(self, records):
        self.records.extend(records)

    def search(self, query):
        words = lambda text: set("".join(c if c.isalnum() else " " for c in text.lower()).split())
        asked = words(query.text)
        scored = sorted(((len(asked & words(r.text)) / len(asked), r.id) for r in self.records
                         if r.source == query.source), key=lambda s: (-s[0], s[1]))
        hits = [Hit(i, s) for s, i in scored[:query.k] if s > 0]
        if not hits or hits[0].score < 0.2:
            return Answer([], True)
        return Answer(hits, False)


class StopWords(ReferenceMemory):
    """Conforming: like BM25 with a stop list, it finds nothing for a query that shares only
    function words ("the", "for") with its records, and then abstains with no hits."""

    STOP = {"the", "for", "and", "new", "which", "who", "where", "why", "can", "from", "off"}

    def reset(self):
        super().reset()
        self.seen = set()

    def ingest(self, records):
        super().ingest(records)
        self.seen |= {w for r in records for w in r.text.lower().split()}

    def search(self, query):
        words = {w.strip("?:,.") for w in query.text.lower().split()} - self.STOP
        if not words & self.seen:
            return Answer([], True)
        return super().search(query)


class Leaky(ReferenceMemory):
    """Stores and searches every source as one."""

    def ingest(self, records):
        super().ingest([dataclasses.replace(r, source="default") for r in records])

    def search(self, query):
        return super().search(dataclasses.replace(query, source="default"))

    def push(self, query):
        return super().push(dataclasses.replace(query, source="default"))


class NeverForgets(ReferenceMemory):
    """reset() keeps the store; ingest() merges by id."""

    def __init__(self, **options):
        super().__init__(**options)
        self.kept = {}

    def reset(self):
        pass

    def ingest(self, records):
        self.kept.update({r.id: r for r in records})
        super().reset()
        super().ingest(list(self.kept.values()))
'''


def rows(output: str) -> dict[str, str]:
    """check name -> ok / FAIL / n/a."""
    found = {}
    for line in output.splitlines():
        parts = line.split(maxsplit=1)
        if len(parts) == 2 and parts[0] in ("ok", "FAIL", "n/a"):
            for name in ("handshake", "reset empties", "found by its own text", "hits within k",
                         "when abstaining", "push ids", "another source", "identical sessions"):
                if parts[1].startswith(name) or name in parts[1][:50]:
                    found[name] = parts[0]
    return found


def test_the_reference_memory_conforms() -> None:
    done = run_cli("doctor", cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(rows(done.stdout).values()) == {"ok"} and len(rows(done.stdout)) == 8
    assert "9/9 checks conform" in done.stdout
    assert "search" in done.stdout.split("latency per method")[1]


@pytest.mark.parametrize(("attr", "broken"), [
    ("TiesInArbitraryOrder", "identical sessions"),
    ("DropsHitsWhenAbstaining", "when abstaining"),
    ("DenseDropsHits", "when abstaining"),
    ("Leaky", "another source"),
    ("NeverForgets", "reset empties"),
])
def test_a_faulty_adapter_fails_exactly_its_rule(tmp_path: Path, attr: str, broken: str) -> None:
    (tmp_path / "faulty.py").write_text(FAULTY)
    (tmp_path / "membench.toml").write_text(
        f'[adapter]\npython = "faulty:{attr}"\n[adapter.options]\ntau = 0.35\n'
        '[suites.veto]\nfixtures = ["builtin"]\n')
    done = run_cli("doctor", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    found = rows(done.stdout)
    assert found[broken] == "FAIL", done.stdout
    assert [name for name, mark in found.items() if mark == "FAIL"] == [broken], done.stdout
    assert "fix: " in done.stdout
    if broken == "identical sessions":
        assert "(score desc, id)" in done.stdout


def test_an_adapter_dropping_function_words_conforms(tmp_path: Path) -> None:
    # It abstains with no hits on "Which vendor prints the office badges for the new building?":
    # no content word of it is stored, so there were no candidates to return.
    (tmp_path / "faulty.py").write_text(FAULTY)
    (tmp_path / "membench.toml").write_text(
        '[adapter]\npython = "faulty:StopWords"\n[adapter.options]\ntau = 0.35\n'
        '[suites.veto]\nfixtures = ["builtin"]\n')
    done = run_cli("doctor", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert rows(done.stdout)["when abstaining"] in ("ok", "n/a"), done.stdout


def test_an_adapter_that_cannot_start_fails_the_handshake(tmp_path: Path) -> None:
    (tmp_path / "membench.toml").write_text(
        '[adapter]\ncommand = ["no-such-memory-binary"]\n[suites.veto]\nfixtures = ["builtin"]\n')
    done = run_cli("doctor", cwd=tmp_path)
    assert done.returncode == 4 or (done.returncode == 1 and "FAIL" in done.stdout)
    assert "no-such-memory-binary" in done.stdout + done.stderr


def test_without_an_answer_to_initialize_the_header_names_the_command(tmp_path: Path) -> None:
    (tmp_path / "dies.py").write_text("import sys\nsys.stdin.readline()\nsys.exit(3)\n")
    (tmp_path / "membench.toml").write_text(
        f'[adapter]\ncommand = ["{sys.executable}", "dies.py"]\n'
        '[suites.veto]\nfixtures = ["builtin"]\n')
    done = run_cli("doctor", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (f"membench-gate doctor: adapter {sys.executable} dies.py "
                        "(no answer to initialize)"), lines[0]
    assert lines[2].lstrip().startswith("FAIL") and "handshake (initialize)" in lines[2]
    assert "exit code 3" in lines[2], lines[2]


node = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")


@node
def test_the_node_example_conforms() -> None:
    done = run_cli("doctor", cwd=NODE_EXAMPLE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "adapter 'node-memory'" in done.stdout and "9/9 checks conform" in done.stdout


@node
def test_the_node_example_is_gated_like_any_memory(tmp_path: Path) -> None:
    repo = tmp_path / "node-memory"
    shutil.copytree(NODE_EXAMPLE, repo)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    assert run_cli("bless", cwd=repo).returncode == 0
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "gate"], cwd=repo, check=True)
    results = json.loads((repo / "baselines/main.json").read_text())
    assert results["config"]["adapter"]["command"] == ["node", "adapter.js"]
    assert results["cells"]["veto/files_known"]["metrics"]["veto_recall_at_k"] >= 0.8
    assert results["cells"]["push/know_to_ask"]["metrics"]["source_isolation_violations"] == 0

    subprocess.run([*git, "checkout", "-qb", "worse"], cwd=repo, check=True)
    # A regression in JavaScript: forget the files signal.
    script = (repo / "adapter.js").read_text()
    worse = script.replace("0.7 * cos + 0.3 * Math.min(1, shared)", "cos")
    assert worse != script
    (repo / "adapter.js").write_text(worse)
    subprocess.run([*git, "commit", "-qam", "drop files"], cwd=repo, check=True)
    done = run_cli("check", "--base-ref", "main", "--json", "v.json", cwd=repo)
    assert done.returncode == 1, done.stdout + done.stderr
    verdict = json.loads((repo / "v.json").read_text())
    assert verdict["verdict"] == "regression"
    assert any(b["key"].startswith("veto/files_known") for b in verdict["breaches"])


def _has_chromadb() -> bool:
    done = subprocess.run([sys.executable, "-c", "import chromadb"], capture_output=True,
                          check=False)
    return done.returncode == 0


@pytest.mark.skipif(not _has_chromadb(), reason="the chroma extra is not installed")
def test_the_chroma_example_conforms_and_is_deterministic(tmp_path: Path) -> None:
    example = REPO / "examples" / "chroma-memory"
    done = run_cli("doctor", cwd=example)
    assert done.returncode == 0, done.stdout + done.stderr
    outs = [tmp_path / "a.json", tmp_path / "b.json"]
    for out in outs:
        assert run_cli("run", "--suite", "veto", "--out", str(out), cwd=example).returncode == 0
    first, second = (json.loads(p.read_text()) for p in outs)
    first.pop("receipt")
    second.pop("receipt")
    assert first == second
    assert first["cells"]["veto/files_known"]["metrics"]["veto_recall_at_k"] >= 0.8
