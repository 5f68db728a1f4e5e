"""The reference memory against a numpy floor: search side by side, ingest time and peak memory.

    python benchmarks/bench_reference.py [--records 100000] [--queries 1000] [--passes 3]
                                         [--ingest-runs 3]

1. Search. ``ReferenceMemory.search`` and ``floor_search`` — the least a plain numpy ranking must do:
   the same composite score from the same stored matrix, reading only the columns of the query's
   non-zero buckets, then an ``argpartition`` top-k (no rounding, no tie order, no lifecycle, no
   ``Hit`` objects) — take turns on every query (which goes first alternates), over ``--passes``
   passes of ``--queries`` queries. Per pass: the total of each; the figures are the medians over
   passes and their ratio.
2. Ingest. In a fresh child process per run (``--ingest-runs``): generate the records (not timed),
   then time one ``ingest`` of all of them plus the first ``search``, which joins the ingested rows
   into the matrix. Peak resident memory (``VmHWM``, reset with ``/proc/self/clear_refs`` after the
   records are generated) against the bytes of the stored matrix, both for the whole process and
   for what the ingest adds to the resident memory it started from. ``--against DIR`` (a checkout
   of another revision, e.g. ``git worktree add ../base main``) runs the same child on DIR's
   package in turns with this one, for a before/after ratio from one run.

BLAS runs on one thread unless ``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` say otherwise: the
matrix-vector product is the same call on both sides, and on a shared, loaded machine its threads
mostly wait for each other, which would bury the difference being measured.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

# An --against child imports the package of another checkout.
ROOT = Path(os.environ.get("BENCH_REFERENCE_ROOT") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))

from membench_gate import Query, Record  # noqa: E402, I001  (before bench_run: it adds its root)
from membench_gate.reference.embed import HashEmbedder  # noqa: E402
from membench_gate.reference import ReferenceMemory  # noqa: E402

from bench_run import make_queries, make_records  # noqa: E402

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _days(moment: datetime | None) -> float:
    return float("nan") if moment is None else (moment - _EPOCH).total_seconds() / 86400.0


@dataclass
class FloorStore:
    """What the floor ranks: the stored matrix and one array per signal, built outside the memory
    (the same embedder, so the same matrix)."""

    embedder: HashEmbedder
    matrix: np.ndarray  # records × dims, column-major
    static: np.ndarray  # 0.13·relevance + 0.10·approval
    created: np.ndarray  # days since the epoch
    sources: np.ndarray  # a small integer per source
    codes: dict[str, int]
    files: dict[str, np.ndarray]  # path → records that touch it

    @classmethod
    def build(cls, records: list[Record], dims: int = 512) -> FloorStore:
        embedder = HashEmbedder(dims)
        codes: dict[str, int] = {}
        files: dict[str, list[int]] = {}
        for i, record in enumerate(records):
            codes.setdefault(record.source, len(codes))
            for path in set(record.files):
                files.setdefault(path, []).append(i)
        return cls(
            embedder=embedder,
            matrix=embedder.embed_many([r.text for r in records]),
            static=np.array([0.13 * float(r.relevance or 0.0)
                             + 0.10 * (1.0 if r.reviewed_at is not None else 0.0)
                             for r in records]),
            created=np.array([_days(r.created_at) for r in records]),
            sources=np.array([codes[r.source] for r in records], dtype=np.int32),
            codes=codes,
            files={path: np.array(rows) for path, rows in files.items()},
        )


def floor_search(store: FloorStore, query: Query) -> tuple[np.ndarray, np.ndarray]:
    """The composite score of every record, reading only the query's columns; the top k."""
    vector = store.embedder.embed(query.text)
    buckets = np.flatnonzero(vector)
    score = 0.32 * (store.matrix[:, buckets] @ vector[buckets]) + store.static
    files = set(query.files)
    if files:
        overlap = np.zeros(len(score))
        for path in files:
            if path in store.files:
                overlap[store.files[path]] += 1.0
        score += 0.27 * np.minimum(1.0, overlap / len(files))
    if query.as_of is not None:  # every generated record has a creation date
        score += 0.18 * 0.5 ** (np.clip(_days(query.as_of) - store.created, 0.0, 3650.0) / 30.0)
    score[store.sources != store.codes.get(query.source, -1)] = -np.inf
    top = np.argpartition(-score, query.k - 1)[:query.k]
    top = top[np.argsort(-score[top], kind="stable")]
    return top, score[top]


