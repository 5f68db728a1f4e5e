"""Where two runs of the same config differ: the first cell, item and field.

A memory system that orders equal scores arbitrarily (an ANN index, a hash map, a thread pool)
gives a different ``hits`` list from one run to the next while every metric may stay the same;
the gate would then compare noise. ``check --verify-determinism`` runs twice and names the first
difference so it can be fixed at its source — usually by sorting ties by ``(score desc, id)``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from membench_gate.model.canonical import normalize
from membench_gate.model.results import Results

if TYPE_CHECKING:
    from membench_gate.config import Config
    from membench_gate.suites.common.fixtures import SuiteFixtures
    from membench_gate.suites.common.suite import Progress


def run_twice(config: Config, progress: Progress | None,
              preloaded: tuple[str, dict[str, SuiteFixtures]]) -> tuple[Results, Results]:
    """Two runs of ``config`` (progress shown for the first): one after the other with one
    worker; side by side with two or more, the workers shared between them (the first gets
    the odd one) and numbered apart, so no two adapter processes share a number or a temp
    folder. The second starts once every adapter of the first allowed several processes
    (``capabilities.workers``), else after the first ends."""
    from membench_gate.process import joined
    from membench_gate.run.runner import one_worker, run
    from membench_gate.run.workers import Kept, sharing

    if config.workers < 2:
        return (run(config, progress, preloaded=preloaded),
                run(config, None, preloaded=preloaded))
    first = config.with_workers((config.workers + 1) // 2)
    second = config.with_workers(config.workers // 2)
    outcome: list[Results | BaseException] = []
    allowed: list[bool] = []
    go = threading.Event()

    def told(seam: str, ok: bool, name: str) -> None:
        allowed.append(ok)
        if not ok:  # the passes go one after the other, each with its one worker
            one_worker(dict(config.by_seam())[seam], seam, name, config.workers)
        if ok and len(allowed) == len(config.by_seam()):
            go.set()

    def again() -> None:
        try:
            go.wait()
            if not all(allowed) or len(allowed) < len(config.by_seam()):
                done.wait()  # one shared store: not beside the first pass, after it
            if failed:
                return  # the first pass's error is the check's
            outcome.append(run(second, None, preloaded=preloaded,
                               first_worker=first.workers + 1, alongside=True, kept=second_pass))
        except BaseException as exc:  # raised in the main thread below
            outcome.append(exc)

    done = threading.Event()
    failed: list[bool] = []
    # The second pass's processes, lent to it: when the check stops (the first pass failed, a
    # signal) they are interrupted, so it ends at once, and it never starts after that.
    second_pass = Kept(reuse=False)
    thread = threading.Thread(target=again, name="second pass", daemon=True)
    thread.start()
    with sharing(config.workers):  # both passes' processes share the CPUs
        try:
            try:
                results = run(first, progress, preloaded=preloaded, alongside=True, on_start=told)
            except BaseException:
                failed.append(True)
                raise
            finally:
                done.set()
                go.set()
            joined(thread)  # (in steps: a signal must get in while the second pass runs)
        except BaseException:
            second_pass.close(ok=False)
            thread.join()
            raise
    second = outcome[0]
    if isinstance(second, BaseException):
        raise second
    return results, second


def _walk(a: Any, b: Any, path: str) -> str | None:
    """The path of the first difference between two canonical JSON values, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}" if path else str(key)
            found = _walk(a[key], b[key], f"{path}.{key}" if path else str(key))
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for index, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _walk(x, y, f"{path}[{index}]")
            if found:
                return found
        return f"{path} (length {len(a)} then {len(b)})" if len(a) != len(b) else None
    return None if a == b else path


def _value(data: Any, path: str) -> Any:
    """The value at a path made by :func:`_walk` (best effort, for the message)."""
    for part in path.replace("[", ".[").split("."):
        if not part or " " in part:
            return None
        try:
            data = data[int(part[1:-1])] if part.startswith("[") else data[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return data


def first_difference(first: Results, second: Results) -> str | None:
    """``cell#item field: a then b`` for the first difference (per-item detail first, since that
    is where a tie order shows), then cells and the rest; None when the runs agree."""
    a = normalize(first.model_dump(mode="json", exclude={"receipt"}))
    b = normalize(second.model_dump(mode="json", exclude={"receipt"}))
    for cell in sorted(set(a["items"]) | set(b["items"])):
        items_a, items_b = a["items"].get(cell, {}), b["items"].get(cell, {})
        for item in sorted(set(items_a) | set(items_b)):
            if item not in items_a or item not in items_b:
                return f"{cell}#{item}: present in one run only"
            field = _walk(items_a[item], items_b[item], "")
            if field:
                return f"{cell}#{item} field {_said(field, items_a[item], items_b[item])}"
    a.pop("items"), b.pop("items")
    found = _walk(a, b, "")
    return _said(found, a, b) if found else None


def _said(path: str, a: Any, b: Any) -> str:
    """``path: a then b``; a list of another length is said by its lengths alone."""
    if " (length " in path:
        return path
    return f"{path}: {_value(a, path)!r} then {_value(b, path)!r}"
