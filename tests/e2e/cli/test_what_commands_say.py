"""What check, bless and show tell a user, read as the user reads it (the console, the rendered
comment), on real git repositories through the real CLI: the results file ``check --out`` writes
with ``--results``, the items behind a zero-gated breach, where a committed baseline differs from
the run, and the two runs ``--verify-determinism`` compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import gaterepo
from tests.support.cli import run_cli, seed_repo
from tests.support.gitrepos import bare_origin, commit

# Pushes, on every turn, the first page of another source than the conversation's.
LEAKY_ADAPTER = '''\
from membench_gate.reference import ReferenceMemory


class Leaky(ReferenceMemory):
    def ingest(self, records):
        super().ingest(records)
        self.foreign = sorted(r.id for r in records if r.source != records[0].source)

    def push(self, query):
        return (self.foreign[:1] or []) + super().push(query)[:2]
'''


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare origin whose main has a blessed baseline on the built-in fixtures."""
    seed = seed_repo(tmp_path_factory.mktemp("origin") / "seed",
                     {"membench.toml": gaterepo.config_text()})
    return bare_origin(seed)


def test_check_results_out_writes_the_results_it_checked(work: Path, tmp_path: Path) -> None:
    done = run_cli("run", "--out", str(tmp_path / "r.json"), cwd=work)
    assert done.returncode == 0, done.stderr
    stale = tmp_path / "o.json"
    stale.write_text('{"stale": true}\n')
    done = run_cli("check", "--results", str(tmp_path / "r.json"), "--out", str(stale), cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    # The results it checked, as run --out wrote them: never an earlier file left in place.
    assert stale.read_bytes() == (tmp_path / "r.json").read_bytes()


def test_a_zero_gated_breach_names_the_items_that_leaked(work: Path, tmp_path: Path) -> None:
    commit(work, "leaky adapter", {"leaky.py": LEAKY_ADAPTER,
                                   "membench.toml": gaterepo.config_text(adapter="leaky:Leaky")})
    report, results = tmp_path / "report.md", tmp_path / "r.json"
    done = run_cli("check", "--report", str(report), "--out", str(results), "--json",
                   str(tmp_path / "v.json"), cwd=work)
    assert done.returncode == 1, done.stdout + done.stderr
    items = json.loads(results.read_text())["items"]["push/default"]
    leaked = {item: record["foreign"] for item, record in items.items() if record["foreign"]}
    item, foreign = min(leaked.items())
    said = f"push/default#{item} injected from another source: {', '.join(foreign)}"
    assert said in done.stdout  # the console names the item and the foreign id
    comment = report.read_text()
    assert f"- {said}" in comment  # so does the comment, under the breach table
    verdict = json.loads((tmp_path / "v.json").read_text())
    zero = next(b for b in verdict["breaches"] if b["kind"] == "zero")
    assert {"cell": "push/default", "id": item, "ids": foreign} in zero["offenders"]
    shown = run_cli("show", f"push/default#{item}", "--results", str(results), cwd=work)
    assert shown.returncode == 0, shown.stderr
    head = next(line for line in shown.stdout.splitlines() if line.startswith("head:"))
    assert f"injected from another source: {', '.join(foreign)}" in head, shown.stdout
