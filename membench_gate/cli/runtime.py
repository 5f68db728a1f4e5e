"""Everything the console does to its own process, around the command it runs: streams that
cannot fail, closed descriptors, signals, the garbage collector, pydantic's plugins and the
terminal's width. (The one piece of work started ahead of the imports belongs to a command: the
git processes of ``check``, :func:`membench_gate.commands.check.cmd_check`.)

The figures below are medians of repeated runs of ``membench-gate check --results R`` (about
480 ms on a two-core machine) and ``membench-gate --help`` (about 60 ms), timed with
``time.perf_counter`` around the process, ``python -X importtime`` and ``gc.callbacks``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from types import FrameType
from typing import TextIO

from membench_gate import process
from membench_gate.defaults import GATE_ONLY_VARIABLE
from membench_gate.errors import Terminated, visible


def start() -> None:
    """What the console does before it parses the command line."""
    without_pydantic_plugins()
    tune_gc()
    process.own()  # what a command loads to measure with lives to its end (membench_gate.process)
    stop_on_signals()


def without_pydantic_plugins() -> None:
    """Validate with the gate's own schemas alone in this process: no pydantic plugin runs.

    pydantic loads a plugin from every installed distribution that registers one (an entry point
    in its ``pydantic`` group) and calls it around each validation — the job may have installed
    the pull request's code into this environment. ``PYDANTIC_DISABLE_PLUGINS=__all__`` is
    pydantic's documented switch: its loader then returns no plugin without reading any
    distribution's metadata. Measured against the two alternatives: doing nothing loads the
    plugins and scans the metadata of every installed distribution (4–7 ms with 43 of them, more
    in a CI image); replacing pydantic's private ``pydantic.plugin._loader`` with a module of no
    plugins, as earlier versions did, also spares the import of ``importlib.metadata`` the loader
    starts with (21–33 ms, about 5% of a ``check --results``) — but a pydantic release that
    imports one more name from that module would break every command. The switch is kept, for
    the gate alone: it is named in :data:`~membench_gate.defaults.GATE_ONLY_VARIABLE`, so the
    processes the gate starts (the adapter above all: the system under test) get the environment
    as it was. A switch the user set is left as it is.
    """
    if "PYDANTIC_DISABLE_PLUGINS" in os.environ:
        return
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
    own = os.environ.get(GATE_ONLY_VARIABLE, "")
    os.environ[GATE_ONLY_VARIABLE] = ",".join(filter(None, [own, "PYDANTIC_DISABLE_PLUGINS"]))


def tune_gc() -> None:
    """A command's first tens of milliseconds create some hundred thousand objects that live to
    the end (modules, classes, validators), and with the default thresholds the collector walks
    them again and again as older generations fill. Collecting the middle generation ten times
    less often, and so the oldest a hundred times less often, halves that: 25 → 13 ms of
    collections in a ``check --results``. The youngest generation, where short-lived cycles die,
    is collected as usual."""
    young, _, _ = gc.get_threshold()
    gc.set_threshold(young, 100, 100)


def freeze_gc() -> None:
    """Everything a command made is still alive at exit, and the interpreter's last collections
    walk it all: ``gc.freeze`` moves it out of the collector's sight, 60–70 ms of a
    ``check --results`` and 2–5 ms of ``--help``. Nothing the gate owns waits on such a
    collection: output files are written and closed, adapter and git processes ended; stdout,
    stderr and every exit handler are still flushed and run as usual."""
    gc.freeze()


def stop_on_signals() -> None:
    """SIGTERM (``timeout``, ``docker stop``, a cancelled job) and SIGHUP end a command the way
    Ctrl-C does: the adapter is stopped and every output file asked for is replaced by the error
    verdict, exit 4 — never a process killed mid-write with an earlier run's files in place."""
    import signal

    def stop(signum: int, frame: FrameType | None) -> None:
        if process.later_if_in_lock_step(signum, frame):  # raised once the lock is taken
            return
        for name in names:  # once is enough: a second signal must not cut the clean-up short
            signal.signal(getattr(signal, name), signal.SIG_IGN)
        raise Terminated(signal.Signals(signum).name)

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if not process.later_if_in_lock_step(signum, frame):
            signal.default_int_handler(signum, frame)  # KeyboardInterrupt, as Python's own

    # A signal the caller ignores (``nohup``) stays ignored.
    names = [name for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
             and signal.getsignal(getattr(signal, name)) is signal.SIG_DFL]
    for name in names:
        signal.signal(getattr(signal, name), stop)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt)


def columns() -> int:
    """The terminal's width for argparse's help: ``COLUMNS``, else the terminal of stdout, else
    80 — as ``shutil.get_terminal_size`` says, without importing shutil (and with it zlib, bz2
    and lzma) for every formatter argparse builds: 4–5 ms of every command."""
    try:
        width = int(os.environ["COLUMNS"])
        if width > 0:
            return width
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class Guarded:
    """A text stream whose writes cannot fail: a closed pipe (``| head -1``) drops the rest.

    The exit code is the verdict, whatever happens to stdout and stderr: a write to a reader
    that went away must not turn a REGRESSION into a crash, or into exit 0.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                self._stream.write(text)
            except (OSError, ValueError):
                self.broken = True
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self.broken = True

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def reopen_closed_descriptors() -> None:
    """Point a closed descriptor 0, 1 or 2 at /dev/null, so no file or pipe the command opens
    later lands on it (where a child process would take it for its stdin or stderr)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def devnull() -> TextIO:
    return open(os.devnull, "w", encoding="utf-8")


def settle(stream: TextIO | None) -> None:
    """Flush ``stream`` once more; if its reader is gone, point its descriptor at /dev/null so
    the interpreter's own flush at exit cannot fail (which would exit 120, not the verdict)."""
    if stream is None:
        return
    try:
        stream.flush()
    except (OSError, ValueError):
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, stream.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass


def say(line: str) -> None:
    """One line on stderr, its control characters shown as escapes: an id or an adapter's
    output in an error can never start a line of its own (a workflow command in a CI log)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(visible(line), file=sys.stderr)


def seal_finish() -> None:
    """Every adapter process has ended, and nothing of the sandbox user outlives the command
    (when it started a sealed adapter)."""
    rpc = sys.modules.get("membench_gate.adapter.rpc")
    if rpc is not None:
        rpc.reap()
    seal = sys.modules.get("membench_gate.adapter.seal")
    if seal is not None:
        seal.finish()
