"""The suite registry: each suite one package behind one ``Suite`` declaration, read lazily."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from membench_gate.config import Suites
from membench_gate.model import metrics
from membench_gate.suites import NAMES, get, registry
from membench_gate.suites.common.options import SuiteOptions
from membench_gate.suites.common.suite import FixturesModule, ScoringModule

SUITES = Path(__file__).resolve().parent.parent / "membench_gate" / "suites"


@pytest.mark.parametrize("name", NAMES)
def test_every_registered_suite_is_one_package_with_every_part(name: str) -> None:
    suite = get(name)
    assert suite.name == name
    assert suite.package == f"membench_gate.suites.{name}"
    assert issubclass(suite.options, SuiteOptions)
    assert isinstance(suite.fixtures, FixturesModule)
    assert isinstance(suite.scoring, ScoringModule)
    assert suite.files or suite.subfolder  # it reads something from a fixture folder
    assert name in metrics.CONDITIONS  # its cells are in the one metric registry
    assert all(cell.startswith(f"{name}/") for cell in (*suite.derived, *suite.answers))


def test_the_config_builds_its_suites_table_from_the_registry() -> None:
    assert tuple(Suites.model_fields) == NAMES
    for name, suite in registry().items():
        assert suite.options in _members(Suites.model_fields[name].annotation)


def _members(annotation: object) -> tuple[object, ...]:
    return getattr(annotation, "__args__", (annotation,))


def test_a_suites_declaration_is_read_without_its_schema_or_scorer() -> None:
    """``check --results`` hashes files by the declarations alone; asking for one suite's schema
    imports that suite's, not the others'."""
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from membench_gate.config import load_config\n"
        "from membench_gate.run.measure import measurement_hash\n"
        "measurement_hash(load_config(Path('membench.toml')))\n"
        "heavy = lambda: sorted(m for m in sys.modules if m.startswith('membench_gate.suites.')\n"
        "                       and m.rsplit('.', 1)[1] in ('fixtures', 'scoring'))\n"
        "print(heavy())\n"
        "from membench_gate.suites import get\n"
        "get('push').fixtures\n"
        "print(heavy())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=SUITES.parent.parent, check=True)
    assert done.stdout.splitlines() == [
        "[]", "['membench_gate.suites.common.fixtures', 'membench_gate.suites.push.fixtures']"]


# What a suite may import (DESIGN §3: suites know nothing of baselines, the gate or the config).
ALLOWED = ("errors", "defaults", "files", "budget", "model", "adapter", "suites")


@pytest.mark.parametrize("path", sorted(SUITES.rglob("*.py")), ids=lambda p: str(p.relative_to(SUITES)))
def test_suites_import_only_what_lies_below_them(path: Path) -> None:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        for name in names:
            if name.startswith("membench_gate."):
                assert name.split(".")[1] in ALLOWED, f"{path.name} imports {name}"
