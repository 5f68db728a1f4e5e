"""Adapter workers: N adapter processes, each one request at a time, the items split between them
(docs/adapters.md, "Workers").

What a worker scores is decided before any process starts, from the fixtures alone: a suite's
*units* (what one ``reset`` serves — a recall haystack; by default each scored item on its own)
go round-robin to the workers in fixture order, unit ``j`` to worker ``j % N + 1``. Each worker
runs every suite on its share as a shard runs it (the corpus ingested whole, only its items
scored; a suite skips a unit none of whose items it scores), and the suite's ``score`` then
recomputes every cell from the union of the workers' item records, exactly as ``merge`` does for
shards — so the results are byte-identical to one worker's.

Worker ``i`` (1-based, as shards are) starts with ``MEMBENCH_WORKER=i`` in its environment and a
temp folder of its own (``TMPDIR``), so an adapter can keep one store per worker — one worker
too: the folder is never the gate's nor another command's, and goes when the process ends.
Each worker is driven by a thread of the gate that waits on its process; the memory works in
its own process. The first worker to fail stops the others (their processes are killed) and its
error, naming it, is the run's.

When several adapter processes run at once, each also gets its share of the CPUs for the thread
pools of the common numeric libraries (:data:`THREAD_VARIABLES`: OpenMP, OpenBLAS, MKL,
Accelerate, numexpr), as the CPUs divided by the processes, at least one — unless the gate's own
environment sets the variable. Each pool otherwise sizes itself to every CPU: N workers would
start N times as many threads as there are CPUs, and OpenBLAS's spin while they wait.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from membench_gate.adapter import rpc, seal
from membench_gate.adapter.polling import usable_cpus
from membench_gate.errors import GateError
from membench_gate.process import joined
from membench_gate.suites import get
from membench_gate.suites.common.repeats import pool, split
from membench_gate.suites.common.suite import Records, SuiteRun

if TYPE_CHECKING:
    from membench_gate.adapter.rpc import AdapterClient, AdapterProcess, Handshake
    from membench_gate.config import Config
    from membench_gate.suites.common.fixtures import SuiteFixtures
    from membench_gate.suites.common.options import SuiteOptions

T = TypeVar("T")
SWITCH_S = 0.001  # the interpreter's switch interval while several workers run


def units(suite: str, fixtures: SuiteFixtures) -> list[list[str]]:
    """The scored items of ``fixtures`` grouped as the suite resets for them, in fixture order:
    the scoring module's ``units(fixtures)`` when it has one, else each item on its own. An item
    a suite's ``units`` leaves out is a unit of its own (it is still scored, by someone)."""
    grouping: Callable[[Any], list[list[str]]] | None = getattr(get(suite).scoring, "units",
                                                                 None)
    groups = [[i for i in group if i in fixtures.digests] for group in grouping(fixtures)] \
        if grouping is not None else []
    groups = [group for group in groups if group]
    placed = {item for group in groups for item in group}
    return groups + [[item] for item in fixtures.digests if item not in placed]


def shares(suite: str, fixtures: SuiteFixtures, count: int) -> list[SuiteFixtures | None]:
    """What each of ``count`` workers scores of ``suite``: its units round-robin in fixture
    order; ``None`` for a worker with nothing to score, which skips the suite (worker 1 runs a
    suite with no scored item at all, as one worker would)."""
    if count == 1:
        return [fixtures]
    owner = {item: position % count for position, group in enumerate(units(suite, fixtures))
             for item in group}
    out: list[SuiteFixtures | None] = []
    for number in range(count):
        mine = {item: d for item, d in fixtures.digests.items() if owner[item] == number}
        out.append(replace(fixtures, digests=mine) if mine else None)
    if all(share is None for share in out):
        out[0] = fixtures
    return out


def useful(loaded: dict[str, SuiteFixtures], count: int, alone: Sequence[str] = ()) -> int:
    """How many of ``count`` workers get anything to score (no process starts for nothing);
    the suites of ``alone`` run whole in worker 1."""
    most = max((len(units(name, fixtures)) for name, fixtures in loaded.items()
                if name not in alone), default=1)
    return max(1, min(count, most))


def combine(suite: str, options: SuiteOptions, runs: Sequence[SuiteRun]) -> SuiteRun:
    """One suite's run from its workers' runs: every cell recomputed by the suite's ``score``
    from the union of their item records (the cells it derives from others left to it), one
    pass at a time with repeats — what ``merge`` does with shards."""
    if len(runs) == 1:
        return runs[0]
    derived = get(suite).derived
    records: Records = {}
    for one in runs:
        for cell, items in one.items.items():
            if cell not in derived:
                records.setdefault(cell, {}).update(items)  # disjoint: each item has one worker
    if options.repeats is None:
        return get(suite).score(records, options)
    return pool([get(suite).score(one, options) for one in split(records, options.repeats)])


