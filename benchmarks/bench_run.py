"""Benchmark `membench-gate run` and the reference memory's ranking.

    python benchmarks/bench_run.py [--repeat 5] [--memory-repeat 3] [--records 100000]
                                   [--queries 1000]

1. Wall time of `python -m membench_gate run` on this repo's `membench.toml` (the built-in fixtures,
   all three suites, the reference memory), as a subprocess: interpreter start-up included.
2. The reference memory on a synthetic store: ingest of N records (one `ingest` call, as the suites
   do), then ranking M queries with `search` (k = 5, every signal of the composite in play: files,
   as_of, relevance, approval, two sources). Reported separately, plus queries per second.

Records and queries come from a deterministic generator with a fixed seed: engineering-note texts of
22-48 words drawn from a Zipf-distributed vocabulary, 0-3 file paths each, dates over five years.
Each figure is a median: of --repeat runs for the CLI, of --memory-repeat runs for the memory
(a full pass of 1,000 queries over 100,000 records takes tens of seconds). Timings are of the
machine that runs the script.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sidebyside import compare, table  # noqa: E402

from membench_gate import Query, Record  # noqa: E402
from membench_gate.reference import ReferenceMemory  # noqa: E402

SEED = 20240611
_WORDS_TEXT = (
    "ledger invoice billing payment refund currency cents rounding tax customer account tenant "
    "deploy staging production rollout canary rollback feature flag migration schema index query "
    "postgres replica primary failover backup snapshot restore retention audit log trace metric "
    "alert pager oncall incident postmortem latency throughput timeout retry backoff queue kafka "
    "consumer producer partition offset topic worker cron scheduler batch export import csv "
    "parquet pipeline warehouse dashboard report api endpoint route handler middleware auth token "
    "session cookie oauth scope permission role admin user team owner review approval decision "
    "rejected because instead prefer avoid never always must should cache redis eviction ttl "
    "cdn asset bundle frontend mobile android ios release version semver changelog dependency "
    "upgrade pin lockfile build container image kubernetes pod node cluster helm terraform "
    "region zone network firewall vpc dns certificate tls mqtt gateway tracker device firmware "
    "geofence zone vehicle fleet route driver telemetry ingest stream window aggregate"
)


def _vocabulary(rng: np.random.Generator, size: int = 6000) -> list[str]:
    """Real words first (the frequent ones), then plausible identifiers (service names, tickets)."""
    words = list(dict.fromkeys(_WORDS_TEXT.split()))
    prefixes = ("svc", "job", "tbl", "ticket", "module", "flag", "host", "team")
    while len(words) < size:
        words.append(f"{prefixes[int(rng.integers(len(prefixes)))]}{int(rng.integers(10**5))}")
    return list(dict.fromkeys(words))


def _texts(rng: np.random.Generator, vocab: list[str], count: int, low: int, high: int) -> list[str]:
    ranks = np.arange(1, len(vocab) + 1)
    weights = 1.0 / ranks**1.1
    weights /= weights.sum()
    lengths = rng.integers(low, high + 1, size=count)
    picks = rng.choice(len(vocab), size=int(lengths.sum()), p=weights)
    out, at = [], 0
    for length in lengths:
        words = [vocab[i] for i in picks[at:at + length]]
        at += length
        out.append(" ".join(words).capitalize() + ".")
    return out


def make_records(count: int, seed: int = SEED) -> list[Record]:
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng)
    texts = _texts(rng, vocab, count, 22, 48)
    paths = [f"services/{vocab[i % 200]}/{vocab[(i * 7) % 300]}_{i}.py" for i in range(2000)]
    start = datetime(2021, 1, 1, tzinfo=timezone.utc)
    records = []
    for i, text in enumerate(texts):
        nfiles = int(rng.integers(0, 4))
        files = tuple(paths[j] for j in rng.choice(len(paths), size=nfiles, replace=False))
        created = start + timedelta(days=int(rng.integers(0, 5 * 365)))
        records.append(Record(
            id=f"rec-{i:06d}", text=text, source="default" if i % 10 else "personal",
            files=files, created_at=created,
            reviewed_at=created + timedelta(days=30) if i % 3 == 0 else None,
            relevance=float(rng.random()) if i % 2 == 0 else None,
        ))
    return records


def make_queries(records: list[Record], count: int, seed: int = SEED + 1) -> list[Query]:
    """Queries about stored records (a few of their words plus noise), with files and as_of."""
    rng = np.random.default_rng(seed)
    noise = _texts(rng, _vocabulary(rng), count, 3, 6)
    as_of = datetime(2026, 1, 1, tzinfo=timezone.utc)
    queries = []
    for i in range(count):
        target = records[int(rng.integers(len(records)))]
        words = target.text.rstrip(".").split()
        keep = rng.choice(len(words), size=min(len(words), int(rng.integers(5, 10))), replace=False)
        text = " ".join(words[j] for j in sorted(keep)) + " " + noise[i]
        queries.append(Query(text=text, k=5, files=target.files[:1], as_of=as_of))
    return queries


def median_time(repeat: int, action: Callable[[], object]) -> float:
    samples = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bench_cli(repeat: int) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"

        def run() -> None:
            done = subprocess.run(
                [sys.executable, "-m", "membench_gate", "run", "--config",
                 str(ROOT / "membench.toml"), "--out", str(out)],
                cwd=tmp, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"membench-gate run failed: {done.stderr.strip()}")

        return median_time(repeat, run)


def bench_startup(repeat: int) -> float:
    """``membench-gate --help`` against a bare interpreter start, side by side (goal: ≤ 7×)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    timings = compare({
        "python -c pass": [sys.executable, "-c", "pass"],
        "membench-gate --help": [sys.executable, "-m", "membench_gate", "--help"],
        "python -c 'import membench_gate'": [sys.executable, "-c", "import membench_gate"],
    }, ROOT, repeat, env)
    print(table(timings, "python -c pass"))
    return timings["membench-gate --help"].wall / timings["python -c pass"].wall


