"""``membench-gate explain [METRIC]``: the metric glossary, from the metric registry."""

from __future__ import annotations

import argparse

from membench_gate.errors import ExitCode, GateError


def cmd_explain(args: argparse.Namespace) -> int:
    from membench_gate.model.metrics import explain

    try:
        print(explain(args.metric))
    except KeyError as exc:
        raise GateError(str(exc.args[0])) from exc
    return ExitCode.PASS
