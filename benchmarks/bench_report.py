"""Benchmark the scoreboard: rendering the PR comment for a run with 1,000,000 newly failed items.

    python benchmarks/bench_report.py [--repeat 5] [--items 1000000]

Prints the median render time (goal: ≤ 0.3 s for the comment) and the size of what would be posted
(the comment must stay under 60,000 characters; the job summary under 1 MiB).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout, like the others

from membench_gate.gate.rules import decide
from membench_gate.model.results import Baseline, Cell, Results
from membench_gate.report.render import COMMENT_LIMIT, SUMMARY_LIMIT, render


def case(newly_failed: int) -> tuple[Baseline, Results]:
    ids = [f"probe-{i:06d}" for i in range(newly_failed)]
    base_cells = {"abstention/default": Cell(metrics={"net_at_1": 0.4, "net_at_2": 0.3,
                                                      "controls_passing": 0},
                                             gold_total=newly_failed, failed=[])}
    head_cells = {"abstention/default": Cell(metrics={"net_at_1": 0.1, "net_at_2": -0.2,
                                                      "controls_passing": 0},
                                             gold_total=newly_failed, failed=ids)}
    base = Baseline(schema_version=1, fixtures_hash="h", config={}, cells=base_cells)
    head = Results(schema_version=1, fixtures_hash="h", config={}, cells=head_cells,
                   receipt={"tool_version": "0", "started_at": "x", "duration": 0,
                            "adapter": "x"}, items={})
    return base, head


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--items", type=int, default=1_000_000)
    args = parser.parse_args()
    base, head = case(args.items)
    verdict = decide(base, base, head)
    for label, limit in (("comment", COMMENT_LIMIT), ("job summary", SUMMARY_LIMIT)):
        samples, text = [], ""
        for _ in range(args.repeat):
            start = time.perf_counter()
            text = render(verdict, head, base, limit=limit)
            samples.append(time.perf_counter() - start)
        print(f"{label} for {args.items:,} newly failed items: median {statistics.median(samples):.3f}s,"
              f" {len(text):,} characters (limit {limit:,})")


if __name__ == "__main__":
    main()
