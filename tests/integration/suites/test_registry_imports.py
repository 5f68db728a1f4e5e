"""The suite registry imports a suite's schema and scorer only when they are asked for."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import REPO


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
                          cwd=REPO, check=True)
    assert done.stdout.splitlines() == [
        "[]", "['membench_gate.suites.common.fixtures', 'membench_gate.suites.push.fixtures']"]
