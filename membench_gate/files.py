"""Files the gate reads and writes: atomic writes, safe JSON, user text files, the data folder.

A leaf: it imports nothing of the gate but :mod:`membench_gate.errors`. Every file we did not
write is read through :func:`load_json` or :func:`read_text` (one ``GateError`` line for every
way it can be wrong); every file we write goes through :func:`write_atomic` (never half-written).
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from membench_gate.errors import GateError

# Numbers in results, baselines and verdicts stay below this magnitude, so rounding to 4 decimals
# is exact in a double and never overflows the decimal context: a larger one is an error naming
# its field, not an exception deep in the writer.
MAX_MAGNITUDE = 1e15
# JSON deeper than this is refused before anything walks it: no file of ours nests past a dozen.
MAX_DEPTH = 64


class NumberError(GateError):
    """A number a file cannot hold (not finite, or too large); ``where`` names its field."""


def number_problem(value: float) -> str | None:
    """Why a number cannot be written to a file (not finite, or too large), or None."""
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        return f"cannot write a non-finite number ({value})"
    if abs(number) >= MAX_MAGNITUDE:
        return f"{value:g} is out of range (a file holds numbers below 1e15 in magnitude)"
    return None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file and a rename: never a half-written file.

    The file gets the mode a plain write would give it: an existing file keeps its mode, a new
    one gets 0666 less the umask (0644 usually) — not the temp file's private 0600. A directory
    at ``path`` is a ``GateError`` naming it, before any temp file is made.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:  # a file where a folder would be
        raise GateError(f"{path}: {exc.filename} is a file, not a folder") from exc
    try:
        found = path.stat().st_mode
    except OSError:
        found = None
    if found is not None and stat.S_ISDIR(found):
        raise GateError(f"{path}: is a directory")
    mode = stat.S_IMODE(found) if found is not None else 0o666 & ~_umask()
    import tempfile  # (with shutil, bz2 and lzma: a check that writes nothing never needs it)

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_numbers(obj: Any, label: str, where: str = "") -> None:
    """Every number in a JSON value finite and below ``MAX_MAGNITUDE``, else a ``GateError``
    naming the file and the field (iterative: depth is checked separately)."""
    # A results file holds tens of thousands of numbers: a plain walk finds whether one is bad,
    # and only then the walk that names fields looks for which.
    if _all_writable(obj):
        return
    stack: list[tuple[Any, str]] = [(obj, where)]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            stack += [(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, f"{path}[{i}]") for i, v in enumerate(value)]
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            problem = number_problem(value)
            if problem is not None:
                raise NumberError(f"{label}: {path or '(top level)'}: {problem}")


def _all_writable(obj: Any) -> bool:
    """Whether every number in ``obj`` can be written (what ``round4`` accepts, without rounding)."""
    stack = [obj]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
        elif kind is float or kind is int:
            if not -MAX_MAGNITUDE < value < MAX_MAGNITUDE:  # NaN fails every comparison
                return False
        elif kind not in (str, bool, type(None)):
            return False  # anything else (a subclass, a tuple): the exact walk decides
    return True


def _check_depth(obj: Any, label: str, numbers: bool = False) -> bool:
    """Refuse JSON nested deeper than ``MAX_DEPTH``. With ``numbers``, also say whether every
    number in it can be written (:func:`_all_writable`), in the same pass: a results file is
    walked once, not twice."""
    level, depth, writable = [obj], 1, True
    while level:  # one level of nesting at a time: no tuple per value
        if depth > MAX_DEPTH:
            raise GateError(f"{label}: JSON nested deeper than {MAX_DEPTH} levels")
        inner: list[Any] = []
        for value in level:
            kind = type(value)  # json.loads makes plain dicts and lists, never subclasses
            if kind is dict:
                inner.extend(value.values())
            elif kind is list:
                inner.extend(value)
            elif numbers and (kind is float or kind is int) \
                    and not -MAX_MAGNITUDE < value < MAX_MAGNITUDE:  # NaN fails every comparison
                writable = False
        level, depth = inner, depth + 1
    return writable


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(data: bytes | str, label: str) -> Any:
    """Parse JSON from a file we did not write: one ``GateError`` line for every way it can be
    wrong (syntax, encoding, NaN/Infinity, nesting too deep, a number too long to read)."""
    return load_json_writable(data, label, numbers=False)[0]


def load_json_writable(data: bytes | str, label: str, numbers: bool) -> tuple[Any, bool]:
    """:func:`load_json`, and (with ``numbers``) whether every number in it can be written."""
    try:
        value = json.loads(data, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise GateError(f"{label}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    except UnicodeDecodeError as exc:
        raise GateError(f"{label}: not UTF-8 text ({exc.reason})") from exc
    except RecursionError as exc:
        raise GateError(f"{label}: JSON nested too deeply") from exc
    except ValueError as exc:
        raise GateError(f"{label}: invalid JSON: {str(exc).splitlines()[0]}") from exc
    return value, _check_depth(value, label, numbers)


def read_text(path: Path, label: str, what: str, hint: str = "") -> str:
    """A UTF-8 text file the user wrote (a config, a fixture): one ``GateError`` line naming
    ``what`` it is when it is missing or unreadable (``hint`` says what to do when missing)."""
    return decode_text(read_raw(path, label, what, hint), label, what)


def read_raw(path: Path, label: str, what: str, hint: str = "") -> bytes:
    """The bytes of a file the user wrote, one ``GateError`` line when it is missing or
    unreadable (:func:`decode_text` makes them its text)."""
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise GateError(f"{label}: {what} not found{hint}") from exc
    except OSError as exc:
        raise GateError(f"{label}: cannot read {what}: {exc}") from exc


def decode_text(data: bytes, label: str, what: str) -> str:
    """What :func:`read_raw` read, as text: UTF-8, its line ends read as Python reads a text
    file (``\\r\\n`` and ``\\r`` as ``\\n``)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GateError(f"{label}: cannot read {what}: {exc}") from exc
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def read_file(path: Path, label: str | None = None) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise GateError(f"{label or path}: file not found") from exc
    except OSError as exc:
        raise GateError(f"{label or path}: cannot read: {exc.strerror}") from exc


def data_dir() -> Path:
    """Folder holding ``fixtures/`` and ``templates/``: inside the wheel, or the source checkout."""
    here = Path(__file__).resolve().parent  # the package's folder (no importlib.resources import)
    packaged = here / "_data"
    if (packaged / "fixtures").is_dir():
        return packaged
    return here.parent
