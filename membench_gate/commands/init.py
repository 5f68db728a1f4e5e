"""``membench-gate init``: scaffold a gate in a memory repository.

Writes ``membench.toml`` (the built-in suites), an adapter stub and the workflow, from the
templates in ``templates/init/``. ``--python`` (the default) scaffolds a Python class served by
the gate itself; ``--command`` a stand-alone process speaking JSON-RPC over stdio, the way an
adapter in any language plugs in. The stub is a small working memory, so ``membench-gate bless``
then ``check`` pass at once; the maintainer replaces its store with their own. Existing files are
never overwritten.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from membench_gate.errors import ExitCode, GateError
from membench_gate.files import data_dir, write_atomic

WORKFLOW = Path(".github/workflows/membench-gate.yml")
ADAPTER = Path("bench/membench_adapter.py")


def plan(root: Path, command: bool) -> dict[Path, str]:
    """The files ``init`` writes under ``root`` and their text."""
    env = Environment(loader=FileSystemLoader(str(data_dir() / "templates" / "init")),
                      undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=True,
                      lstrip_blocks=True)
    values = {"command": command}
    return {
        root / "membench.toml": env.get_template("membench.toml.j2").render(**values),
        root / ADAPTER: env.get_template("rpc_adapter.py.j2" if command
                                         else "adapter.py.j2").render(**values),
        root / WORKFLOW: env.get_template("workflow.yml.j2").render(**values),
    }


def init(config_path: Path, *, command: bool = False) -> int:
    """The ``init`` command: 0 when every file was written, 4 (nothing written) if one exists.
    ``command``: scaffold a JSON-RPC adapter process instead of a Python class."""
    root = config_path.parent if config_path.name else Path(".")
    files = plan(root, command)
    files = {(config_path if path.name == "membench.toml" else path): text
             for path, text in files.items()}
    existing = [path for path in files if path.exists()]
    if existing:
        raise GateError(f"init: {existing[0]} already exists; nothing written (move it away "
                        "or edit it by hand)")
    for path, text in files.items():
        write_atomic(path, text)
        print(f"wrote {path}")
    config = "" if config_path == Path("membench.toml") else f" --config {config_path}"
    print("next:\n"
          f"  membench-gate bless{config}      # measure and write the first baseline\n"
          f"  git add {' '.join(str(p) for p in files)} baselines/\n"
          f"  membench-gate check{config}      # the gate, as a pull request will run it\n"
          f"then replace the toy store in {root / ADAPTER} with your memory system and bless "
          "again.")
    return ExitCode.PASS


def cmd_init(args: argparse.Namespace) -> int:
    return init(args.config, command=args.rpc)
