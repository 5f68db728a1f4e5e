"""Fail-closed outputs, for every command that writes files: a command that fails — any
exception, a SystemExit or a signal included — replaces each file it was asked to write by the
error verdict, so an earlier run's file never stays behind to be merged, gated or shown as this
run's.

And outputs that cannot be what they are asked to be are refused before any work
(:func:`refuse_clashes`): a directory, two outputs naming one file, an output that is one of the
command's inputs — the config, the baseline its ``[gate]`` names, a fixture folder of a suite it
enables, a file it is given to read. Such a path is never written, not even with the error
verdict: that would destroy what the gate reads (``run --out membench.toml``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from membench_gate.defaults import BUILTIN, DEFAULT_BASELINE
from membench_gate.errors import GateError

if TYPE_CHECKING:
    from membench_gate.model.verdict import BaseInfo, Verdict

Named = Mapping[str, "Path | None"]  # a command's files by flag: {"--json": Path("v.json"), …}
NONE: Named = MappingProxyType({})


@dataclass
class Known:
    """What a failing command had found before it failed, for its error verdict: the base
    commit, once resolved (a crash of the adapter then still says what it was checked against)."""

    base: BaseInfo | None = None


@contextlib.contextmanager
def fail_closed(config: str | None, files: Named = NONE, reports: Named = NONE, *,
                config_file: Path | None = None, reads: Named = NONE) -> Iterator[Known]:
    """Refuse outputs that clash (:func:`refuse_clashes`), then run the block; if either fails,
    write the error verdict of ``config`` (the ``--config`` it names, or None) over each of
    ``files`` (JSON) and ``reports`` (Markdown) that is given and is no input — the config file
    (``config_file``, by default ``config``), its baseline and fixtures, ``reads`` — and no
    directory, then let the failure go on. The block may record in the :class:`Known` it is
    given what the error verdict can still say."""
    config_file = config_file if config_file is not None or config is None else Path(config)
    known = Known()
    try:
        refuse_clashes({**files, **reports}, config_file, reads)
        yield known
    except BaseException as exc:
        from membench_gate.adapter import seal
        from membench_gate.model.verdict import error_verdict

        writable = _writable(config_file, reads)
        replace_outputs(error_verdict(exc, config, seal.isolation(), known.base),
                        [p for p in files.values() if writable(p)],
                        [p for p in reports.values() if writable(p)])
        raise


class _Input(NamedTuple):
    """A file (or a folder, and everything in it) a command reads, and what it is, in words."""

    path: Path  # resolved
    what: str
    folder: bool = False

    def holds(self, where: Path) -> bool:
        return where == self.path or (self.folder and where.is_relative_to(self.path))


def refuse_clashes(outputs: Named, config: Path | None, reads: Named = NONE) -> None:
    """Refuse, before anything is read or written, what ``outputs`` (paths by flag; None: not
    asked for) cannot be: a directory; two outputs naming one file (after resolving them: the
    second would overwrite the first); a file the command reads — the ``config`` file, the
    baseline its ``[gate] baseline`` names, anything in a fixture folder of a suite it enables,
    or one of ``reads`` (files given to read, by flag). A ``GateError`` naming the flag: exit 4,
    one line. The config is read only for the paths it names (with any problem of it left to the
    command), and only when an output is asked for."""
    given = [(flag, path) for flag, path in outputs.items() if path is not None]
    if not given:
        return
    seen: dict[Path, str] = {}
    for flag, path in given:
        if path.is_dir():
            raise GateError(f"{flag} {path}: is a directory (give a file to write)")
        blocked = _file_above(path)
        if blocked is not None:
            raise GateError(f"{flag} {path}: {blocked} is a file, not a folder (give a path "
                            "whose folders are folders)")
        where = _resolved(path)
        if where in seen:
            raise GateError(f"{seen[where]} and {flag} {path} name the same file: give each "
                            "output a file of its own")
        seen[where] = f"{flag} {path}"
    inputs = _inputs(config, reads)
    for flag, path in given:
        where = _resolved(path)
        found = next((read for read in inputs if read.holds(where)), None)
        if found is not None:
            raise GateError(f"{flag} {path}: {found.what}, an input of the gate: write the "
                            "output to another file")


def _file_above(path: Path) -> Path | None:
    """The nearest existing folder of ``path`` that is not a folder (a file where the output's
    folder would be made), or None."""
    for above in path.absolute().parents:
        if above.exists():
            return None if above.is_dir() else above
    return None


def _writable(config: Path | None, reads: Named) -> Callable[[Path | None], bool]:
    """Whether the error verdict may be written at a path: given, no directory, no input. (A
    failure before the outputs were checked must not write over an input either.)"""
    try:
        inputs = _inputs(config, reads)
    except Exception:  # (only its own paths, then)
        inputs = [_Input(_resolved(p), "") for p in (config, *reads.values()) if p is not None]
    return lambda path: path is not None and not path.is_dir() and _file_above(path) is None \
        and not any(read.holds(_resolved(path)) for read in inputs)


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inputs(config: Path | None, reads: Named) -> list[_Input]:
    """What a command reads that an output must not be: ``reads``, and the config with the
    baseline and the fixture folders it names (as the gate finds them: beside the config)."""
    found = [_Input(_resolved(path), f"is the {flag} file") for flag, path in reads.items()
             if path is not None]
    if config is None:
        return found
    here = _resolved(config)
    found.append(_Input(here, "is the config file"))
    table = _toml(config)
    gate = table.get("gate")
    baseline = gate.get("baseline") if isinstance(gate, dict) else None
    baseline = baseline if isinstance(baseline, str) and baseline else DEFAULT_BASELINE
    found.append(_Input(_resolved(Path(os.path.normpath(here.parent / baseline))),
                        f"is the baseline file ([gate] baseline of {config})"))
    suites = table.get("suites")
    for name, options in (suites.items() if isinstance(suites, dict) else ()):
        entries = options.get("fixtures", [BUILTIN]) if isinstance(options, dict) else []
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, str) and entry:
                found.append(_Input(_resolved(_fixture_folder(name, entry, here.parent)),
                                    f"is in the fixture folder {entry!r} of [suites.{name}]",
                                    folder=True))
    return found


def _fixture_folder(suite: str, entry: str, base_dir: Path) -> Path:
    """Where a ``fixtures`` entry is, as the suites find it (suites/common/folders.py)."""
    if entry == BUILTIN:
        from membench_gate.files import data_dir

        return data_dir() / "fixtures" / suite
    return base_dir / entry


def _toml(config: Path) -> dict[str, Any]:
    """The config's tables, or none when it cannot be read: what is wrong with it is the
    command's to say, with the outputs guarded (the config itself and the default baseline
    are protected then)."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        return tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}


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
