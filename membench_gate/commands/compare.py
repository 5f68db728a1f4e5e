"""What ``check`` (and ``bless``) do around :func:`membench_gate.gate.rules.decide`.

Here live the I/O the pure gate must not do: running the suites (or reading ``--results``),
finding the base commit and reading its baseline and floors with git, reading the committed
baseline, and writing the verdict, the report and the baseline. (The command's arguments are
:mod:`membench_gate.commands.check`: it imports this module only once it has guarded its
output files and started git.)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from membench_gate.adapter import seal
from membench_gate.base.side import BaseSide, read_base
from membench_gate.ci.settings import Context
from membench_gate.commands.outputs import fail_closed
from membench_gate.config import Config, alpha_of, load_config
from membench_gate.errors import GateError
from membench_gate.files import read_file, write_atomic
from membench_gate.gate.rules import decide, floors_of
from membench_gate.model.canonical import canonical_dumps
from membench_gate.model.history import dumps_history
from membench_gate.model.results import (
    Baseline,
    Cell,
    Results,
    UnknownSchemaVersion,
    dumps_baseline,
    dumps_results,
    parse_baseline,
    parse_results,
)
from membench_gate.model.verdict import Verdict
from membench_gate.report.history import COMMENT_HISTORY, Blessed, blessed, record
from membench_gate.report.summary import verdict_summary
from membench_gate.run.measure import measurement_hash

if TYPE_CHECKING:  # checking a results file never starts an adapter
    from membench_gate.base.git import Started
    from membench_gate.run.invariants import BaseSuites
    from membench_gate.suites.common.fixtures import SuiteFixtures

__all__ = ["BaseSide", "Inputs", "Outputs", "check", "read_base", "read_committed", "read_inputs",
           "read_results"]


NOT_DETERMINISTIC = "determinism check failed"


class Outputs(NamedTuple):
    """The files a check writes (each optional): the verdict JSON, the Markdown report, this
    run's results, the base commit's baseline and the base branch's last blessed baselines (for
    re-rendering the report elsewhere)."""

    json: Path | None = None
    report: Path | None = None
    out: Path | None = None
    base_out: Path | None = None
    history_out: Path | None = None


NO_OUTPUTS = Outputs()


class Committed(NamedTuple):
    """The baseline in the working tree, and whether its bytes are canonical."""

    baseline: Baseline | None
    canonical: bool = True


def read_committed(config: Config, base: BaseSide | None = None) -> Committed:
    """The baseline in the working tree. When its bytes are the base commit's baseline's (a pull
    request that does not touch it), it is that baseline: the same bytes read the same way."""
    path = config.baseline_path
    if not path.exists():
        return Committed(None)
    data = read_file(path, config.baseline)
    if base is not None and base.baseline is not None and data == base.data:
        baseline = base.baseline
    else:
        try:
            baseline = parse_baseline(data, config.baseline)
        except UnknownSchemaVersion as exc:
            if base is not None and data == base.data:
                raise  # the base's baseline, untouched by the pull request: rule 3's INCONCLUSIVE
            # Rule 3's INCONCLUSIVE is for the base's baseline, from another version of the gate;
            # the working tree's own is the pull request's file, to bless again: an ERROR.
            raise GateError(f"{exc} — the working tree's baseline: bless it again with this "
                            "version") from None
    # The gate compares content; non-canonical bytes (a reformatted file) are only noted, so a
    # hand edit shows in the verdict and ``bless`` rewrites the file canonically.
    return Committed(baseline, data.decode("utf-8", "replace") == dumps_baseline(baseline))


class Inputs(NamedTuple):
    """Everything a verdict rests on besides the memory's answers, read before any of the pull
    request's code runs (docs/gate.md, "Inputs before the pull request's code"): the base side,
    the committed baseline, the fixtures (or the results file) and the base's invariant suites."""

    base: BaseSide
    committed: Committed
    fixtures: tuple[str, dict[str, SuiteFixtures]] | None
    results: Results | None
    reasons: list[str]
    invariants: BaseSuites | None


