"""``membench-gate run``: run the suites and print a summary; with ``--out``, write the results
file too. There is no default file: a run that names none writes nothing (docs/gate.md, "Files")."""

from __future__ import annotations

import argparse

from membench_gate.commands.outputs import fail_closed
from membench_gate.errors import ExitCode


def cmd_run(args: argparse.Namespace) -> int:
    with fail_closed(str(args.config), {"--out": args.out}):
        from membench_gate.adapter import seal
        from membench_gate.config import load_config
        from membench_gate.files import write_atomic
        from membench_gate.model.results import dumps_results
        from membench_gate.report.summary import run_summary
        from membench_gate.run.runner import progress_reporter, run
        from membench_gate.run.shard import parse_shard

        seal.establish(required=args.seal)  # before any adapter starts (docs/gate.md, "Sealed")
        shard = parse_shard(args.shard) if args.shard is not None else None
        config = load_config(args.config).with_holdout(args.include_holdout) \
            .with_workers(args.jobs)
        if args.suite:
            config = config.with_suites(args.suite)
        results = run(config, progress_reporter(), shard=shard)
        if args.out:
            write_atomic(args.out, dumps_results(results))
        summary = run_summary(results, args.out)
    print(summary)
    return ExitCode.PASS
