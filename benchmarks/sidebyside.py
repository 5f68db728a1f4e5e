"""Side-by-side timing of commands on a shared, loaded machine.

A ratio is only meaningful when both sides saw the same load, so the commands of one comparison run
interleaved (A B C, A B C, …) after a warm-up round, and each is summarised by its median wall time
and median CPU time (user + system of the child, which load affects less than wall time). The
ratios quoted by the benchmarks come from one such run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Timing:
    wall: float  # median seconds
    cpu: float  # median user + system seconds of the child


def _once(argv: Sequence[str], cwd: Path, env: Mapping[str, str], ok: Sequence[int]
          ) -> tuple[float, float]:
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(list(argv), cwd=cwd, env=dict(env), capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = os.times()
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: "
                         f"{done.stderr.decode(errors='replace').strip()[-400:]}")
    cpu = (after.children_user - before.children_user) + \
        (after.children_system - before.children_system)
    return wall, cpu


def compare(commands: Mapping[str, Sequence[str]], cwd: Path, repeat: int,
            env: Mapping[str, str] | None = None,
            ok: Sequence[int] = (0,)) -> dict[str, Timing]:
    """Median wall and CPU time of each command, run interleaved ``repeat`` times."""
    env = dict(os.environ) if env is None else env
    for argv in commands.values():  # warm-up: disk cache, .pyc files
        _once(argv, cwd, env, ok)
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
    for _ in range(repeat):
        for label, argv in commands.items():
            samples[label].append(_once(argv, cwd, env, ok))
    return {label: Timing(statistics.median(w for w, _ in runs),
                          statistics.median(c for _, c in runs))
            for label, runs in samples.items()}


def table(timings: Mapping[str, Timing], reference: str) -> str:
    """One line per command: wall and CPU medians, and both as a ratio to ``reference``."""
    ref = timings[reference]
    width = max(map(len, timings))
    lines = []
    for label, t in timings.items():
        lines.append(f"  {label:<{width}}  wall {t.wall * 1000:8.1f} ms ({t.wall / ref.wall:5.2f}×)"
                     f"   cpu {t.cpu * 1000:8.1f} ms ({t.cpu / ref.cpu:5.2f}×)")
    return "\n".join(lines)
