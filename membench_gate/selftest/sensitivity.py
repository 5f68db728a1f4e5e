"""``membench-gate selftest``: is every gated metric able to fail?

The enabled suites run once unmutated, then once per mutant (:mod:`membench_gate.selftest.mutants`) with the
mutant between each suite and the adapter. Each mutated run is compared with the unmutated one by
the gate itself (:func:`membench_gate.gate.rules.decide`, the unmutated run as base and committed
baseline): a metric is *covered* when at least one mutant breaches it — a gated metric moved
adversely or went missing, a zero-gated one rose above 0. A metric no mutant can breach is *blind*:
the gate would wave through any regression of it. Exit 0 when every gated and zero-gated metric of
every enabled cell is covered, 1 otherwise (the blind metrics are named), 4 on an error.

A stochastic cell (a suite with repeats) is gated as a whole by the statistical test, so a
``stochastic-regression`` of the cell covers each of its gated metrics; such a config also gets
null comparisons (:mod:`membench_gate.selftest.null`), and a false-alarm rate above alpha beyond
its sampling error fails the selftest too.

With ``workers = N`` (or ``--jobs N``) the unmutated run goes first, in N workers, then the
mutants' runs N at a time, each in the adapter process of its slot (``MEMBENCH_WORKER``, a temp
folder of its own): a mutant's run is the same run whatever else goes on beside it. An adapter
that declares ``capabilities.workers: false`` has its mutants run one after the other.

The fixtures are loaded once, and each worker number's process serves run after run
(:class:`~membench_gate.run.workers.Kept`): a mutant wraps only the gate's side of the session and
every suite begins with ``reset``, so a memory that keeps the contract is asked in a kept process
what a new one would be asked, without its start-up each time. A run that fails stops its
process, and the next run of that slot starts a new one (docs/selftest.md).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING

from membench_gate.budget import OutOfTime
from membench_gate.config import Config
from membench_gate.defaults import DEFAULT_ALPHA
from membench_gate.errors import GateError
from membench_gate.gate.rules import decide
from membench_gate.model import metrics
from membench_gate.model.results import Baseline
from membench_gate.model.selftest import MutantResult, SelftestReport
from membench_gate.process import awaited, signals_deferred
from membench_gate.run.runner import load_fixtures, run
from membench_gate.run.workers import Kept, sharing
from membench_gate.selftest.mutants import MUTANTS, Mutant
from membench_gate.selftest.null import null_comparisons

if TYPE_CHECKING:
    from membench_gate.suites.common.fixtures import SuiteFixtures

_BREACHING = ("metric", "metric-missing", "zero")
_WHOLE_CELL = "stochastic-regression"  # covers every gated metric of its cell


def targets(baseline: Baseline) -> dict[str, str]:
    """Every gated and zero-gated metric of every cell of a run: ``cell:metric`` → kind."""
    return {f"{cell}:{name}": kind for cell, data in sorted(baseline.cells.items())
            for name in sorted(data.metrics)
            if (kind := metrics.gate_kind(cell, name)) in ("gated", "zero")}


def _breached(base: Baseline, actual: Baseline, alpha: float) -> set[str]:
    verdict = decide(base, base, actual, alpha=alpha)
    found = {b.key for b in verdict.breaches if b.kind in _BREACHING}
    for breach in verdict.breaches:
        if breach.kind == _WHOLE_CELL and breach.key in base.cells:
            found |= {f"{breach.key}:{name}" for name in base.cells[breach.key].metrics
                      if metrics.gate_kind(breach.key, name) == "gated"}
    return found


def selftest(config: Config, mutants: Sequence[type[Mutant]] = MUTANTS,
             log: bool = True, alpha: float = DEFAULT_ALPHA) -> SelftestReport:
    """Run the unmutated suites and every mutant; judge each mutated run with the gate (at
    ``alpha``, the config's, for stochastic cells)."""
    # Each worker number's adapter process serves one run after another — but a memory meant to
    # be random (a suite with repeats) gets a new process per run, so that its draws never
    # depend on which runs went before in its slot.
    # (Then the processes are only lent, kept for no next run: a stop still interrupts them.)
    stochastic = any(options.repeats for options in config.suites.values())
    kept = Kept(reuse=not stochastic)
    cancel: Callable[[], None] = lambda: None  # noqa: E731
    with sharing(config.workers):  # the slots' processes share the CPUs
        try:
            # The fixtures are read and validated once, before any run: every run measures with
            # the same items (a run never changes them), and a corpus of 100,000 turns takes
            # seconds to load.
            loaded = load_fixtures(config)
            outcomes, cancel = _runs(config, mutants, log, kept, loaded)
            report = _judged(outcomes, mutants, alpha)
            unbreakable = _isolation_unbreakable(loaded[1], report.blind)
            report.nothing_foreign = [key for key in report.blind if key in unbreakable]
        except BaseException:
            kept.close(ok=False)  # the runs in flight see their adapters end; none starts
            cancel()  # the runs not begun never start, those in flight end first
            raise
        cancel()
    kept.close()
    return report


def _judged(outcomes: Sequence[Callable[[], Baseline]], mutants: Sequence[type[Mutant]],
            alpha: float) -> SelftestReport:
    """Each mutant's run judged against the unmutated one (``outcomes[0]``)."""
    base = outcomes[0]()
    wanted = targets(base)
    # A zero-gated metric the unmutated run already breaks proves nothing when a mutant does too.
    already = sorted(_breached(base, base, alpha) & set(wanted))
    results: dict[str, MutantResult] = {}
    runs: dict[str, Baseline] = {}
    for mutant, outcome in zip(mutants, outcomes[1:], strict=True):
        try:
            actual = outcome()
        except OutOfTime:
            raise  # no mutant's fault: the selftest is an ERROR
        except GateError as exc:
            results[mutant.name] = MutantResult(description=mutant.description, error=str(exc))
            continue
        runs[mutant.name] = actual
        hit = sorted((_breached(base, actual, alpha) & set(wanted)) - set(already))
        results[mutant.name] = MutantResult(description=mutant.description, breached=hit)
    by_metric = {key: [name for name, r in results.items() if key in r.breached]
                 for key in wanted}
    blind = [key for key, names in by_metric.items() if not names]
    worst = [key for key in blind if metrics.at_worst(*_metric_value(base, key))]
    return SelftestReport(covered=len(wanted) - len(blind), total=len(wanted), blind=blind,
                          at_worst=worst, metrics=by_metric, kinds=wanted,
                          unmutated_breaches=already, mutants=results,
                          null=null_comparisons(base, runs, alpha))


def _isolation_unbreakable(loaded: dict[str, SuiteFixtures], keys: Sequence[str]) -> set[str]:
    """Those of ``keys`` that count injected ids of another source in a cell whose fixtures seed
    no page of another source at all: there, an id of another source is one never ingested, so
    no answer can break isolation (push: no conversation holds a page of another source than its
    own; writeback continuity: no pair does)."""
    found = set()
    for key in keys:
        cell, _, name = key.rpartition(":")
        suite = cell.split("/")[-2] if cell.count("/") >= 1 else ""
        fixtures = loaded.get(suite)
        if name != "source_isolation_violations" or fixtures is None:
            continue
        if suite == "push":
            owners = [(c.source, c.pages) for c in getattr(fixtures, "conversations", [])]
        elif suite == "writeback" and cell.endswith("/continuity"):
            owners = [(p.source, p.pages) for p in getattr(fixtures, "pairs", [])]
        else:
            continue
        if not any(page.source != source for source, pages in owners for page in pages):
            found.add(key)
    return found


def _runs(config: Config, mutants: Sequence[type[Mutant]], log: bool, kept: Kept | None,
          loaded: tuple[str, dict[str, SuiteFixtures]]
          ) -> tuple[list[Callable[[], Baseline]], Callable[[], None]]:
    """The unmutated run, then each mutant's, as calls giving its baseline (or raising its
    error), and what cancels the runs not begun: one after the other with one worker;
    ``config.workers`` at a time otherwise, each in a slot of its own, once the unmutated run
    (in every worker) showed that the adapter allows several processes
    (``capabilities.workers``)."""
    total = len(mutants)
    if config.workers == 1:
        return [partial(_one, config, wrap, position, total, log, None, loaded, kept)
                for position, wrap in enumerate([None, *mutants])], lambda: None
    single = config.with_workers(1)
    allowed: list[bool] = []
    # The unmutated run in every worker (the same results as in one): each worker number's
    # process is then kept for its slot's mutants.
    base = _one(config, None, 0, total, log, 1, loaded, kept,
                lambda _seam, ok, _name: allowed.append(ok))
    if not all(allowed):  # one shared store: the mutants one after the other, as one worker
        return [lambda: base, *(partial(_one, config, mutant, position, total, log, None, loaded,
                                        kept)
                                for position, mutant in enumerate(mutants, 1))], lambda: None
    slots = list(range(config.workers, 0, -1))  # free worker numbers, the lowest taken first
    lock = threading.Lock()

    def in_slot(position: int, mutant: type[Mutant]) -> Baseline:
        with lock:
            slot = slots.pop()
        try:
            return _one(single, mutant, position, total, log, slot, loaded, kept)
        finally:
            with lock:
                slots.append(slot)

    executor = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="selftest")

    def cancel() -> None:
        executor.shutdown(wait=True, cancel_futures=True)

    try:
        with signals_deferred():  # (raised after the hand-out: never inside the pool's locks)
            futures = [executor.submit(in_slot, position, mutant)
                       for position, mutant in enumerate(mutants, 1)]
    except BaseException:  # a signal while the runs were handed out
        if kept is not None:
            kept.close(ok=False)
        cancel()
        raise
    # (each waited for in steps: a signal must get in while the main thread waits on a run)
    return [lambda: base, *(partial(awaited, future) for future in futures)], cancel


