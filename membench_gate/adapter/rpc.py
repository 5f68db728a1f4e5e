"""The one boundary to a memory system: a child process speaking JSON-RPC 2.0 over stdio.

The gate starts the adapter (``[adapter] command``, or the built-in host for ``[adapter] python``),
sends one request at a time and waits at most ``[adapter] timeout`` seconds for each answer,
``initialize`` (start-up and imports) included, and never past the end of the command's time
budget (:mod:`membench_gate.budget`). Whatever the memory system does — crash, hang,
``sys.exit``, ``chdir``, print to stdout — happens in its own process: the gate sees a timeout, an
end of output or a malformed line, kills the process and raises one :class:`GateError` naming the
call and the item, with the adapter's last stderr lines as detail. The line reads as the
adapter's: an exception of its code as ``adapter search() raised KeyError: 'x' in suite …, item …``
(from the error response's ``data``), a broken rule of the protocol with that rule as
docs/adapters.md words it (:data:`RULES`); JSON-RPC error codes appear only under ``--debug``.

:class:`SuiteSession` is what a suite calls. It checks every answer against the contract (at most
``k`` hits, unique ids, ids ingested since the last ``reset``, finite scores best first, a boolean
``abstain``), so a suite only ever scores answers that mean what the protocol says.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import queue
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from membench_gate import budget
from membench_gate.adapter import seal
from membench_gate.adapter.polling import POLL_S, Poller
from membench_gate.adapter.types import (
    PROTOCOL_VERSION,
    Answer,
    Hit,
    Pushed,
    Query,
    Record,
    Session,
    collector_paused,
    default_push,
    finite_record,
    query_to_wire,
    record_for_encoder,
    session_to_wire,
    time_to_wire,
)
from membench_gate.errors import GateError, visible
from membench_gate.files import MAX_MAGNITUDE
from membench_gate.process import joined

STDERR_LINES = 50
STDERR_LINE_CHARS = 2000
# The bytes of a stderr line held at once: enough for its first STDERR_LINE_CHARS characters in
# any UTF-8; the rest of a longer line is read in chunks, counted and dropped.
STDERR_HOLD_BYTES = 4 * STDERR_LINE_CHARS + 4
STDERR_CHUNK_BYTES = 1 << 16
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
EXIT_CHECK_S = 0.2  # how often a wait for an answer checks whether the adapter process ended
SHUTDOWN_GRACE_S = 5.0
MAX_LINE_BYTES = 256 * 1024 * 1024
# Records per ``ingest`` request: large enough that a 100k-record corpus is a hundred round trips,
# small enough that one request stays a few megabytes.
INGEST_BATCH = 2000
_SELECTABLE_PIPES = os.name == "posix"
# A write this small fits an empty pipe's buffer on every POSIX system, so it never blocks.
_PIPE_SAFE_BYTES = 4096
# After a kill, how long the last stderr lines may take to arrive (a loaded runner is slow).
STDERR_DRAIN_S = 5.0
# The pipes to and from the adapter are widened to this (Linux: at most
# /proc/sys/fs/pipe-max-size, 1 MiB by default, for an unprivileged user). With the default
# 64 KiB an ingest batch of a megabyte crossed in sixteen pieces, each one a wake-up of the
# reader and of the writer: on a loaded runner each wake-up waits for a CPU.
PIPE_BYTES = 1 << 20
_SET_PIPE_SIZE = 1031  # F_SETPIPE_SZ (fcntl.F_SETPIPE_SZ from Python 3.10, Linux only)


def _widen(stream: Any) -> None:
    """Widen a pipe to :data:`PIPE_BYTES`, where the system allows it; a pipe it does not
    widen (not Linux, the user's pipe quota reached) works as before, only slower."""
    if sys.platform != "linux" or stream is None:
        return
    import fcntl

    with suppress(OSError, ValueError):
        fcntl.fcntl(stream.fileno(), getattr(fcntl, "F_SETPIPE_SZ", _SET_PIPE_SIZE), PIPE_BYTES)


def adapter_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The gate's environment minus GitHub credentials, runner file-command paths and the
    runner's temp folder (:func:`membench_gate.adapter.seal.withhold`: one list, used everywhere)."""
    return seal.withhold(env)


class _NotJSONNumber(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` in a line: Python's JSON reads them, JSON has none."""


def _reject_constant(name: str) -> Any:
    raise _NotJSONNumber(f"{name} is not JSON")


def _wire_default(value: Any) -> Any:
    """What the standard encoder cannot write itself: a record's time (as the wire has it)."""
    if isinstance(value, datetime):
        return time_to_wire(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


# Built once: ``json.dumps``/``json.loads`` with options build a new coder on every call.
_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=_wire_default).encode
_decode = json.JSONDecoder(parse_constant=_reject_constant).decode


def _fast_encoder() -> Callable[[Any], bytes] | None:
    """pydantic-core's JSON serializer (a dependency already, through pydantic): five times
    the standard encoder's speed on an ingest batch, which is most of what the gate writes.
    ``None`` where the installed version cannot be told to keep NaN visible."""
    try:
        from pydantic_core import to_json

        to_json(0.0, inf_nan_mode="constants")
    except (ImportError, TypeError):
        return None
    return functools.partial(to_json, inf_nan_mode="constants")


_to_json = _fast_encoder()
_NON_FINITE = (b"NaN", b"Infinity")
# How other languages write them where a number goes (Perl's and C's ``Inf``, ``inf``, ``nan``):
# said as such, rather than as a line that is not JSON at all.
_OTHER_NON_FINITE = re.compile(rb"[:\[,]\s*(-?(?:[Ii]nf(?:inity)?|[Nn]a[Nn]))\s*[,\]}]")
# A string, where the words are only text. Cut short, it runs to the end of the line: every match
# then succeeds where it starts, so a line of escaped quotes takes linear time, not quadratic.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*\\?(?:"|$)', re.DOTALL)


class RecordBatch(dict):  # type: ignore[type-arg]
    """An ``ingest`` request's params built from records (:func:`_batch`), which it keeps: when
    what the fast encoder wrote holds the word ``NaN`` or ``Infinity``, the records say whether
    that was only text (:func:`~membench_gate.adapter.types.finite_record` for every one) before
    the standard encoder writes the batch again. Searching the bytes first costs a third of
    checking every record (52 MB, 100,000 records: 0.06 against 0.15 s)."""

    __slots__ = ("records",)

    def __init__(self, params: dict[str, Any], records: Sequence[Record]) -> None:
        super().__init__(params)
        self.records = records


def _only_text(params: Any) -> bool:
    """Whether a NaN or Infinity the fast encoder wrote for ``params`` can only be text."""
    return type(params) is RecordBatch and all(map(finite_record, params.records))


def dumps(message: dict[str, Any]) -> bytes:
    """One request as UTF-8 JSON (no newline); ``ValueError`` for a value JSON cannot carry.

    An ``ingest`` request — nearly all the bytes the gate writes, and records built from the
    fixtures' JSON — is written by pydantic-core's serializer when it can (every other request
    by the standard encoder); what it writes and what the standard
    encoder writes are the same JSON values (strings, integers of any size, floats that read
    back bit for bit, a UTC time as ``…Z``, tuples as arrays). A NaN or an infinity, which it
    writes as such, is refused as the standard encoder refuses it: the output is checked for
    their names, and only then encoded the standard way (which also tells a string that merely
    contains one)."""
    if _to_json is not None and message.get("method") == "ingest":
        try:
            data = _to_json(message)
        except ValueError:
            data = None  # the standard encoder says what is wrong, in its words
        if data is not None and (not any(word in data for word in _NON_FINITE)
                                 or _only_text(message.get("params"))):
            return data
    return _encode(message).encode("utf-8")


# The rules of docs/adapters.md an answer can break, each in the words the page uses for it: the
# error line quotes the one that broke.
RULES = {
    "line": "one object per line",
    "utf8": "UTF-8 JSON",
    "stdout": "stdout carries the protocol only",
    "finite": "JSON has no NaN or Infinity",
    "response": "a response is a JSON-RPC 2.0 object with its request's id and a result or an error",
    "initialize": "initialize answers protocol 1, a name and boolean capabilities",
    "search": "search answers hits and a boolean abstain",
    "push": "push answers {\"ids\": [string, ...]}",
    "push_text": "push text is a string or null",
    "hit": "a hit has a string id and a finite number score below 1e15 in magnitude",
    "hit_fields": "text and entity strings or null, provenance an object or null",
    "k": "at most k hits, and at most k ids for push",
    "unique": "ids unique",
    "known": "every id one of the records ingested since the last reset",
    "order": "hits best first, scores non-increasing",
    "abstain": "abstain a boolean",
    "alike": "every worker is the same adapter: it answers the capabilities worker 1 answered",
    "hit_text": "the writeback suite reads the text of every hit",
}

# What the standard JSON-RPC codes mean, said for a user (the code itself is for --debug).
_CODE_MEANS = {
    -32700: "the adapter could not parse the request: ",
    -32600: "the adapter found the request invalid: ",
    -32601: "the adapter has no such method: ",
    -32602: "the adapter refused the request's params: ",
}


class NoAnswer(GateError):
    """A call the adapter did not answer within ``[adapter] timeout`` (its process killed)."""


class ErrorResponse(Exception):
    """An adapter's ``error`` response as it came, code included: the cause of the
    :class:`GateError` a user reads, so ``--debug`` shows it (and an adapter's traceback).
    ``raised``: the response names an exception of the adapter's code."""

    def __init__(self, text: str, raised: bool) -> None:
        super().__init__(text)
        self.raised = raised


@dataclass
class _Where:
    """Which call, for which suite and item: every adapter error names them."""

    method: str
    suite: str | None = None
    item: str | None = None

    def context(self) -> str:
        return budget.place(self.suite, self.item)

    def __str__(self) -> str:
        return f"adapter {self.method}() failed{self.context()}"

    def raised(self, function: str, kind: str, message: str) -> str:
        """An exception of the adapter's code, ``function`` being where it was raised."""
        answering = f" (during {self.method})" if function != self.method else ""
        return (f"adapter {function}() raised {kind}{': ' + message if message else ''}"
                f"{self.context()}{answering}")

    def broke(self, rule: str, why: str) -> str:
        """An answer that breaks the rule :data:`RULES` names ``rule``."""
        return f"adapter {self.method}() broke the protocol{self.context()}: {why} " \
               f"(docs/adapters.md: {RULES[rule]})"


class _Driving:
    """How many of the gate's threads drive an adapter at this moment (workers, a selftest's
    slots): the gate polls for an answer only while there is one. Two threads polling share one
    interpreter lock and take the CPUs their adapters compute on."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    @contextmanager
    def thread(self) -> Iterator[None]:
        with self._lock:
            self.count += 1
        try:
            yield
        finally:
            with self._lock:
                self.count -= 1


_driving = _Driving()
driving = _driving.thread


def _utf8_chars(data: bytes) -> int:
    """The characters of UTF-8 ``data``: its bytes that are not continuation bytes."""
    return len(data.translate(None, _CONTINUATION_BYTES))


class AdapterProcess:
    """A started adapter: requests in on stdin, responses out on stdout, logs kept from stderr."""

    def __init__(self, argv: Sequence[str], cwd: Path, timeout: float,
                 env: Mapping[str, str] | None = None) -> None:
        self.argv = list(argv)
        self.cwd = cwd
        self.timeout = timeout
        self._next_id = 0
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._dead = False
        self._killed = False
        self._exit_by: float | None = None  # set by shutdown: kill waits for the exit until then
        self._who = ""  # whose process, in a warning of its way out ("worker 2: ")
        self._grace = SHUTDOWN_GRACE_S  # how long an answer to shutdown is awaited
        # Sealed (in CI), the adapter is the sandbox user's process, in the sealed copy; else the
        # gate's own user's, here. Either way on the memory's interpreter when one was prepared.
        sandbox = seal.current()
        popen = sandbox.popen if sandbox is not None else subprocess.Popen
        self._sealed = seal.started()  # handed back by kill(): the last one sweeps the sandbox
        try:
            self.proc = popen(
                self.argv, cwd=cwd, env=adapter_environment(os.environ if env is None else env),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True,  # so a kill reaches the adapter's own children too
            )
        except FileNotFoundError as exc:
            raise GateError(f"adapter: cannot start {self.argv[0]!r}: no such executable "
                            f"(adapter.command, started in {cwd})") from exc
        except PermissionError as exc:
            raise GateError(f"adapter: cannot start {self.argv[0]!r}: permission denied "
                            "(adapter.command: is it executable?)") from exc
        except OSError as exc:
            raise GateError(f"adapter: cannot start {self.argv[0]!r}: {exc.strerror or exc}") from exc
        finally:
            if self._sealed and not hasattr(self, "proc"):  # never started: handed back now
                seal.release()
        for stream in (self.proc.stdin, self.proc.stdout):
            _widen(stream)
        self._buffer = bytearray()
        self._scanned = 0  # how much of the buffer is known to hold no newline
        self._eof = False
        # How long the last answer to each method took. The gate polls for an answer only when
        # the last one to the same method came within twice the poll budget: it never spins long
        # while an adapter computes (membench_gate.adapter.polling).
        self._latency: dict[str, float] = {}
        self._writing_s = 0.0  # how long the last request took to write here
        if _SELECTABLE_PIPES:
            assert self.proc.stdout is not None
            self._fd = self.proc.stdout.fileno()
            self._poller = Poller(self._fd)
        else:
            threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_done = threading.Event()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # --- reading: the main thread waits for a line with a deadline, never longer ---

    def _readline(self, timeout: float | None, poll: bool = False) -> bytes | None:
        """The next line of stdout (its newline kept), ``None`` at the end of output; raises
        ``queue.Empty`` when ``timeout`` passes first. An unterminated last line is returned as
        it is, and a line over :data:`MAX_LINE_BYTES` is cut there (both are protocol errors).
        With ``poll`` (an answer expected within microseconds) it polls before it blocks.

        The deadline holds while output keeps coming, too (a line that takes longer than the
        timeout to arrive is late), and a long line costs time in proportion to its length: the
        buffer grows in place and each search starts where the last one ended."""
        if not _SELECTABLE_PIPES:
            return self._lines.get(timeout=timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        buffer = self._buffer
        while True:
            end = buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(buffer[:end + 1])
                del buffer[:end + 1]
                self._scanned = 0
                return line
            self._scanned = len(buffer)
            if self._eof or len(buffer) > MAX_LINE_BYTES:
                line = bytes(buffer)
                buffer.clear()
                self._scanned = 0
                return line or None
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left < 0:
                raise queue.Empty
            if not (poll and self._poller.poll()) and not self._readable(left):
                continue  # the adapter ended, or the deadline is checked again
            chunk = os.read(self._fd, 1 << 20)
            if chunk:
                buffer += chunk
            else:
                self._eof = True

    def _readable(self, left: float | None) -> bool:
        """Wait at most ``left`` seconds for output. Output can also stay open after the adapter
        process has ended (a child it started holds it): that is the end of its output too, once
        what it wrote before it ended has been read."""
        step = EXIT_CHECK_S if left is None else min(left, EXIT_CHECK_S)
        if select.select([self._fd], [], [], step)[0]:
            return True
        if self._ended(0) is not None and not select.select([self._fd], [], [], 0)[0]:
            self._eof = True
        return False

    def _read_stdout(self) -> None:
        """Where pipes cannot be selected (Windows): a thread feeds complete lines to a queue."""
        stream = self.proc.stdout
        assert stream is not None
        try:
            while True:
                line = stream.readline(MAX_LINE_BYTES + 1)
                if not line:
                    break
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        self._lines.put(None)

    def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        try:
            while raw := stream.readline(STDERR_HOLD_BYTES):
                count = None
                if len(raw) == STDERR_HOLD_BYTES and not raw.endswith(b"\n"):
                    # a longer line (a gigabyte with no newline, a progress bar's ``\r``s): its
                    # head is kept, the rest only counted, so memory stays bounded
                    count = _utf8_chars(raw)
                    while more := stream.readline(STDERR_CHUNK_BYTES):
                        if more.endswith(b"\n"):
                            count += _utf8_chars(more.rstrip(b"\r\n"))
                            break
                        count += _utf8_chars(more)
                kept = raw.decode("utf-8", "replace").rstrip("\r\n")
                if count is None:
                    count = len(kept)
                if count > STDERR_LINE_CHARS:  # one line of megabytes would flood the error
                    kept = kept[:STDERR_LINE_CHARS] + f" … ({count} characters)"
                self._stderr.append(kept)
        except (OSError, ValueError):
            pass
        self._stderr_done.set()

    @property
    def alive(self) -> bool:
        """False once the process was stopped or killed (after any failure)."""
        return not self._dead

    def stderr_tail(self) -> list[str]:
        return list(self._stderr)

    # --- calls ---

    def _fail(self, where: _Where, why: str) -> GateError:
        """Kill the process and build the error, with its last stderr lines as detail."""
        return self._stopped(GateError(f"{where}: {why}"))

    def _broke(self, where: _Where, rule: str, why: str) -> GateError:
        """:meth:`_fail` for an answer that breaks a rule of the protocol."""
        return self._stopped(GateError(where.broke(rule, why)))

    def _stopped(self, error: GateError) -> GateError:
        """Kill the process; ``error`` with the process's last stderr lines as detail."""
        self.kill()
        self._stderr_done.wait(STDERR_DRAIN_S)
        error.detail = self.stderr_tail()
        return error

    def call(self, method: str, params: Mapping[str, Any], suite: str | None = None,
             item: str | None = None) -> Any:
        """Send one request and return its ``result``; any failure kills the process."""
        where = _Where(method, suite, item)
        return self.receive(self.send(where, params), where)

    def send(self, where: _Where, params: Mapping[str, Any]) -> int:
        """Write one request (in a thread: a process that stops reading cannot block the gate)."""
        return self.send_encoded(where, self.encode(where, params))

    def encode(self, where: _Where, params: Mapping[str, Any]) -> bytes:
        """The line of the next request (its id is the next one sent)."""
        try:
            payload = dumps({"jsonrpc": "2.0", "id": self._next_id + 1, "method": where.method,
                             "params": params})
        except (ValueError, TypeError) as exc:
            raise GateError(f"{where}: the request cannot be encoded as JSON ({exc})") from exc
        return payload + b"\n"

    def send_encoded(self, where: _Where, data: bytes) -> int:
        """Write a line built by :meth:`encode` (before any other request is sent)."""
        if self._dead:
            raise GateError(f"{where}: the adapter process has already stopped")
        self._next_id += 1
        self._sent_at = time.monotonic()
        if len(data) <= _PIPE_SAFE_BYTES:
            self._write(data)  # the adapter has read every earlier request: this cannot block
            return self._next_id
        rest = self._write_now(data) if _SELECTABLE_PIPES else data
        if rest:  # an adapter that does not read: the rest in a thread, the answer awaited
            threading.Thread(target=self._write, args=(rest,), daemon=True).start()
        return self._next_id

    def _write_now(self, data: bytes) -> bytes:
        """Write ``data`` here, while the adapter reads it, for at most the call's timeout (and
        what is left of the time budget); what is not written by then is returned. A large
        request is written by the thread that sends it rather than by a thread of its own: one
        of its own waited for the interpreter lock while this one encoded the next batch (an
        ingest batch of a megabyte took 4 ms to cross, now under 1 ms). Nothing is returned
        for a process that has gone (its reader sees the end of its output)."""
        stream = self.proc.stdin
        limit = self.timeout if self.timeout > 0 else math.inf
        left = budget.current()
        if left is not None:
            limit = min(limit, max(0.0, left.left()))
        started = time.monotonic()
        view, done = memoryview(data), 0
        try:
            assert stream is not None
            stream.flush()
            fd = stream.fileno()
            os.set_blocking(fd, False)
        except (OSError, ValueError):
            return b""
        try:
            while done < len(view):
                try:
                    done += os.write(fd, view[done:])
                except BlockingIOError:
                    wait = started + limit - time.monotonic()
                    if wait <= 0:
                        break
                    try:
                        ready = select.select([], [fd], [], min(wait, EXIT_CHECK_S))[1]
                    except ValueError:  # a descriptor select cannot watch: the thread writes
                        break
                    if not ready and self._ended(0) is not None:
                        return b""  # ended (a child of its may still hold the pipe open)
        except OSError:  # gone (EPIPE), or closed by a kill meanwhile (EBADF)
            return b""
        finally:
            with suppress(OSError, ValueError):
                os.set_blocking(fd, True)
            self._writing_s = time.monotonic() - started
        return bytes(view[done:])

    def receive(self, ident: int, where: _Where) -> Any:
        """Wait for the response to request ``ident``: at most ``timeout`` seconds, and never
        past the end of the command's time budget (:mod:`membench_gate.budget`)."""
        quick = self._latency.get(where.method, math.inf) < 2 * POLL_S and \
            _driving.count <= 1
        # (The timeout runs from the request's send: a large one's writing is part of it.)
        wait = max(0.0, self.timeout - self._writing_s) if self.timeout > 0 else None
        self._writing_s = 0.0
        limit = budget.current()
        if limit is not None and (wait is None or limit.left() < wait):
            wait = max(0.0, limit.left())
        else:
            limit = None  # the call's own timeout ends the wait first
        try:
            line = self._readline(wait, poll=quick)
        except queue.Empty:
            if limit is not None:
                raise self._stopped(limit.ran_out(where.method, where.suite, where.item)) \
                    from None
            hint = "; nothing came on its stdout: a slow start needs a larger timeout, and an " \
                "adapter flushes each answer (docs/adapters.md, \"Debugging\")" \
                if where.method == "initialize" and not self._buffer else ""
            if where.method == "shutdown":  # (its own grace, whatever [adapter] timeout says)
                raise self._stopped(NoAnswer(f"{where}: no answer within "
                                             f"{self._grace:g}s (the shutdown grace)")) \
                    from None
            raise self._stopped(NoAnswer(f"{where}: no answer within {self.timeout:g}s "
                                         f"([adapter] timeout){hint}")) from None
        if line is None:
            code = self._exit_code()
            raise self._fail(where, "the adapter process ended without answering"
                             + (f" (exit code {code})" if code is not None else ""))
        self.last_latency = self._latency[where.method] = time.monotonic() - self._sent_at
        return self._result(where, ident, line)

    def _write(self, data: bytes) -> None:
        stream = self.proc.stdin
        try:
            assert stream is not None
            stream.write(data)
            stream.flush()
        except (OSError, ValueError):
            pass  # the process is gone: the reader sees the end of its output

    def _exit_code(self) -> int | None:
        return self._ended(1.0)

    def _ended(self, timeout: float) -> int | None:
        """The adapter's exit status once it has ended (waiting up to ``timeout`` seconds), else
        None — without reaping it: until :meth:`kill` has signalled its process group, the
        group's id must stay the adapter's own, never one the system could hand out again."""
        deadline, pause = time.monotonic() + timeout, 0.0005
        while True:
            status = self._status()
            if status is not None or time.monotonic() >= deadline:
                return status
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _status(self) -> int | None:
        if self.proc.returncode is not None or not hasattr(os, "waitid"):
            return self.proc.poll()
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return self.proc.poll()
        if info is None:
            return None
        return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status

    def _result(self, where: _Where, ident: int, line: bytes) -> Any:
        if not line.endswith(b"\n"):
            if len(line) > MAX_LINE_BYTES:
                raise self._broke(where, "line",
                                  f"a response line longer than {MAX_LINE_BYTES} bytes")
            raise self._broke(where, "line", f"an incomplete line on stdout (no newline before "
                              f"the end of output): {_excerpt(line)}")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._broke(where, "utf8", f"a line on stdout that is not UTF-8 ({exc.reason} "
                              f"at byte {exc.start}): {_excerpt(line)}") from None
        try:
            message = _decode(text)
        except _NotJSONNumber as exc:
            if line.lstrip().startswith(b"{"):  # a response, with NaN or Infinity for a number
                raise self._broke(where, "finite", f"{exc} in a response (send finite "
                                  f"numbers): {_excerpt(line)}") from None
            raise self._broke(where, "stdout", f"a line on stdout that is not JSON: "
                              f"{_excerpt(line)} (log to stderr)") from None
        except (ValueError, RecursionError):
            spelled = _OTHER_NON_FINITE.search(_STRING.sub(b'""', line)) \
                if line.lstrip().startswith(b"{") else None
            if spelled is not None:  # another language's NaN or infinity, where a number goes
                raise self._broke(where, "finite", f"{spelled.group(1).decode()} is not JSON in a "
                                  f"response (send finite numbers): {_excerpt(line)}") from None
            raise self._broke(where, "stdout", f"a line on stdout that is not JSON: "
                              f"{_excerpt(line)} (log to stderr)") from None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            raise self._broke(where, "response",
                              f"not a JSON-RPC 2.0 response: {_excerpt(line)}")
        if "id" not in message:
            raise self._broke(where, "response", f"a message without an id (a notification?), "
                              f"expected the response to id {ident}: {_excerpt(line)}")
        if message.get("id") is None and "error" in message:
            # (an adapter that could not read the request answers with id null: JSON-RPC's rule)
            raise self._error(where, ident, message["error"])
        if message.get("id") != ident or type(message.get("id")) is not int:  # (not 1.0, true)
            raise self._broke(where, "response",
                              f"a response to id {_short(message.get('id'), 40)}, expected {ident}"
                              + _earlier(message.get("id"), ident))
        if "error" in message and "result" in message:
            raise self._broke(where, "response", f"a response with both result and error (one "
                              f"or the other): {_excerpt(line)}")
        if "error" in message:
            raise self._error(where, ident, message["error"])
        if "result" not in message:
            raise self._broke(where, "response",
                              f"a response with neither result nor error: {_excerpt(line)}")
        return message["result"]

    def _error(self, where: _Where, ident: int, error: Any) -> GateError:
        """The line for an ``error`` response, as the adapter's: its exception when ``data``
        names one (docs/adapters.md, "Errors"), else its message, with what a standard code
        means in words. The response itself, code and all, is the cause (``--debug``)."""
        data = error.get("data") if isinstance(error, dict) else None
        exception = data.get("exception") if isinstance(data, dict) else None
        raised = isinstance(exception, dict) and isinstance(exception.get("type"), str) \
            and bool(exception["type"].strip())
        raw = ErrorResponse(_debug_text(where, ident, error), raised)
        if not isinstance(error, dict):
            return self._chained(GateError(f"{where}: the adapter answered with an error: "
                                           f"{_one_line(repr(error))}"), raw)
        if raised:
            assert isinstance(data, dict) and isinstance(exception, dict)
            function = data.get("function")
            function = function if isinstance(function, str) and function.strip() \
                else where.method
            message = exception.get("message")
            return self._chained(GateError(where.raised(
                _one_line(function, 80), _one_line(exception["type"], 80),
                _one_line(message, 300) if isinstance(message, str) and message.strip()
                else "")), raw)
        code, message = error.get("code"), error.get("message")
        means = _CODE_MEANS.get(code, "") if isinstance(code, int) else ""
        text = message if isinstance(message, str) else "(no message)"
        return self._chained(GateError(f"{where}: {means}{_one_line(text)}"), raw)

    def _chained(self, error: GateError, cause: BaseException) -> GateError:
        error.__cause__ = cause
        return self._stopped(error)

    def violation(self, where: _Where, rule: str, why: str) -> GateError:
        """An answer that breaks the rule :data:`RULES` names ``rule``: the process is killed
        like any failure."""
        return self._broke(where, rule, why)

    # --- stopping ---

    def shutdown(self, wait: bool = True, who: str = "") -> None:
        """``shutdown``, close stdin, give the process 5 s to exit, then kill it.

        With ``wait`` false the process exits while the gate goes on (writing its results);
        :meth:`kill` then waits for what is left of the 5 s before it kills. ``who`` begins
        the warning of a ``close()`` that raised (``worker 2: `` when there are several)."""
        self.end_shutdown(self.begin_shutdown(), wait, who)

    def begin_shutdown(self) -> int | GateError | None:
        """Send ``shutdown`` (what :meth:`end_shutdown` takes): several processes are sent it
        before any answer is awaited, so their grace periods run at once, not one after
        another. ``None`` for a process already stopped."""
        if self._dead:
            return None
        try:
            return self.send(_Where("shutdown"), {})
        except GateError as exc:
            return exc

    def end_shutdown(self, sent: int | GateError | None, wait: bool = True,
                     who: str = "") -> None:
        """Await the answer to the ``shutdown`` :meth:`begin_shutdown` sent, for what is left
        of :data:`SHUTDOWN_GRACE_S` since it was sent, then close stdin (see :meth:`shutdown`)."""
        if sent is None or self._dead:
            return
        try:
            if isinstance(sent, GateError):
                raise sent
            self._grace = min(self.timeout, SHUTDOWN_GRACE_S) if self.timeout > 0 \
                else SHUTDOWN_GRACE_S
            self.timeout = max(1e-3, self._sent_at + self._grace - time.monotonic())
            self.receive(sent, _Where("shutdown"))
        except GateError as exc:
            # The results are complete: a process that misbehaves on the way out is just killed.
            # An exception of its own code there (a Python adapter's close()) is said, once, and
            # changes nothing already decided (docs/adapters.md, "Shutting down").
            # So is one that did not answer (a hang, an exit without a word): it is killed.
            cause = exc.__cause__
            if not isinstance(cause, ErrorResponse) or cause.raised:
                _warn(f"{who}{exc}; the run's results stand")
            return
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        self._dead, self._exit_by, self._who = True, time.monotonic() + SHUTDOWN_GRACE_S, who
        if wait:
            self.kill()

    def interrupt(self) -> None:
        """Kill the process group from another thread (another worker failed): the thread
        waiting on this process then sees the end of its output and stops it as after any
        failure. Nothing else is touched here, since that thread still reads the pipes."""
        self._dead = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (OSError, AttributeError):
            with suppress(OSError):
                self.proc.kill()

    def kill(self) -> None:
        """Stop the process: at once, or after a ``shutdown`` when the grace period ends. A
        call after one that completed does nothing (that one reaped the process, and its id,
        which is its group's, may be another process's by then); one that an interrupt cut
        short is done again whole."""
        if self._killed:
            return
        self._dead = True
        if self._exit_by is not None:
            lingered = self._ended(max(0.0, self._exit_by - time.monotonic())) is None
            self._exit_by = None
            if lingered:  # answered shutdown, then did not exit: said, never silently killed
                _warn(f"{self._who}the adapter answered shutdown but had not exited "
                      f"{SHUTDOWN_GRACE_S:g} s later, so it was killed (a thread or child still "
                      "running?); the run's results stand")
        # The whole process group, even when the adapter itself has ended: a child it started
        # (a server, a worker) must not outlive the run. The adapter is reaped only after this.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (OSError, AttributeError):
            if self.proc.poll() is None:
                with suppress(OSError):
                    self.proc.kill()
        try:
            # Sealed, what left the group (a detached child, a daemon) is the sandbox user's
            # still: every process of that user is killed once no adapter is live.
            if self._sealed:
                self._sealed = False
                seal.release()
        finally:
            with suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    if stream:
                        stream.close()
                except OSError:
                    pass
            if _SELECTABLE_PIPES:
                self._poller.close()
            self._killed = self.proc.returncode is not None


_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


def _warn(text: str) -> None:
    """A warning of an adapter's way out, on stderr — once a command: the many processes of a
    doctor or a selftest, one adapter, say it once (with workers, each says whose it is)."""
    with _WARNED_LOCK:
        if text in _WARNED:
            return
        _WARNED.add(text)
    print(visible(f"membench-gate: warning: {text}"), file=sys.stderr)


_EXITING: list[tuple[object, threading.Thread]] = []  # (key, thread) of processes let exit
_EXIT_ERRORS: list[BaseException] = []
_EXITING_LOCK = threading.Lock()


def let_exit(process: AdapterProcess, key: object = None,
             then: Callable[[], None] | None = None) -> bool:
    """Let a process that was sent ``shutdown`` exit on its own while the gate goes on (writes
    its results): its :meth:`~AdapterProcess.kill` — the grace period, then its process group
    killed — runs in a thread, then ``then``. Only unsealed: a sealed process's end sweeps the
    sandbox, which must happen, and fail, where the command can still report it; then this
    does nothing and returns False (the caller stops it). :func:`reap` waits for the exits of
    ``key`` (a worker's number: the next process of that number must not start beside the last
    one), or for all of them."""
    if getattr(process, "_sealed", False):  # (a stand-in process, as a benchmark's, has none)
        return False

    def end() -> None:
        try:
            process.kill()
            if then is not None:
                then()
        except BaseException as exc:  # handed to reap(), in the command's thread
            with _EXITING_LOCK:
                _EXIT_ERRORS.append(exc)

    thread = threading.Thread(target=end, name="adapter exit", daemon=False)
    with _EXITING_LOCK:
        _EXITING[:] = [(k, t) for k, t in _EXITING if t.is_alive()]
        thread.start()  # under the lock: a reap() never meets it listed but not started
        _EXITING.append((key, thread))
    return True


def reap(key: object = None, every: bool = True) -> None:
    """Wait until the processes let exit (:func:`let_exit`) have ended — those of ``key``, or
    all of them with ``every`` — and raise the first error one of them met."""
    while True:
        with _EXITING_LOCK:
            pending = [t for k, t in _EXITING if t.is_alive() and (every or k == key)]
            if not pending and _EXIT_ERRORS:
                error = _EXIT_ERRORS.pop(0)
                _EXIT_ERRORS.clear()
                raise error
        if not pending:
            return
        for thread in pending:
            joined(thread, 0.2)  # a signal reaches the main thread between the steps


def _excerpt(line: bytes) -> str:
    text = line.decode("utf-8", "replace").strip()
    return repr(text[:120] + ("…" if len(text) > 120 else ""))


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return (text[:limit - 1] + "…" if len(text) > limit else text) if text else "(no message)"


def _debug_text(where: _Where, ident: int, error: Any) -> str:
    """The error response as it came, for ``--debug``: its code, message and data, with an
    adapter's traceback (``data.traceback``) as lines of its own."""
    data = error.get("data") if isinstance(error, dict) else None
    trace = data.get("traceback") if isinstance(data, dict) else None
    shown = {**error, "data": {k: v for k, v in data.items() if k != "traceback"}} \
        if isinstance(trace, list) else error
    lines = [f"the adapter's error response to {where.method} (request id {ident}): "
             f"{_short(shown, 2000)}"]
    if isinstance(trace, list):
        lines += ["the adapter's traceback:",
                  *(f"    {line}" for line in trace[:100] if isinstance(line, str))]
    return "\n".join(lines)


@dataclass
class Capabilities:
    push: bool = False
    write: bool = False
    workers: bool = True  # false: one shared store, so one adapter process (docs/adapters.md)


CAPABILITY_FLAGS = tuple(f.name for f in dataclasses.fields(Capabilities))  # wire's names


def _said(client: AdapterClient) -> str:
    """The capabilities an ``initialize`` answer gave, in the wire's words."""
    caps = client.capabilities
    flags = ", ".join(f'"{flag}": {str(getattr(caps, flag)).lower()}'
                      for flag in CAPABILITY_FLAGS)
    return f"capabilities {{{flags}}}"


@dataclass
class AdapterClient:
    """An initialized adapter process: its name, capabilities, and the sessions suites call."""

    process: AdapterProcess
    name: str
    capabilities: Capabilities
    latencies: dict[str, list[float]] = field(default_factory=dict)

    def alike(self, first: AdapterClient) -> None:
        """Refuse a worker whose ``initialize`` answered other capabilities than the first
        worker's: the suites a run plans, and whether it may use workers at all, are decided on
        the first worker's answer (docs/adapters.md, "Workers"). Its name may differ (the
        results record worker 1's)."""
        if self.capabilities != first.capabilities:
            raise self.process.violation(
                _Where("initialize"), "alike",
                f"initialize answered {_said(self)}, the first worker's {_said(first)}")

    def session(self, suite: str) -> SuiteSession:
        return SuiteSession(self, suite)

    def call(self, method: str, params: Mapping[str, Any], suite: str | None,
             item: str | None) -> Any:
        where = _Where(method, suite, item)
        return self._receive(self.process.send(where, params), where)

    def call_each(self, method: str, requests: Iterable[Mapping[str, Any]], suite: str | None,
                  item: str | None) -> None:
        """Call ``method`` once per params, in order, results unused. Still one request at a
        time, but each request is built and encoded while the adapter works on the one before
        (without garbage collection: its objects are all freed once it is encoded)."""
        where, sent, pending = _Where(method, suite, item), None, iter(requests)
        while True:
            with collector_paused():
                params = next(pending, None)
                if params is None:
                    break
                line = self.process.encode(where, params)
                del params
            if sent is not None:
                self._receive(sent, where)
            sent = self.process.send_encoded(where, line)
        if sent is not None:
            self._receive(sent, where)

    def _receive(self, ident: int, where: _Where) -> Any:
        result = self.process.receive(ident, where)
        self.latencies.setdefault(where.method, []).append(self.process.last_latency)
        return result


def adapter_argv(command: Sequence[str] | None, python: str | None,
                 extra_paths: Sequence[Path] = ()) -> list[str]:
    """The argv that starts the adapter: its own command, or the built-in host for a Python one."""
    if command:
        return list(command)
    # The memory's own interpreter when a sandbox was prepared (install: installed it there), the
    # gate's otherwise; the paths are where the adapter's process sees them (the sealed copy).
    sandbox = seal.current()
    interpreter = sandbox.python if sandbox is not None else None
    argv = [str(interpreter or sys.executable), "-m", "membench_gate.host", str(python)]
    for folder in extra_paths:
        argv += ["--path", str(sandbox.place(folder) if sandbox is not None else folder)]
    return argv


class Handshake:
    """``initialize`` sent but not yet answered: the gate loads its fixtures meanwhile, while the
    adapter starts up and imports its dependencies."""

    def __init__(self, process: AdapterProcess, options: Mapping[str, Any]) -> None:
        self.process = process
        self.options = dict(options)
        self.where = _Where("initialize")
        self.ident = process.send(self.where, {"protocol": PROTOCOL_VERSION,
                                               "options": self.options})

    def finish(self) -> AdapterClient:
        """The answer: protocol version, name and capabilities, checked."""
        process, where = self.process, self.where
        result = process.receive(self.ident, where)
        if not isinstance(result, dict):
            raise process.violation(where, "initialize", f"initialize must return an object, "
                                    f"got {_short(result)}")
        if result.get("protocol") != PROTOCOL_VERSION:
            raise process.violation(where, "initialize", f"the adapter speaks protocol "
                                    f"{_short(result['protocol'])}; this gate speaks "
                                    f"{PROTOCOL_VERSION}" if "protocol" in result else
                                    f'initialize must answer "protocol": {PROTOCOL_VERSION}, '
                                    'got no "protocol" at all')
        name = result.get("name")
        if not isinstance(name, str) or not name:
            raise process.violation(where, "initialize", "initialize must answer a non-empty "
                                    f'string "name", got {_got(result, "name")}')
        caps = result.get("capabilities")
        if not isinstance(caps, dict) or any(
                not isinstance(caps.get(flag, False), bool) for flag in CAPABILITY_FLAGS):
            raise process.violation(where, "initialize",
                                    'capabilities must be an object of booleans, each '
                                    'optional ({"push": bool, "write": bool, "workers": bool}; '
                                    f'one left out is false, "workers" true), got '
                                    f'{_got(result, "capabilities")}')
        return AdapterClient(process, name,
                             Capabilities(bool(caps.get("push")), bool(caps.get("write")),
                                          caps.get("workers", True) is not False))


def launch(argv: Sequence[str], cwd: Path, timeout: float, options: Mapping[str, Any],
           env: Mapping[str, str] | None = None) -> Handshake:
    """Start the adapter and send ``initialize`` without waiting for the answer."""
    return greet(AdapterProcess(argv, cwd, timeout, env), options)


def greet(process: AdapterProcess, options: Mapping[str, Any]) -> Handshake:
    """Send a started adapter its ``initialize`` (not waiting for the answer)."""
    try:
        return Handshake(process, options)
    except BaseException:  # initialize could not be sent: the started process must not linger
        process.kill()
        raise


@contextmanager
def start(argv: Sequence[str], cwd: Path, options: Mapping[str, Any], timeout: float,
          env: Mapping[str, str] | None = None) -> Iterator[AdapterClient]:
    """Start and initialize the adapter; shut it down (or kill it) when the block ends."""
    process = AdapterProcess(argv, cwd, timeout, env)
    try:
        client = Handshake(process, options).finish()
        yield client
        process.shutdown()
    finally:
        process.kill()


class SuiteSession:
    """The adapter as one suite sees it: every answer checked against the contract (docs/adapters.md)."""

    def __init__(self, client: AdapterClient, suite: str) -> None:
        self.client = client
        self.suite = suite
        # Ids the store may answer with: those ingested since the last reset. ``None`` while the
        # store holds what the memory wrote itself (the writeback suite): its ids are its own.
        self.known: set[str] | None = set()
        # The pass of a suite with repeats (0-based), set by the runner before each pass: a live
        # suite keys its LLM calls by it.
        self.repeat = 0

    @property
    def capabilities(self) -> Capabilities:
        return self.client.capabilities

    def _call(self, method: str, params: Mapping[str, Any], item: str | None) -> Any:
        return self.client.call(method, params, self.suite, item)

    def broke(self, method: str, item: str | None, rule: str, why: str) -> GateError:
        """An answer that breaks the rule :data:`RULES` names ``rule`` (the protocol's, or a
        suite's own finding): the process is killed and the error carries its last stderr
        lines."""
        return self.client.process.violation(_Where(method, self.suite, item), rule, why)

    def reset(self, item: str | None = None) -> None:
        self._call("reset", {}, item)
        self.known = set()

    def ingest(self, records: Sequence[Record], item: str | None = None) -> None:
        """Store ``records``, in order, in batches of :data:`INGEST_BATCH`."""
        records = list(records)
        self.client.call_each("ingest", map(_batch, (
            records[start_at:start_at + INGEST_BATCH]
            for start_at in range(0, len(records), INGEST_BATCH))), self.suite, item)
        if self.known is None:
            self.known = set()
        self.known.update(r.id for r in records)

    def write(self, session: Session, item: str | None = None) -> None:
        if not self.capabilities.write:
            raise GateError(f"suite {self.suite} needs the memory's write path, and the adapter "
                            f"{self.client.name!r} does not declare capabilities.write")
        self._call("write", {"session": session_to_wire(session)}, item)
        self.known = None

    def search(self, query: Query, item: str) -> Answer:
        result = self._call("search", {"query": query_to_wire(query)}, item)
        return self._answer(result, query.k, item)

    def push(self, query: Query, item: str) -> list[str]:
        return self.push_answer(query, item).ids

    def push_answer(self, query: Query, item: str) -> Pushed:
        """The ids injected for a turn and the text the adapter says it injects, if it says."""
        if not self.capabilities.push:
            return Pushed(default_push(self.search(query, item), query.k))
        result = self._call("push", {"query": query_to_wire(query)}, item)
        ids = result.get("ids") if isinstance(result, dict) else None
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise self.broke("push", item, "push", f"push must return {{\"ids\": [str, ...]}}, got "
                                  f"{_short(result)}")
        text = result.get("text")
        if text is not None and not isinstance(text, str):
            raise self.broke("push", item, "push_text", f"push text must be a string or null, "
                                  f"got {_short(text)}")
        self._check_ids("push", item, ids, query.k, "ids")
        return Pushed(ids, text)

    def _check_ids(self, method: str, item: str, ids: list[str], k: int, what: str) -> None:
        if len(ids) > k:
            raise self.broke(method, item, "k", f"{len(ids)} {what} for k={k}")
        if len(set(ids)) != len(ids):
            twice = next(i for i in ids if ids.count(i) > 1)
            raise self.broke(method, item, "unique", f"id {twice!r} returned twice")
        if self.known is not None:
            unknown = [i for i in ids if i not in self.known]
            if unknown:
                raise self.broke(method, item, "known", f"id {unknown[0]!r} was never "
                                      "ingested since the last reset")

    def _answer(self, result: Any, k: int, item: str) -> Answer:
        if not isinstance(result, dict) or not isinstance(result.get("hits"), list):
            raise self.broke("search", item, "search", "search must return {\"hits\": [...], "
                                  f"\"abstain\": bool}}, got {_short(result)}")
        if not isinstance(result.get("abstain"), bool):
            raise self.broke("search", item, "abstain", f"abstain must be a boolean, got "
                                  f"{_got(result, 'abstain')}")
        hits: list[Hit] = []
        previous = math.inf
        for raw in result["hits"]:
            hit = self._hit(raw, item)
            if hit.score > previous:
                raise self.broke("search", item, "order", f"hits are not best first: {hit.id!r} "
                                      f"scores {hit.score:g} after {previous:g}")
            previous = hit.score
            hits.append(hit)
        self._check_ids("search", item, [h.id for h in hits], k, "hits")
        return Answer(hits, result["abstain"])

    def _hit(self, raw: Any, item: str) -> Hit:
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            raise self.broke("search", item, "hit", f"a hit must be {{\"id\": str, \"score\": "
                                  f"number}}, got {_short(raw)}")
        score = raw.get("score")
        problem = score_problem(score) if "score" in raw else 'that is missing (no "score" at all)'
        if problem:
            raise self.broke("search", item, "hit", f"hit {raw['id']!r} has a score {problem}")
        for name in ("text", "entity"):
            if raw.get(name) is not None and not isinstance(raw[name], str):
                raise self.broke("search", item, "hit_fields", f"hit {raw['id']!r}: {name} must be a "
                                      "string or null")
        provenance = raw.get("provenance")
        if provenance is not None and not isinstance(provenance, dict):
            raise self.broke("search", item, "hit_fields", f"hit {raw['id']!r}: provenance must be an "
                                  "object {source, session, turn} or null")
        return Hit(raw["id"], float(score), raw.get("text"), raw.get("entity"), provenance)


def _batch(records: Sequence[Record]) -> RecordBatch:
    """An ``ingest`` request's params: the records as the encoder takes them, and the records."""
    return RecordBatch({"records": [record_for_encoder(r) for r in records]}, records)


_JSON_KINDS = {str: "a string", type(None): "null", bool: "a boolean", dict: "an object",
               list: "an array"}


def score_problem(score: Any) -> str | None:
    """What is wrong with a hit's score, worded to follow "has a score", or None: a number, and
    below 1e15 in magnitude — what a results file holds, said at the call instead of when the
    results are written. (Compared, not converted: an integer of hundreds of digits has no
    float.)"""
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        kind = _JSON_KINDS.get(type(score), type(score).__name__)
        return f"that is not a number ({kind}): {_short(score)}"
    if not -MAX_MAGNITUDE < score < MAX_MAGNITUDE:
        return f"out of range: {_short(score)}"
    return None


def _earlier(answered: Any, ident: int) -> str:
    """A hint for a response to an id already answered: the request before was answered twice
    (the error is met at the next call, so its item is the next one)."""
    if type(answered) is int and answered < ident:
        return " (an earlier request's id: was that request answered twice?)"
    return ""


def _got(mapping: dict[str, Any], key: str) -> str:
    """``mapping[key]`` for an error line, or that the key is missing (not ``null``)."""
    return _short(mapping[key]) if key in mapping else f'no "{key}" at all'


def _short(value: Any, limit: int = 120) -> str:
    """``value`` for an error line: at most ``limit`` characters, and a cut one says so."""
    if isinstance(value, str):
        return repr(value[:limit]) + ("…" if len(value) > limit else "")
    if type(value) is int and len(text := str(value)) > limit:  # (a score of 301 digits)
        return f"{text[:12]}… (an integer of {len(text)} digits)"
    try:
        text = json.dumps(value, default=repr)
    except (ValueError, RecursionError):
        return type(value).__name__
    return text if len(text) <= limit else text[:limit] + "…"
