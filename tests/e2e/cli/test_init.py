"""``membench-gate init`` in a fresh git repository: after it, ``bless`` and ``check`` pass; the
``--command`` stub speaks the JSON-RPC protocol of docs/adapters.md on its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.cli import run_cli
from tests.support.gitrepos import commit, git, init


@pytest.mark.parametrize("kind", ["--python", "--command"])
def test_init_then_bless_then_check_pass_in_a_fresh_repository(tmp_path: Path, kind: str) -> None:
    repo = init(tmp_path / "memory")
    done = run_cli("init", kind, cwd=repo)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:3] == ["wrote membench.toml", "wrote bench/membench_adapter.py",
                                            "wrote .github/workflows/membench-gate.yml"]
    workflow = yaml.safe_load((repo / ".github/workflows/membench-gate.yml").read_text())
    step = workflow["jobs"]["gate"]["steps"][1]
    assert step["uses"].startswith("membench-gate/membench-gate@")
    assert "if" not in workflow["jobs"]["gate"] and "paths" not in str(workflow[True])
    doctor = run_cli("doctor", cwd=repo)
    assert doctor.returncode == 0 and "8/9 checks conform, 1 not applicable" in doctor.stdout, \
        doctor.stdout  # (the stub has no push)
    bless = run_cli("bless", cwd=repo)
    assert bless.returncode == 0, bless.stderr
    commit(repo, "the gate", {})
    git(repo, "checkout", "-q", "-b", "feature")
    check = run_cli("check", cwd=repo)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.startswith("membench-gate: PASS (exit 0)")
    again = run_cli("init", cwd=repo)
    assert again.returncode == 4
    assert again.stderr.strip() == ("membench-gate: error: init: membench.toml already exists; "
                                    "nothing written (move it away or edit it by hand)")


def test_init_command_scaffolds_a_process_that_speaks_the_protocol(tmp_path: Path) -> None:
    done = run_cli("init", "--command", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    config = (tmp_path / "membench.toml").read_text()
    assert 'command = ["python3", "bench/membench_adapter.py"]' in config
    assert "python =" not in config
    requests = [
        ("initialize", {"protocol": 1, "options": {}}),
        ("reset", {}),
        ("ingest", {"records": [
            {"id": "a", "text": "We use Postgres for the ledger", "source": "default",
             "files": [], "created_at": None, "reviewed_at": None, "relevance": None,
             "entity": None, "aliases": [], "meta": {}},
            {"id": "b", "text": "Postgres ledger rows are append-only", "source": "default",
             "files": [], "created_at": None, "reviewed_at": None, "relevance": None,
             "entity": None, "aliases": [], "meta": {}},
            {"id": "c", "text": "Postgres ledger notes", "source": "personal", "files": [],
             "created_at": None, "reviewed_at": None, "relevance": None, "entity": None,
             "aliases": [], "meta": {}}]}),
        ("search", {"query": {"text": "postgres ledger", "k": 5, "source": "default",
                              "files": [], "as_of": None, "context": []}}),
        ("nope", {}),
        ("shutdown", {}),
    ]
    lines = "".join(json.dumps({"jsonrpc": "2.0", "id": n, "method": m, "params": p}) + "\n"
                    for n, (m, p) in enumerate(requests, 1))
    proc = subprocess.run([sys.executable, "bench/membench_adapter.py"], cwd=tmp_path,
                          input=lines, capture_output=True, text=True, timeout=30, check=True)
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3, 4, 5, 6]
    assert replies[0]["result"]["protocol"] == 1
    assert replies[3]["result"] == {"hits": [{"id": "a", "score": 1.0}, {"id": "b", "score": 1.0}],
                                    "abstain": False}  # tie sorted by id; other source never
    assert replies[4]["error"]["message"] == "LookupError: unknown method nope"
    assert replies[5]["result"] is None


def test_a_mistyped_adapter_class_gets_a_did_you_mean(tmp_path: Path) -> None:
    assert run_cli("init", cwd=tmp_path).returncode == 0
    config = tmp_path / "membench.toml"
    config.write_text(config.read_text().replace(":MemoryAdapter", ":MemoryAdaptor"))
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 4
    assert done.stderr.strip().endswith("has no attribute 'MemoryAdaptor' (did you mean "
                                        "'MemoryAdapter'?)")
