"""Adapters used by the tests only (never shipped): they plug in through ``membench.toml`` exactly
as a user's memory system does (``adapter.python = "adapters_for_tests:Oracle"``).

- :class:`Oracle` knows the gold annotations (it reads the fixture JSON itself) but answers honestly
  from what was ingested: it looks the gold fact up by its *text* in the store, so it is right on the
  real ids and wrong under permuted ids. It returns no hits for unanswerable probes.
- :class:`IdOracle` answers with gold *ids* whatever was ingested under them, and returns a decoy hit
  (while abstaining) on unanswerable probes.
- :class:`Abstainer` abstains on everything and returns no hits; it has no ``push``.
- :class:`AbstainingReference` returns the reference memory's hits but always abstains (the contract:
  hits are returned even when abstaining); it has no ``push``.
- :class:`Exploding` is the reference memory, except that ``search``/``push`` raise on a trigger word.
- :class:`WrongShape` returns a dict from ``search``; :func:`broken_factory` cannot be built.
- :class:`Verbatim` writes every turn word for word, about its speaker, with its provenance: the
  memory that keeps everything, hypotheticals and retracted claims included.
- :class:`TextlessWriter` writes like the reference memory but returns hits without ``text``.
- :class:`Flaky` is the reference memory, except that each search forgets everything with
  probability ``1 - keep`` (random per call, seeded): a stochastic memory, for the repeats.
- :class:`WorkerProbe` is the reference memory that writes its worker's number, temp folder and
  pid to ``<log>/worker-<n>.json`` when built; :class:`SingleStore` the same, declaring
  ``workers = False``. :class:`SharedFileStore` keeps every record in one file all its processes
  share (a shared on-disk store). :class:`CrashInWorkerOne` crashes on its third search in worker
  1 (two seconds into it) and, in the other workers, takes ``hang`` seconds per search.
  :class:`FaultInWorkerTwo` is the reference memory everywhere but in worker 2, where every
  search crashes, answers an id nobody ingested or a score of 1e300, or whose ``initialize``
  answers other capabilities than worker 1's.
- :class:`StartLog` is the reference memory that appends its worker's number and pid to
  ``<log>/starts.jsonl`` when built (one line per adapter object, so per process);
  :class:`DiesInItsSecondRun` the same, exiting at once on the search after its first ``searches``
  (one run's worth): a memory that cannot serve a second run in one process.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from membench_gate import Answer, Hit, Query, Record, Session
from membench_gate.reference import ReferenceMemory
from membench_gate.reference.embed import normalize_text


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


class _Gold:
    """The gold annotations of a fixtures root holding ``veto/``, ``abstention/``, ``push/``."""

    def __init__(self, root: Path) -> None:
        scenarios = _read(root / "veto" / "scenarios.json")["scenarios"]
        self.veto: dict[str, str] = {s["task"]: s["veto_decision_id"] for s in scenarios}
        facts = {f["id"]: f["text"] for f in _read(root / "abstention" / "facts.json")}
        self.fact_text = facts
        self.probes: dict[str, str | None] = {
            p["question"]: p["gold_fact_id"] for p in _read(root / "abstention" / "probes.json")
        }
        self.push: dict[tuple[str, str], list[str]] = {}
        for path in sorted((root / "push" / "conversations").glob("*.json")):
            conv = _read(path)
            for turn in conv["turns"]:
                self.push[(conv.get("source", "default"), turn["text"])] = \
                    list(turn.get("gold", []))


class Oracle:
    """Knows the gold, answers from what it stored (by text)."""

    def __init__(self, fixtures: str) -> None:
        self.gold = _Gold(Path(fixtures))
        self.reset()

    def reset(self) -> None:
        self.by_text: dict[str, str] = {}
        self.ids: set[str] = set()
        self.pages: dict[tuple[str | None, str], str] = {}  # (entity, source) -> record id

    def ingest(self, records: Sequence[Record]) -> None:
        for record in records:
            self.by_text[record.text] = record.id
            self.ids.add(record.id)
            self.pages[record.entity, record.source] = record.id

    def search(self, query: Query) -> Answer:
        veto_id = self.gold.veto.get(query.text)
        if veto_id is not None and veto_id in self.ids:
            return Answer(hits=[Hit(veto_id, 1.0)], abstain=False)
        if query.text in self.gold.probes:
            gold = self.gold.probes[query.text]
            stored = self.by_text.get(self.gold.fact_text[gold]) if gold is not None else None
            if stored is None:
                return Answer(hits=[], abstain=True)
            return Answer(hits=[Hit(stored, 1.0)], abstain=False)
        return Answer(hits=[], abstain=True)

    def push(self, query: Query) -> list[str]:
        gold = self.gold.push.get((query.source, query.text), [])
        # Gold names slugs; a slug seeded in several sources is a record per copy (its own id).
        return [self.pages[slug, query.source] for slug in gold
                if (slug, query.source) in self.pages][: query.k]


class IdOracle(Oracle):
    """Answers with gold ids whatever text was ingested under them (so a shuffle cannot hurt it);
    on an unanswerable probe it abstains but still returns a decoy hit."""

    def search(self, query: Query) -> Answer:
        if query.text in self.gold.probes:
            gold = self.gold.probes[query.text]
            if gold is None:
                decoy = min(self.ids)
                return Answer(hits=[Hit(decoy, 0.1)], abstain=True)
            return Answer(hits=[Hit(gold, 1.0)], abstain=False)
        return super().search(query)


class Abstainer:
    """Abstains on everything, with no hits at all; no ``push`` (the default push applies)."""

    def __init__(self, **_options: Any) -> None:
        self.calls = 0

    def reset(self) -> None:
        pass

    def ingest(self, records: Sequence[Record]) -> None:
        pass

    def search(self, query: Query) -> Answer:
        self.calls += 1
        return Answer(hits=[], abstain=True)


class AbstainingReference:
    """The reference memory's hits, always with ``abstain=True``; no ``push``."""

    def __init__(self, **options: Any) -> None:
        self.inner = ReferenceMemory(**options)

    def reset(self) -> None:
        self.inner.reset()

    def ingest(self, records: Sequence[Record]) -> None:
        self.inner.ingest(records)

    def search(self, query: Query) -> Answer:
        return Answer(hits=self.inner.search(query).hits, abstain=True)


