"""The one error type users see: a single line, turned into exit code 4 by the CLI; the exit
codes (:class:`ExitCode`); and the one escaping of untrusted text for a terminal or a log
(:func:`visible`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from enum import IntEnum


class ExitCode(IntEnum):
    """The exit code of every command: the verdict (docs/gate.md). Bad usage and every failure
    are ERROR — never argparse's 2, which here means BLESS REQUIRED."""

    PASS = 0
    REGRESSION = 1
    BLESS_REQUIRED = 2
    INCONCLUSIVE = 3
    ERROR = 4


class GateError(Exception):
    """A user-facing failure: bad input, a failing adapter, git or GitHub trouble.

    The message is one line naming the file, field or call at fault. The CLI prints it
    (no traceback unless ``--debug``) and exits with ``exit_code`` (ERROR by default).
    ``detail`` holds supporting lines shown under it — an adapter's last stderr lines.
    """

    def __init__(self, message: str, exit_code: int = ExitCode.ERROR,
                 detail: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.detail = list(detail)


class Terminated(KeyboardInterrupt):
    """The command was asked to stop (SIGTERM, SIGHUP): handled as an interrupt — adapter
    stopped, every output file replaced by the error verdict — and described by its signal."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def exit_code_of(exc: BaseException) -> int:
    """The exit code a failure maps to: a ``GateError``'s own, else ERROR — never PASS.

    A ``SystemExit`` raised while a command runs (by code we call, or a dependency) is not a
    verdict: whatever code it carries, the gate did not decide, so it is an ERROR too.
    """
    return exc.exit_code if isinstance(exc, GateError) else ExitCode.ERROR


def describe(exc: BaseException) -> str:
    """One line for any failure: a ``GateError``'s message, else the exception and where it was
    raised (``file:line in function``), so even a bug names the call that failed. An id or an
    adapter's words in it are shown :func:`visible`: the line is one line wherever it goes (the
    terminal, the error verdict's notes, an annotation)."""
    return visible(_failure(exc))


def _stopped_by(exc: BaseException) -> BaseException | None:
    """The interrupt or the signal an error was raised while handling, if any."""
    seen = 0
    cause = exc.__cause__ or exc.__context__
    while cause is not None and seen < 32:
        if isinstance(cause, KeyboardInterrupt):  # Terminated is one
            return cause
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return None


def _failure(exc: BaseException) -> str:
    if isinstance(exc, GateError):
        return str(exc)
    if isinstance(exc, Terminated):
        return f"terminated ({exc.name})"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    stopped = _stopped_by(exc)
    if stopped is not None:  # a signal that landed inside a library, which raised its own error
        return _failure(stopped)
    import traceback  # only on a failure: start-up stays lean

    where = ""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    if frames:
        last = frames[-1]
        where = f" at {os.path.basename(last.filename)}:{last.lineno} in {last.name}()"
    if isinstance(exc, SystemExit):
        return f"unexpected exit (SystemExit({exc.code!r})){where}: not a verdict"
    if isinstance(exc, RecursionError):
        return f"input nested too deeply (RecursionError){where}"
    text = _one_line(str(exc))
    return f"internal error: {type(exc).__name__}{': ' + text if text else ''}{where} " \
           "(rerun with --debug)"


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines[:1]) + (" …" if len(lines) > 1 else "") if lines else ""


# What acts or hides instead of showing (Unicode categories): controls (a line break, a terminal
# escape), format characters (bidirectional overrides that reorder the text around them,
# zero-width characters, tags), line and paragraph separators, and lone surrogates (which no
# terminal can be sent).
_UNSEEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def visible(text: str) -> str:
    """``text`` with every control, format or separator character written as its escape
    (``\\x1b``, ``\\u202e``, ``\\U000e0041``): an id from a fixture cannot start a new line (a
    workflow command in a CI log), clear or retitle a terminal, write its clipboard, hide in
    plain sight or turn the text around it backwards. The one escaping of text for a terminal,
    a log or an annotation; once escaped, nothing is left to escape."""
    if text.isprintable():  # the common case, in C: nothing to escape
        return text
    import unicodedata  # only when there may be something to escape: start-up stays lean

    return "".join(_escape(char) if unicodedata.category(char) in _UNSEEN else char
                   for char in text)


# Terminal escape sequences: CSI (colours, cursor moves: ESC [ … final byte, or the one-byte
# 0x9b) and OSC (titles, links, clipboard: ESC ] … ended by BEL or ST, or running to the end of a
# line cut short).
_ANSI = r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c|$)"


def without_ansi(text: str) -> str:
    """``text`` without its terminal escape sequences (CSI, OSC): an adapter that logs in colour
    reads as its words in an error, not as ``\\x1b[32m``. Anything else that acts is left for
    :func:`visible` to show."""
    if "\x1b" not in text and "\x9b" not in text and "\x9d" not in text:
        return text
    import re  # only when there is a sequence to take out (re caches the compiled pattern)

    return re.sub(_ANSI, "", text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else \
        f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