def read_inputs(config: Config, context: Context, config_path: Path, base_ref: str | None,
                results_path: Path | None, git: Started | None = None) -> Inputs:
    """Read, in this order, the base commit (resolved with git) and what it holds, the
    committed baseline, and the fixtures or the results file — all before an adapter starts."""
    from membench_gate.run.invariants import measured_by, measured_in, prepare

    base = read_base(config, base_ref, context, config_arg=config_path, git=git,
                     history=COMMENT_HISTORY)
    committed = read_committed(config, base)
    fixtures = results = None
    reasons: list[str] = []
    if results_path is not None:
        results, reasons = read_results(results_path, config)
        seal.measured_isolation(results, str(results_path))  # (--seal: refused if unsealed)
        if context.ci:
            reasons = _foreign_commit(results, config) + reasons
        head_hash, measured = results.fixtures_hash, measured_in(results)
    else:
        from membench_gate.run.runner import load_fixtures

        fixtures = load_fixtures(config)
        head_hash, measured = fixtures[0], measured_by(config, fixtures[1])
    if base.inconclusive:
        reasons.append(base.inconclusive)
    invariants = None if reasons else prepare(config, base, head_hash, measured)
    return Inputs(base, committed, fixtures, results, reasons, invariants)


def _results(config: Config, inputs: Inputs, verify_determinism: bool) -> Results:
    """This run's results: the results file, or the suites run now on the fixtures read."""
    if inputs.results is not None:
        if verify_determinism:
            raise GateError("--verify-determinism runs the suites twice; it cannot check a "
                            "--results file")
        return inputs.results
    from membench_gate.run.runner import progress_reporter, run

    if not verify_determinism:
        return run(config, progress_reporter(), preloaded=inputs.fixtures)
    from membench_gate.run.determinism import first_difference, run_twice

    results, again = run_twice(config, progress_reporter(), inputs.fixtures)
    where = first_difference(results, again)
    if where:
        inputs.reasons.append(
            f"{NOT_DETERMINISTIC}: two runs of the same config differ, first at "
            f"{where} (equal scores in an arbitrary order? sort ties by score, then id)")
    return results


def base_invariants(inputs: Inputs) -> dict[str, Cell]:
    """The base's invariant cells of the suites whose measurement this pull request changed or
    dropped, measured now on the base's suite tables and fixtures (rule 1)."""
    if inputs.invariants is None or inputs.reasons:
        return {}
    from membench_gate.run.runner import progress_reporter

    return inputs.invariants.measure(progress_reporter())


def read_results(path: Path, config: Config) -> tuple[Results, list[str]]:
    """A results file from an earlier run, and why it cannot stand for this working tree (another
    config, other fixtures or scorer) — empty when it can.

    The file is re-derived, not trusted: its cells must follow from its item records and, when it
    is of this working tree's measurement, its items from their recorded answers and the
    fixtures (:mod:`membench_gate.run.rederive`); a disagreement is a ``GateError``."""
    from membench_gate.run.rederive import rederive

    results = parse_results(read_file(path), str(path))
    if results.receipt.shard is not None:
        raise GateError(f"{path}: receipt.shard: shard {results.receipt.shard} of a run, not a "
                        "whole run (membench-gate merge the shards first)")
    reasons: list[str] = []
    if canonical_dumps(results.config) != canonical_dumps(config.record()):
        reasons.append(f"{path} was produced under another config than {config.path.name} "
                       "(suites, holdout or adapter differ)")
    elif measurement_hash(config) != results.fixtures_hash:
        reasons.append(f"{path} was produced on other fixtures or another scorer version (its "
                       "fixtures_hash differs from the working tree's)")
    # Under another measurement the working tree's fixtures say nothing of the items: the cells
    # are still recomputed from them.
    rederive(str(path), results, None if reasons else config)
    return results, reasons


def _foreign_commit(results: Results, config: Config) -> list[str]:
    """In CI a results file must come from the commit being checked: a matching fixtures hash
    says the measurement is the same, not that the memory measured is this one."""
    from membench_gate.base import git as gitbase

    head = gitbase.head_sha(config.base_dir)
    sha = results.receipt.git_sha
    if sha == head:
        return []
    made = f"receipt.git_sha {sha}" if sha else "no receipt.git_sha"
    return [f"the results file was not produced on the checked-out commit {head[:12]} "
            f"({made}); in CI --results must come from this commit"]


