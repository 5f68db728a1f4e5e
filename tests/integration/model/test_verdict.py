"""The data modules stand without the rules: importing them in a fresh interpreter loads no gate module."""

from __future__ import annotations

import subprocess
import sys


def test_the_data_modules_do_not_import_the_rules() -> None:
    code = ("import sys, membench_gate.model.schemas, membench_gate.model.verdict, "
            "membench_gate.model.results; "
            "print(sorted(m for m in sys.modules if m in ('membench_gate.gate.rules', "
            "'membench_gate.gate.justify')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
