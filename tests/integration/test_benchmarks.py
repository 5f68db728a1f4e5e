"""The benchmarks stay runnable (their timings are never asserted: speed is measured there, not
here). A benchmark that stands in for an older code path must keep up with what the runner asks of
an adapter."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import REPO

# It runs a benchmark.
pytestmark = pytest.mark.slow


def test_bench_boundary_runs_both_ways() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_boundary.py"), "--repeat", "1",
         "--records", "300"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for label in ("command, in process:", "command, through host:", "suites alone, in process:",
                  "suites alone, through host:", "ingest 300 records, through host:"):
        assert any(line.startswith(label) for line in lines), (label, done.stdout)