@dataclass
class Worker:
    """One adapter process of a run: its number (``MEMBENCH_WORKER``) and its temp folder."""

    number: int
    handshake: Handshake
    tmp: Path | None = None
    remove_tmp: bool = False
    _client: AdapterClient | None = None

    @property
    def process(self) -> AdapterProcess:
        return self.handshake.process

    @property
    def client(self) -> AdapterClient:
        """The initialized adapter (``initialize`` answered on first use)."""
        if self._client is None:
            self._client = self.handshake.finish()
        return self._client


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


class _Sharing:
    """The runs going on side by side (a selftest's slots, the determinism check's two passes, a
    run's workers), each as the number of adapter processes it may run at once: what
    :func:`sharing` adds and takes away, in any order, from any thread."""

    def __init__(self) -> None:
        self.active: list[int] = []
        self.switching: float | None = None  # the interval to restore, while one is set
        self.lock = threading.Lock()

    @property
    def at_once(self) -> int:
        return max(self.active, default=1)


_SHARING = _Sharing()


@contextmanager
def sharing(processes: int) -> Iterator[None]:
    """While this lasts, ``processes`` adapter processes may run at once, whatever each run's
    own worker count: what divides the CPUs between their thread pools (the most any active
    call said). While any says more than one, the interpreter also switches threads every
    :data:`SWITCH_S` instead of every 5 ms: a thread whose adapter just answered waits for the
    interpreter lock while another encodes a batch, and its adapter waits with it
    (benchmarks/README.md, "bench_workers.py")."""
    with _SHARING.lock:
        if processes > 1 and _SHARING.switching is None:
            _SHARING.switching = sys.getswitchinterval()
            sys.setswitchinterval(min(_SHARING.switching, SWITCH_S))
        _SHARING.active.append(processes)
    try:
        yield
    finally:
        with _SHARING.lock:
            _SHARING.active.remove(processes)
            if _SHARING.switching is not None and _SHARING.at_once <= 1:
                sys.setswitchinterval(_SHARING.switching)
                _SHARING.switching = None


