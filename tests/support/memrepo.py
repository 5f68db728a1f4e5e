"""A small memory repository for the fail-closed tests, and ``check`` with every output asked for.

The repository gates the abstention suite on five facts (two of them distractors no probe asks
for) and four probes with ``k = 1``: small enough that a check takes well under a second, real
enough that items pass and fail, the controls fail as designed, and a corpus can shrink.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.cli import run_cli, seed_repo
from tests.support.gitrepos import bare_origin

FACTS = [
    {"id": "f1", "text": "The billing API listens on port 8443."},
    {"id": "f2", "text": "Deploys are frozen on Fridays after 3pm."},
    {"id": "f3", "text": "Staging deploys run every weekday at 14:00 UTC."},
    {"id": "f4", "text": "The on-call rotation hands over on Mondays at 10:00."},
    {"id": "f5", "text": "Search cluster nodes are replaced every quarter."},
]
PROBES = [
    {"id": "p1", "question": "Which port does the billing API listen on?", "gold_fact_id": "f1"},
    {"id": "p2", "question": "When are deploys frozen?", "gold_fact_id": "f2"},
    {"id": "p3", "question": "Who owns the docs CDN?", "gold_fact_id": None},
    # Fails: nothing in the question points at f3 (the item an easing PR would rewrite).
    {"id": "p4", "question": "What time is lunch served?", "gold_fact_id": "f3"},
]
CONFIG = """\
[adapter.options]
tau = {tau}
[suites.abstention]
fixtures = ["fx"]
k = {k}
{extra}"""

CI_ENV = {"CI": "true", "GITHUB_ACTIONS": "true"}

# A justification that passes rule 8 for a tau change (names the cell and the metric).
TAU_REASON = ("Raising tau makes abstention/default abstain on p2 where it guessed before; the "
              "net_at_1 loss buys fewer wrong answers, which support asked for this quarter")


def config_text(tau: float = 0.3, k: int = 1, extra: str = "") -> str:
    return CONFIG.format(tau=tau, k=k, extra=extra)


def fixture_files(facts: list[dict[str, Any]] | None = None,
                  probes: list[dict[str, Any]] | None = None) -> dict[str, str]:
    return {"fx/facts.json": json.dumps(FACTS if facts is None else facts, indent=2),
            "fx/probes.json": json.dumps(PROBES if probes is None else probes, indent=2)}


def gate(cwd: Path, *args: str, ci: bool = False, env: Mapping[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    """``python -m membench_gate ARGS`` in ``cwd``; ``ci`` sets CI and GITHUB_ACTIONS."""
    return run_cli(*args, cwd=cwd, env={**(CI_ENV if ci else {}), **(env or {})})


def memory_repo(path: Path, files: Mapping[str, str] | None = None, bless: bool = True) -> Path:
    """A repository on ``main`` with the small memory's config and fixtures, blessed."""
    return seed_repo(path, {"membench.toml": config_text(), **fixture_files(), **(files or {})},
                     blessed=bless)


def memory_repo_with_results(path: Path) -> Path:
    """:func:`memory_repo`, and its run's results beside it (``<path>/../results.json``)."""
    repo = memory_repo(path)
    done = gate(repo, "run", "--out", str(repo.parent / "results.json"))
    assert done.returncode == 0, done.stderr
    return repo


def memory_origin(root: Path, files: Mapping[str, str] | None = None) -> Path:
    """A bare origin (in ``root``) whose main has the small memory, blessed."""
    return bare_origin(memory_repo(root / "seed", files))


OUTPUTS = ("verdict.json", "report.md", "results.json", "base.json")


@dataclass
class Check:
    """One ``check`` with every output asked for, each first filled with a stale decoy."""

    code: int
    stdout: str
    stderr: str
    files: dict[str, str | None]

    @property
    def verdict(self) -> dict[str, Any]:
        text = self.files["verdict.json"]
        assert text is not None, "no verdict file"
        return json.loads(text)

    def breach_keys(self) -> list[str]:
        return sorted(b["key"] for b in self.verdict["breaches"])

    def assert_error(self, *needles: str, code: int = 4) -> None:
        """Exit ``code`` with one line naming every needle, and every output replaced by the
        error verdict: nothing stale left, no traceback."""
        assert self.code == code, (self.code, self.stdout, self.stderr)
        # Progress lines may come before it and an adapter's last stderr lines (indented) after
        # it; the failure itself is one line.
        every = self.stderr.strip().splitlines()
        lines = [line for line in every if line.startswith("membench-gate: error: ")]
        assert len(lines) == 1 and "Traceback" not in self.stderr, self.stderr
        assert all(line.startswith("  ") for line in every[every.index(lines[0]) + 1:]), \
            self.stderr
        for needle in needles:
            assert needle in lines[0], (needle, lines[0])
        name = "inconclusive" if code == 3 else "error"
        for output in ("verdict.json", "results.json", "base.json"):
            data = json.loads(self.files[output] or "null")
            assert data is not None and data["verdict"] == name, (output, self.files[output])
            assert data["exit_code"] == code and data["notes"][0] in lines[0]
        report = self.files["report.md"] or ""
        assert "STALE" not in report and name.upper().replace("-", " ") in report.upper()


def check(repo: Path, *args: str, ci: bool = False, env: Mapping[str, str] | None = None,
          cwd: Path | None = None) -> Check:
    """``check`` with ``--json/--report/--out/--base-out`` in ``repo/out``, pre-filled with
    decoys so a test sees whether each was replaced."""
    out = repo.parent / f"{repo.name}-out"
    out.mkdir(exist_ok=True)
    for name in OUTPUTS:
        (out / name).write_text('{"verdict": "pass", "exit_code": 0, "STALE": true}\n'
                                if name.endswith(".json") else "## STALE PASS\n")
    done = gate(cwd or repo, "check", "--json", str(out / "verdict.json"),
                "--report", str(out / "report.md"), "--out", str(out / "results.json"),
                "--base-out", str(out / "base.json"), *args, ci=ci, env=env)
    files = {name: (out / name).read_text() if (out / name).exists() else None
             for name in OUTPUTS}
    return Check(done.returncode, done.stdout, done.stderr, files)
