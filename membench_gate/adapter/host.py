"""``python -m membench_gate.host module:attr``: serve a Python memory object over the protocol.

The gate starts this for ``[adapter] python = "module:attr"``, in the config file's folder. On
``initialize`` it imports the module, builds the object (a class or factory called with the
``[adapter.options]`` as keyword arguments) and then answers each request by calling the plain
method, so Python adapters never see JSON. stdout carries the protocol only: anything the adapter
prints goes to stderr, which the gate keeps for its error messages.

Any exception of the adapter — ``SystemExit`` and other ``BaseException`` included — becomes an
``error`` response naming it; the gate then stops the process.
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

import importlib  # noqa: E402
import json  # noqa: E402
from collections.abc import Callable, Iterable, Iterator  # noqa: E402
from typing import Any, BinaryIO  # noqa: E402

from membench_gate.adapter.polling import Poller  # noqa: E402
from membench_gate.adapter.types import (  # noqa: E402
    PROTOCOL_VERSION,
    answer_to_wire,
    query_from_wire,
    record_from_wire,
    session_from_wire,
)


class _Refused(Exception):
    """A request the host answers with an error response."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _suggest(name: str, choices: list[str]) -> str:
    try:
        from rapidfuzz import process
    except ImportError:  # pragma: no cover - rapidfuzz is a dependency
        return ""
    match = process.extractOne(name, choices, score_cutoff=60)
    return f" (did you mean {match[0]!r}?)" if match else ""


def build(target: str, options: dict[str, Any]) -> Any:
    """Import ``module:attr`` and call it with ``options``; a one-line reason when that fails."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise _Refused(-32000, f"adapter.python: {target!r} is not of the form 'module:attr'")
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # user code: an import may raise anything, SystemExit included
        raise _Refused(-32000, f"adapter.python: cannot import module {module_name!r}: "
                       f"{_describe(exc)}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            raise _Refused(-32000, f"adapter.python: {module_name!r} has no attribute "
                           f"{attr!r}{_suggest(part, names)}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise _Refused(-32000, f"adapter.python: {target!r} is not a class or factory")
    try:
        adapter = obj(**options)
    except BaseException as exc:
        raise _Refused(-32000, f"adapter: {target}(**options) failed: {_describe(exc)}") from exc
    for verb in ("reset", "ingest", "search"):
        if not callable(getattr(adapter, verb, None)):
            raise _Refused(-32000, f"adapter: {target} has no {verb}() method")
    return adapter


class Host:
    """Dispatches requests to one adapter object."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.adapter: Any = None

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            options = params.get("options") or {}
            if not isinstance(options, dict):
                raise _Refused(-32602, "initialize: options must be an object")
            self.adapter = build(self.target, options)
            return {"protocol": PROTOCOL_VERSION, "name": self.target, "capabilities": {
                "push": callable(getattr(self.adapter, "push", None)),
                "write": callable(getattr(self.adapter, "write", None)),
            }}
        if method == "shutdown":
            return None
        if self.adapter is None:
            raise _Refused(-32002, f"{method} before initialize")
        handler: Callable[[dict[str, Any]], Any] | None = getattr(self, f"_{method}", None)
        if handler is None:
            raise _Refused(-32601, f"unknown method {method!r}")
        return handler(params)

    def _reset(self, params: dict[str, Any]) -> None:
        self.adapter.reset()

    def _ingest(self, params: dict[str, Any]) -> None:
        self.adapter.ingest([record_from_wire(r) for r in params["records"]])

    def _search(self, params: dict[str, Any]) -> dict[str, Any]:
        return _user(answer_to_wire, self.adapter.search(query_from_wire(params["query"])))

    def _push(self, params: dict[str, Any]) -> dict[str, Any]:
        ids = self.adapter.push(query_from_wire(params["query"]))
        if not isinstance(ids, (list, tuple)) or not all(isinstance(i, str) for i in ids):
            raise _Refused(-32000, f"push did not return a list of ids (list[str]): {ids!r:.200}")
        return {"ids": list(ids)}

    def _write(self, params: dict[str, Any]) -> None:
        self.adapter.write(session_from_wire(params["session"]))


def _user(encode: Callable[[Any], Any], value: Any) -> Any:
    try:
        return encode(value)
    except ValueError as exc:
        raise _Refused(-32000, str(exc)) from exc


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
    """Answer requests line by line until ``shutdown`` or the end of input."""
    host = Host(target)
    for line in requests:
        try:
            message = json.loads(line)
            ident, method = message["id"], message["method"]
            params = message.get("params") or {}
        except (ValueError, KeyError, TypeError, RecursionError):
            _send(responses, {"jsonrpc": "2.0", "id": None,
                              "error": {"code": -32700, "message": "not a JSON-RPC request"}})
            continue
        try:
            reply: dict[str, Any] = {"result": host.handle(method, params)}
        except _Refused as exc:
            reply = {"error": {"code": exc.code, "message": str(exc)}}
        except (KeyError, TypeError) as exc:
            reply = {"error": {"code": -32602, "message": f"{method}: bad params: {_describe(exc)}"}}
        except BaseException as exc:  # the adapter's own failure, SystemExit included
            reply = {"error": {"code": -32000, "message": f"{method}: {_describe(exc)}"}}
        try:
            _send(responses, {"jsonrpc": "2.0", "id": ident, **reply})
        except ValueError as exc:  # a result JSON cannot carry (NaN, a non-string key, ...)
            _send(responses, {"jsonrpc": "2.0", "id": ident,
                              "error": {"code": -32000, "message": f"{method}: {_describe(exc)}"}})
        if method == "shutdown":
            return 0
    return 0


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
