"""``membench-gate comment``: post or update the sticky pull request comment
(:mod:`membench_gate.ci.comment`)."""

from __future__ import annotations

import argparse


def cmd_comment(args: argparse.Namespace) -> int:
    from membench_gate.ci.comment import comment
    from membench_gate.ci.settings import Settings

    return comment(Settings.from_env(), report=args.report, verdict=args.verdict, results=args.results,
                   base=args.base, from_artifact=args.from_artifact, key=args.key, mode=args.mode)
