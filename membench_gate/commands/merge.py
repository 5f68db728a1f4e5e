"""``membench-gate merge PART.json… --out FILE``: the shards of a run as one results file."""

from __future__ import annotations

import argparse

from membench_gate.commands.outputs import fail_closed
from membench_gate.errors import ExitCode, GateError


def cmd_merge(args: argparse.Namespace) -> int:
    if any(part.resolve() == args.out.resolve() for part in args.parts):
        raise GateError(f"--out {args.out} is one of the parts to merge: write the merged "
                        "results to another file")  # (and a failed merge must not replace a part)
    with fail_closed(None, {"--out": args.out}, config_file=args.config):
        from membench_gate.config import load_config
        from membench_gate.files import write_atomic
        from membench_gate.model.results import dumps_results
        from membench_gate.report.summary import run_summary
        from membench_gate.run.merge import check_parts, load_parts, merge

        parts = load_parts(args.parts)
        results = merge(parts)
        check_parts(parts, load_config(args.config))
        write_atomic(args.out, dumps_results(results))
    print(run_summary(results, args.out))
    return ExitCode.PASS