class Exploding(ReferenceMemory):
    """The reference memory, but ``search`` and ``push`` raise when the query contains ``trigger``."""

    def __init__(self, trigger: str = "KABOOM", **options: Any) -> None:
        super().__init__(**options)
        self.trigger = trigger

    def search(self, query: Query) -> Answer:
        if self.trigger in query.text:
            raise ValueError(f"index shard 3 is corrupt ({self.trigger})")
        return super().search(query)

    def push(self, query: Query) -> list[str]:
        if self.trigger in query.text:
            raise ValueError(f"entity index unavailable ({self.trigger})")
        return super().push(query)


class WrongShape(ReferenceMemory):
    """The reference memory, except that ``search`` returns a plain dict instead of an Answer."""

    def search(self, query: Query) -> Any:
        answer = super().search(query)
        return {"hits": [(h.id, h.score) for h in answer.hits], "abstain": answer.abstain}


def broken_factory(**_options: Any) -> Any:
    """A factory that fails when called (the adapter cannot be built)."""
    raise RuntimeError("missing API key for the vector store")


class Verbatim:
    """Keeps every turn as it was said, attributed to its speaker; ranks by shared words."""

    def __init__(self, **_options: Any) -> None:
        self.reset()

    def reset(self) -> None:
        self.turns: list[tuple[str, str, str, dict[str, str]]] = []

    def ingest(self, records: Sequence[Record]) -> None:
        pass

    def write(self, session: Session) -> None:
        self.sessions_written = getattr(self, "sessions_written", 0) + 1
        for turn in session.turns:
            self.turns.append((f"{session.id}/{turn.id}", turn.text, turn.speaker,
                               {"source": session.source, "session": session.id,
                                "turn": turn.id}))

    def search(self, query: Query) -> Answer:
        words = set(normalize_text(query.text).split())
        scored = sorted(((len(words & set(normalize_text(text).split())), ident, text, who, prov)
                         for ident, text, who, prov in self.turns), key=lambda t: (-t[0], t[1]))
        return Answer(hits=[Hit(ident, float(score), text=text, entity=who, provenance=prov)
                            for score, ident, text, who, prov in scored[:query.k]])


class TextlessWriter(ReferenceMemory):
    """The reference write path, but hits come back without their text (and says so on
    stderr, which the gate's error shows)."""

    def search(self, query: Query) -> Answer:
        print("textless writer: dropping the hits' text", file=sys.stderr)
        answer = super().search(query)
        return Answer(hits=[Hit(h.id, h.score) for h in answer.hits], abstain=answer.abstain)


class LeakyPush(ReferenceMemory):
    """The reference memory, except that every push adds a page of another source."""

    def push(self, query: Query) -> list[str]:
        foreign = [r.id for r in self._records if r.source != query.source][:1]
        return [*super().push(query)[:max(query.k - 1, 0)], *foreign]


class Flaky(ReferenceMemory):
    """The reference memory whose every search comes back empty with probability ``1 - keep``:
    random per call from ``seed`` (the suites call in a fixed order, so a run is reproducible)."""

    def __init__(self, keep: float = 0.9, seed: int = 0, **options: Any) -> None:
        super().__init__(**options)
        self.keep, self.random = keep, random.Random(seed)

    def search(self, query: Query) -> Answer:
        answer = super().search(query)
        return answer if self.random.random() < self.keep else Answer(hits=[], abstain=False)


