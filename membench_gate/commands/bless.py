"""``membench-gate bless``: write the baseline atomically, if the gate allows it.

The run is compared with the base commit's baseline exactly as ``check`` would compare it with a
committed copy of itself; breaches other than invariants and floors need a justification that
passes the checks of rule 8. ``--results`` blesses an earlier run (``check --out`` or ``run
--out``) instead of running every suite again for each attempt at a justification.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from membench_gate.base.side import BaseSide, read_base_in_repository
from membench_gate.ci.settings import Context
from membench_gate.commands.compare import read_committed, read_results
from membench_gate.config import Config, alpha_of, load_config
from membench_gate.errors import ExitCode, GateError, describe
from membench_gate.files import write_atomic
from membench_gate.gate.justify import (
    DRAFT_REASON,
    check_justification,
    holds_draft,
)
from membench_gate.gate.rules import HARD_KINDS, breach_keys, decide, differing, floors_of
from membench_gate.model.results import Baseline, Justification, Results, dumps_baseline
from membench_gate.model.verdict import BaseInfo, JustificationResult
from membench_gate.report.summary import verdict_summary
from membench_gate.run.invariants import measured_by, measured_in, prepare
from membench_gate.run.runner import progress_reporter, run

if TYPE_CHECKING:
    from membench_gate.suites.common.fixtures import SuiteFixtures


def _base(config: Config, base_ref: str | None, context: Context, config_arg: Path) -> BaseSide:
    """The base side for bless; outside a git repository there is none (a first baseline)."""
    side = read_base_in_repository(config, base_ref, context, config_arg=config_arg)
    if side is None:
        print("membench-gate: not a git repository: writing a first baseline without comparison",
              file=sys.stderr)
        return BaseSide(BaseInfo(), None, {})
    return side


def _readable_committed(config: Config) -> Baseline | None:
    """The committed baseline if it can be read: bless is how a broken one gets repaired."""
    try:
        return read_committed(config).baseline
    except GateError as exc:
        print(f"membench-gate: ignoring the committed baseline: {describe(exc)}", file=sys.stderr)
        return None


def _results(config: Config, path: Path | None
             ) -> tuple[Results | None, tuple[str, dict[str, SuiteFixtures]] | None]:
    """The results file (checked), or the fixtures the run will use: read before any adapter
    starts."""
    if path is None:
        from membench_gate.run.runner import load_fixtures

        return None, load_fixtures(config)
    results, reasons = read_results(path, config)
    if reasons:
        raise GateError(f"bless refused: {reasons[0]}; run bless without --results")
    return results, None


def _listed(keys: list[str]) -> str:
    return ", ".join(keys[:5]) + (f" (and {len(keys) - 5} more)" if len(keys) > 5 else "")


def bless(config_path: Path, context: Context, *, justification: str | None = None,
          base_ref: str | None = None, results_path: Path | None = None,
          jobs: int | None = None, include_holdout: bool = False) -> int:
    """The ``bless`` command: 0 when the baseline was written, 1 when refused.

    ``justification`` explains the breaches against the base baseline; ``results_path`` blesses
    an earlier run instead of running the suites; ``jobs`` is ``--jobs``; ``include_holdout``
    is ``--include-holdout``, the measurement of ``check --include-holdout``.
    """
    config = load_config(config_path).with_workers(jobs).with_holdout(include_holdout)
    # Everything the baseline is judged on is read before any adapter starts.
    base = _base(config, base_ref, context, config_path)
    committed = _readable_committed(config)
    read, preloaded = _results(config, results_path)
    if read is not None:
        invariants = prepare(config, base, read.fixtures_hash, measured_in(read))
    else:
        assert preloaded is not None
        invariants = prepare(config, base, preloaded[0], measured_by(config, preloaded[1]))
    results = read if read is not None else run(config, progress_reporter(), preloaded=preloaded)
    measured = invariants.measure(progress_reporter()) if invariants else {}
    probe = decide(base.baseline, results.to_baseline(), results,
                   floors=floors_of(base.floors, config.floors), base_breaches=base.breaches,
                   base_invariants=measured, alpha=alpha_of(config))
    probe.base = base.info
    probe.config = str(config_path)
    hard = breach_keys(probe, HARD_KINDS)
    if hard:
        # No justification can bless these: the summary says what broke, not what a text lacks.
        probe.justification_check = JustificationResult(status="not-needed")
        print(verdict_summary(probe, results, base.baseline))
        raise GateError(f"bless refused: {hard[0]} is a zero-gated invariant or floor breach, "
                        "which no justification can bless" +
                        (f" (and {len(hard) - 1} more)" if len(hard) > 1 else ""),
                        exit_code=ExitCode.REGRESSION)
    keys = breach_keys(probe)
    text = justification
    if text is None and committed is not None and committed.justification is not None \
            and sorted(committed.justification.breaches) == keys:
        text = committed.justification.text  # re-running bless keeps the recorded reason
    if text is not None and holds_draft(text):
        raise GateError(f"bless refused: replace {DRAFT_REASON} in the justification with the "
                        "reason for these changes", exit_code=ExitCode.REGRESSION)
    recorded = None
    if keys:
        base_text = base.baseline.justification.text \
            if base.baseline and base.baseline.justification else None
        outcome = check_justification(text, keys, base_text)
        if not outcome.ok:
            why = "--justification is required" if text is None else \
                f"the justification was rejected ({outcome.failed})"
            raise GateError(f"bless refused: {why}; it must explain these breaches against the "
                            f"base baseline: {_listed(keys)}",
                            exit_code=ExitCode.REGRESSION)
        recorded = Justification(text=" ".join(text.split()), breaches=keys)
    elif text is not None:
        recorded = Justification(text=" ".join(text.split()), breaches=[])
    blessed = results.to_baseline(recorded)
    write_atomic(config.baseline_path, dumps_baseline(blessed))
    print(f"baseline written to {config.baseline} ({len(results.cells)} cells); "
          + _compared(base, keys))
    if committed is not None and not committed.same_content(blessed):
        print("  it replaces a committed baseline that did not match this run"
              + differing(committed, blessed))
    if justification is not None and not keys:
        print("  note: nothing needed a justification: it is recorded with no breaches, and "
              "justifies none later (a check notes it and ignores it)")
    return ExitCode.PASS


def _compared(base: BaseSide, keys: list[str]) -> str:
    """What the new baseline was compared with, in words (no "0 breaches vs nothing")."""
    if base.info.sha is None:
        return "no base commit to compare with: a first baseline"
    where = f"the base {base.info.sha[:12]}" + (f" ({base.info.ref})" if base.info.ref else "")
    if base.baseline is None:
        return f"{where} has no baseline: this one introduces it"
    if not keys:
        return f"no breaches against {where}"
    return f"{len(keys)} breach{'es' if len(keys) != 1 else ''} against {where}, justified"


def cmd_bless(args: argparse.Namespace) -> int:
    from membench_gate.adapter import seal

    seal.establish(required=args.seal)  # before any adapter starts (docs/gate.md, "Sealed")
    return bless(args.config, Context.from_env(), justification=args.justification,
                 base_ref=args.base_ref, results_path=args.results, jobs=args.jobs,
                 include_holdout=args.include_holdout)
