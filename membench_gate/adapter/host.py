"""``python -m membench_gate.host module:attr``: serve a Python memory object over the protocol.

The gate starts this for ``[adapter] python = "module:attr"``, in the config file's folder. It
imports the module as it starts (a failure is reported when ``initialize`` comes: several workers'
hosts import at once while the first answers), builds the object on ``initialize`` (a class or
factory called with the ``[adapter.options]`` as keyword arguments) and then answers each request
by calling the plain method, so Python adapters never see JSON. stdout carries the protocol
only: anything the adapter prints goes to stderr, which the gate keeps for its error messages.

Any exception of the adapter — ``SystemExit`` and other ``BaseException`` included — becomes an
``error`` response whose ``data`` names it (``{"exception": {"type", "message"}, "function",
"traceback"}``, docs/adapters.md), so the gate reports it as the adapter's own; the gate then stops
the process. A request the host cannot read is refused as the gate's (``invalid params``). On
``shutdown`` or the end of input the host calls the adapter's ``close()``, if it has one, once.
"""

from __future__ import annotations

import os
import sys


def _fix_sys_path(extra: list[str]) -> None:
    """The config's folder (and the gate's working directory) go *after* installed packages: a
    repo module named like one (``git``, ``numpy``) must not shadow it. ``-m`` put the working
    directory first; move it to the end."""
    here = os.getcwd()
    while sys.path and sys.path[0] in ("", here):
        sys.path.pop(0)
    for folder in [here, *extra]:
        if folder not in sys.path:
            sys.path.append(folder)


def _parse_argv(argv: list[str]) -> tuple[str, list[str]]:
    target, extra = "", []
    args = iter(argv)
    for arg in args:
        if arg == "--path":
            extra.append(next(args, ""))
        elif not target:
            target = arg
    return target, [e for e in extra if e]


if __name__ == "__main__":  # pragma: no branch - fix the path before importing user code
    _TARGET, _EXTRA = _parse_argv(sys.argv[1:])
    _fix_sys_path(_EXTRA)

import gc  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
from collections.abc import Callable, Iterable, Iterator, Mapping  # noqa: E402
from dataclasses import fields  # noqa: E402
from datetime import timezone  # noqa: E402
from typing import Any, BinaryIO, Literal  # noqa: E402

from membench_gate.adapter.polling import Poller  # noqa: E402
from membench_gate.adapter.types import (  # noqa: E402
    PROTOCOL_VERSION,
    Record,
    _parse_time,
    answer_to_wire,
    collector_paused,
    query_from_wire,
    record_from_wire,
    session_from_wire,
)


class _Refused(Exception):
    """A request the host answers with an error response."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class _Raised(Exception):
    """The adapter's own code raised ``error`` in ``function``: the error response says so in its
    ``data``, so the gate reports it as the adapter's, not as a fault of the request."""

    def __init__(self, function: str, error: BaseException) -> None:
        super().__init__(function)
        self.function = function
        self.error = error


SERVER_ERROR = -32000  # JSON-RPC's "server error": the adapter's own failure
INVALID_PARAMS = -32602  # the request itself is not what the protocol says
TRACEBACK_LINES = 40


