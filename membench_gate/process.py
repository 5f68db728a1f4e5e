"""What the console's own process may do to itself and a library call must not.

A command of the console is the only code in its process, and everything it loads to measure
with (the fixtures: a LongMemEval corpus is millions of objects) lives to its end. The
collector walks such objects again and again as the heap grows and finds nothing to free: a
116,000-turn run spent 0.45 s of the gate's 3 s of CPU in collections, 0.34 s of it in full
ones. The console says it owns the process (:func:`own`); what the command then loads is moved
out of the collector's sight (:func:`keep`). Called as a library (tests, benchmarks, a user's
script), nothing changes.

Signals are the process's too: :func:`signals_deferred` holds SIGINT, SIGTERM and SIGHUP back over
a few lines that must not be cut in the middle (a command's or a library caller's alike), and the
main thread waits for other threads only in steps (:func:`joined`, :func:`awaited`): Python runs a
signal's handler in the main thread, and when another thread took the signal, a wait with no
timeout is not cut short — a terminated ``check --verify-determinism`` waited for its whole second
pass, a selftest for the run it was waiting on. And the console's handlers raise nothing in the
step of a lock (:func:`later_if_in_lock_step`): the signal is raised again a moment later.
"""

from __future__ import annotations

import gc
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from concurrent.futures import wait as _wait
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")
WAIT_S = 0.2  # how often the main thread, waiting for another, lets a signal in

_owned = False


def own() -> None:
    """The console's: this process is one command's, start to end."""
    global _owned
    _owned = True


def keep() -> None:
    """Everything alive now lives to the end of the command: ``gc.freeze`` it when the console
    owns the process (objects are still freed by their reference counts; only the collector no
    longer walks them)."""
    if _owned:
        gc.freeze()


@contextmanager
def signals_deferred() -> Iterator[None]:
    """While this lasts, SIGINT, SIGTERM and SIGHUP are noted instead of raised, and the first
    noted is raised when it ends (by the handler it would have met). For code inside the
    threading module's own locks: handing work to a thread pool takes a semaphore's lock, and a
    signal's exception raised between taking it and the ``with`` that gives it back left it held
    — the pool's threads then wait for it forever, and so does the command. Only in the main
    thread (where Python runs its handlers); a signal whose handler is not Python's own (the
    default, or ignored) is left as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[tuple[int, Any]] = []
    saved: dict[int, Any] = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        handler = signal.getsignal(number) if number is not None else None
        if callable(handler):
            saved[number] = handler
            signal.signal(number, lambda signum, frame: noted.append((signum, frame)))
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)
        if noted:
            signum, frame = noted[0]
            saved[signum](signum, frame)


# Where a signal's exception must not be raised: a lock was just taken (or is being given back)
# in Python code, and the statement that gives it back has not begun — ``__enter__`` returning
# after its ``acquire``, as the import system's locks and ``threading.Condition`` do.
_LOCK_STEPS = frozenset({"__enter__", "__exit__", "acquire", "release"})
RETRY_S = 0.01  # how soon a signal held back from such a step is raised again
_RETRIES = 100  # and at most how often (a second): then it is raised wherever it lands


def in_lock_step(frame: FrameType | None) -> bool:
    """Is ``frame`` (a signal's, as its handler gets it) taking or giving back a lock?"""
    return frame is not None and frame.f_code.co_name in _LOCK_STEPS


_held_back = 0


def later_if_in_lock_step(signum: int, frame: FrameType | None) -> bool:
    """For a handler that raises: when the signal landed in a lock's step
    (:func:`in_lock_step`), raise it again :data:`RETRY_S` later instead, and say so (``True``:
    the handler returns). An exception raised between a lock's ``acquire`` and the ``with`` that
    gives it back leaves it held: the global import lock so left made every other thread's next
    import wait for it forever, and a terminated selftest for those threads. Signals are still
    raised, once they land elsewhere, within a second."""
    global _held_back
    if not in_lock_step(frame) or _held_back >= _RETRIES:
        return False
    _held_back += 1
    again = threading.Timer(RETRY_S, signal.raise_signal, (signum,))
    again.daemon = True
    again.start()
    return True


def joined(thread: threading.Thread, step: float = WAIT_S) -> None:
    """``thread.join()``, in steps of ``step``, so a signal's handler runs between them — never
    inside one: each step holds the signals back (:func:`signals_deferred`)."""
    while thread.is_alive():
        with signals_deferred():
            thread.join(step)


def awaited(future: Future[T]) -> T:
    """``future.result()``, waited for in steps of :data:`WAIT_S`, so a signal's handler runs
    between them. Never inside one: a step takes the future's lock (``concurrent.futures.wait``
    acquires it in a loop of Python code), and a signal's exception raised just after it was
    taken left it held by the main thread — the thread finishing the run then waited for it
    forever to set the result, and a terminated selftest for that thread."""
    while True:
        with signals_deferred():
            if _wait([future], timeout=WAIT_S).done:
                break
    with signals_deferred():
        failed = future.exception()
    if failed is not None:
        raise failed
    return future.result()
