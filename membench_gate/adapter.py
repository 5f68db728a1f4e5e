"""The adapter contract: how a memory system plugs into the suites.

An adapter is any object with ``reset()``, ``ingest(records)``, ``search(query) -> Answer`` and,
optionally, ``push(query) -> list[str]``. It is named in ``membench.toml`` as ``module:attr`` (a class
or a factory) and built with the ``[adapter.options]`` table as keyword arguments.

Every call the suites make goes through :class:`AdapterSession`, which validates what the adapter
returns and turns any exception into a one-line :class:`GateError` naming the suite, the item and
the call, so a crashing memory system never produces a traceback or a half-written results file.
"""

from __future__ import annotations

import importlib
import math
import numbers
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from membench_gate.errors import GateError


@dataclass(frozen=True)
class Record:
    """One thing the memory is asked to store."""

    id: str
    text: str
    source: str = "default"
    files: tuple[str, ...] = ()
    created_at: datetime | None = None
    reviewed_at: datetime | None = None
    relevance: float | None = None
    entity: str | None = None
    aliases: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Query:
    """A question to the memory. ``context`` holds the earlier turns of a conversation."""

    text: str
    k: int
    source: str = "default"
    files: tuple[str, ...] = ()
    as_of: datetime | None = None
    context: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hit:
    """A ranked result: the id of a stored record and the system's score for it.

    ``text``, ``entity`` and ``provenance`` (``{source, session, turn}``) are optional; the
    writeback suite reads them, since there the memory wrote its records itself.
    """

    id: str
    score: float
    text: str | None = None
    entity: str | None = None
    provenance: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Turn:
    """One utterance of a conversation: who said what."""

    id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Session:
    """A conversation handed to the memory's own write path (``write(session)``)."""

    id: str
    source: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Answer:
    """Ranked hits, best first, and whether the system abstains.

    The hits are returned even when ``abstain`` is true: they are what retrieval alone would have
    answered, and the floor-off control reads them.
    """

    hits: list[Hit]
    abstain: bool = False


@runtime_checkable
class MemoryAdapter(Protocol):
    """What a memory system implements (``push`` is optional)."""

    def reset(self) -> None: ...

    def ingest(self, records: Sequence[Record]) -> None: ...

    def search(self, query: Query) -> Answer: ...


@dataclass(frozen=True)
class Capabilities:
    """The optional verbs an adapter implements."""

    push: bool = False
    write: bool = False


def capabilities(adapter: Any) -> Capabilities:
    """What a Python adapter object implements of the optional verbs (``push``, ``write``)."""
    return Capabilities(push=callable(getattr(adapter, "push", None)),
                        write=callable(getattr(adapter, "write", None)))


def default_push(answer: Answer, k: int) -> list[str]:
    """The documented default for adapters without ``push``: search hits unless it abstains."""
    if answer.abstain:
        return []
    return [hit.id for hit in answer.hits[:k]]


