"""Benchmark the adapter boundary: the built-in suites in process vs through the JSON-RPC host.

    python benchmarks/bench_boundary.py [--repeat 7] [--records 100000] [--ingest-repeat 5]

1. Whole commands, as a user runs them, alternating, wall time: *in process* — a fresh interpreter
   that does what ``run`` did before every adapter moved into its own process: the same
   :func:`membench_gate.run.runner.run` (config, fixtures, suites, results, receipt, summary) with the
   ``ReferenceMemory`` built in the gate's own process and its methods called directly — and
   *through the host* — ``python -m membench_gate run``: the adapter started as
   ``python -m membench_gate.host``, every call a JSON-RPC request over stdio, every answer
   validated. Medians of ``--repeat`` runs, and their ratio.
2. The suites alone in one warm process, the same two ways, with the fixtures loaded and the
   adapter already started and initialized (the host started once, the suites run ``--repeat``
   times on it): the boundary's per-call cost with nothing to hide it.
3. Ingest of ``--records`` synthetic records through the host (batched ``ingest`` requests) vs one
   direct ``ingest()`` call, alternating, ``--ingest-repeat`` times each: what the boundary costs a
   large corpus. Medians, their ratio, and the CPU time of each side through the host.

Timings are of the machine that runs the script.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from membench_gate.adapter import rpc  # noqa: E402
from membench_gate.adapter.types import Answer, Pushed, Query, Record, Session  # noqa: E402
from membench_gate.config import load_config  # noqa: E402
from membench_gate.reference import ReferenceMemory  # noqa: E402
from membench_gate.report.summary import run_summary  # noqa: E402
from membench_gate.run.runner import load_fixtures, run  # noqa: E402
from membench_gate.suites import registry  # noqa: E402


class DirectSession:
    """The suites' view of a memory object called in the gate's own process (no boundary)."""

    def __init__(self, memory: ReferenceMemory) -> None:
        self.memory = memory
        self.capabilities = rpc.Capabilities(push=True, write=hasattr(memory, "write"))

    def reset(self, item: str | None = None) -> None:
        self.memory.reset()

    def ingest(self, records: list[Record], item: str | None = None) -> None:
        self.memory.ingest(list(records))

    def search(self, query: Query, item: str) -> Answer:
        return self.memory.search(query)

    def push(self, query: Query, item: str) -> list[str]:
        return self.memory.push(query)

    def push_answer(self, query: Query, item: str) -> Pushed:
        return Pushed(self.memory.push(query))

    def write(self, session: Session, item: str | None = None) -> None:
        self.memory.write(session)


class InProcess:
    """What :meth:`Config.launch` gives :func:`membench_gate.run.runner.run` — the handshake, client
    and process in one — with the memory built in the gate's own process, as before the adapter
    boundary. Nothing to stop."""

    name = "membench_gate.reference:ReferenceMemory"

    def __init__(self, config: Any) -> None:
        self.memory = ReferenceMemory(**config.adapter_options)
        self.capabilities = DirectSession(self.memory).capabilities
        self.process = self

    def finish(self) -> InProcess:
        return self

    def session(self, suite: str) -> DirectSession:
        return DirectSession(self.memory)

    def shutdown(self, wait: bool = True, who: str = "") -> None:
        pass

    def begin_shutdown(self) -> None:
        return None

    def end_shutdown(self, sent: None, wait: bool = True, who: str = "") -> None:
        pass

    def kill(self) -> None:
        pass


def in_process(config: Any) -> None:
    from unittest import mock

    memory = InProcess(config)
    with mock.patch.object(type(config), "launch", lambda self, env=None: memory):
        results = run(config)
    run_summary(results, None)


def suites_on(config: Any, loaded: dict[str, Any], session: Any) -> float:
    """Time every enabled suite against ``session(suite name)``."""
    suites = registry()
    start = time.perf_counter()
    for name, fixtures in loaded.items():
        suites[name].run(fixtures, session(name), config.suites[name], None)
    return time.perf_counter() - start


def command(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def timed(fn: Any, *args: Any) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--ingest-repeat", type=int, default=5)
    parser.add_argument("--in-process-run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.in_process_run:
        in_process(load_config(ROOT / "membench.toml"))
        return
    config = load_config(ROOT / "membench.toml")
    old = [sys.executable, str(Path(__file__).resolve()), "--in-process-run"]
    new = [sys.executable, "-m", "membench_gate", "run"]
    command(old), command(new)  # warm the file cache
    old_s, new_s = [], []
    for _ in range(args.repeat):
        old_s.append(command(old))
        new_s.append(command(new))
    o, n = statistics.median(old_s), statistics.median(new_s)
    print(f"command, in process:             {o:.3f} s (median of {args.repeat})")
    print(f"command, through host:           {n:.3f} s (median of {args.repeat})")
    print(f"ratio host / in process:         {n / o:.2f}x")

    _, loaded = load_fixtures(config)
    direct, through = [], []
    local = DirectSession(ReferenceMemory(**config.adapter_options))  # every suite resets it
    with rpc.start(config.adapter_argv(), config.base_dir, config.adapter_options,
                   config.timeout) as client:
        for n in range(args.repeat + 1):  # the first of each only warms caches
            d = suites_on(config, loaded, lambda _name: local)
            h = suites_on(config, loaded, client.session)
            if n:
                direct.append(d)
                through.append(h)
    d, h = statistics.median(direct), statistics.median(through)
    print(f"suites alone, in process:        {d:.3f} s (median of {args.repeat})")
    print(f"suites alone, through host:      {h:.3f} s (median of {args.repeat})")
    print(f"ratio host / in process:         {h / d:.2f}x")

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_run import make_records  # the same synthetic notes as bench_run.py

    records = make_records(args.records)
    argv = rpc.adapter_argv(None, "membench_gate.reference:ReferenceMemory")
    direct_s, hosted_s, gate_cpu, host_cpu = [], [], [], []
    for _ in range(args.ingest_repeat):  # alternating: the machine's load changes by the second
        direct_s.append(timed(ReferenceMemory().ingest, records))
        with rpc.start(argv, ROOT, {}, 600.0) as client:
            session, host = client.session("bench"), client.process.proc.pid
            cpu, host_before = time.process_time(), cpu_seconds(host)
            hosted_s.append(timed(session.ingest, records))
            gate_cpu.append(time.process_time() - cpu)
            host_cpu.append(cpu_seconds(host) - host_before)
    d, h = statistics.median(direct_s), statistics.median(hosted_s)
    print(f"ingest {args.records:,} records, in process:   {d:.2f} s "
          f"(median of {args.ingest_repeat})")
    print(f"ingest {args.records:,} records, through host: {h:.2f} s "
          f"({-(-args.records // rpc.INGEST_BATCH)} requests; CPU: gate "
          f"{statistics.median(gate_cpu):.2f} s, host {statistics.median(host_cpu):.2f} s)")
    print(f"ratio host / in process:         {h / d:.2f}x")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (Linux; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

if __name__ == "__main__":
    main()