def bench_search(records: list[Record], queries: list[Query], passes: int) -> None:
    memory = ReferenceMemory(tau=0.35)
    memory.ingest(records)
    memory.search(queries[0])  # the matrix is built at the first search
    store = FloorStore.build(records)
    same = sum(
        [hit.id for hit in memory.search(q).hits] == [records[i].id for i in floor_search(store, q)[0]]
        for q in queries)
    print(f"same top-k ids as the floor: {same}/{len(queries)} queries "
          "(the floor has no rounding to 9 decimals and no tie order)")
    ours, floor = [], []
    for _ in range(passes):
        gc.collect()
        spent = [0.0, 0.0]
        for i, query in enumerate(queries):
            for side in ((0, 1) if i % 2 == 0 else (1, 0)):
                start = time.perf_counter()
                if side == 0:
                    memory.search(query)
                else:
                    floor_search(store, query)
                spent[side] += time.perf_counter() - start
        ours.append(spent[0])
        floor.append(spent[1])
    a, b = statistics.median(ours), statistics.median(floor)
    n = len(queries)
    print(f"ReferenceMemory.search  {1000 * a / n:7.3f} ms/query")
    print(f"numpy floor             {1000 * b / n:7.3f} ms/query")
    print(f"search / floor          {a / b:7.2f} ×  (goal ≤ 1.3)")


def _status(key: str) -> int:
    """A ``VmRSS``/``VmHWM`` line of /proc/self/status, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def ingest_child(count: int) -> None:
    """One measured ingest in this (fresh) process: a JSON line on stdout."""
    records = make_records(count)
    queries = make_queries(records, 1)
    memory = ReferenceMemory(tau=0.35)
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak to the current RSS
        reset = True
    except OSError:
        reset = False
    before = _status("VmRSS")
    start, cpu = time.perf_counter(), time.process_time()
    memory.ingest(records)
    memory.search(queries[0])
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = _status("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    matrix = count * memory.embedder.dims * 8
    print(json.dumps({"seconds": seconds, "cpu": cpu, "before": before, "peak": peak, "matrix": matrix,
                      "reset": reset}))


def _ingest_runs(count: int, runs: int, roots: list[Path]) -> list[list[dict[str, float]]]:
    """``runs`` child processes per checkout, taking turns."""
    results: list[list[dict[str, float]]] = [[] for _ in roots]
    for _ in range(runs):
        for side, root in enumerate(roots):
            done = subprocess.run([sys.executable, __file__, "--ingest-child", str(count)],
                                  env={**os.environ, "BENCH_REFERENCE_ROOT": str(root)},
                                  capture_output=True, text=True, check=True)
            results[side].append(json.loads(done.stdout.splitlines()[-1]))
    return results


def bench_ingest(count: int, runs: int, against: Path | None) -> None:
    roots = [ROOT] if against is None else [ROOT, against]
    mib = 2**20
    medians = []
    for root, results in zip(roots, _ingest_runs(count, runs, roots), strict=True):
        seconds = statistics.median(r["seconds"] for r in results)
        cpu = statistics.median(r["cpu"] for r in results)
        peak = statistics.median(r["peak"] for r in results)
        before = statistics.median(r["before"] for r in results)
        matrix = results[0]["matrix"]
        medians.append((seconds, cpu))
        print(f"[{root}]")
        print(f"  ingest {count:,} records + first search: {seconds:6.2f} s wall, {cpu:6.2f} s CPU "
              f"(median of {runs} fresh processes; goal ≤ 1.5 s)")
        print(f"  stored matrix {matrix / mib:4.0f} MiB; resident before ingest {before / mib:4.0f} "
              "MiB (interpreter, numpy, the records)")
        print(f"  peak resident {peak / mib:4.0f} MiB = {peak / matrix:4.2f} × the matrix; "
              f"added by ingest {(peak - before) / mib:4.0f} MiB = {(peak - before) / matrix:4.2f} ×"
              f" (goal ≤ 1.3){'' if results[0]['reset'] else '  [peak of the whole process life]'}")
    if against is not None:
        print(f"ingest, this checkout / {against}: wall {medians[0][0] / medians[1][0]:5.2f} ×, "
              f"CPU {medians[0][1] / medians[1][1]:5.2f} ×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--passes", type=int, default=3, help="search passes (median)")
    parser.add_argument("--ingest-runs", type=int, default=3, help="ingest processes (median)")
    parser.add_argument("--against", type=Path, help="another checkout, for ingest before/after")
    parser.add_argument("--ingest-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ingest_child:
        ingest_child(args.ingest_child)
        return
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, "
          f"load average {os.getloadavg()[0]:.1f}")
    if args.ingest_runs > 0:
        bench_ingest(args.records, args.ingest_runs, args.against)
    if args.passes <= 0:
        return
    records = make_records(args.records)
    queries = make_queries(records, args.queries)
    bench_search(records, queries, args.passes)


if __name__ == "__main__":
    main()
