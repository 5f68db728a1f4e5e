"""GitHub Actions plumbing: outputs, the step summary, annotations, the event payload.

Everything written here may carry untrusted text (ids, adapter messages), so values are encoded
the way the runner expects: outputs with a heredoc delimiter that does not occur in the value,
workflow-command data and properties percent-encoded so a ``::error::`` inside an id stays text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from membench_gate.errors import GateError

MAX_ANNOTATIONS = 10


def escape_data(text: str) -> str:
    """Encode the message part of a workflow command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


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


def append(path_var: str, text: str, env: Mapping[str, str] | None = None) -> bool:
    """Append ``text`` to the file named by ``$path_var``; False when not running in Actions."""
    env = os.environ if env is None else env
    target = env.get(path_var)
    if not target:
        return False
    with open(target, "a", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    return True


def event_payload(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The event payload (``$GITHUB_EVENT_PATH``), or {} outside Actions."""
    env = os.environ if env is None else env
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GateError(f"{path}: cannot read the event payload: {exc}") from exc
    if not isinstance(data, dict):
        raise GateError(f"{path}: the event payload is not a JSON object")
    return data


def pull_request_number(env: Mapping[str, str] | None = None) -> int | None:
    """The PR number of a ``pull_request`` run (payload, then ``refs/pull/N/merge``)."""
    env = os.environ if env is None else env
    pull = event_payload(env).get("pull_request")
    number = pull.get("number") if isinstance(pull, dict) else None
    if isinstance(number, int) and not isinstance(number, bool):
        return number
    ref = env.get("GITHUB_REF", "")
    parts = ref.split("/")
    if len(parts) == 4 and parts[:2] == ["refs", "pull"] and parts[2].isdigit():
        return int(parts[2])
    return None