def check(config_path: Path, context: Context, *, base_ref: str | None = None,
          results: Path | None = None, allow_regression: str | None = None,
          include_holdout: bool = False, verify_determinism: bool = False,
          outputs: Outputs = NO_OUTPUTS, git: Started | None = None,
          jobs: int | None = None) -> int:
    """``membench-gate check``: read every input, run (or read ``results``), compare with the
    base commit's baseline, return the verdict's exit code.

    ``context`` says whether this is CI and which event it serves. Every file of ``outputs`` is
    written for every outcome: when the check fails — any exception, a SystemExit included —
    each is replaced by the error verdict, so a CI job never shows or re-reads the files of an
    earlier run. ``git`` are the git processes of the base lookup when the caller started them
    ahead for the config's folder (ended at the end when the lookup did not adopt them).
    """
    try:
        with fail_closed(str(config_path), {"--json": outputs.json, "--out": outputs.out,
                                            "--base-out": outputs.base_out,
                                            "--history-out": outputs.history_out},
                         {"--report": outputs.report}, reads={"--results": results}) as known:
            config = load_config(config_path).with_holdout(include_holdout).with_workers(jobs)
            if allow_regression is not None and context.ci:
                raise GateError("--allow-regression is local only: refused because CI or "
                                "GITHUB_ACTIONS is set")
            if allow_regression is not None and not allow_regression.strip():
                raise GateError("--allow-regression needs a reason")
            inputs = read_inputs(config, context, config_path, base_ref, results, git)
            known.base = inputs.base.info  # an adapter that fails now: checked against this base
            actual = _results(config, inputs, verify_determinism)
            if outputs.out is not None:  # with --results: the file checked, re-derived
                write_atomic(outputs.out, dumps_results(actual))
            verdict = _compare(config, context, config_path, actual, inputs, allow_regression)
            if verify_determinism and not any(r.startswith(NOT_DETERMINISTIC)
                                              for r in inputs.reasons):
                verdict.notes.append("--verify-determinism: the suites ran twice on the same "
                                     "config and fixtures, and the two runs' results are "
                                     "identical")
            # A live suite skipped (no key, no cached answer) is said in the report, not only on
            # the console: its cells are absent, and gated as absent.
            skipped = (getattr(actual.receipt, "live", None) or {}).get("skipped", {})
            verdict.notes += [f"live suite {name} skipped: {why} (docs/live.md)"
                              for name, why in sorted(skipped.items())]
            # Where this run's numbers were saved: the next step blesses them from there.
            saved = outputs.out if outputs.out is not None else results
            write_outputs(outputs, verdict, actual, inputs.base.baseline,
                          base_history(inputs.base), str(saved) if saved is not None else None)
            print(verdict_summary(verdict, actual, inputs.base.baseline,
                                  str(saved) if saved is not None else None))
            return verdict.exit_code
    finally:
        if git is not None:
            git.close()


def _compare(config: Config, context: Context, config_path: Path, actual: Results,
             inputs: Inputs, allow_regression: str | None) -> Verdict:
    """The verdict on ``actual`` against the base commit's baseline and the committed one;
    ``inputs.reasons`` are why the results cannot be compared at all (INCONCLUSIVE)."""
    base, committed = inputs.base, inputs.committed
    verdict = decide(
        base.baseline,
        committed.baseline,
        actual,
        floors=floors_of(base.floors, config.floors),
        allow_regression=allow_regression,
        ci=context.ci,
        inconclusive=inputs.reasons,
        committed_canonical=committed.canonical,
        base_breaches=base.breaches,
        base_config=base.has_config,
        base_invariants=base_invariants(inputs),
        alpha=alpha_of(config),
    )
    if base.inconclusive:  # a base baseline exists but cannot be read: no mode can be named
        verdict.mode = None
    verdict.base = base.info
    verdict.config = str(config_path)
    verdict.isolation = seal.isolation() if inputs.results is None else \
        seal.measured_isolation(inputs.results, "the results file")
    return verdict


def base_history(base: BaseSide) -> list[Blessed]:
    """The base branch's last blessed baselines, for the report's chart: a version that is no
    baseline is left out of a chart (``history`` names it)."""
    return blessed(base.history, "the baseline")[0]


def write_outputs(outputs: Outputs, verdict: Verdict, results: Results, base: Baseline | None,
                  history: list[Blessed] | None = None, results_path: str | None = None) -> None:
    if outputs.json is not None:
        write_atomic(outputs.json, canonical_dumps(verdict.model_dump(mode="json")))
    if outputs.base_out is not None:
        if base is not None:
            write_atomic(outputs.base_out, dumps_baseline(base))
        else:  # no base baseline: an earlier run's must not stand in for it
            outputs.base_out.unlink(missing_ok=True)
    # The report and history.json from one record: a report rendered elsewhere from the file
    # shows the same block. No history (a first baseline) is an empty list, still written.
    blessed_record = record(history or [])
    if outputs.history_out is not None:
        write_atomic(outputs.history_out, dumps_history(blessed_record))
    if outputs.report is not None:
        from membench_gate.report.render import render

        write_atomic(outputs.report, render(verdict, results, base, limit=None,
                                            history=blessed_record.versions,
                                            results_path=results_path))
