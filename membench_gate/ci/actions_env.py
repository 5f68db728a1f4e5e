"""GitHub Actions plumbing: outputs, the step summary, annotations.

Everything written here may carry untrusted text (ids, adapter messages), so values are encoded
the way the runner expects: outputs with a random heredoc delimiter of their own that does not
occur in the value, workflow-command data and properties percent-encoded so a ``::error::`` inside
an id stays text, and their other control characters shown as escapes. The runner's files are
written only after putting back what anything else wrote to them (:class:`RunnerFiles`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from membench_gate.errors import visible

MAX_ANNOTATIONS = 10
FILE_COMMANDS = ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH",
                 "GITHUB_STATE")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def escape_data(text: str) -> str:
    """Encode the message part of a workflow command: line breaks and ``%`` as the runner
    decodes them, every other control or format character :func:`visible` (the log shows the
    message as it is, terminal escapes included)."""
    return visible(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    """Encode a property value (``title=…``) of a workflow command."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, title: str | None = None) -> str:
    """One workflow command line: ``::error title=…::message``."""
    props = f" title={escape_property(title)}" if title else ""
    return f"::{level}{props}::{escape_data(message)}"


def _delimiter(value: str) -> str:
    # Fresh and random for every value: nothing written before ours (an open ``name<<DELIM``
    # line) or inside a value can know where our heredoc ends.
    while True:
        delimiter = f"membench_gate_{secrets.token_hex(16)}"
        if delimiter not in value:
            return delimiter


def format_outputs(outputs: Mapping[str, str]) -> str:
    """``$GITHUB_OUTPUT`` text for ``outputs``: each value a heredoc with its own delimiter."""
    chunks = []
    for name, value in outputs.items():
        delimiter = _delimiter(value)
        chunks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(chunks)


class _State(NamedTuple):
    """What is at a path: the file (device, inode) and its bytes, or nothing."""

    ident: tuple[int, int] | None
    data: bytes | None


def _state(path: Path) -> _State:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return _State(None, None)
    if not stat.S_ISREG(info.st_mode):  # a link, a pipe, a folder: not the runner's file
        return _State((info.st_dev, info.st_ino), None)
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        return _State((info.st_dev, info.st_ino), handle.read())


class RunnerFiles:
    """The runner's file-command files (``$GITHUB_OUTPUT``, ``$GITHUB_STEP_SUMMARY``,
    ``$GITHUB_ENV``, ``$GITHUB_PATH``, ``$GITHUB_STATE``) as the step found them.

    The runner reads them after the step, and every line in them counts as the step's: a
    ``verdict=pass`` written before ours by a process that found the file (through
    ``$RUNNER_TEMP`` or another process's environment), then an open heredoc to swallow ours,
    would set the outputs; a ``✅ PASS`` would open the job summary. So the step notes each file
    before any code of the pull request runs and, once that code is done and before the step
    writes anything, puts back every file something else wrote (:meth:`restore`); the step's own
    lines are then the only ones. What a process still running writes after the step's last
    write is beyond this (sealing ends such processes: docs/action.md).
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self._paths = {name: Path(env[name]) for name in FILE_COMMANDS if env.get(name)}
        self._found = {name: _state(path) for name, path in self._paths.items()}

    def restore(self) -> list[str]:
        """Put back every file that changed since the step began; their names (``$NAME``)."""
        changed = []
        for name, path in self._paths.items():
            found = self._found[name]
            if _state(path) == found:
                continue
            changed.append(f"${name}")
            _remove(path)
            if found.data is not None:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(found.data)
                self._found[name] = _state(path)
        return changed

    def append(self, name: str, text: str) -> bool:
        """Append ``text`` to the file ``$name``; False when the step has no such file (not
        running in Actions)."""
        path = self._paths.get(name)
        if path is None:
            return False
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