def _text(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def _describe(exc: BaseException) -> str:
    text = _text(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _traceback(exc: BaseException) -> list[str]:
    """Where ``exc`` was raised, for the gate's ``--debug``: the host's own frame left out, so the
    first frame shown is the adapter's."""
    import traceback

    tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
    lines = "".join(traceback.format_exception(type(exc), exc, tb)).splitlines()
    return [line[:300] for line in lines[-TRACEBACK_LINES:]]


def _exception_data(function: str, exc: BaseException) -> dict[str, Any]:
    """The ``data`` of an error response for an exception of the adapter's code
    (docs/adapters.md, "Errors"): its type and message for the gate's one line, the adapter's
    function that raised it, and its traceback."""
    return {"exception": {"type": type(exc).__name__, "message": _text(exc)},
            "function": function, "traceback": _traceback(exc)}


def _interpreter() -> str:
    return sys.executable or "an unnamed interpreter"


def _suggest(name: str, choices: list[str]) -> str:
    try:
        from rapidfuzz import process
    except ImportError:  # pragma: no cover - rapidfuzz is a dependency
        return ""
    match = process.extractOne(name, choices, score_cutoff=60)
    return f" (did you mean {match[0]!r}?)" if match else ""


def preload(target: str) -> Any:
    """Import ``target``'s module as the host starts, before ``initialize`` arrives (a second
    worker's host imports while the first answers): the module, or the exception its import
    raised, which :func:`build` then reports. Nothing is built before ``initialize``."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        return None
    try:
        return importlib.import_module(module_name)
    except BaseException as exc:  # user code: an import may raise anything, SystemExit included
        return exc


def build(target: str, options: dict[str, Any], preloaded: Any = None) -> Any:
    """Import ``module:attr`` (or take ``preloaded``, what :func:`preload` gave) and call it with
    ``options``; a one-line reason when that fails."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise _Refused(SERVER_ERROR, f"adapter.python: {target!r} is not of the form 'module:attr'")
    try:
        if isinstance(preloaded, BaseException):
            raise preloaded
        module = preloaded if preloaded is not None else importlib.import_module(module_name)
    except BaseException as exc:  # user code: an import may raise anything, SystemExit included
        # Which interpreter looked for it: a module installed in another environment is the
        # usual cause, and the path says which environment that was.
        hint = " (is it installed for that interpreter?)" \
            if isinstance(exc, ImportError) else ""
        raise _Refused(SERVER_ERROR, f"adapter.python: cannot import module {module_name!r} "
                       f"with {_interpreter()}: {_describe(exc)}{hint}",
                       {"traceback": _traceback(exc)}) from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            raise _Refused(SERVER_ERROR, f"adapter.python: {module_name!r} has no attribute "
                           f"{attr!r}{_suggest(part, names)}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise _Refused(SERVER_ERROR, f"adapter.python: {target!r} is not a class or factory")
    try:
        adapter = obj(**options)
    except BaseException as exc:
        raise _Raised(attr.rpartition(".")[2], exc) from exc
    for verb in ("reset", "ingest", "search"):
        if not callable(getattr(adapter, verb, None)):
            raise _Refused(SERVER_ERROR, f"adapter: {target} has no {verb}() method "
                           "(docs/adapters.md: reset, ingest and search are required)")
    return adapter


class Host:
    """Dispatches requests to one adapter object.

    Each handler reads its params (a failure there is the request's: ``invalid params``), calls
    the adapter (a failure there is the adapter's own: :class:`_Raised`), and turns what it
    returned into the wire form (a failure there breaks the contract of docs/adapters.md)."""

    def __init__(self, target: str, preloaded: Any = None) -> None:
        self.target = target
        self.preloaded = preloaded
        self.adapter: Any = None
        self._closed = False

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            options = params.get("options") or {}
            if not isinstance(options, dict):
                raise _Refused(INVALID_PARAMS, "initialize: options must be an object")
            preloaded, self.preloaded = self.preloaded, None
            self.adapter = build(self.target, options, preloaded)
            capabilities = {"push": callable(getattr(self.adapter, "push", None)),
                            "write": callable(getattr(self.adapter, "write", None))}
            if getattr(self.adapter, "workers", True) is False:  # one shared store: one process
                capabilities["workers"] = False
            return {"protocol": PROTOCOL_VERSION, "name": self.target,
                    "capabilities": capabilities}
        if method == "shutdown":
            self.close()
            return None
        if self.adapter is None:
            raise _Refused(-32002, f"{method} before initialize")
        handler: Callable[[dict[str, Any]], Any] | None = getattr(self, f"_{method}", None)
        if handler is None:
            raise _Refused(-32601, f"unknown method {method!r}")
        return handler(params)

    def close(self) -> None:
        """The adapter's ``close()``, if it has one: once, after the last request."""
        if self._closed or self.adapter is None:
            return
        self._closed = True
        close = getattr(self.adapter, "close", None)
        if callable(close):
            _call("close", close)

    def _reset(self, params: dict[str, Any]) -> None:
        _call("reset", self.adapter.reset)

    def _ingest(self, params: dict[str, Any]) -> None:
        built = params.get("records") if type(params) is dict else None
        records = built if type(built) is _Built else \
            _read("ingest", lambda: [record_from_wire(r) for r in params["records"]])
        _call("ingest", self.adapter.ingest, records)

    def _search(self, params: dict[str, Any]) -> dict[str, Any]:
        query = _read("search", lambda: query_from_wire(params["query"]))
        return _returned("search", answer_to_wire, _call("search", self.adapter.search, query),
                         "search(query) -> Answer")

    def _push(self, params: dict[str, Any]) -> dict[str, Any]:
        query = _read("push", lambda: query_from_wire(params["query"]))
        answer = _call("push", self.adapter.push, query)
        # A list of ids, or a mapping that also says the text injected (passed on as it is).
        ids, text = (answer.get("ids"), answer.get("text")) if isinstance(answer, Mapping) \
            else (answer, None)
        if not isinstance(ids, (list, tuple)) or not all(isinstance(i, str) for i in ids) \
                or not (text is None or isinstance(text, str)):
            raise _Refused(SERVER_ERROR, f"push(): did not return a list of ids or "
                           f"{{'ids': [...], 'text': str}}: {answer!r:.200} "
                           "(docs/adapters.md: push(query) -> list[str])")
        return {"ids": list(ids)} if text is None else {"ids": list(ids), "text": text}

    def _write(self, params: dict[str, Any]) -> None:
        session = _read("write", lambda: session_from_wire(params["session"]))
        _call("write", self.adapter.write, session)


def _read(method: str, decode: Callable[[], Any]) -> Any:
    """The params of a request, decoded; refused as the request's fault when they are not what
    the protocol says."""
    try:
        return decode()
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _Refused(INVALID_PARAMS, f"{method}: bad params: {_describe(exc)}") from exc


def _call(function: str, method: Callable[..., Any], *args: Any) -> Any:
    """The adapter's own code: whatever it raises, ``SystemExit`` included, is its failure."""
    try:
        return method(*args)
    except BaseException as exc:  # user code: reported, never re-raised
        raise _Raised(function, exc) from exc


def _returned(function: str, encode: Callable[[Any], Any], value: Any, rule: str) -> Any:
    try:
        return encode(value)
    except ValueError as exc:
        raise _Refused(SERVER_ERROR, f"{function}(): {exc} (docs/adapters.md: {rule})") from exc


def requests_of(fd: int, poller: Poller | None = None) -> Iterator[bytes]:
    """The request lines arriving on ``fd``, each with its newline (an unterminated last line as
    it is). The gate sends its next request within microseconds of an answer, so the host polls
    for it before it blocks (:mod:`membench_gate.adapter.polling`)."""
    poller = poller or Poller(fd)
    pending: list[bytes] = []  # the start of a line longer than one read
    while True:
        poller.poll()
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            if pending:
                yield b"".join(pending)
            return
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            pending.append(chunk[start:end + 1])
            yield b"".join(pending)
            pending, start = [], end + 1
        if start < len(chunk):
            pending.append(chunk[start:])


def serve(target: str, requests: Iterable[bytes], responses: BinaryIO) -> int:
    """Answer requests line by line until ``shutdown`` or the end of input; the adapter's
    ``close()`` is called either way.

    Each request is read, answered and its objects freed with the garbage collector paused
    (:func:`~membench_gate.adapter.types.collector_paused`): an ``ingest`` batch is a few
    thousand records and tens of thousands of objects that all live on in the store, which the
    collector, run every 700 new objects, walked over and over (with only the decoding and the
    records' building paused, 0.8 s of the host's 2.9 s of CPU for 100,000 records; 0.1 s with
    the whole request paused). Whatever the request left is collected after it, as
    usual; cyclic garbage an adapter makes during one call waits for the call's end.

    What an ``ingest`` leaves behind is the store, alive until the next ``reset``: it is moved
    out of the collector's sight (``gc.freeze``) instead of being walked by the collections that
    follow, over and over as the store grows, and handed back (``gc.unfreeze``) when ``reset``
    has been answered, so that anything of the old store only a collection can free (a cycle) is
    freed as usual. Objects are still freed by their reference counts while frozen. 100,000
    records in batches: the host's CPU for the requests 0.71 → 0.65 s (benchmarks/README.md).
    Only after a large batch (:data:`FAST_DECODE_BYTES`): with a freeze after every small
    ingest and a thaw at every reset, the collector's count of long-lived objects runs behind
    and it walks the whole heap far more often — the built-in suites' calls took 10% longer.
    (Freezing what is left after ``shutdown`` made the exit 9 ms shorter, but then the
    interpreter's last collection no longer ran the ``__del__`` of an adapter's objects in
    cycles; the exit is left as Python does it.)"""
    host = Host(target, preload(target))
    frozen = False
    for line in requests:
        with collector_paused():
            method = _answer(host, line, responses)
        if method == "ingest" and len(line) >= FAST_DECODE_BYTES:
            gc.freeze()
            frozen = True
        elif method == "reset" and frozen:
            gc.unfreeze()
            frozen = False
        elif method == "shutdown":
            return 0
    _close_at_end(host)
    return 0


# A line at least this long (an ingest batch) is read by pydantic-core's parser, twice the
# standard one's speed; its import (tens of milliseconds) is paid by the first such line only.
FAST_DECODE_BYTES = 1 << 16
_from_json: Callable[[bytes], Any] | None = None


class _Built(list):  # type: ignore[type-arg]
    """An ``ingest`` request's records, already built as :class:`Record` by :func:`_loads`."""


_ingest_validator: Any = None  # built for the first long line; False where it cannot be
_ingest_decoder: Any = None  # likewise, msgspec's (the faster, when it is installed)


def _msgspec_decoder() -> Callable[[bytes], Any] | None:
    """msgspec's decoder of an ``ingest`` request line as the gate writes it, straight into
    :class:`Record` objects: twice pydantic-core's speed at it (52 MB, 100,000 records: 0.12
    against 0.23 s), and what the boundary costs a large corpus is mostly this. It reads times
    as RFC 3339 and keeps an empty ``source``; :func:`_gate_written` then takes only records
    whose every field is what :func:`record_from_wire` builds from the same line (a UTC time,
    a source that is not empty, no fraction of a second past the microsecond), and anything
    else takes the other paths. ``None`` without msgspec (the memory's own environment need
    not have it) or with one that cannot build it."""
    try:
        import msgspec

        params = msgspec.defstruct("Params", [("records", list[Record])])
        request = msgspec.defstruct("Request", [("jsonrpc", Any), ("id", Any),
                                                ("method", Literal["ingest"]),
                                                ("params", params)])
        decode = msgspec.json.Decoder(request).decode
    except Exception:  # ImportError, or a msgspec too old for frozen dataclasses
        return None

    def read(line: bytes) -> Any:
        if _PAST_MICROSECONDS.search(line) is not None:
            return None
        message = decode(line)
        records = message.params.records
        if not _gate_written(records):
            return None
        return {"jsonrpc": message.jsonrpc, "id": message.id, "method": "ingest",
                "params": {"records": _Built(records)}}

    return read


# glibc's malloc: requests below this are served from the heap, not each by a mapping of its own;
# and up to this much freed at the heap's top is kept for the next request, not given back.
MMAP_THRESHOLD = TRIM_THRESHOLD = 32 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # (malloc.h)


def _keep_freed_memory() -> None:
    """Once a corpus arrives (the first long ``ingest`` line), let glibc's malloc keep what a
    batch frees for the next one. By default each request line of a megabyte, and each of the
    numeric scratch arrays a memory builds per batch, gets pages of its own from the system and
    hands them back when freed, so the next batch touches fresh pages again: 78,000 page faults
    for 100,000 records into the reference memory, against a few thousand for the same ingest
    in a process that had run it before. With both thresholds at :data:`MMAP_THRESHOLD` the
    hosted ingest faults a half to a third as often and takes 15% less time
    (benchmarks/README.md, "bench_boundary.py"); the price is at most that much freed memory
    kept in the process. Nothing is changed where the C library is not glibc."""
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    except (ValueError, OSError, AttributeError, ImportError):  # (no confstr name, no libc)
        return


# A time with more digits than microseconds: msgspec rounds them, the general path truncates.
_PAST_MICROSECONDS = re.compile(rb":\d\d\.\d{7}")


_FIELDS = [f.name for f in fields(Record)]


def _gate_written(records: list[Record]) -> bool:
    """Whether every record came with every field, in the record's order (msgspec sets them
    in the line's order, and leaves a missing one to the class's default), its times UTC or
    unset, its source not empty."""
    utc, names = timezone.utc, _FIELDS
    for record in records:
        created, reviewed = record.created_at, record.reviewed_at
        if list(record.__dict__) != names or not record.source or \
                (created is not None and created.tzinfo is not utc) or \
                (reviewed is not None and reviewed.tzinfo is not utc):
            return False
    return True


def _ingest_schema() -> Any:
    """A pydantic-core validator that reads an ``ingest`` request line straight into
    :class:`Record` objects — only as the gate writes them, every field present and of its
    type, so that each is what :func:`record_from_wire` builds from the same line, field for
    field (anything else fails it and takes that path). Times go through the same cached
    parser. ``False`` without pydantic-core (a bare interpreter) or with one too old to build
    it (the memory's own environment may hold any version)."""
    try:
        return _build_ingest_schema()
    except Exception:  # ImportError, or an older core_schema (AttributeError, TypeError, ...)
        return False


def _build_ingest_schema() -> Any:
    from pydantic_core import SchemaValidator
    from pydantic_core import core_schema as cs

    text = cs.str_schema(strict=True)
    strings = cs.tuple_schema([text], variadic_item_index=0, strict=True)
    time = cs.nullable_schema(cs.no_info_after_validator_function(_parse_time, text))
    kinds = {"id": text, "text": text, "source": cs.str_schema(strict=True, min_length=1),
             "files": strings, "created_at": time, "reviewed_at": time,
             # (no infinity: an integer too large for a float is the general path's error)
             "relevance": cs.nullable_schema(cs.float_schema(strict=True, allow_inf_nan=False)),
             "entity": cs.nullable_schema(text), "aliases": strings,
             "meta": cs.dict_schema(text, cs.any_schema(), strict=True)}
    assert list(kinds) == [f.name for f in fields(Record)]
    record = cs.dataclass_schema(Record, cs.dataclass_args_schema(
        "Record", [cs.dataclass_field(name, kind) for name, kind in kinds.items()]),
        list(kinds), frozen=True)
    anything = cs.typed_dict_field(cs.any_schema())
    return SchemaValidator(cs.typed_dict_schema({
        "jsonrpc": anything, "id": anything,
        "method": cs.typed_dict_field(cs.literal_schema(["ingest"])),
        "params": cs.typed_dict_field(cs.typed_dict_schema(
            {"records": cs.typed_dict_field(cs.list_schema(record))})),
    }))


def _loads(line: bytes) -> Any:
    """A request line's JSON: the same values either way (the gate wrote it, as JSON without
    NaN); ``ValueError`` for a line that is not JSON. An ``ingest`` batch as the gate writes
    it comes with its records built (:class:`_Built`): 2 µs a record instead of 2.5."""
    global _from_json, _ingest_validator, _ingest_decoder
    if len(line) < FAST_DECODE_BYTES:
        return json.loads(line)
    if _ingest_decoder is None:
        _ingest_decoder = _msgspec_decoder() or False
        _keep_freed_memory()
    if _ingest_decoder and b'"ingest"' in line[:100]:
        try:
            message = _ingest_decoder(line)
        except Exception:  # (a msgspec.ValidationError or DecodeError) the next path says it
            message = None
        if message is not None:
            return message
    if _ingest_validator is None:
        _ingest_validator = _ingest_schema()
    if _ingest_validator and b'"ingest"' in line[:100]:  # (the method, near the start)
        try:
            message = _ingest_validator.validate_json(line)
        except Exception:  # (a ValidationError) read as any request is, below: what is wrong
            pass  # is said in the usual words
        else:
            message["params"]["records"] = _Built(message["params"]["records"])
            return message
    if _from_json is None:
        try:
            from pydantic_core import from_json
        except ImportError:  # an interpreter without the gate's dependencies (a bare host)
            from_json = json.loads
        _from_json = from_json
    try:
        return _from_json(line)
    except ValueError:  # what it refuses and the standard parser reads (nesting past ~200)
        return json.loads(line)


def _answer(host: Host, line: bytes, responses: BinaryIO) -> Any:
    """Answer one request line; its method (``None`` for a line that is not a request)."""
    try:
        message = _loads(line)
        ident, method = message["id"], message["method"]
        params = message.get("params") or {}
    except (ValueError, KeyError, TypeError, RecursionError):
        _send(responses, {"jsonrpc": "2.0", "id": None,
                          "error": {"code": -32700, "message": "not a JSON-RPC request"}})
        return None
    try:
        reply: dict[str, Any] = {"result": host.handle(method, params)}
    except _Refused as exc:
        reply = {"error": _error(exc.code, str(exc), exc.data)}
    except _Raised as raised:
        exc = raised.error
        reply = {"error": _error(SERVER_ERROR, f"{raised.function}: {_describe(exc)}",
                                 _exception_data(raised.function, exc))}
    except BaseException as exc:  # a failure of the host itself: still one answer
        reply = {"error": _error(SERVER_ERROR, f"{method}: {_describe(exc)}")}
    try:
        _send(responses, {"jsonrpc": "2.0", "id": ident, **reply})
    except ValueError as exc:  # a result JSON cannot carry (NaN, a non-string key, ...)
        _send(responses, {"jsonrpc": "2.0", "id": ident, "error": _error(
            SERVER_ERROR, f"{method}() returned what JSON cannot carry: {_describe(exc)} "
            "(docs/adapters.md: UTF-8 JSON)")})
    return method


def _error(code: int, message: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, **({"data": data} if data is not None else {})}


def _close_at_end(host: Host) -> None:
    """The input ended without ``shutdown``: no one reads an answer any more, so an exception of
    ``close()`` is one line on stderr."""
    try:
        host.close()
    except _Raised as raised:
        print(f"membench_gate.host: adapter close() raised {_describe(raised.error)}",
              file=sys.stderr)


_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


def _send(stream: BinaryIO, message: dict[str, Any]) -> None:
    stream.write(_encode(message).encode("utf-8") + b"\n")
    stream.flush()


def main() -> int:
    """Keep file descriptor 1 for the protocol alone: stdout (Python's and C's) goes to stderr."""
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    requests = requests_of(0) if os.name == "posix" else sys.stdin.buffer
    return serve(_TARGET, requests, protocol)


if __name__ == "__main__":
    raise SystemExit(main())
