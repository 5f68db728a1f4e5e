"""``membench-gate doctor``: check an adapter against the protocol before anyone trusts its numbers.

Each check runs a small scripted conversation with the adapter (its own records, not the suites'
fixtures) and reads the answers through the same validating client the suites use. A check that
makes the adapter fail (a crash, a timeout, an answer that breaks the contract) fails with that
message, and the next check starts a fresh process.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from membench_gate import budget
from membench_gate.adapter import rpc
from membench_gate.adapter.types import Answer, Query, Record, query_to_wire, record_to_wire
from membench_gate.config import Config
from membench_gate.errors import ExitCode, GateError, visible, without_ansi

SUITE = "doctor"

# A small memory of two teams (sources). Two records share a text so their scores tie.
RECORDS = [
    Record("ledger-db", "We chose PostgreSQL over MongoDB for the billing ledger because every "
           "posting must commit in one transaction.", source="payments",
           files=("billing/ledger.py",)),
    Record("deploy-freeze", "Deploys are frozen on Fridays after 3pm; ship on the Monday release "
           "train instead.", source="payments"),
    Record("dana-whitfield", "Dana Whitfield leads the search platform team and is the first "
           "page for search cluster incidents.", source="payments", entity="dana-whitfield",
           aliases=("Dana", "Whitfield")),
    Record("retry-policy", "Calls to the card processor retry with exponential backoff capped "
           "at thirty seconds, never in a tight loop.", source="payments"),
    Record("cache-tokens-b", "Session tokens live in the shared Redis cache, never on the local "
           "disk of a web node.", source="payments"),
    Record("cache-tokens-a", "Session tokens live in the shared Redis cache, never on the local "
           "disk of a web node.", source="payments"),
    Record("crash-reports", "The mobile app sends its crash reports to the mobile-ios error "
           "tracking project.", source="mobile"),
    Record("warehouse-load", "The analytics warehouse loads nightly from the Kafka export topic "
           "at two in the morning.", source="mobile"),
]
PAYMENTS = [r for r in RECORDS if r.source == "payments"]
QUERIES = [
    Query("Why is the billing ledger on PostgreSQL and not MongoDB?", 3, "payments",
          ("billing/ledger.py",)),
    Query("Where do session tokens live: the Redis cache or the local disk?", 3, "payments"),
    Query("Can we deploy on Friday afternoon?", 2, "payments"),
    Query("Which vendor prints the office badges for the new building?", 3, "payments"),
    Query("Who approved moving the billing ledger off the Monday release train?", 3, "payments"),
    Query("Where do crash reports from the mobile app go?", 3, "payments"),
    # One rare content word in common with a record, diluted among many others: lexical and
    # dense scores alike stay low, so a memory with an abstention floor abstains here, and must
    # still return the candidates it found.
    Query("Quarterly procurement review: vendor onboarding, license renewals, travel budgets, "
          "office furniture, catering contracts and the Redis invoice", 3, "payments"),
    Query("Annual offsite agenda: hiking trip, photography workshop, cooking class, museum "
          "visit, karaoke night and a PostgreSQL trivia quiz", 3, "payments"),
]
TIE_ADVICE = ("equal scores must come back in one order every time: sort by (score desc, id) — "
              "vector stores often return ties in arbitrary order")


@dataclass
class Check:
    """One row of the table: ``ok`` is ``None`` when the adapter gave nothing to judge, or
    (``ran`` false) when the check was not run at all."""

    name: str
    ok: bool | None
    detail: str
    ran: bool = True


class _Adapter:
    """The adapter under test, restarted after a check that made it fail."""

    def __init__(self, config: Config) -> None:
        budget.adopt(config.budget_minutes)
        self.config = config
        self.latencies: dict[str, list[float]] = {}
        self.client: rpc.AdapterClient | None = None
        self._stop: Callable[[], None] | None = None

    @contextmanager
    def fresh(self) -> Iterator[rpc.AdapterClient]:
        """A newly started process, stopped when the block ends: worker 1, with a temp folder
        of its own, as every adapter process is (docs/adapters.md, "Workers")."""
        from membench_gate.adapter import seal
        from membench_gate.run.workers import worker_env

        tmp, remove = seal.worker_tmp(1)
        try:
            with rpc.start(self.config.adapter_argv(), self.config.base_dir,
                           self.config.adapter_options, self.config.timeout,
                           {**self.config.adapter_env(), **worker_env(1, tmp)}) as client:
                try:
                    yield client
                finally:
                    for method, seconds in client.latencies.items():
                        self.latencies.setdefault(method, []).extend(seconds)
        finally:
            if remove:
                shutil.rmtree(tmp, ignore_errors=True)

    def session(self) -> rpc.SuiteSession:
        if self.client is None or not self.client.process.alive:
            self.close()
            context = self.fresh()
            self.client = context.__enter__()
            self._stop = lambda: context.__exit__(None, None, None)
        return self.client.session(SUITE)

    def close(self) -> None:
        if self._stop is not None:
            stop, self._stop, self.client = self._stop, None, None
            stop()


def _fill(session: rpc.SuiteSession) -> None:
    session.reset()
    session.ingest(RECORDS)


def _ask_all(session: rpc.SuiteSession) -> list[Answer]:
    return [session.search(q, f"query {i + 1}") for i, q in enumerate(QUERIES)]


def _found_by_own_text(session: rpc.SuiteSession) -> Check:
    _fill(session)
    missing = [r.id for r in RECORDS
               if r.id not in [h.id for h in session.search(Query(r.text, 5, r.source),
                                                            r.id).hits]]
    return Check("an ingested record is found by its own text", not missing,
                 f"not found: {', '.join(missing)}" if missing else
                 f"{len(RECORDS)}/{len(RECORDS)} records")


def _reset_empties(session: rpc.SuiteSession) -> Check:
    _fill(session)
    session.reset()
    for record in PAYMENTS:
        hits = session.search(Query(record.text, 5, record.source), record.id).hits
        if hits:  # unreachable: the client rejects ids not ingested since the reset
            return Check("reset empties the store", False, f"{hits[0].id} after reset")
    return Check("reset empties the store", True, "no hits after reset")


def _contract(session: rpc.SuiteSession) -> Check:
    _fill(session)
    answers = _ask_all(session)
    for k in (1, 2):
        session.search(Query(RECORDS[0].text, k, "payments"), f"k={k}")
    hits = sum(len(a.hits) for a in answers)
    return Check("hits within k, unique, known, best first, finite", True,
                 f"{len(QUERIES) + 2} searches, {hits} hits checked")


# Function words are no evidence of a candidate: a memory that drops them (BM25 with a stop list)
# honestly finds nothing for a query that shares only "the" and "for" with its records.
_FUNCTION_WORDS = frozenset({
    "about", "after", "all", "also", "and", "any", "are", "been", "before", "but", "can", "could",
    "did", "does", "for", "from", "had", "has", "have", "here", "how", "its", "into", "may",
    "might", "must", "new", "not", "off", "one", "our", "over", "should", "than", "that", "the",
    "their", "them", "then", "there", "they", "this", "was", "were", "what", "when", "where",
    "which", "who", "why", "will", "with", "would", "you", "your",
})


def _words(text: str) -> set[str]:
    """The content words of ``text``: longer than two characters, not a function word."""
    return {w for w in "".join(c if c.isalnum() else " " for c in text.lower()).split()
            if len(w) > 2 and w not in _FUNCTION_WORDS}


def _abstains_with_hits(session: rpc.SuiteSession) -> Check:
    """An abstaining answer must still carry what retrieval found. Only queries that share a
    content word with a stored record of their source are judged: for the others, no candidates
    is an honest answer."""
    _fill(session)
    name = "hits still returned when abstaining"
    judged = [(q, a) for q, a in zip(QUERIES, _ask_all(session), strict=True) if a.abstain
              and any(_words(q.text) & _words(r.text) for r in RECORDS if r.source == q.source)]
    if not judged:
        return Check(name, None, "never abstained on a query with candidates: nothing to judge")
    empty = [q.text for q, a in judged if not a.hits]
    if empty:
        return Check(name, False, f"abstained with no hits on {empty[0]!r}, which shares content "
                     "words with stored records: return the candidates retrieval found (the "
                     "floor-off control reads them)")
    return Check(name, True, f"{len(judged)} abstaining answer(s) with candidates, all with hits")


def _push_within_budget(session: rpc.SuiteSession) -> Check:
    name = "push ids known and within budget"
    if not session.capabilities.push:
        return Check(name, None, "no push capability: the gate pushes the search hits")
    _fill(session)
    ids = session.push(Query("Can Dana take a look at the search cluster alert?", 1, "payments"),
                       "push turn")
    session.push(Query("Thanks, that settles it.", 2, "payments",
                       context=("Can Dana take a look at the search cluster alert?",)), "push turn 2")
    return Check(name, True, f"pushed {ids or 'nothing'} for a turn naming Dana (budget 1)")


def _source_isolation(session: rpc.SuiteSession) -> Check:
    _fill(session)
    source_of = {r.id: r.source for r in RECORDS}
    leaks: list[str] = []
    for record in RECORDS:
        other = "mobile" if record.source == "payments" else "payments"
        hits = session.search(Query(record.text, 5, other), record.id).hits
        leaks += [h.id for h in hits if source_of[h.id] != other and h.id not in leaks]
    return Check("records of another source never returned", not leaks,
                 f"returned across sources: {', '.join(leaks)}" if leaks else
                 f"{len(RECORDS)} cross-source searches")


def _transcript(session: rpc.SuiteSession) -> list[tuple[str, list[tuple[str, float]], bool]]:
    _fill(session)
    return [(q.text, [(h.id, h.score) for h in a.hits], a.abstain)
            for q, a in zip(QUERIES, _ask_all(session), strict=True)]


def _determinism(adapter: _Adapter) -> Check:
    name = "identical sessions give identical answers"
    first = _transcript(adapter.session())
    second = _transcript(adapter.session())
    with adapter.fresh() as other:  # a new process: hash seeds and start-up state differ
        third = _transcript(other.session(SUITE))
    for label, again in (("the same process", second), ("a new process", third)):
        for (text, hits, abstain), (_, hits2, abstain2) in zip(first, again, strict=True):
            if hits != hits2 or abstain != abstain2:
                return Check(name, False, f"{text!r} answered differently in {label}: "
                             f"{hits} vs {hits2}; {TIE_ADVICE}")
    ties = [(a[0], b[0]) for _, hits, _ in first for a, b in itertools.pairwise(hits)
            if a[1] == b[1] and a[0] > b[0]]
    note = (f"; equal scores of {ties[0][0]} and {ties[0][1]} not in id order (stable here; "
            "sorting by (score desc, id) keeps it so on any store)") if ties else ""
    return Check(name, True, f"3 sessions, 2 processes, tie order included{note}")


def workers_check(workers: int) -> str:
    """The workers row, as many as it starts (``--jobs``; two at the least)."""
    return f"{'two' if workers <= 2 else workers} workers do not see each other's records"


# What a later worker ingests: a record of its own, which worker 1 must not see either.
PROBE = Record("worker-probe", "The lighthouse keeper logs the fog horn tests in the blue "
               "binder every Tuesday.", source="payments")
SHARED_ADVICE = ("workers = 1 is required: declare capabilities.workers: false, or keep one store "
                 "per worker (MEMBENCH_WORKER, TMPDIR)")


def _ids(client: rpc.AdapterClient, record: Record, label: str) -> list[str]:
    """The ids a raw ``search`` for ``record``'s own text answers (unchecked: an id this worker
    never ingested is the finding here, not a protocol error)."""
    result = client.call("search", {"query": query_to_wire(Query(record.text, 5, record.source))},
                         SUITE, label)
    hits = result.get("hits") if isinstance(result, dict) else None
    for hit in hits or ():  # a score no results file holds fails here as in a run
        problem = rpc.score_problem(hit.get("score") if isinstance(hit, dict) else None)
        if problem:
            raise GateError(f"adapter search() broke the protocol{budget.place(SUITE, label)}: hit "
                            f"{hit.get('id') if isinstance(hit, dict) else hit!r} has a score "
                            f"{problem} ({rpc.RULES['hit']})")
    return [h["id"] for h in hits or () if isinstance(h, dict) and isinstance(h.get("id"), str)]


def _workers_independent(config: Config) -> Check:
    """Worker 1 ingests the records; each other worker resets, ingests a probe and searches:
    it must see none of worker 1's records, and worker 1, after their resets, must still find
    its own and not the probe (docs/adapters.md, "Workers")."""
    from membench_gate.run.workers import Workers, named

    count = max(2, config.workers)
    name = workers_check(config.workers)
    workers = Workers(config, range(1, count + 1), several=True)
    try:
        worker = workers.first
        try:
            first = worker.client
            if not first.capabilities.workers:
                return Check(name, None, "declares capabilities.workers: false: every "
                             "run uses one worker")
            workers.start_others()
            first.call("reset", {}, SUITE, None)
            first.call("ingest", {"records": [record_to_wire(r) for r in RECORDS]}, SUITE, None)
            ingested = {r.id for r in RECORDS}
            # What worker 1 finds before any other worker resets: only those it stops finding
            # tell of a shared store (one it never found is the other rows' finding).
            found = [r for r in PAYMENTS if r.id in _ids(first, r, r.id)]
            if not found:
                return Check(name, None, "not checked: worker 1 does not find the records it "
                             "ingested by their own text (see the row above)")
            for worker in workers.started[1:]:
                client = worker.client
                client.alike(first)
                client.call("reset", {}, SUITE, None)
                client.call("ingest", {"records": [record_to_wire(PROBE)]}, SUITE, None)
                answered = {i for r in PAYMENTS for i in _ids(client, r, r.id)} - {PROBE.id}
                seen = sorted(answered & ingested)
                if seen:
                    return Check(name, False, f"worker {worker.number} found "
                                 f"{', '.join(seen)}, which only worker 1 ingested: "
                                 f"{SHARED_ADVICE}")
                unknown = sorted(answered - ingested)
                if unknown:  # no worker ingested it: the contract's finding, not sharing's
                    return Check(name, False, f"worker {worker.number} answered "
                                 f"{unknown[0]!r}, which no worker ingested (every hit must be a "
                                 "record ingested since the last reset)")
            worker = workers.first
            lost = [r.id for r in found if r.id not in _ids(first, r, r.id)]
            if lost:
                return Check(name, False, f"worker 1 no longer finds {lost[0]} after "
                             f"another worker's reset: {SHARED_ADVICE}")
            if PROBE.id in _ids(first, PROBE, PROBE.id):
                return Check(name, False, f"worker 1 found {PROBE.id}, which another "
                             f"worker ingested: {SHARED_ADVICE}")
        except GateError as exc:  # a worker's crash, hang or broken answer: whose it was
            raise named(worker, exc) from None
        workers.shutdown()
        return Check(name, True, f"{count} workers (MEMBENCH_WORKER 1-{count}), each "
                     "with its own store")
    finally:
        workers.kill()


def diagnose(config: Config) -> tuple[list[Check], dict[str, list[float]], str]:
    """Run every check; returns the rows, the latencies per method and the adapter's name."""
    adapter = _Adapter(config)
    checks: list[Check] = []
    name = ""  # none until initialize answers
    try:
        try:
            name = adapter.session().client.name
            caps = adapter.session().capabilities
            checks.append(Check("handshake (initialize)", True,
                                f"protocol 1, push={str(caps.push).lower()}, "
                                f"write={str(caps.write).lower()}"
                                + ("" if caps.workers else ", workers=false")))
        except budget.OutOfTime:
            raise
        except GateError as exc:
            checks.append(Check("handshake (initialize)", False, _with_stderr(exc)))
            return checks, adapter.latencies, name
        steps: list[tuple[str, Callable[[], Check]]] = [
            ("reset empties the store", lambda: _reset_empties(adapter.session())),
            ("an ingested record is found by its own text",
             lambda: _found_by_own_text(adapter.session())),
            ("hits within k, unique, known, best first, finite",
             lambda: _contract(adapter.session())),
            ("hits still returned when abstaining", lambda: _abstains_with_hits(adapter.session())),
            ("push ids known and within budget", lambda: _push_within_budget(adapter.session())),
            ("records of another source never returned",
             lambda: _source_isolation(adapter.session())),
            ("identical sessions give identical answers", lambda: _determinism(adapter)),
            (workers_check(config.workers), lambda: _workers_independent(config)),
        ]
        for done, (label, step) in enumerate(steps):
            try:
                checks.append(step())
            except budget.OutOfTime:
                raise
            except rpc.NoAnswer as exc:
                # An adapter that hangs hangs again: each later check would wait out its own
                # timeout (minutes at the default) only to say so once more.
                checks.append(Check(label, False, _with_stderr(exc)))
                checks += [Check(later, None, f"not run: the adapter did not answer in "
                                              f"{label!r}", ran=False)
                           for later, _ in steps[done + 1:]]
                break
            except GateError as exc:
                checks.append(Check(label, False, _with_stderr(exc)))
    finally:
        adapter.close()
    return checks, adapter.latencies, name


