"""Benchmark the gate: its overhead in `check` (check minus run) on the built-in fixtures, and
`gate.decide` on a synthetic run of 1,000,000 gold items spread over 1,000 cells.

    python benchmarks/bench_gate.py [--repeat 5]

Prints medians in seconds. Deterministic inputs (fixed seed); timings are of this machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from membench_gate.gate import decide
from membench_gate.results import Baseline, Cell

ROOT = Path(__file__).resolve().parent.parent


def synthetic(cells: int, items: int, fail_share: float, seed: int) -> Baseline:
    rng = np.random.default_rng(seed)
    per = items // cells
    out, digests = {}, {}
    for c in range(cells):
        ids = [f"item-{c:04d}-{i:05d}" for i in range(per)]
        failed = [ids[i] for i in np.flatnonzero(rng.random(per) < fail_share)]
        name = f"suite{c // 10:03d}/cond{c % 10}"
        out[name] = Cell(metrics={"veto_recall_at_k": 1 - len(failed) / per, "mrr": 0.5},
                         gold_total=per, failed=failed)
        digests[name] = {i: "d" for i in ids}
    return Baseline(schema_version=1, fixtures_hash="h", config={}, cells=out, digests=digests)


def time_decide(repeat: int) -> float:
    base = synthetic(1000, 1_000_000, 0.10, seed=1)
    head = synthetic(1000, 1_000_000, 0.10, seed=2)  # different failures: many breaches
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        verdict = decide(base, base, head)
        samples.append(time.perf_counter() - start)
    print(f"gate.decide, 1,000,000 gold items in 1,000 cells: median {statistics.median(samples):.3f}s"
          f" ({len(verdict.breaches):,} breaches, verdict {verdict.verdict})")
    return statistics.median(samples)


def _cmd(args: list[str], cwd: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "membench_gate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1, 2):
        raise SystemExit(f"{args[0]} failed: {done.stderr.strip()}")
    return elapsed


def time_overhead(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        runs = [_cmd(["run", "--out", str(out)], ROOT) for _ in range(repeat)]
        checks = [_cmd(["check"], ROOT) for _ in range(repeat)]
    run_m, check_m = statistics.median(runs), statistics.median(checks)
    print(f"membench-gate run (built-in fixtures): median {run_m:.3f}s")
    print(f"membench-gate check: median {check_m:.3f}s; gate overhead (check − run) "
          f"{check_m - run_m:.3f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    time_overhead(args.repeat)
    time_decide(max(1, args.repeat // 2))


if __name__ == "__main__":
    main()
