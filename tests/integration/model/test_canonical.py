"""A real results file, written by the CLI, is canonical JSON (docs/gate.md, "Files")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from membench_gate.model.canonical import canonical_dumps
from membench_gate.model.results import parse_results
from tests.support.cli import run_cli
from tests.support.paths import REPO

# It runs every suite through the CLI.
pytestmark = pytest.mark.slow


def test_a_results_file_is_canonical(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli("run", "--out", out, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    data = json.loads(text)
    assert canonical_dumps(data) == text  # a fixed point: keys sorted, numbers already rounded
    results = parse_results(text, str(out))
    for name, cell in data["cells"].items():
        assert cell["failed"] == sorted(cell["failed"]), name
        assert cell["failed"] == results.cells[name].failed

    def numbers(node: object) -> list[float]:
        if isinstance(node, dict):
            return [n for v in node.values() for n in numbers(v)]
        if isinstance(node, list):
            return [n for v in node for n in numbers(v)]
        return [node] if isinstance(node, float) else []

    floats = numbers({k: v for k, v in data.items() if k != "receipt"})
    assert floats
    assert all(f == round(f, 4) and not f.is_integer() for f in floats)
