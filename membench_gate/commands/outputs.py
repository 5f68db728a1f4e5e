"""Fail-closed outputs, for every command that writes files: a command that fails — any
exception, a SystemExit or a signal included — replaces each file it was asked to write by the
error verdict, so an earlier run's file never stays behind to be merged, gated or shown as this
run's."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from membench_gate.model.verdict import Verdict


@contextlib.contextmanager
def fail_closed(config: str | None, files: Iterable[Path | None] = (),
                reports: Iterable[Path | None] = ()) -> Iterator[None]:
    """Run the block; if it fails, write the error verdict of ``config`` (the ``--config`` it
    names, or None) over each of ``files`` (JSON) and ``reports`` (Markdown) that is not None,
    then let the failure go on."""
    try:
        yield
    except BaseException as exc:
        from membench_gate.adapter import seal
        from membench_gate.model.verdict import error_verdict

        replace_outputs(error_verdict(exc, config, seal.isolation()), files, reports)
        raise


def replace_outputs(verdict: Verdict, files: Iterable[Path | None],
                    reports: Iterable[Path | None]) -> None:
    """Write ``verdict`` over every output asked for (JSON files, Markdown reports): a failed
    command never leaves an earlier run's files behind to be read as this run's."""
    from membench_gate.model.canonical import canonical_dumps

    text = canonical_dumps(verdict.model_dump(mode="json"))
    stopped: BaseException | None = None
    for path, content in [*((p, lambda: text) for p in files),
                          *((p, lambda: _error_report(verdict)) for p in reports)]:
        if path is None:
            continue
        try:
            _replace(path, content)
        except BaseException as exc:  # (Ctrl-C again): every other file is replaced all the same
            stopped = stopped or exc
    if stopped is not None:
        raise stopped


def _error_report(verdict: Verdict) -> str:
    try:
        from membench_gate.report.render import render

        return render(verdict, None, None, limit=None)
    except Exception:
        return f"## membench-gate: ERROR\n\n{verdict.notes[0] if verdict.notes else ''}\n"


def _replace(path: Path, text: Callable[[], str]) -> None:
    from membench_gate.files import write_atomic

    try:
        write_atomic(path, text())
    except Exception:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
