"""GitHub Actions plumbing: outputs, the step summary, annotations.

Everything written here may carry untrusted text (ids, adapter messages), so values are encoded
the way the runner expects: outputs with a heredoc delimiter that does not occur in the value,
workflow-command data and properties percent-encoded so a ``::error::`` inside an id stays text,
and their other control characters shown as escapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from membench_gate.errors import visible

MAX_ANNOTATIONS = 10


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
    # Deterministic and collision-free: grow the delimiter until the value cannot contain it.
    delimiter = "MEMBENCH_GATE_EOF"
    while delimiter in value:
        delimiter += "_"
    return delimiter


def format_outputs(outputs: Mapping[str, str]) -> str:
    """``$GITHUB_OUTPUT`` text for ``outputs``; every value is written multi-line safe."""
    chunks = []
    for name, value in outputs.items():
        delimiter = _delimiter(value)
        chunks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(chunks)


def append(path: Path | None, text: str) -> bool:
    """Append ``text`` to a runner file (``$GITHUB_OUTPUT``, ``$GITHUB_STEP_SUMMARY``); False when not
    running in Actions (no such file)."""
    if path is None:
        return False
    with open(path, "a", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    return True
