"""``check`` and ``bless``: the edges around :func:`membench_gate.gate.decide`.

Here live the I/O the pure gate must not do: running the suites (or reading ``--results``),
finding the base commit and reading its baseline and floors with git, reading the committed
baseline, and writing the verdict, the report and the baseline.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from membench_gate.config import Config, floors_from_text, load_config
from membench_gate.errors import GateError
from membench_gate.gate import BaseInfo, Verdict, decide, floors_of
from membench_gate.results import (
    Baseline,
    Results,
    UnknownSchemaVersion,
    canonical_dumps,
    dumps_baseline,
    dumps_results,
    parse_baseline,
    parse_results,
    read_file,
    write_atomic,
)
from membench_gate.runner import measure, progress_reporter, run
from membench_gate.summary import verdict_summary

_FALSY = {"", "0", "false", "no", "off"}


def in_ci(env: dict[str, str] | None = None) -> bool:
    """True when ``CI`` or ``GITHUB_ACTIONS`` is set to a truthy value."""
    env = dict(os.environ) if env is None else env
    return any(env.get(name, "").strip().lower() not in _FALSY for name in ("CI", "GITHUB_ACTIONS"))


def _inside(root: Path, path: Path, what: str) -> str:
    """``path`` relative to the repository root: git can only read files inside it."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError as exc:
        raise GateError(f"{what}: {path} is outside the git repository {root}") from exc


@dataclass
class BaseSide:
    """What the base commit holds: where it is, its baseline, its floors, why it is unusable."""

    info: BaseInfo
    baseline: Baseline | None
    floors: dict[str, float]
    inconclusive: str | None = None


def read_base(config: Config, base_ref: str | None) -> BaseSide:
    """Resolve the base commit and read the baseline and ``[floors]`` there — never the PR's."""
    from membench_gate import gitbase

    root = gitbase.repo_root(config.base_dir)
    base = gitbase.resolve_base(root, base_ref)
    if base is None:
        return BaseSide(BaseInfo(), None, {})
    info = BaseInfo(ref=base.ref, sha=base.sha, how=base.how)
    baseline_rel = _inside(root, config.baseline_path, "gate.baseline")
    config_rel = _inside(root, config.path, "--config")
    floors: dict[str, float] = {}
    config_bytes = gitbase.read_file_at(root, base.sha, config_rel)
    if config_bytes is not None:
        floors = floors_from_text(config_bytes.decode("utf-8", "replace"),
                                  f"{config_rel} at base {base.sha[:12]}")
    data = gitbase.read_file_at(root, base.sha, baseline_rel)
    if data is None:
        return BaseSide(info, None, floors)
    try:
        baseline = parse_baseline(data, f"{baseline_rel} at base {base.sha[:12]}")
    except UnknownSchemaVersion as exc:
        return BaseSide(info, None, floors, inconclusive=str(exc))
    return BaseSide(info, baseline, floors)


@dataclass
class Committed:
    """The baseline in the working tree, and whether its bytes are canonical."""

    baseline: Baseline | None
    canonical: bool = True


def read_committed(config: Config) -> Committed:
    path = config.baseline_path
    if not path.exists():
        return Committed(None)
    data = read_file(path, config.baseline)
    baseline = parse_baseline(data, config.baseline)
    # The gate compares content; non-canonical bytes (a reformatted file) are only noted, so a
    # hand edit shows in the verdict and ``bless`` rewrites the file canonically.
    return Committed(baseline, data.decode("utf-8", "replace") == dumps_baseline(baseline))


