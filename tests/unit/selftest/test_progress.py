"""``membench_gate/selftest/sensitivity.py``: a slot's progress line reaches stderr whole."""

from __future__ import annotations

import sys
import threading

import pytest

from membench_gate.selftest.sensitivity import announce


class Writes:
    """A stream that keeps each ``write`` call apart."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            self.calls.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_each_progress_line_is_one_write_so_slots_never_run_into_each_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    stream = Writes()
    monkeypatch.setattr(sys, "stderr", stream)
    threads = [threading.Thread(target=lambda n=n: [announce(f"mutant {n} (worker {n})")
                                                    for _ in range(50)]) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(stream.calls) == 100
    assert all(call.startswith("selftest: mutant ") and call.endswith(")\n")
               and call.count("\n") == 1 for call in stream.calls), stream.calls[:4]