# membench_gate.run.workers.THREAD_VARIABLES (not imported: the host stays light); the tests
# compare the two.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


class WorkerProbe(ReferenceMemory):
    """The reference memory, saying which worker it is: ``<log>/worker-<n>.json`` holds its
    ``MEMBENCH_WORKER``, ``TMPDIR``, pid and thread pool variables."""

    def __init__(self, log: str = ".", **options: Any) -> None:
        super().__init__(**options)
        number = os.environ.get("MEMBENCH_WORKER", "none")
        Path(log, f"worker-{number}.json").write_text(json.dumps({
            "worker": number, "tmpdir": os.environ.get("TMPDIR"), "pid": os.getpid(),
            "tmp_exists": os.path.isdir(os.environ.get("TMPDIR") or "/nonexistent"),
            "threads": {name: os.environ.get(name) for name in THREAD_VARIABLES}}),
            encoding="utf-8")


class SingleStore(WorkerProbe):
    """A :class:`WorkerProbe` that declares one shared store (``capabilities.workers: false``)."""

    workers = False


class SharedFileStore:
    """Every process shares one store: a JSON file in the config's folder (an on-disk store that
    ignores ``MEMBENCH_WORKER`` and ``TMPDIR``); ranks by shared words."""

    def __init__(self, **_options: Any) -> None:
        self.path = Path("shared-store.json")

    def _load(self) -> list[dict[str, str]]:
        return json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else []

    def reset(self) -> None:
        self.path.write_text("[]", encoding="utf-8")

    def ingest(self, records: Sequence[Record]) -> None:
        stored = self._load() + [{"id": r.id, "text": r.text, "source": r.source}
                                 for r in records]
        self.path.write_text(json.dumps(stored), encoding="utf-8")

    def search(self, query: Query) -> Answer:
        words = set(normalize_text(query.text).split())
        scored = sorted(((len(words & set(normalize_text(r["text"]).split())), r["id"])
                         for r in self._load() if r["source"] == query.source),
                        key=lambda t: (-t[0], t[1]))
        return Answer(hits=[Hit(i, float(n)) for n, i in scored[:query.k] if n])


class CrashInWorkerOne(WorkerProbe):
    """Worker 1 dies on its third search; the others take ``hang`` seconds per search."""

    def __init__(self, hang: float = 30.0, **options: Any) -> None:
        super().__init__(**options)
        self.hang, self.searches = hang, 0
        self.first = os.environ.get("MEMBENCH_WORKER") == "1"

    def search(self, query: Query) -> Answer:
        self.searches += 1
        if self.first and self.searches == 3:
            time.sleep(2)  # the other workers are well into their (long) searches by now
            print("worker one: the index file is gone", file=sys.stderr, flush=True)
            os._exit(3)
        if not self.first:
            time.sleep(self.hang)
        return super().search(query)


class FaultInWorkerTwo(ReferenceMemory):
    """The reference memory, except in worker 2 (``MEMBENCH_WORKER``), which does ``fault`` on
    every search: ``unknown`` answers an id nobody ingested, ``huge`` a score of 1e300,
    ``crash`` exits; or, with ``alone``, declares ``capabilities.workers: false`` (worker 1 does
    not)."""

    def __init__(self, fault: str = "crash", **options: Any) -> None:
        super().__init__(**options)
        self.fault = fault if os.environ.get("MEMBENCH_WORKER") == "2" else None
        if self.fault == "alone":
            self.workers = False

    def search(self, query: Query) -> Answer:
        answer = super().search(query)
        if self.fault == "crash":
            print("worker two: out of memory", file=sys.stderr, flush=True)
            os._exit(3)
        if self.fault == "unknown":
            return Answer([Hit("made-up-id", 1.0), *answer.hits][:query.k], answer.abstain)
        if self.fault == "huge":
            return Answer([Hit(h.id, 1e300) for h in answer.hits[:1]], answer.abstain)
        return answer


class StartLog(ReferenceMemory):
    """The reference memory, logging one line per object built: ``<log>/starts.jsonl``; each
    search takes ``pause`` seconds more."""

    def __init__(self, log: str = ".", pause: float = 0.0, **options: Any) -> None:
        super().__init__(**options)
        self.pause = pause
        with Path(log, "starts.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"worker": os.environ.get("MEMBENCH_WORKER"),
                                     "pid": os.getpid()}) + "\n")

    def search(self, query: Query) -> Answer:
        time.sleep(self.pause)
        return super().search(query)


class DiesInItsSecondRun(StartLog):
    """A :class:`StartLog` that exits (status 3) on its search number ``searches + 1``."""

    def __init__(self, searches: int = 1, **options: Any) -> None:
        super().__init__(**options)
        self.allowed, self.searches = searches, 0

    def search(self, query: Query) -> Answer:
        self.searches += 1
        if self.searches > self.allowed:
            os._exit(3)
        return super().search(query)