def _results(args: argparse.Namespace, config: Config) -> tuple[Results, list[str]]:
    """This run's results (run now, or read ``--results``) and any reason they are unusable."""
    reasons: list[str] = []
    if args.results is not None:
        if args.verify_determinism:
            raise GateError("--verify-determinism runs the suites twice; it cannot check a "
                            "--results file")
        return read_results(args.results, config)
    results = run(config, progress_reporter())
    if args.verify_determinism:
        from membench_gate.determinism import first_difference

        where = first_difference(results, run(config, None))
        if where:
            reasons.append(f"determinism check failed: two runs of the same config differ, first "
                           f"at {where} (equal scores in an arbitrary order? sort ties by score, "
                           "then id)")
    return results, reasons


def read_results(path: Path, config: Config) -> tuple[Results, list[str]]:
    """A results file from an earlier run, and why it cannot stand for this working tree (another
    config, other fixtures or scorer) — empty when it can."""
    results = parse_results(read_file(path), str(path))
    if results.receipt.shard is not None:
        raise GateError(f"{path}: receipt.shard: shard {results.receipt.shard} of a run, not a "
                        "whole run (membench-gate merge the shards first)")
    reasons: list[str] = []
    if canonical_dumps(results.config) != canonical_dumps(config.record()):
        reasons.append(f"{path} was produced under another config than {config.path.name} "
                       "(suites, holdout or adapter differ)")
    elif measure(config)[0] != results.fixtures_hash:
        reasons.append(f"{path} was produced on other fixtures or another scorer version (its "
                       "fixtures_hash differs from the working tree's)")
    return results, reasons


def error_verdict(exc: GateError, config_arg: str) -> Verdict:
    """The verdict file of a check that could not compare: ERROR, or INCONCLUSIVE (exit 3)."""
    name = "inconclusive" if exc.exit_code == 3 else "error"
    return Verdict(verdict=name, exit_code=exc.exit_code, mode=None, notes=[str(exc)],
                   config=config_arg)


def check(args: argparse.Namespace) -> int:
    """``membench-gate check``: run, compare with the base commit's baseline, exit with the verdict.

    The ``--json`` and ``--report`` files are written for every outcome, errors included, so a CI
    job never shows the scoreboard of an earlier run.
    """
    try:
        return _check(args)
    except GateError as exc:
        verdict = error_verdict(exc, str(args.config))
        if args.json is not None:
            write_atomic(args.json, canonical_dumps(verdict.model_dump(mode="json")))
        if args.report is not None:
            from membench_gate.report import render

            write_atomic(args.report, render(verdict, None, None, limit=None))
        raise


def _check(args: argparse.Namespace) -> int:
    config = load_config(args.config).with_holdout(args.include_holdout)
    ci = in_ci()
    if args.allow_regression is not None and ci:
        raise GateError("--allow-regression is local only: refused because CI or GITHUB_ACTIONS "
                        "is set")
    if args.allow_regression is not None and not args.allow_regression.strip():
        raise GateError("--allow-regression needs a reason")
    results, reasons = _results(args, config)
    if args.out is not None and args.results is None:
        write_atomic(args.out, dumps_results(results))
    base = read_base(config, args.base_ref)
    if base.inconclusive:
        reasons.append(base.inconclusive)
    committed = read_committed(config)
    verdict = decide(
        base.baseline,
        committed.baseline,
        results,
        floors=floors_of(base.floors, config.floors),
        allow_regression=args.allow_regression,
        ci=ci,
        inconclusive=reasons,
        committed_canonical=committed.canonical,
    )
    verdict.base = base.info
    verdict.config = str(args.config)
    write_outputs(args, config, verdict, results, base.baseline)
    print(verdict_summary(verdict, results, base.baseline))
    return verdict.exit_code


def write_outputs(args: argparse.Namespace, config: Config, verdict: Verdict, results: Results,
                  base: Baseline | None) -> None:
    if args.json is not None:
        write_atomic(args.json, canonical_dumps(verdict.model_dump(mode="json")))
    if args.base_out is not None and base is not None:
        write_atomic(args.base_out, dumps_baseline(base))
    if args.report is not None:
        from membench_gate.report import render

        write_atomic(args.report, render(verdict, results, base, limit=None))