def load_adapter(target: str, options: Mapping[str, Any], base_dir: Path | None = None) -> Any:
    """Import ``module:attr`` and call it with ``options`` as keyword arguments.

    ``base_dir`` (the folder of ``membench.toml``) and the working directory are put on
    ``sys.path`` so a memory repo's own adapter module imports without being installed.
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise GateError(f"adapter.python: {target!r} is not of the form 'module:attr'")
    # Appended, not prepended: a repo module named like an installed package (git, github, numpy)
    # must not shadow it. The working directory is added too, so the console script and
    # ``python -m`` import the same adapter.
    for folder in (base_dir, Path.cwd()):
        if folder is not None and str(folder) not in sys.path:
            sys.path.append(str(folder))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure of user code is a config error
        raise GateError(
            f"adapter.python: cannot import module {module_name!r}: {type(exc).__name__}: "
            f"{_one_line(exc)}"
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise GateError(
                f"adapter.python: module {module_name!r} has no attribute {attr!r}"
            ) from exc
    if not callable(obj):
        raise GateError(f"adapter.python: {target!r} is not a class or factory")
    try:
        adapter = obj(**dict(options))
    except Exception as exc:
        raise GateError(
            f"adapter: {target}(**options) failed: {type(exc).__name__}: {_one_line(exc)}"
        ) from exc
    for verb in ("reset", "ingest", "search"):
        if not callable(getattr(adapter, verb, None)):
            raise GateError(f"adapter: {target} has no {verb}() method")
    return adapter


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else "(no message)"


class _Timeout(Exception):
    pass


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt a hanging call after ``seconds`` (POSIX, main thread; elsewhere no limit)."""
    usable = seconds > 0 and hasattr(signal, "setitimer") and \
        threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class AdapterSession:
    """Calls the adapter on behalf of one suite and checks every answer it gives.

    Each call is limited to ``timeout`` seconds (``[adapter] timeout``): a hanging memory system
    becomes an ERROR naming the call, not a CI job that runs until it is killed.
    """

    def __init__(self, adapter: Any, suite: str, timeout: float = 0) -> None:
        self.adapter = adapter
        self.suite = suite
        self.timeout = timeout
        self.capabilities = capabilities(adapter)

    def _fail(self, verb: str, item: str | None, why: str) -> GateError:
        where = f"suite {self.suite}" + (f", item {item}" if item else "")
        return GateError(f"adapter {verb}() failed in {where}: {why}")

    def _call(self, verb: str, item: str | None, *args: Any) -> Any:
        try:
            with _deadline(self.timeout):
                return getattr(self.adapter, verb)(*args)
        except GateError:
            raise
        except _Timeout as exc:
            raise self._fail(verb, item, f"no answer within {self.timeout:g}s "
                                         "([adapter] timeout)") from exc
        except Exception as exc:
            raise self._fail(verb, item, f"{type(exc).__name__}: {_one_line(exc)}") from exc

    def reset(self, item: str | None = None) -> None:
        self._call("reset", item)

    def ingest(self, records: Sequence[Record], item: str | None = None) -> None:
        self._call("ingest", item, list(records))

    def search(self, query: Query, item: str) -> Answer:
        answer = self._call("search", item, query)
        hits = getattr(answer, "hits", None)
        abstain = getattr(answer, "abstain", None)
        # numpy scalars (np.float32, np.bool_) are what embedding stores return: accept them.
        if isinstance(abstain, np.bool_):
            abstain = bool(abstain)
        if not isinstance(hits, (list, tuple)) or not isinstance(abstain, bool):
            raise self._fail("search", item, "did not return an Answer(hits=[...], abstain=bool)")
        checked: list[Hit] = []
        for hit in hits:
            hit_id = getattr(hit, "id", None)
            score = getattr(hit, "score", None)
            if not isinstance(hit_id, str) or not isinstance(score, numbers.Real) \
                    or isinstance(score, bool):
                raise self._fail("search", item, f"returned a hit that is not Hit(id, score): {hit!r}")
            if not math.isfinite(score):
                raise self._fail("search", item, f"returned a non-finite score for {hit_id!r}")
            checked.append(Hit(hit_id, float(score), *self._written(hit, item)))
        return Answer(checked, abstain)

    def _written(self, hit: Any, item: str) -> tuple[str | None, str | None, dict[str, Any] | None]:
        """The optional ``text``, ``entity`` and ``provenance`` of a hit, type-checked."""
        text, entity = getattr(hit, "text", None), getattr(hit, "entity", None)
        provenance = getattr(hit, "provenance", None)
        for name, value in (("text", text), ("entity", entity)):
            if value is not None and not isinstance(value, str):
                raise self._fail("search", item, f"returned a hit whose {name} is not a string")
        if provenance is not None:
            if not isinstance(provenance, Mapping):
                raise self._fail("search", item, "returned a hit whose provenance is not "
                                                 "{source, session, turn}")
            provenance = dict(provenance)
        return text, entity, provenance

    def write(self, session: Session, item: str | None = None) -> None:
        """Hand a conversation to the memory's own write path (only with ``capabilities.write``)."""
        if not self.capabilities.write:
            raise GateError(f"suite {self.suite} needs an adapter with write(session) "
                            "(capabilities.write); this adapter has none")
        self._call("write", item, session)

    def push(self, query: Query, item: str) -> list[str]:
        if not callable(getattr(self.adapter, "push", None)):
            return default_push(self.search(query, item), query.k)
        ids = self._call("push", item, query)
        if not isinstance(ids, (list, tuple)) or not all(isinstance(i, str) for i in ids):
            raise self._fail("push", item, "did not return a list of ids (list[str])")
        return list(ids)
