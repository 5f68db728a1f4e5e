"""Benchmark the gate: `gate.decide` at scale, its overhead in `check`, and `check --results`
against `dvc metrics diff`.

    python benchmarks/bench_gate.py [--repeat 5] [--dvc PATH/TO/dvc] [--skip-cli]

1. `gate.decide` on synthetic runs of 10k, 100k and 1M gold items over 1,000 cells (the committed
   baseline equal to the base but a separate object, the common same-hash case): no breach, and
   100,000 newly failed items at 1M. The growth exponent is the slope of log(time) over
   log(items) from 10k to 1M.
2. `membench-gate run` and full `check` on the built-in fixtures, interleaved (goal: check ≤ 1.1×
   run: the gate's own cost under a tenth of the suites it gates).
3. `check --results` against `dvc metrics diff main --json` on comparable repositories, each
   holding one run of the built-in suites: ours its blessed baseline on main and the run's results
   file in the working tree; dvc's the run's metrics (every cell's) committed on main and changed
   in the working tree. dvc compares the numbers; the check also validates the whole results file
   (items included), hashes the fixtures, re-derives the file (loads the fixtures and replays
   every suite on the recorded answers) and compares items and digests (goal: ≤ 1/3). dvc is in
   the `bench` extra (`pip install -e .[bench]`); pass its path with --dvc when it lives
   elsewhere. Also timed, as the floor: an interpreter that imports pydantic and builds one model.

Prints medians (wall and CPU). Deterministic inputs (fixed seed); timings are of this machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sidebyside import Timing, compare, table  # noqa: E402

from membench_gate.gate.rules import decide  # noqa: E402
from membench_gate.model.results import Baseline, Cell  # noqa: E402


def synthetic(cells: int, items: int, fail_share: float, seed: int,
              flip: int = 0) -> Baseline:
    """``items`` gold items over ``cells`` cells; with ``flip``, that many more items fail."""
    rng = np.random.default_rng(seed)
    per = items // cells
    out, digests = {}, {}
    flip_per = flip // cells
    for c in range(cells):
        ids = [f"item-{c:04d}-{i:05d}" for i in range(per)]
        mask = rng.random(per) < fail_share
        if flip_per:
            passing = np.flatnonzero(~mask)[:flip_per]
            mask[passing] = True
        failed = [ids[i] for i in np.flatnonzero(mask)]
        name = f"suite{c // 10:03d}/cond{c % 10}"
        out[name] = Cell(metrics={"veto_recall_at_k": round(1 - len(failed) / per, 4),
                                  "mrr": 0.5}, gold_total=per, failed=failed)
        digests[name] = dict.fromkeys(ids, "d")
    return Baseline(schema_version=1, fixtures_hash="h", config={}, cells=out, digests=digests)


def time_decide(repeat: int) -> None:
    """Three distinct objects, as ``check`` has them (the base read with git, the committed file
    from the working tree, this run): equal content never short-cuts through object identity."""
    sizes = (10_000, 100_000, 1_000_000)
    medians = []
    for size in sizes:
        base, committed, actual = (synthetic(1000, size, 0.10, seed=1) for _ in range(3))
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            verdict = decide(base, committed, actual)
            samples.append(time.perf_counter() - start)
        medians.append(statistics.median(samples))
        print(f"gate.decide, {size:>9,} gold items, 1,000 cells, no breach: "
              f"median {medians[-1]:.3f}s (verdict {verdict.verdict})")
    slope = (math.log(medians[-1]) - math.log(medians[0])) / (math.log(sizes[-1]) - math.log(sizes[0]))
    print(f"growth exponent 10k → 1M: {slope:.2f} (goal ≤ 1.1)")
    base, committed = (synthetic(1000, 1_000_000, 0.10, seed=1) for _ in range(2))
    actual = synthetic(1000, 1_000_000, 0.10, seed=1, flip=100_000)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        verdict = decide(base, committed, actual)
        samples.append(time.perf_counter() - start)
    print(f"gate.decide, 1,000,000 gold items, 100,000 newly failed: median "
          f"{statistics.median(samples):.3f}s ({len(verdict.breaches):,} breaches, verdict "
          f"{verdict.verdict})")


def _env() -> dict[str, str]:
    # Timed as an installed package runs: from byte-compiled modules (pip compiles a package's
    # modules when it installs it, as it did dvc's); the warm-up round writes them here.
    env = {k: v for k, v in os.environ.items()
           if k not in ("CI", "GITHUB_ACTIONS", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def time_overhead(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        me = [sys.executable, "-m", "membench_gate"]
        timings = compare({"run": [*me, "run", "--out", str(out)], "check": [*me, "check"]},
                          ROOT, repeat, _env(), ok=(0, 1, 2))
    print(table(timings, "run"))
    print(f"check / run (wall): {timings['check'].wall / timings['run'].wall:.2f}× (goal ≤ 1.1)")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
                        "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"})


def _repos(tmp: Path, dvc: str) -> tuple[Path, Path]:
    """A membench-gate repo (config, built-in fixtures, baseline on main; a results file in the
    working tree) and a dvc repo with that run's metrics as its metrics file (on main, then
    changed in the working tree)."""
    ours = tmp / "ours"
    ours.mkdir()
    _git(ours, "init", "-q", "-b", "main")
    shutil.copy(ROOT / "membench.toml", ours / "membench.toml")
    results = ours / "results.json"
    subprocess.run([sys.executable, "-m", "membench_gate", "bless"], cwd=ours, env=_env(),
                   check=True, capture_output=True)
    _git(ours, "add", "-A")
    _git(ours, "commit", "-q", "-m", "gate")
    subprocess.run([sys.executable, "-m", "membench_gate", "run", "--out", str(results)],
                   cwd=ours, env=_env(), check=True, capture_output=True)
    theirs = tmp / "theirs"
    theirs.mkdir()
    _git(theirs, "init", "-q", "-b", "main")
    subprocess.run([dvc, "init", "-q"], cwd=theirs, check=True, capture_output=True)
    data = json.loads(results.read_text(encoding="utf-8"))
    metrics = {cell: c["metrics"] for cell, c in data["cells"].items()}
    (theirs / "metrics.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    (theirs / "dvc.yaml").write_text("metrics:\n  - metrics.json\n", encoding="utf-8")
    _git(theirs, "add", "-A")
    _git(theirs, "commit", "-q", "-m", "metrics")
    changed = {cell: {k: v * 0.99 for k, v in m.items()} for cell, m in metrics.items()}
    (theirs / "metrics.json").write_text(json.dumps(changed, indent=2), encoding="utf-8")
    return ours, theirs


def time_results_vs_dvc(repeat: int, dvc: str | None) -> None:
    dvc = dvc or shutil.which("dvc")
    if dvc is None:
        print("check --results vs dvc metrics diff: skipped (no dvc; pip install -e .[bench])")
        return
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs = _repos(Path(tmp), dvc)
        env = {**_env(), "DVC_NO_ANALYTICS": "1"}
        check = [sys.executable, "-m", "membench_gate", "check", "--results", "results.json"]
        diff = [dvc, "metrics", "diff", "main", "--json"]
        # The floor under any check that validates with pydantic: the interpreter, pydantic's
        # import and one model built.
        floor = [sys.executable, "-c",
                 "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int\nM(x=1)"]
        samples: dict[str, list[tuple[float, float]]] = {"check --results": [],
                                                        "dvc metrics diff main --json": [],
                                                        "pydantic + one model": []}
        for _ in range(repeat):  # interleaved: the repositories differ, so compare() per command
            for label, argv, cwd in (("check --results", check, ours),
                                     ("dvc metrics diff main --json", diff, theirs),
                                     ("pydantic + one model", floor, ours)):
                t = compare({label: argv}, cwd, 1, env)[label]
                samples[label].append((t.wall, t.cpu))
    timings = {label: Timing(statistics.median(w for w, _ in s), statistics.median(c for _, c in s))
               for label, s in samples.items()}
    print(table(timings, "dvc metrics diff main --json"))
    ratio = timings["check --results"].wall / timings["dvc metrics diff main --json"].wall
    print(f"check --results / dvc metrics diff (wall): {ratio:.2f} (goal ≤ 0.33)")
    floor = timings["pydantic + one model"].wall / timings["dvc metrics diff main --json"].wall
    print(f"pydantic + one model / dvc metrics diff (wall): {floor:.2f} (the floor of a check "
          "that validates with pydantic)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dvc", help="path of the dvc executable (default: on PATH)")
    parser.add_argument("--skip-cli", action="store_true", help="gate.decide only")
    args = parser.parse_args()
    time_decide(max(1, args.repeat // 2))
    if not args.skip_cli:
        time_overhead(args.repeat)
        time_results_vs_dvc(args.repeat, args.dvc)


if __name__ == "__main__":
    main()
