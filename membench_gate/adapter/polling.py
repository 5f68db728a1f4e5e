"""Waiting on the protocol's pipes: poll briefly when a CPU is free, then block.

The gate and an adapter take turns, one request at a time, and each often waits only tens or
hundreds of microseconds for the other. A process that blocks in ``read`` for that long is put to
sleep, and on a virtual machine its CPU is halted with it: it wakes late, then runs on cold caches.
Measured on a 2-CPU virtual machine with the built-in suites (``benchmarks/bench_boundary.py``): a
pipe round trip cost 65 µs across CPUs against 22 µs on one, and the reference memory's search
took about 1.5x as long in a host that blocked between requests as in one fed back to back.

So a wait that is likely to be short polls the pipe first, for at most :data:`POLL_S`, and only
then blocks — but only while a CPU is free for it: when the machine has more runnable tasks than
this process may use CPUs (``/proc/loadavg``, read before each poll), polling would take a CPU
from the other end or from another job, so the wait blocks at once. Without ``/proc/loadavg``
(not Linux) nothing polls.

Measured on that machine (``membench-gate run`` on the built-in suites, medians of 7): quiet,
486 ms without polling and 431 ms with it; with one other CPU-bound process running, 581 ms
without and 626 ms with (1.42x as long, 844 ms, when polling checked only the number of CPUs).
The price is CPU: quiet, a run took 816 ms of CPU (both processes) without polling and 932 ms
with it, for 653 and 562 ms of wall time.
"""

from __future__ import annotations

import os
import select
import threading
import time

POLL_S = 300e-6  # the longest poll before a wait blocks


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity), else the machine's."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else (os.cpu_count() or 1)


def _loadavg() -> int | None:
    try:
        return os.open("/proc/loadavg", os.O_RDONLY)
    except (OSError, AttributeError):
        return None


class Poller:
    """Polls one file descriptor (a POSIX pipe) before a blocking wait on it."""

    def __init__(self, fd: int, budget_s: float = POLL_S) -> None:
        self.fd = fd
        self.cpus = usable_cpus()
        self._lock = threading.Lock()
        self._loadavg = _loadavg() if budget_s > 0 and self.cpus >= 2 else None
        self.budget_s = budget_s if self._loadavg is not None else 0.0

    def close(self) -> None:
        """Close ``/proc/loadavg`` once, whichever threads call this (the thread that kills an
        adapter and the one that drives it may both): the descriptor is taken under a lock
        before it is closed, so no second call closes it again — or a file that reused it."""
        with self._lock:
            fd, self._loadavg, self.budget_s = self._loadavg, None, 0.0
        if fd is not None:
            os.close(fd)

    def cpu_free(self) -> bool:
        """Whether no more tasks are runnable than this process may use CPUs (this process and
        the other end, just woken, included)."""
        fd = self._loadavg
        if fd is None:
            return False
        try:
            fields = os.pread(fd, 128, 0).split()
            return int(fields[3].split(b"/")[0]) <= self.cpus
        except (OSError, ValueError, IndexError):
            self.close()
            return False

    def poll(self) -> bool:
        """Whether ``fd`` became readable within the budget; ``False``: block now."""
        if not self.budget_s or not self.cpu_free():
            return False
        fd = self.fd
        until = time.perf_counter() + self.budget_s
        while True:
            if select.select([fd], [], [], 0)[0]:
                return True
            if time.perf_counter() >= until:
                return False