def bench_memory(records: list[Record], queries: list[Query], repeat: int) -> tuple[float, float]:
    memory = ReferenceMemory(tau=0.35)

    def ingest() -> None:
        memory.reset()
        memory.ingest(records)

    ingest_s = median_time(repeat, ingest)

    def rank() -> None:
        for query in queries:
            memory.search(query)

    return ingest_s, median_time(repeat, rank)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="CLI runs (median)")
    parser.add_argument("--memory-repeat", type=int, default=3,
                        help="ingest and ranking passes (median)")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    args = parser.parse_args()

    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs; "
          f"median of {args.repeat} CLI runs, {args.memory_repeat} memory passes")
    print(f"start-up, median of {4 * args.repeat} interleaved runs:")
    ratio = bench_startup(4 * args.repeat)
    print(f"membench-gate --help / python -c pass (wall):         {ratio:8.2f} ×  (goal ≤ 7)")
    cli = bench_cli(args.repeat)
    print(f"membench-gate run, built-in fixtures (subprocess):   {cli:8.3f} s")

    start = time.perf_counter()
    records = make_records(args.records)
    queries = make_queries(records, args.queries)
    words = statistics.mean(len(r.text.split()) for r in records)
    print(f"generated {len(records):,} records (mean {words:.1f} words) and {len(queries):,} "
          f"queries in {time.perf_counter() - start:.1f} s (not timed below)")
    ingest_s, rank_s = bench_memory(records, queries, args.memory_repeat)
    print(f"ReferenceMemory ingest {len(records):,} records:          {ingest_s:8.3f} s")
    print(f"ReferenceMemory rank {len(queries):,} queries (k=5):         {rank_s:8.3f} s  "
          f"({len(queries) / rank_s:,.0f} queries/s, {1000 * rank_s / len(queries):.2f} ms/query)")


if __name__ == "__main__":
    main()
