"""Start the adapter before the gate has imported and validated anything.

An adapter's start-up (its interpreter, its imports, a model it loads) is usually the longest
wait of a run. ``run`` and ``check`` therefore read the config's ``[adapter]`` table as plain TOML
— no pydantic, no other module of the gate — start the adapter and send ``initialize`` at once,
and only then import the rest and validate the whole config. The validated config is what
decides: :meth:`membench_gate.config.Config.launch` adopts this process only when it is exactly
the one the config starts (same argv, folder and options), and otherwise stops it and starts its
own. A config that turns out to be invalid stops it too, so nothing the early start did can
change a verdict.

``check --results`` has no adapter to start: it starts the git processes of its base lookup
instead (:class:`membench_gate.gitbase.Started`), which the lookup adopts when it asks from the
same folder. They only read the repository; git says the same whether asked early or late.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

if TYPE_CHECKING:
    from membench_gate.gitbase import Started
    from membench_gate.rpc import Handshake

REFERENCE_ADAPTER = "membench_gate.reference:ReferenceMemory"


def python_target(python: str | None, command: object) -> str:
    """``[adapter] python`` as the gate serves it: the reference memory when neither
    ``python`` nor ``command`` is set, ``""`` for a command."""
    return python or (REFERENCE_ADAPTER if command is None else "")


def launch(config_path: Path) -> Handshake | None:
    """The adapter of the config at ``config_path``, started with ``initialize`` sent, or
    ``None`` when the file cannot be read as plain TOML or its ``[adapter]`` table is not plainly
    well formed — the command then reports that itself, after validating the config."""
    try:
        if not config_path.is_file():  # a pipe (--config /dev/stdin) is read once, by the config
            return None
        raw = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    table = raw.get("adapter", {})
    if not isinstance(table, dict):
        return None
    command, python, options = table.get("command"), table.get("python"), table.get("options", {})
    if command is not None and not (isinstance(command, list) and command
                                    and all(isinstance(arg, str) and arg for arg in command)):
        return None
    if (python is not None and not isinstance(python, str)) or not isinstance(options, dict) \
            or (command is not None and python is not None):
        return None
    from membench_gate.rpc import adapter_argv
    from membench_gate.rpc import launch as rpc_launch

    argv = adapter_argv(command, python_target(python, command), [Path.cwd()])
    try:
        # The timeout is the validated config's, set when it adopts the process: nothing waits
        # for an answer before that.
        return rpc_launch(argv, config_path.resolve().parent, 0.0, options)
    except Exception:  # a missing executable, a permission error: reported by the command itself
        return None


def start_git(config_path: Path) -> Started | None:
    """The git processes of the base lookup, started for the config's folder (where the check
    asks git from), or ``None`` when they cannot start — the check then starts them itself and
    reports what is wrong."""
    import os

    from membench_gate.gitbase import Started

    try:
        return Started(Path(os.path.abspath(config_path)).parent)
    except Exception:
        return None
