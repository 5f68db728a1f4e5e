"""Benchmark adapter workers: the same runs with one adapter process and with several.

    python benchmarks/bench_workers.py [--repeat 3] [--questions 60] [--sessions 40] [--words 100]
        [--sleepy 1200] [--busy 300] [--cases 1,2,3,4,5]

(``--questions 500 --sessions 50 --words 120`` is ``bench_longmemeval.py``'s full LongMemEval
``_s`` shape: 116,000 turns.)

Five comparisons, each run side by side (interleaved, after a warm-up: ``sidebyside.py``) so both
sides saw the same load, and summarised as the ratio of median wall times, N workers to one:

1. a sleep-bound adapter — every call takes 5 ms and nothing else, as a memory waiting on a
   database or an API — on a LongMemEval-shaped recall suite of ``--sleepy`` small haystacks
   (a reset, an ingest and a search each): ``--jobs 4`` against one (goal ≤ 0.35×);
2. the reference memory on the built-in suites (this repository's ``membench.toml``): ``--jobs 2``
   against one (goal ≤ 0.65× on two cores);
3. a LongMemEval-shaped recall run (``bench_longmemeval.py``'s synthesizer, ``--questions``
   questions of ``--sessions`` sessions of their own, 4.6 turns of ``--words`` words each,
   imported once, not timed): ``--jobs 2`` (goal ≤ 0.6×);
4. ``selftest`` of the built-in veto and recall suites: ``--jobs 2`` (goal ≤ 0.6×);
5. a CPU-bound adapter — every call computes for about 5 ms (a chain of sha256 digests) and
   nothing else, as a memory that runs its own model — on ``--busy`` small haystacks of the same
   shape as 1.: ``--jobs 2`` (no goal of its own: it shows what two workers divide on two cores
   when the memory's work, not the gate's, is the cost).

Each case is timed twice. *The command* is the CLI in a subprocess, interpreter start-up, fixture
loading and the results file included: what a user waits for, and what Amdahl's law bounds — the
gate's own start-up, fixture loading and results are one process's work whatever the workers.
*The suites* is :func:`membench_gate.run.runner.run` in one process with the fixtures already
loaded (``--phase``): every adapter process started and initialized, every suite run and combined —
the part workers divide. Both are interleaved, after a warm-up.

Then the peak memory of each run — the resident set of the gate and all its adapter processes
together, sampled every 20 ms from ``/proc`` (Linux) — against N× that of one worker.

Every timed command is the CLI in a subprocess, interpreter start-up included. Timings are of the
machine that runs the script; on a shared machine quote the ratios.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_longmemeval import synthesize  # noqa: E402
from sidebyside import compare  # noqa: E402

SLEEPY = '''"""Every call takes 5 ms and nothing else: a memory waiting on its store."""
import time

from membench_gate import Answer


class Sleepy:
    def reset(self):
        time.sleep(0.005)

    def ingest(self, records):
        time.sleep(0.005)

    def search(self, query):
        time.sleep(0.005)
        return Answer(hits=[], abstain=True)
'''
BUSY = '''"""Every call computes for about 5 ms and nothing else: a memory running its own model."""
import hashlib

from membench_gate import Answer


def work():
    digest = b"membench"
    for _ in range(13000):
        digest = hashlib.sha256(digest).digest()
    return digest


class Busy:
    def reset(self):
        work()

    def ingest(self, records):
        work()

    def search(self, query):
        work()
        return Answer(hits=[], abstain=True)
'''
REFERENCE = 'python = "membench_gate.reference:ReferenceMemory"\n[adapter.options]\ntau = 0.35\n'
SELFTEST_SUITES = ('[suites.veto]\nfixtures = ["builtin"]\nk = 5\n'
                   '[suites.recall]\nfixtures = ["builtin"]\nk = 10\n')


def _env() -> dict[str, str]:
    # From byte-compiled modules, as an installed package runs (bench_gate.py does the same): with
    # PYTHONDONTWRITEBYTECODE every process — each worker's too — compiles every module it imports.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}


def _gate(*args: str) -> list[str]:
    return [sys.executable, "-m", "membench_gate", *args]


def _tree_rss(root: int) -> int:
    """Resident kB of ``root`` and every process below it, from /proc."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rpartition(")")[2].split()[1])
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss[int(entry)] = int(line.split()[1])
    total = 0
    for pid in rss:
        walk = pid
        while walk not in (0, 1) and walk != root:
            walk = parents.get(walk, 0)
        if walk == root:
            total += rss[pid]
    return total