def thread_limits(at_once: int) -> dict[str, str]:
    """The thread pool sizes of a worker's environment when ``at_once`` adapter processes run
    at once (none for one): each its share of the CPUs, at least one; a variable the gate's own
    environment sets is left as it is."""
    if at_once <= 1:
        return {}
    share = str(max(1, usable_cpus() // at_once))
    return {name: share for name in THREAD_VARIABLES if name not in os.environ}


def worker_env(number: int, tmp: Path | None, at_once: int = 1) -> dict[str, str]:
    """What a worker's environment adds: its number, its own temp folder when it has one, and
    its share of the CPUs for thread pools when ``at_once`` processes run at once."""
    env = {seal.WORKER_VARIABLE: str(number), **thread_limits(at_once)}
    if tmp is not None:
        env.update(TMPDIR=str(tmp), TMP=str(tmp), TEMP=str(tmp))
    return env


class Workers:
    """The adapter processes of one adapter: ``numbers`` (1-based, each a ``MEMBENCH_WORKER``),
    each with a temp folder of its own. ``several``: more than one adapter process runs at once
    (these, or another run's beside them), so an error says whose it is."""

    def __init__(self, config: Config, numbers: Sequence[int], several: bool,
                 holding: Sequence[Worker] = ()) -> None:
        self.config = config
        self.numbers, self.several = list(numbers), several
        self.started: list[Worker] = []
        # A ``python`` adapter's other hosts, started with the first but not yet initialized:
        # each imports the module meanwhile (the host does before it reads a request).
        self.waiting: list[tuple[int, AdapterProcess, Path | None, bool]] = []
        self._failed: tuple[Worker, BaseException] | None = None
        self._lock = threading.Lock()
        if holding:  # workers another run started (:class:`Kept`)
            self.started += holding
            return
        self._start(self.numbers[0])
        if config.adapter_command is None:
            try:
                for number in self.numbers[1:]:
                    rpc.reap(number, every=False)
                    tmp, remove = self._tmp(number)
                    try:
                        self.waiting.append((number, config.start(self._env(number, tmp)),
                                             tmp, remove))
                    except BaseException:
                        _remove(tmp, remove)
                        raise
            except BaseException:
                self.kill()
                raise

    def _env(self, number: int, tmp: Path | None) -> dict[str, str]:
        return worker_env(number, tmp, max(len(self.numbers), _SHARING.at_once))

    def _tmp(self, number: int) -> tuple[Path | None, bool]:
        return seal.worker_tmp(number)

    def _start(self, number: int) -> None:
        rpc.reap(number, every=False)  # the last process of this number has ended
        tmp, remove = self._tmp(number)
        try:
            handshake = self.config.launch(self._env(number, tmp))
        except BaseException:
            _remove(tmp, remove)
            raise
        self.started.append(Worker(number, handshake, tmp, remove))

    @property
    def first(self) -> Worker:
        return self.started[0]

    def start_others(self) -> None:
        """Start (or, for a ``python`` adapter, initialize) the workers after the first, once
        its ``initialize`` allowed them: an adapter that declares ``capabilities.workers:
        false`` never has a second object built nor a second command started (its start-up may
        open the one store)."""
        number = self.numbers[0]
        try:
            while self.waiting:
                number, process, tmp, remove = self.waiting.pop(0)
                try:
                    handshake = rpc.greet(process, self.config.adapter_options)  # kills on failure
                except BaseException:
                    _remove(tmp, remove)
                    raise
                self.started.append(Worker(number, handshake, tmp, remove))
            for number in self.numbers[len(self.started):]:
                self._start(number)
        except BaseException as exc:
            self.kill()
            raise named(number, exc) from None

    def fits(self, count: int, several: bool) -> bool:
        """Whether these workers, started before the fixtures said how many get anything to
        score, are the ``count`` a run needs (``several`` as it is for ``count``); if not they
        are stopped, never initialized, since each worker's environment holds its share of the
        CPUs for the number started."""
        if count == len(self.numbers) and several == self.several:
            return True
        self.kill()
        return False

    def one_only(self) -> None:
        """The first worker alone after all: the hosts started beside it are stopped, never
        initialized (they imported the module and built nothing)."""
        waiting, self.waiting = self.waiting, []

        def stop(host: tuple[int, AdapterProcess, Path | None, bool]) -> None:
            try:
                host[1].kill()
            finally:
                _remove(host[2], host[3])

        _each(waiting, stop)

    def each(self, task: Callable[[Worker], T]) -> list[T]:
        """``task`` of every worker, in worker order; each in a thread of its own when there are
        several. The first to fail stops the others, and its error (naming it) is raised."""
        if len(self.started) == 1:
            try:
                with rpc.driving():  # (a selftest's slots: one worker each, several at once)
                    return [task(self.first)]
            except BaseException as exc:
                if self.several:
                    raise named(self.first, exc) from None
                raise
        results: dict[int, T] = {}

        def drive(worker: Worker) -> None:
            try:
                with rpc.driving():
                    results[worker.number] = task(worker)
            except BaseException as exc:  # handed to the main thread
                self._fail(worker, exc)

        threads = [threading.Thread(target=drive, args=(w,), name=f"worker {w.number}",
                                    daemon=True) for w in self.started]
        try:
            with sharing(len(threads)):
                for thread in threads:
                    thread.start()
                for thread in threads:
                    joined(thread)
        except BaseException as exc:  # an interrupt or a signal in the main thread
            self._fail(None, exc)
            for thread in threads:
                thread.join()
        if self._failed is not None:
            worker, error = self._failed
            raise named(worker, error)
        return [results[w.number] for w in self.started]

    def _fail(self, worker: Worker | None, exc: BaseException) -> None:
        """Record the first failure and kill every other worker's process (their threads then
        see the end of output and stop)."""
        with self._lock:
            if self._failed is not None:
                return
            if worker is not None:
                self._failed = (worker, exc)
            else:
                self._failed = (self.first, exc)
        for other in self.started:
            if other is not worker:
                other.process.interrupt()

    def shutdown(self) -> None:
        """``shutdown`` to every worker; their exits are awaited in the background (the gate
        goes on writing its results, a selftest starts its next run) and by the end of the
        command at the latest (:func:`membench_gate.adapter.rpc.reap`)."""
        sent = [worker.process.begin_shutdown() for worker in self.started]  # (graces at once)
        for worker, ident in zip(self.started, sent, strict=True):
            worker.process.end_shutdown(ident, wait=False,
                                        who=f"worker {worker.number}: " if self.several else "")
        ended, self.started = self.started, []
        for worker in ended:
            if not rpc.let_exit(worker.process, worker.number,
                                partial(_remove, worker.tmp, worker.remove_tmp)):
                self._stop(worker)  # sealed: its end sweeps the sandbox, here

    def kill(self) -> None:
        """Stop every process and remove every temp folder, each whatever befell the one
        before it (an interrupt, a failing close): the first error is raised after the rest."""
        try:
            self.one_only()
        finally:
            _each(self.started, self._stop)

    def _stop(self, worker: Worker) -> None:
        try:
            worker.process.kill()
        finally:
            _remove(worker.tmp, worker.remove_tmp)
            worker.tmp = None


class Kept:
    """Adapter processes kept from one run for the next run of the same worker numbers (a
    selftest's runs, docs/selftest.md): a process initialized once serves run after run, each
    of whose suites begins with ``reset`` as every suite does. Only the processes of a run that
    ended well are kept, each under its worker number; those of a run that failed are killed
    as always, and one that has exited since is replaced by a new one. The processes a run is
    using are *lent*: :meth:`close` after an error interrupts them, so the runs in flight end at
    once, and a run that starts after it is refused. Thread-safe: several slots' runs use it."""

    def __init__(self, reuse: bool = True) -> None:
        """``reuse`` false: nothing is kept for a next run (a run's processes are shut down as
        it ends, as without a ``Kept``); the processes are only lent, so :meth:`close` after an
        error still interrupts the runs in flight and refuses later ones."""
        self._held: dict[tuple[str, int], Workers] = {}  # each holds one worker
        self._lent: list[Workers] = []
        self._closed = False
        self._reuse = reuse
        self._lock = threading.Lock()

    def take(self, config: Config, seam: str, numbers: Sequence[int], several: bool
             ) -> Workers | None:
        """The processes kept for ``numbers`` of ``seam``'s adapter, lent to a run, when they
        can serve it: every number's, or the first's alone for an adapter that allows only one
        process. Else None, and what was kept for those numbers is stopped (a worker number is
        never two live processes at once)."""
        with self._lock:
            self._refuse_if_closed()
            if not self._reuse:
                return None
            held = [self._held.pop((seam, n)) for n in numbers if (seam, n) in self._held]
        workers = [one.first for one in held]
        usable = bool(held) and all(_running(worker) for worker in workers) and (
            len(held) == len(numbers)
            or (workers[0].number == numbers[0] and not workers[0].client.capabilities.workers))
        if not usable:
            for one in held:
                one.shutdown()
            return None
        taken = Workers(config, list(numbers[:len(held)]), several, holding=workers)
        self.lend(taken)
        return taken

    def lend(self, workers: Workers) -> None:
        """Count ``workers`` as in use by a run; once closed they are killed and refused."""
        with self._lock:
            if not self._closed:
                if all(w is not workers for w in self._lent):
                    self._lent.append(workers)
                return
        workers.kill()
        self._refuse_if_closed()

    def give(self, seam: str, workers: Workers) -> None:
        """Keep each of ``workers``' processes for the next run of its worker number (after
        :meth:`close`, they are stopped instead)."""
        replaced: list[Workers] = []
        with self._lock:
            self._lent = [w for w in self._lent if w is not workers]
            if not self._closed and self._reuse:
                for worker in workers.started:
                    old = self._held.pop((seam, worker.number), None)
                    if old is not None:
                        replaced.append(old)
                    self._held[(seam, worker.number)] = Workers(
                        workers.config, [worker.number], workers.several, holding=[worker])
                workers.started = []
        for old in replaced:  # (never two live processes of one number)
            old.kill()
        workers.shutdown()  # nothing left in it once kept

    def forget(self, workers: Workers) -> None:
        """``workers`` are stopped by their run (it failed): no longer lent."""
        with self._lock:
            self._lent = [w for w in self._lent if w is not workers]

    def close(self, ok: bool = True) -> None:
        """``shutdown`` to every kept process (``ok``); after an error, every kept and lent
        process killed — the runs in flight see their adapters end — and later runs refused."""
        with self._lock:
            self._closed = True
            held, self._held = list(self._held.values()), {}
            lent = list(self._lent)
        if not ok:
            for workers in lent:
                for worker in workers.started:
                    worker.process.interrupt()
        try:
            for one in held if ok else ():
                one.shutdown()
        finally:
            for one in held:
                one.kill()

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise GateError("stopped: no further run starts")


def _each(items: Sequence[T], act: Callable[[T], None]) -> None:
    """``act`` on every item in order, each after the one before it whatever it raised; the
    first error is raised once all are done."""
    if items:
        try:
            act(items[0])
        finally:
            _each(items[1:], act)


def _running(worker: Worker) -> bool:
    """Whether a kept worker's process still runs (without reaping it: its process group's id
    must stay its own until it is killed)."""
    process = worker.process
    return process.alive and process._status() is None


def _remove(tmp: Path | None, remove: bool) -> None:
    if tmp is not None and remove:
        shutil.rmtree(tmp, ignore_errors=True)


def named(worker: Worker | int, error: BaseException) -> BaseException:
    """A worker's error, its message and the adapter's stderr lines saying whose they are."""
    number = worker if isinstance(worker, int) else worker.number
    if isinstance(error, GateError) and not getattr(error, "worker", None):
        error.worker = number  # type: ignore[attr-defined]  (named once)
        error.args = (f"worker {number}: {error}",)
        error.detail = [f"worker {number}: {line}" for line in error.detail]
    return error
