"""``membench-gate selftest``: prove every gated metric can fail — run mutants of the adapter
(:mod:`membench_gate.selftest`)."""

from __future__ import annotations

import argparse

from membench_gate.errors import ExitCode, GateError


def cmd_selftest(args: argparse.Namespace) -> int:
    from membench_gate.adapter import seal
    from membench_gate.commands.outputs import refuse_clashes
    from membench_gate.config import alpha_of, load_config
    from membench_gate.files import write_atomic
    from membench_gate.model.canonical import canonical_dumps
    from membench_gate.report.selftest import render_table
    from membench_gate.selftest.mutants import by_name
    from membench_gate.selftest.sensitivity import selftest

    refuse_clashes({"--json": args.json}, args.config)  # before the stale report goes
    if args.json:
        # Never a stale report from an earlier run: the action reads a missing file as a
        # selftest that could not run.
        args.json.unlink(missing_ok=True)
    seal.establish(required=args.seal)  # before any adapter starts (docs/gate.md, "Sealed")
    known = by_name()
    for name in args.mutant:
        if name not in known:
            raise GateError(f"--mutant {name}: unknown mutant (known: {', '.join(known)})")
    chosen = [known[n] for n in dict.fromkeys(args.mutant)] or list(known.values())
    config = load_config(args.config).with_holdout(args.include_holdout).with_workers(args.jobs)
    report = selftest(config, chosen, alpha=alpha_of(config))
    if args.json:
        # No null comparisons (a deterministic config): the file reads as it always did.
        dumped = report.model_dump(mode="json", exclude=None if report.null else {"null"})
        write_atomic(args.json, canonical_dumps(dumped))
    print(render_table(report))
    return ExitCode.PASS if report.ok else ExitCode.REGRESSION