def peak_rss(argv: Sequence[str], cwd: Path) -> float:
    """Peak resident MB of the command and its children together (sampled every 20 ms)."""
    proc = subprocess.Popen(list(argv), cwd=cwd, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    proc.wait()
    done.set()
    sampler.join()
    return peak / 1024


def _recall_dir(folder: Path, shape: tuple[int, int, float, int], adapter: str,
                files: dict[str, str], env: dict[str, str]) -> Path:
    """A folder with a LongMemEval-shaped recall fixture (``synthesize``'s questions, sessions,
    turns and words, imported), ``files`` beside it, and a ``membench.toml`` whose ``[adapter]``
    table is ``adapter``."""
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    synthesize(folder / "source.json", *shape)
    subprocess.run(_gate("import", "longmemeval", "source.json", "--out", "fx"), cwd=folder,
                   env=env, check=True, capture_output=True)
    (folder / "membench.toml").write_text(
        f'[adapter]\n{adapter}[suites.recall]\nfixtures = ["fx"]\nk = 10\n',
        encoding="utf-8")
    return folder


PHASE = """
import os, statistics, sys, time
from pathlib import Path
from membench_gate.adapter import rpc
from membench_gate.cli import runtime
from membench_gate.config import load_config
from membench_gate.run.runner import load_fixtures, run
runtime.start()
config_path, jobs, repeat = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
config = load_config(config_path)
loaded = load_fixtures(config)
times = {1: [], jobs: []}
cpus = {1: [], jobs: []}
def cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
for n in range(repeat + 1):  # the first round only warms caches
    for count in (1, jobs):
        before, start = cpu(), time.perf_counter()
        run(config.with_workers(count), preloaded=loaded)
        wall = time.perf_counter() - start
        rpc.reap()  # the adapter processes' CPU counts once they are reaped
        if n:
            times[count].append(wall)
            cpus[count].append(cpu() - before)
print(statistics.median(times[1]), statistics.median(times[jobs]),
      statistics.median(cpus[1]), statistics.median(cpus[jobs]))
"""


def phase(config: Path, jobs: int, repeat: int) -> tuple[float, float, float, float]:
    """Median seconds of the suites alone (``run`` with the fixtures loaded), one worker and
    ``jobs``, interleaved in one process: wall times, then CPU times (the gate and its adapter
    processes together)."""
    done = subprocess.run([sys.executable, "-c", PHASE, str(config), str(jobs), str(repeat)],
                          cwd=config.parent, env=_env(), capture_output=True, text=True,
                          check=True)
    one, many, one_cpu, many_cpu = done.stdout.split()
    return float(one), float(many), float(one_cpu), float(many_cpu)


def _busy(wall: float, cpu: float) -> str:
    """CPU seconds and how many of the machine's CPUs they kept busy over the wall time."""
    return f"cpu {cpu:5.2f} s = {cpu / wall:.2f} of {len(os.sched_getaffinity(0))} CPUs busy"


def _against(ratio: float, goal: float | None) -> str:
    if goal is None:
        return f"{ratio:.2f}x"
    return f"{ratio:.2f}x  (goal <= {goal:.2f}x: {'met' if ratio <= goal else 'NOT met'})"


def _phase_line(one: float, many: float, one_cpu: float, many_cpu: float, jobs: int,
                goal: float | None) -> str:
    return (f"  the suites alone: 1 worker {one:5.2f} s ({_busy(one, one_cpu)}), {jobs} workers "
            f"{many:5.2f} s ({_busy(many, many_cpu)})   {_against(many / one, goal)}")


def _ratio(timings: dict, one: str, many: str, goal: float | None) -> str:
    a, b = timings[one], timings[many]
    return (f"  {one:<28}{a.wall:7.2f} s   {_busy(a.wall, a.cpu)}\n"
            f"  {many:<28}{b.wall:7.2f} s   {_busy(b.wall, b.cpu)}"
            f"   {_against(b.wall / a.wall, goal)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--sessions", type=int, default=40, help="sessions per haystack")
    parser.add_argument("--words", type=int, default=100, help="mean words per turn")
    parser.add_argument("--sleepy", type=int, default=1200,
                        help="haystacks of the sleep-bound run")
    parser.add_argument("--busy", type=int, default=300, help="haystacks of the CPU-bound run")
    parser.add_argument("--cases", default="1,2,3,4,5",
                        help="which comparisons to run (their numbers above, comma-separated)")
    args = parser.parse_args()
    if not Path("/proc/self/status").exists():
        sys.exit("bench_workers.py samples memory from /proc: run it on Linux")
    env = _env()
    print(f"{os.cpu_count()} CPUs; medians of {args.repeat} interleaved runs\n")
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        sleepy = _recall_dir(work / "sleepy", (args.sleepy, 8, 2, 12),
                             'python = "sleepy:Sleepy"\n', {"sleepy.py": SLEEPY}, env)
        busy = _recall_dir(work / "busy", (args.busy, 8, 2, 12), 'python = "busy:Busy"\n',
                           {"busy.py": BUSY}, env)
        lme = _recall_dir(work / "lme", (args.questions, args.sessions, 4.6, args.words),
                          REFERENCE, {}, env)
        selftest = work / "selftest"
        selftest.mkdir()
        (selftest / "membench.toml").write_text(
            "[adapter]\n" + REFERENCE + SELFTEST_SUITES, encoding="utf-8")
        builtin = ["--config", str(ROOT / "membench.toml")]
        cases = [
            (f"sleep-bound adapter (5 ms a call, {args.sleepy} haystacks)", sleepy, 4, 0.35,
             ["run"]),
            ("reference memory, built-in suites", work, 2, 0.65, ["run", *builtin]),
            (f"LongMemEval-shaped recall ({args.questions} haystacks)", lme, 2, 0.60, ["run"]),
            ("selftest, veto + recall", selftest, 2, 0.60, ["selftest"]),
            (f"CPU-bound adapter (5 ms of computing a call, {args.busy} haystacks)", busy, 2, None,
             ["run"]),
        ]
        chosen = {int(number) for number in args.cases.split(",")}
        cases = [case for number, case in enumerate(cases, 1) if number in chosen]
        memory: list[tuple[str, int, float, float]] = []
        for title, cwd, jobs, goal, command in cases:
            one, many = f"{command[0]} --jobs 1", f"{command[0]} --jobs {jobs}"
            timings = compare({one: _gate(*command, "--jobs", "1"),
                               many: _gate(*command, "--jobs", str(jobs))},
                              cwd, args.repeat, env, ok=(0, 1))
            print(f"{title}\n{_ratio(timings, one, many, goal)}", flush=True)
            if command[0] == "run" and cwd not in (sleepy, busy):  # (their memory is all sleep or work)
                config = ROOT / "membench.toml" if "--config" in command else cwd / "membench.toml"
                print(_phase_line(*phase(config, jobs, args.repeat), jobs, goal), flush=True)
            print(flush=True)
            memory.append((title, jobs, peak_rss(_gate(*command, "--jobs", "1"), cwd),
                           peak_rss(_gate(*command, "--jobs", str(jobs)), cwd)))
        print("peak memory (gate + adapter processes, resident)")
        for title, jobs, single, several in memory:
            bound = jobs * single
            print(f"  {title:<62} 1 worker {single:6.0f} MB   {jobs} workers {several:6.0f} MB"
                  f"   {several / single:.2f}x  (at most {jobs}x: "
                  f"{'met' if several <= bound else 'NOT met'})")


if __name__ == "__main__":
    main()
