"""``membench-gate history``: the gated metrics across the baselines blessed on the base branch.

Every blessed baseline is a commit that changed ``[gate] baseline``; git lists them (one
``git log`` on the base branch, found as ``check`` finds it) and reads each version. A version
that is not a readable baseline is skipped with a note naming its commit. Exit 0 when the
history is shown, 4 (ERROR, one line) when there is none to show.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from membench_gate.errors import ExitCode, GateError


def cmd_history(args: argparse.Namespace) -> int:
    from membench_gate.base import git as gitbase
    from membench_gate.base.side import beside, config_relpath
    from membench_gate.ci.settings import Context
    from membench_gate.commands.outputs import refuse_clashes
    from membench_gate.config import load_config
    from membench_gate.files import write_atomic
    from membench_gate.report import history

    refuse_clashes({"--html": args.html}, args.config)
    config = load_config(args.config)
    with gitbase.open_repo(Path(os.path.abspath(args.config)).parent) as repo:
        rel = beside(config_relpath(repo.root, args.config), config.baseline, "gate.baseline")
        base = repo.resolve_base(None, Context.from_env())
        if base is None:
            raise GateError(f"no base branch in {repo.root} to read the history of {rel} from "
                            "(no commit yet, and no origin default branch nor local main or "
                            "master)")
        versions = repo.file_history(base.sha, rel, since=args.since)
    where = f"{base.ref} ({base.sha[:12]})"
    if not versions:
        if args.since:
            raise GateError(f"no commit after {args.since} changed {rel} on {where}")
        raise GateError(f"{rel} was never committed on {where}: bless a baseline and commit it "
                        "first")
    found, notes = history.blessed(versions, rel)
    if not found:
        raise GateError(f"no commit of {rel} on {where} holds a baseline this version reads: "
                        + "; ".join(notes))
    keys = [history.parse_key(text, found) for text in args.metrics] or \
        history.gated_keys(found)
    heading = (f"{rel} on {where}: {len(found)} blessed baseline"
               f"{'' if len(found) == 1 else 's'}"
               + (f" after {args.since}" if args.since else ""))
    print(history.table(found, keys, notes, heading), end="")
    if args.html is not None:
        write_atomic(args.html, history.page(found, keys, notes, heading))
        print(f"wrote {args.html}")
    return ExitCode.PASS
