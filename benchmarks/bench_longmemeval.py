"""Benchmark a LongMemEval ``_s``-shaped run: import, then the recall suite on the reference memory.

    python benchmarks/bench_longmemeval.py [--questions 500] [--sessions 50] [--turns 4.6]
                                           [--words 120] [--keep DIR]

1. Synthesizes a file of LongMemEval's shape (``question_id``, ``question_type``, ``question``,
   ``question_date``, ``haystack_session_ids``, ``haystack_dates``, ``haystack_sessions`` of
   ``{role, content, has_answer?}`` turns, ``answer_session_ids``; 5% ``_abs`` questions): by default
   500 questions × 50 sessions × 4.6 turns ≈ 115,000 turns, every session its own (the worst case for
   the corpus size), turn texts drawn from a Zipf vocabulary with a fixed seed. Not timed.
2. Times ``membench-gate import longmemeval FILE --out DIR`` and ``membench-gate run`` on a config
   with just ``[suites.recall]`` (k = 10) and the reference memory, each as a subprocess (interpreter
   start-up included), and prints the wall time of each plus queries per second for the run.

Timings are of the machine that runs the script.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SEED = 20250520
TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
         "multi-session", "knowledge-update", "temporal-reasoning")


def vocabulary(rng: np.random.Generator, size: int = 8000) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = set()
    while len(words) < size:
        length = int(rng.integers(3, 11))
        words.add("".join(rng.choice(letters, length)))
    return sorted(words)


def lme_date(moment: datetime) -> str:
    return moment.strftime("%Y/%m/%d (%a) %H:%M")


def synthesize(path: Path, questions: int, sessions: int, turns: float, words: int) -> int:
    """Write the synthetic file; returns the number of turns."""
    rng = np.random.default_rng(SEED)
    vocab = np.array(vocabulary(rng))
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    start = datetime(2023, 1, 1, 9, 0)
    total = 0
    with path.open("w", encoding="utf-8") as handle:
        handle.write("[\n")
        for q in range(questions):
            count = int(rng.integers(sessions - 5, sessions + 6))
            days = np.sort(rng.integers(0, 150, count))
            ids, dates, haystack = [], [], []
            answers = sorted(rng.choice(count, size=int(rng.integers(1, 4)), replace=False))
            for s in range(count):
                n_turns = max(2, int(rng.poisson(turns)))
                lengths = rng.integers(words // 3, words * 5 // 3 + 1, n_turns)
                drawn = rng.choice(vocab, size=int(lengths.sum()), p=weights)
                offsets = np.concatenate([[0], np.cumsum(lengths)])
                session = []
                for t in range(n_turns):
                    text = " ".join(drawn[offsets[t]:offsets[t + 1]])
                    turn = {"role": "user" if t % 2 == 0 else "assistant", "content": text}
                    if s in answers and t == 0:
                        turn["has_answer"] = True
                    session.append(turn)
                total += n_turns
                kind = "answer" if s in answers else "sharegpt"
                ids.append(f"{kind}_{q:03d}_{s:02d}")
                dates.append(lme_date(start + timedelta(days=int(days[s]), minutes=s * 7)))
                haystack.append(session)
            anchor = haystack[answers[0]][0]["content"].split()
            question = " ".join(anchor[: 8]) + "?"
            qid = f"q{q:04d}" + ("_abs" if q % 20 == 0 else "")
            item = {
                "question_id": qid, "question_type": TYPES[q % len(TYPES)],
                "question": question, "answer": "synthetic",
                "question_date": lme_date(start + timedelta(days=151)),
                "haystack_session_ids": ids, "haystack_dates": dates,
                "haystack_sessions": haystack,
                "answer_session_ids": [ids[a] for a in answers],
            }
            handle.write(("" if q == 0 else ",\n") + json.dumps(item))
        handle.write("\n]\n")
    return total


def timed(args: list[str], cwd: Path) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    clock = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "membench_gate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - clock
    if proc.returncode != 0:
        sys.exit(f"membench-gate {args[0]} failed:\n{proc.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--turns", type=float, default=4.6, help="mean turns per session")
    parser.add_argument("--words", type=int, default=120, help="mean words per turn")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        source = work / "longmemeval_synthetic.json"
        turns = synthesize(source, args.questions, args.sessions, args.turns, args.words)
        size = source.stat().st_size / 1e6
        print(f"synthetic file: {args.questions} questions, {turns:,} turns, {size:.0f} MB")
        imported = timed(["import", "longmemeval", str(source), "--out", "lme"], work)
        print(f"import longmemeval:  {imported:7.1f} s")
        (work / "membench.toml").write_text(
            '[adapter]\npython = "membench_gate.reference:ReferenceMemory"\n'
            "[adapter.options]\ntau = 0.35\n"
            '[suites.recall]\nfixtures = ["lme"]\nk = 10\n', encoding="utf-8")
        ran = timed(["run", "--config", "membench.toml", "--out", "results.json"], work)
        print(f"run (recall, k=10):  {ran:7.1f} s  ({args.questions / ran:.1f} queries/s)")
        cells = json.loads((work / "results.json").read_text(encoding="utf-8"))["cells"]
        print(f"cells: {len(cells)}; total {imported + ran:.1f} s")


if __name__ == "__main__":
    main()