def _with_stderr(exc: GateError) -> str:
    last = [text for text in map(without_ansi, exc.detail) if text.strip()][-1:]
    if not last:
        return str(exc)
    # A worker's error names it first, and its stderr lines too: said once.
    worker = getattr(exc, "worker", None)
    line = last[0].removeprefix(f"worker {worker}: ") if worker else last[0]
    return f"{exc} (last stderr line: {line.strip()[:200]})"


def _ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return f"{ordered[index] * 1000:.1f}"


def render(config: Config, checks: list[Check], latencies: dict[str, list[float]],
           name: str, seam: str = "") -> str:
    """The table a person reads in a terminal (one per seam, which its first line names); what
    the adapter said in it (its name, messages, stderr) shown :func:`visible`."""
    target = " ".join(config.adapter_command) if config.adapter_command else config.adapter
    # The name the adapter gives itself, and where it runs from when that says something else
    # (a Python host names itself by its target: said once).
    said = (f"adapter {name!r}" + (f" ({target})" if target != name else "")) if name \
        else f"adapter {target} (no answer to initialize)"
    lines = [f"membench-gate doctor: {f'seam {seam!r}, ' if seam else ''}{said}", ""]
    width = max(len(c.name) for c in checks)
    marks = {True: "ok  ", False: "FAIL", None: "n/a "}
    lines += [f"  {marks[c.ok]}  {c.name.ljust(width)}  {c.detail}" for c in checks]
    if latencies:
        lines += ["", "  latency per method (ms):   calls     p50     p95"]
        for method in sorted(latencies):
            values = latencies[method]
            lines.append(f"    {method:<22}{len(values):>8}{_ms(values, 0.5):>8}"
                         f"{_ms(values, 0.95):>8}")
    failed = [c for c in checks if c.ok is False]
    skipped = sum(1 for c in checks if not c.ran)
    moot = sum(1 for c in checks if c.ran and c.ok is None)  # nothing to judge
    lines += ["", f"{sum(1 for c in checks if c.ok)}/{len(checks)} checks conform" +
              (f", {moot} not applicable" if moot else "") +
              (f", {skipped} not run" if skipped else "") +
              ("" if not failed else f"; fix: {failed[0].name}")]
    if failed:
        lines.append("the protocol and how to debug an adapter: docs/adapters.md")
    return "\n".join(visible(line) for line in lines)


def doctor(config: Config) -> int:
    """``membench-gate doctor``: exit 0 when the adapter (every seam's) conforms, 1 otherwise."""
    conforms = True
    for number, (seam, adapter) in enumerate(config.by_seam()):
        checks, latencies, name = diagnose(adapter)
        print(("\n" if number else "") + render(adapter, checks, latencies, name, seam))
        conforms = conforms and not any(c.ok is False for c in checks)
    return ExitCode.PASS if conforms else ExitCode.REGRESSION


def cmd_doctor(args: argparse.Namespace) -> int:
    from membench_gate.adapter import seal
    from membench_gate.config import load_config

    seal.establish(required=args.seal)  # before any adapter starts (docs/gate.md, "Sealed")
    return doctor(load_config(args.config).with_workers(args.jobs))
