"""A run: config → fixtures → adapter → suites → :class:`Results`."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TextIO, cast

from membench_gate import __version__, process
from membench_gate.adapter.types import collector_paused
from membench_gate.config import Config
from membench_gate.errors import GateError
from membench_gate.model.cells import join
from membench_gate.model.measurement import digest
from membench_gate.model.results import SCHEMA_VERSION, Cell, Results
from membench_gate.run.measure import hash_of
from membench_gate.run.shard import Shard
from membench_gate.suites import get
from membench_gate.suites.common.fixtures import SuiteFixtures, load_suite
from membench_gate.suites.common.folders import ReadFolders, read_suite
from membench_gate.suites.common.repeats import as_cell, pool
from membench_gate.suites.common.suite import Progress, Suite, SuiteRun

if TYPE_CHECKING:  # a check of a results file loads fixtures, never an adapter
    from membench_gate.adapter import rpc
    from membench_gate.run.workers import Kept, Workers
    from membench_gate.suites.common.options import SuiteOptions


def _receipt_sha(config: Config) -> Callable[[], str | None]:
    """Best-effort commit of the working tree, for the receipt only (never gated): git is asked
    now, the answer read when the returned function is called (``None`` when there is none)."""
    from membench_gate.base import git as gitbase

    try:
        answer = gitbase.start_head_sha(config.base_dir)
    except GateError:
        return lambda: None

    def read() -> str | None:
        try:
            return answer()
        except GateError:
            return None

    return read


def _start_early(config: Config, first: int, alongside: bool) -> Workers | None:
    """The processes of ``config``'s adapter started before the fixtures are parsed: as many as
    it asks for (when the fixtures give fewer anything to score, :func:`_run_adapter` stops them
    and starts that many, each with its share of the CPUs as before)."""
    from membench_gate.run import workers as pool

    count = config.workers
    try:
        return pool.Workers(config, range(first, first + count), alongside or count > 1)
    except GateError:  # said after the fixtures' own errors, as before: it starts again then
        return None


PROGRESS_INTERVAL = 10.0  # seconds between progress lines outside a terminal (docs/gate.md, "Progress")


class ProgressReporter:
    """Progress of a run on stderr: a live line on a terminal; elsewhere (CI logs) one line per
    suite when it ends and, while it runs, at most one line every ``interval`` seconds with
    done/total and an estimate of the time left. ``done``/``total`` count the adapter calls a
    suite makes (the abstention suite asks every probe twice: once for itself, once for the
    shuffled-ids control)."""

    def __init__(self, stream: TextIO, tty: bool, interval: float = PROGRESS_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.tty, self.interval, self.clock = stream, tty, interval, clock
        self.suite: str | None = None
        self.started = self.last = 0.0
        self.left: float | None = None  # the last estimate shown of this suite's time left

    def __call__(self, suite: str, done: int, total: int) -> None:
        now = self.clock()
        if suite != self.suite:
            self.suite, self.started, self.left = suite, now, None
            if not self.tty:
                self.last = max(self.last, now - self.interval / 2)  # not at once at the start
        elapsed = now - self.started
        if self.tty:
            end = "\n" if done >= total else ""
            self.stream.write(f"\r\x1b[K{suite}: {done}/{total}{self._eta(done, total, elapsed)}"
                              f"{end}")
        elif done >= total:
            self.stream.write(f"{suite}: {total}/{total} adapter calls done in {elapsed:.1f}s\n")
        elif now - self.last >= self.interval:
            self.last = now
            self.stream.write(f"{suite}: {done}/{total} adapter calls"
                              f"{self._eta(done, total, elapsed)}\n")
        else:
            return
        self.stream.flush()

    def _eta(self, done: int, total: int, elapsed: float) -> str:
        if done <= 0 or done >= total or elapsed < 1:
            return ""
        left = elapsed / done * (total - done)
        # Never more than the last estimate: a slower stretch (a big ingest, a busy machine)
        # must not make the time left jump back up.
        if self.left is not None:
            left = min(left, self.left)
        self.left = left
        return f", about {left:.0f}s left" if left < 120 else f", about {left / 60:.0f} min left"


def progress_reporter(stream: TextIO | None = None) -> Progress:
    """Progress on stderr (or ``stream``): live on a terminal, periodic lines elsewhere."""
    out = stream or sys.stderr
    isatty = getattr(out, "isatty", None)
    return ProgressReporter(out, bool(isatty and isatty()))


def read_fixtures(config: Config) -> dict[str, ReadFolders | GateError]:
    """Every fixture file of every enabled suite of ``config``, read (which files, and their
    bytes) but not parsed: what :func:`load_fixtures` then loads, whatever happens to the files
    meanwhile. A suite whose folders cannot be listed is its error, raised when
    :func:`load_fixtures` comes to it (and a file that cannot be read, when it comes to the
    file): with several broken inputs the error is the one loading them in order meets first."""
    read: dict[str, ReadFolders | GateError] = {}
    for name, options in config.suites.items():
        try:
            read[name] = read_suite(name, options.fixtures, config.base_dir)
        except GateError as exc:
            read[name] = exc
    return read


def load_fixtures(config: Config, read: dict[str, ReadFolders | GateError] | None = None
                  ) -> tuple[str, dict[str, SuiteFixtures]]:
    """The fixtures hash and the loaded, validated fixtures of every enabled suite of ``config``
    (nothing is run: this is what a run measures with), from the files as :func:`read_fixtures`
    read them when ``read`` is given. Loaded with the collector paused, and kept out of its
    sight after (:func:`membench_gate.process.keep`): all of it lives on."""
    with collector_paused():
        loaded = {
            name: load_suite(name, options.fixtures, config.base_dir, config.include_holdout,
                             None if read is None else _or_raise(read[name]))
            for name, options in config.suites.items()
        }
        measured = hash_of(config, {name: fixtures.files for name, fixtures in loaded.items()})
    process.keep()
    return measured, loaded


def _or_raise(read: ReadFolders | GateError) -> ReadFolders:
    if isinstance(read, GateError):
        raise read
    return read


def cell_digests(fixtures: SuiteFixtures, items: dict[str, Any]) -> dict[str, str]:
    """Content digest of each gold item of a cell; an item that is not a fixture item (a control)
    stands for the whole suite, so its digest covers every item the suite scored."""
    whole = digest(sorted(fixtures.digests.items()))
    return {item: fixtures.digests.get(item, whole) for item in sorted(items)}


def _live_client(config: Config, loaded: dict[str, SuiteFixtures], shard: Shard | None) -> Any:
    """The LLM client of a run with live suites (None without), its budget checked against every
    call the run will make: one pass's calls times the suite's ``repeats``, times the seams (each
    seam's memory is asked, and its prompts are its own)."""
    live = [name for name in loaded if get(name).live]
    if not live or config.live is None:
        return None
    from membench_gate.run.live import LLM

    planned = {}
    for name in live:
        scoring: Any = get(name).scoring
        scored = shard.restrict(name, loaded[name]) if shard else loaded[name]
        calls, tokens = scoring.plan(scored, config.suites[name])
        times = (getattr(config.suites[name], "repeats", None) or 1) * len(config.by_seam())
        planned[name] = (calls * times, tokens * times)
    llm = LLM(config.live, config.base_dir, scoring.COMPLETION_TOKENS)
    llm.preflight(planned)
    return llm


def _passes(suite: Suite, fixtures: SuiteFixtures, session: Any, options: SuiteOptions,
            progress: Progress | None) -> SuiteRun:
    """One pass of the suite, or with ``repeats = R`` R passes pooled; before pass r the
    session's ``repeat`` is r (a live suite keys its LLM calls by it, so passes are distinct
    calls and a replay is exact)."""
    if options.repeats is None:
        return suite.run(fixtures, session, options, progress)
    passes = []
    for number in range(options.repeats):
        session.repeat = number
        inner = getattr(session, "inner", None)  # a selftest mutant: the adapter's own session
        if inner is not None:
            inner.repeat = number
        passes.append(suite.run(fixtures, session, options, progress))
    return pool(passes)


def run(config: Config, progress: Progress | None = None,
        wrap: Callable[[rpc.SuiteSession], Any] | None = None,
        shard: Shard | None = None,
        preloaded: tuple[str, dict[str, SuiteFixtures]] | None = None,
        first_worker: int = 1, alongside: bool = False,
        on_start: Callable[[str, bool, str], None] | None = None,
        kept: Kept | None = None) -> Results:
    """Run every enabled suite of ``config`` against its adapter, in the adapter's own process
    (with seams, against each seam's adapter in turn, its cells named ``<seam>/<cell>``).

    ``wrap`` puts an object with the session's methods between each suite and the adapter (the
    selftest's mutants). With ``shard``, only that shard's items are scored (the corpus is still
    ingested whole). ``preloaded`` is what :func:`load_fixtures` gave, when the caller loaded
    them already. Every input is read before the adapter starts: nothing the memory's code does
    can change what it is measured on. (Without ``preloaded`` the fixture files are read — which
    files, and their bytes — and the first adapter then starts while they are parsed.)

    Each adapter runs as ``config.workers`` processes (:mod:`membench_gate.run.workers`),
    numbered from ``first_worker``; ``alongside`` says other runs' adapters run at the same time
    (a selftest's mutants, the determinism check's second pass), so even one worker gets a temp
    folder of its own. The results do not depend on either. ``on_start(seam, allowed, name)``
    is told, for each adapter once its first worker answered ``initialize``, whether it allows
    several processes (``capabilities.workers``), and the name it gave: what a caller waits for
    before it starts another run of the same adapter beside this one. With ``kept``
    (:class:`~membench_gate.run.workers.Kept`) a run goes on in the processes an earlier run
    left there, and leaves its own."""
    started = datetime.now(timezone.utc)
    clock = time.perf_counter()
    for name, options in config.suites.items():
        if options.repeats is not None:
            from membench_gate.gate.stochastic import require

            require(f"{config.path.name}: [suites.{name}] repeats")
    seams = config.by_seam()
    early: Workers | None = None
    read = None
    sha: Callable[[], str | None] | None = None
    try:  # (from the moment processes exist: an interrupt at any point stops them)
        if preloaded is None:
            # The fixtures are read first; the first adapter then starts while they are parsed
            # and validated (its start-up is most of a short run's wait), and is stopped if they
            # are not valid. Not with a live suite: its budget is checked before any adapter
            # starts.
            read = read_fixtures(config)
            if kept is None and not any(get(name).live for name in config.suites):
                for name in config.suites:  # the gate's code that parses them, imported first
                    _ = get(name).fixtures
                early = _start_early(seams[0][1], first_worker, alongside)
        sha = _receipt_sha(config)  # (asked now, answered while the adapter starts)
        digest, loaded = preloaded or load_fixtures(config, read)
        # the budget is checked before the adapter starts
        llm = _live_client(config, loaded, shard)
        cells: dict[str, Cell] = {}
        items: dict[str, dict[str, dict[str, Any]]] = {}
        digests: dict[str, dict[str, str]] = {}
        names: list[str] = []
        for seam, adapter in seams:
            try:
                name = _run_adapter(adapter, loaded, seam, progress, wrap, shard, llm,
                                    (cells, items, digests), (first_worker, alongside),
                                    on_start, kept, early)
            except GateError as exc:
                if seam:  # the same error (its kind, exit code and detail), saying whose it is
                    exc.args = (f"seam {seam}: {exc}",)
                raise
            # (used and stopped by that run; until it returned, an interrupt — even before its
            # first line of cleanup — left them to the kill below, which stops each one once)
            early = None
            names.append(f"{seam}: {name}" if seam else name)
    finally:
        if early is not None:  # (an input that was not valid: it never served a request)
            early.kill()
        git_sha = sha() if sha is not None else None
    from membench_gate.adapter import seal

    return Results(
        schema_version=SCHEMA_VERSION,
        fixtures_hash=digest,
        config=config.record(),
        cells=cells,
        digests=digests,
        corpus={name: fixtures.corpus for name, fixtures in loaded.items()},
        receipt={
            "tool_version": __version__,
            "git_sha": git_sha,
            "started_at": started.isoformat(timespec="seconds"),
            "duration": time.perf_counter() - clock,
            "adapter": ", ".join(names),
            "shard": str(shard) if shard else None,
            "isolation": seal.isolation(),
            **({"live": llm.receipt()} if llm is not None else {}),
        },
        items=items,
    )


def _run_adapter(config: Config, loaded: dict[str, SuiteFixtures], seam: str,
                 progress: Progress | None, wrap: Callable[[rpc.SuiteSession], Any] | None,
                 shard: Shard | None, llm: Any,
                 into: tuple[dict[str, Cell], dict[str, Any], dict[str, dict[str, str]]],
                 numbering: tuple[int, bool] = (1, False),
                 on_start: Callable[[str, bool, str], None] | None = None,
                 kept: Kept | None = None, early: Workers | None = None) -> str:
    """Every suite of ``loaded`` against ``config``'s one adapter, in its workers, its cells and
    items put ``into`` (cells, items, digests) under ``seam``; the adapter's name. ``numbering``
    is the first worker's number and whether other runs go on alongside; with ``kept``, a
    worker's process is taken from it, and every worker's given back to it after the run;
    ``early`` are its processes already started (:func:`_start_early`)."""
    from membench_gate.run import workers as pool

    cells, items, digests = into
    scored = {name: shard.restrict(name, fixtures) if shard else fixtures
              for name, fixtures in loaded.items()}
    live = [name for name in loaded if get(name).live]  # one LLM client: run whole in worker 1
    count = pool.useful(scored, config.workers, live)
    first, alongside = numbering
    numbers, several = range(first, first + count), alongside or count > 1
    processes: Workers | None = None
    try:
        processes = early or (kept.take(config, seam, numbers, several) if kept is not None
                              else None)
        if processes is None:
            processes = pool.Workers(config, numbers, several)
            if kept is not None:
                kept.lend(processes)  # (refused, and stopped, once the selftest has stopped)
        if early is not None and not early.fits(count, several):
            processes = pool.Workers(config, numbers, several)
        try:
            client = processes.first.client
        except GateError as exc:  # several started: whose initialize it was
            if processes.several:
                raise pool.named(processes.first, exc) from None
            raise
        for name in loaded:  # what a suite needs of the adapter, before any suite runs
            check_adapter = get(name).check_adapter
            if check_adapter is not None:
                check_adapter(client.capabilities)
        if on_start is not None:
            on_start(seam, client.capabilities.workers, client.name)
        if count > 1 and not client.capabilities.workers:
            one_worker(config, seam, client.name, count)
            processes.one_only()
            count = 1
        elif count > 1:
            processes.start_others()
        plan = {name: [fixtures] + [None] * (count - 1) if name in live
                else pool.shares(name, fixtures, count) for name, fixtures in scored.items()}

        def task(worker: pool.Worker) -> dict[str, SuiteRun]:
            position = worker.number - first
            if position:  # the plan above is worker 1's answer's: every worker must give it
                worker.client.alike(client)
            told = _in_seam(_for_worker(progress, worker.number, count), seam)
            return _suites(config, worker.client, {name: shares[position] for name, shares
                                                   in plan.items()}, wrap, llm, seam, told)

        outcomes = processes.each(task)
        for name, fixtures in loaded.items():
            runs = [done[name] for done in outcomes if name in done]
            if not runs:
                continue  # a live suite skipped
            outcome = pool.combine(name, config.suites[name], runs)
            for cell_name, cell in outcome.cells.items():
                named = join(seam, cell_name)
                cells[named] = as_cell(cell)
                digests[named] = cell_digests(fixtures, outcome.items[cell_name])
            items.update({join(seam, cell_name): records
                          for cell_name, records in outcome.items.items()})
        if kept is not None:
            kept.give(seam, processes)  # the next run of each worker number goes on in it
        else:
            processes.shutdown()
    finally:
        # After a failure, every process is killed; after shutdown or give, none is left here.
        if processes is not None:
            if kept is not None:
                kept.forget(processes)
            processes.kill()
    return client.name


def _suites(config: Config, client: rpc.AdapterClient, share: dict[str, SuiteFixtures | None],
            wrap: Callable[[rpc.SuiteSession], Any] | None, llm: Any, seam: str,
            progress: Progress | None) -> dict[str, SuiteRun]:
    """One worker's runs of the suites it has a share of (a live suite skipped is left out)."""
    runs: dict[str, SuiteRun] = {}
    for name, scored in share.items():
        if scored is None:
            continue  # nothing of this suite to score here: not even its corpus is ingested
        session: Any = client.session(name)
        if wrap is not None:
            session = wrap(session)
        if get(name).live:
            from membench_gate.run.live import LiveSession, LiveSkipped

            try:
                runs[name] = _passes(get(name), scored, LiveSession(session, llm),
                                     config.suites[name], progress)
            except LiveSkipped as skip:
                # Its cells are left out: against a base that has them, that is a breach.
                llm.skipped[name] = str(skip)
                sys.stderr.write(f"{join(seam, name)}: skipped, {skip} (docs/live.md)\n")
        else:
            runs[name] = _passes(get(name), scored, session, config.suites[name], progress)
    return runs


_TOLD: set[tuple[str, str]] = set()  # adapters already said to run as one worker


def one_worker(config: Config, seam: str, name: str, asked: int) -> None:
    """Say once per adapter that it runs as one worker, as it asks."""
    key = (seam, " ".join(config.adapter_command) if config.adapter_command else config.adapter)
    if key in _TOLD:
        return
    _TOLD.add(key)
    where = f"seam {seam}: " if seam else ""
    sys.stderr.write(f"membench-gate: {where}adapter {name!r} declares capabilities.workers "
                     f"false (one shared store): 1 worker instead of {asked}\n")


def _for_worker(progress: Progress | None, number: int, count: int) -> Progress | None:
    """Progress lines that name the worker (``worker 2: veto: …``) when there are several; each
    worker's own reporter, so one's lines never reset another's estimate."""
    if progress is None or count == 1:
        return progress
    if isinstance(progress, ProgressReporter):
        own = ProgressReporter(cast("TextIO", _Locked(progress.stream)), progress.tty,
                               progress.interval, progress.clock)
        return lambda suite, done, total: own(f"worker {number}: {suite}", done, total)
    # A caller's own callable, called from several threads: one call at a time.
    return lambda suite, done, total: _locked_call(progress, f"worker {number}: {suite}",
                                                   done, total)


_PROGRESS = threading.Lock()


def _locked_call(progress: Progress, suite: str, done: int, total: int) -> None:
    with _PROGRESS:
        progress(suite, done, total)


class _Locked:
    """A stream several workers' progress lines go to, one write (and flush) at a time."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        with _PROGRESS:
            return self.stream.write(text)

    def flush(self) -> None:
        with _PROGRESS:
            self.stream.flush()


def _in_seam(progress: Progress | None, seam: str) -> Progress | None:
    """Progress lines that name the seam (``seam/suite: …``)."""
    if progress is None or not seam:
        return progress
    return lambda suite, done, total: progress(join(seam, suite), done, total)