def announce(text: str) -> None:
    """A progress line on stderr, written in one call: with ``print``, text and line end are two
    writes, and two slots' lines ran into each other in a log file."""
    sys.stderr.write(f"selftest: {text}\n")
    sys.stderr.flush()


def _one(config: Config, mutant: type[Mutant] | None, position: int, total: int, log: bool,
         slot: int | None, loaded: tuple[str, dict[str, SuiteFixtures]], kept: Kept | None,
         on_start: Callable[[str, bool, str], None] | None = None) -> Baseline:
    """One run of the selftest: the unmutated one (``mutant`` None) or a mutant's, as worker
    ``slot`` beside the others' runs (None: alone, with the config's workers)."""
    if log and mutant is not None:
        announce(f"mutant {position}/{total} {mutant.name}"
                 + (f" (worker {slot})" if slot is not None else ""))
    if slot is None:
        return run(config, wrap=mutant, preloaded=loaded, kept=kept).to_baseline()
    return run(config, wrap=mutant, preloaded=loaded, first_worker=slot, alongside=True,
               on_start=on_start, kept=kept).to_baseline()


def _metric_value(baseline: Baseline, key: str) -> tuple[str, float]:
    cell, _, name = key.rpartition(":")
    return name, baseline.cells[cell].metrics[name]


