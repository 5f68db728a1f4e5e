"""``membench-gate check``: gate this working tree against the base commit's baseline.

What the check does is :func:`membench_gate.commands.compare.check`; this module only reads
the arguments, and imports it once the output files are guarded and git is started: that import
is most of a ``check --results`` (170–280 ms), and a signal during it must not leave an earlier
run's files in place.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from membench_gate.commands.outputs import fail_closed

if TYPE_CHECKING:
    from membench_gate.base.git import Started


def cmd_check(args: argparse.Namespace) -> int:
    git = None
    try:
        with fail_closed(str(args.config), {"--json": args.json, "--out": args.out,
                                            "--base-out": args.base_out,
                                            "--history-out": args.history_out},
                         {"--report": args.report}, reads={"--results": args.results}):
            from membench_gate.adapter import seal

            seal.establish(required=args.seal)  # before any adapter starts (docs/gate.md, "Sealed")
            git = start_git(args.config)
            from membench_gate.ci.settings import Context
            from membench_gate.commands.compare import Outputs, check

            outputs = Outputs(json=args.json, report=args.report, out=args.out,
                              base_out=args.base_out, history_out=args.history_out)
            context = Context.from_env()
    except BaseException:  # check() did not take over: end the git processes
        if git is not None:
            git.close()
        raise
    return check(args.config, context, base_ref=args.base_ref, results=args.results,
                 allow_regression=args.allow_regression, include_holdout=args.include_holdout,
                 verify_determinism=args.verify_determinism, outputs=outputs, git=git,
                 jobs=args.jobs)


def start_git(config_path: Path) -> Started | None:
    """The git processes of the base lookup (:class:`membench_gate.base.git.Started`), started
    for the config's folder (where the check asks git from) so they run while the check imports
    the rest; the lookup adopts them. They only read the repository: git says the same whether
    asked early or late. The lookup then waits 17 ms instead of 37 (median of 25 runs of
    ``check --results``); on a busy two-core machine the whole command showed no difference over
    60 runs. ``None`` when they cannot start: the check then starts them itself and reports what
    is wrong.

    The adapter is never started early: it is the pull request's code, and it starts only once
    everything the verdict rests on has been read (docs/gate.md, "Inputs before the pull
    request's code")."""
    from membench_gate.base.git import Started

    try:
        return Started(Path(os.path.abspath(config_path)).parent)
    except Exception:
        return None
