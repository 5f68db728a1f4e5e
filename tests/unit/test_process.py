"""``membench_gate/process.py``: only the console's own process freezes what it loaded."""

from __future__ import annotations

import gc

import pytest

from membench_gate import process


def test_what_a_command_loaded_is_frozen_only_when_the_console_owns_the_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = [[n] for n in range(1000)]  # containers the collector tracks
    monkeypatch.setattr(process, "_owned", False)
    process.keep()
    assert gc.get_freeze_count() == 0  # a library call (this test process) changes nothing
    monkeypatch.setattr(process, "_owned", True)
    try:
        process.keep()
        assert gc.get_freeze_count() >= len(loaded)
    finally:
        gc.unfreeze()
    del loaded


def test_the_console_owns_its_process() -> None:
    import subprocess
    import sys

    code = ("import gc; from membench_gate.cli import runtime; from membench_gate import process; "
            "runtime.start(); process.keep(); print(gc.get_freeze_count() > 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


def test_a_host_served_in_this_process_leaves_nothing_frozen() -> None:
    """Served as a library call, the host leaves the caller's collector as it was (it freezes
    a large ingest's store only until the next reset)."""
    import io

    from membench_gate.adapter import host

    lines = [b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":1}}\n',
             b'{"jsonrpc":"2.0","id":2,"method":"shutdown"}\n']
    before = gc.get_freeze_count()
    assert host.serve("membench_gate.reference:ReferenceMemory", lines, io.BytesIO()) == 0
    assert gc.get_freeze_count() == before


DEFERRED = """
import os, signal, sys
from membench_gate.cli import runtime
from membench_gate.process import signals_deferred
runtime.stop_on_signals()
steps = []
try:
    with signals_deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # (the interpreter runs its handlers between these)
            pass
        steps.append("inside, to the end")
    steps.append("after the block")
except BaseException as exc:
    steps.append(type(exc).__name__)
print(steps, signal.getsignal(signal.SIGTERM) is signal.SIG_IGN)
"""


def test_a_signal_while_deferred_is_raised_when_the_block_ends() -> None:
    """SIGTERM inside the block: the block runs to its end, then the command's own handler
    raises (and, as it does, ignores further signals); outside it, at once."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", DEFERRED], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split("\n")[0] == "['inside, to the end', 'Terminated'] True", done
    control = DEFERRED.replace("with signals_deferred():", "if True:")
    done = subprocess.run([sys.executable, "-c", control], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split("\n")[0] == "['Terminated'] True", done


class _Stop(Exception):
    pass


def _stop(signum: int, frame: object) -> None:
    raise _Stop


@pytest.mark.parametrize("wait", ["awaited", "joined", "plain"])
def test_a_signal_another_thread_took_gets_into_the_main_threads_wait(wait: str) -> None:
    # The signal is delivered to the thread the main thread waits for: Python runs its handler
    # in the main thread, at its next chance. A wait in steps gives it one at once; a plain
    # wait (the control) only when the other thread is done, a second later.
    import signal
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    old = signal.signal(signal.SIGUSR1, _stop)
    started = threading.Event()

    threads: list[threading.Thread] = []

    def work() -> None:
        threads.append(threading.current_thread())
        started.set()
        time.sleep(1.2)

    try:
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(work)
            started.wait()
            (thread,) = threads
            threading.Timer(0.1, signal.pthread_kill, (thread.ident, signal.SIGUSR1)).start()
            begun = time.monotonic()
            with pytest.raises(_Stop):
                if wait == "awaited":
                    process.awaited(future)
                elif wait == "joined":
                    process.joined(thread)
                else:
                    future.result()
                    time.sleep(0)  # (the handler runs here, once the wait is over)
            took = time.monotonic() - begun
    finally:
        signal.signal(signal.SIGUSR1, old)
    if wait == "plain":
        assert took > 0.9  # the control: the wait was not cut short
    else:
        assert took < 0.6


def test_a_signal_in_a_lock_step_is_raised_again_a_moment_later() -> None:
    import signal
    import sys
    import time

    class Lock:
        def __enter__(self) -> object:
            return sys._getframe()

        def __exit__(self, *_: object) -> None:
            pass

    with Lock() as entering:
        assert process.in_lock_step(entering)  # type: ignore[arg-type]
    assert not process.in_lock_step(sys._getframe())
    got: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, _: got.append(signum))
    try:
        assert not process.later_if_in_lock_step(signal.SIGUSR1, sys._getframe())
        assert process.later_if_in_lock_step(signal.SIGUSR1, entering)  # type: ignore[arg-type]
        deadline = time.monotonic() + 5
        while not got and time.monotonic() < deadline:
            time.sleep(0.005)  # the main thread runs the handler between these
        assert got == [signal.SIGUSR1]  # raised again, by a timer, to the main thread's handler
    finally:
        signal.signal(signal.SIGUSR1, previous)
