"""The composite action's gate step: ``python -m membench_gate.action``.

Inputs arrive as environment variables set by ``action.yml`` (never ``${{ }}`` inside a script).
It runs ``membench-gate check`` in a subprocess wrapped in stop-commands (so nothing the
adapter prints can issue workflow commands), reads what the check wrote once, validates it and
renders the report, the summary and the comment from it in memory — before any other code of the
pull request runs (the selftest, when asked for), so nothing rewritten later is shown or passed
on. Then it puts back the runner's files as the step found them (a process of the pull request
that wrote to them makes the verdict an ERROR), writes the outputs (each with a random delimiter),
the step summary, at most ten annotations, posts the sticky comment, and exits with the verdict —
or 0 when ``fail-on-regression`` is false (an ERROR still fails: a broken gate must be visible).
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from membench_gate.adapter.seal import close_step_files, isolation, prepared_isolation, withhold
from membench_gate.ci.actions_env import MAX_ANNOTATIONS, RunnerFiles, annotation, format_outputs
from membench_gate.ci.comment import ARTIFACT_FILES, STEP_FILE, StepRecord
from membench_gate.ci.settings import Context, Settings
from membench_gate.errors import ExitCode, GateError, visible
from membench_gate.files import load_json, write_atomic
from membench_gate.model.canonical import canonical_dumps
from membench_gate.model.history import HISTORY_FILE
from membench_gate.model.verdict import Verdict, error_verdict
from membench_gate.report.render import SUMMARY_LIMIT

if TYPE_CHECKING:
    from membench_gate.model.history import HistoryVersion
    from membench_gate.model.results import Baseline, Results
    from membench_gate.model.selftest import SelftestReport

OUTPUTS = ("verdict", "exit-code", "mode", "base-sha", "report-path", "results-path",
           "comment-url", "isolation")
# Bytes of the comment and of the job summary kept free for the selftest's line, which closes
# them once the selftest is done (rendered before it runs, they are not rendered again).
SENSITIVITY_ROOM = 4096

_ANNOTATION_ORDER = ("zero", "floor", "metric", "metric-missing", "cell-missing", "gold-total",
                     "item-removed", "newly-failed")


# How the action starts the gate in a child: isolated (``-I``), so neither the working directory —
# the pull request's checkout — nor a ``PYTHONPATH`` naming it (``.``, the workspace, an empty
# entry) is on ``sys.path``, where a ``membench_gate/`` folder or a ``sitecustomize.py`` would
# stand in for the gate. (The adapter's own process keeps the environment as it is.)
GATE_CHILD = ["-I", "-c", "from membench_gate.cli.main import console; console()"]


def _run_quarantined(args: list[str], env: Mapping[str, str]) -> int:
    """Run a membench-gate command with its output going to the log, workflow commands disabled.

    The child (which starts the PR's adapter code) gets neither the token nor the runner's file
    commands or temp folder (stop-commands covers printed commands, not these files): the list
    of :func:`membench_gate.adapter.seal.withhold`. Its stderr is merged into stdout so nothing it
    prints can arrive after the resume line.
    """
    token = secrets.token_hex(16)
    child_env = withhold(env)
    print(f"::stop-commands::{token}", flush=True)
    try:
        done = subprocess.run([sys.executable, *GATE_CHILD, *args], env=child_env,
                              stderr=subprocess.STDOUT, check=False)
    finally:
        # On a line of its own: the child's last line may lack a newline.
        print(f"\n::{token}::", flush=True)
    return done.returncode


def _annotations(verdict: dict) -> list[str]:
    """The verdict's breaches (else its first note) as annotations at the verdict's level: a
    breach of a failing job is an error, of a pass (blessed, allowed) a notice."""
    level = {"regression": "error", "error": "error", "bless-required": "warning",
             "inconclusive": "warning", "pass": "notice"}.get(verdict.get("verdict", ""))
    if level is None:
        return []
    lines = []
    # The most telling first: invariants, floors and metrics before long lists of items.
    ranked = sorted(verdict.get("breaches", []),
                    key=lambda b: _ANNOTATION_ORDER.index(b["kind"])
                    if b.get("kind") in _ANNOTATION_ORDER else len(_ANNOTATION_ORDER))
    for breach in ranked[:MAX_ANNOTATIONS]:
        lines.append(annotation(level, f"{breach['key']}: {breach['detail']}",
                                f"membench-gate {breach['kind']}"))
    if not lines:
        note = (verdict.get("notes") or ["no breaches" if level == "notice"
                                         else verdict.get("verdict", "")])[0]
        lines.append(annotation(level, note, f"membench-gate {verdict.get('verdict')}"))
    return lines


def _error_exit(message: str, runner: RunnerFiles, env: Mapping[str, str]) -> int:
    """Outputs, summary and annotation of a gate that could not run at all."""
    outputs = dict.fromkeys(OUTPUTS, "")
    outputs.update({"verdict": "error", "exit-code": str(int(ExitCode.ERROR)),
                    "isolation": prepared_isolation(env)})
    runner.append("GITHUB_OUTPUT", format_outputs(outputs))
    runner.append("GITHUB_STEP_SUMMARY", "## membench-gate: ⛔ ERROR\n\nThe gate could not run; "
                  "the job log has the one-line reason.\n")
    print(annotation("error", message, "membench-gate"), flush=True)
    print(visible(f"membench-gate: error: {message}"), file=sys.stderr)
    return ExitCode.ERROR


def main(env: Mapping[str, str] | None = None) -> int:
    """Run the gate step in the environment ``env`` (the process environment by default)."""
    context = Context.from_env(env)
    env = context.environ
    if context.token:
        print(f"::add-mask::{context.token}", flush=True)
    # Before any code of the pull request runs: what the runner's files hold now is all they may
    # hold when the step writes its own lines.
    runner = RunnerFiles(env)
    try:
        settings = Settings.from_env(env)
    except GateError as exc:
        return _error_exit(str(exc), runner, env)
    out = settings.out_dir
    # The gate's files: no other user reads or writes them (a sealed adapter is another user).
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    out.chmod(0o700)
    close_step_files(env)
    paths = {name: out / name for name in (*ARTIFACT_FILES, "report.md", STEP_FILE,
                                           "selftest.json")}
    for path in paths.values():
        path.unlink(missing_ok=True)
    holdout = ["--include-holdout"] if settings.include_holdout else []
    holdout += ["--verify-determinism"] if settings.verify_determinism else []
    base_ref = ["--base-ref", settings.base_ref] if settings.base_ref else []
    # A given results file (merged shards) is gated as it is; the comment and the results-path
    # output use the copy the gate validated.
    source = ["--results", settings.results] if settings.results else [
        "--out", str(paths["results.json"])]
    status = _run_quarantined(["check", "--config", settings.config, *source,
                    "--json", str(paths["verdict.json"]), "--report", str(paths["report.md"]),
                    "--base-out", str(paths["base.json"]),
                    "--history-out", str(paths[HISTORY_FILE]), *base_ref, *holdout,
                    *_budget_args(settings), *_jobs_args(settings)], env)
    room = SENSITIVITY_ROOM if settings.selftest else 0
    board = _read_once(paths, status, settings, room)
    report = _selftest(settings, paths, env) if settings.selftest else None
    foreign = runner.restore()
    if foreign:
        board = Scoreboard.failed(GateError(_foreign_writes(foreign)), settings, room)
    board.leave(paths, advisory=not settings.fail_on_regression)
    comment_url = ""
    if settings.comment != "off":
        try:
            comment_url = _comment(board.comment(report), settings)
        except Exception as exc:  # a comment is never worth a changed verdict
            print(annotation("warning", f"could not comment: {type(exc).__name__}: {exc}",
                             "membench-gate comment"), flush=True)
    verdict = board.verdict
    outputs = {
        "verdict": verdict.verdict,
        "exit-code": str(verdict.exit_code),
        "mode": verdict.mode or "",
        "base-sha": verdict.base.sha or "",
        "report-path": str(paths["report.md"]),
        "results-path": str(paths["results.json"]) if board.has_results else "",
        "comment-url": comment_url,
        "isolation": verdict.isolation or prepared_isolation(env),
    }
    runner.append("GITHUB_OUTPUT", format_outputs(outputs))
    runner.append("GITHUB_STEP_SUMMARY", board.summary(report))
    for line in _annotations(verdict.model_dump(mode="json")):
        print(line, flush=True)
    if not settings.fail_on_regression and verdict.exit_code in (
            ExitCode.REGRESSION, ExitCode.BLESS_REQUIRED, ExitCode.INCONCLUSIVE):
        print(f"membench-gate: advisory mode (fail-on-regression: false): verdict "
              f"{verdict.verdict} does not fail the job")
        return ExitCode.PASS
    return verdict.exit_code


def _budget_args(settings: Settings) -> list[str]:
    """The input ``budget-minutes``; without it the check takes the config's, or CI's default."""
    return [] if settings.budget_minutes is None else [
        "--budget-minutes", str(settings.budget_minutes)]


def _jobs_args(settings: Settings) -> list[str]:
    """The input ``workers`` (or its default), as ``--jobs``: how fast, never what is measured."""
    return ["--jobs", str(settings.workers)]


def _foreign_writes(names: list[str]) -> str:
    listed = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    return (f"{listed} {'were' if len(names) > 1 else 'was'} written during the check by a "
            "process other than the gate (the pull request's code cannot set this step's "
            "outputs, summary or environment); what it wrote was discarded")


@dataclass(frozen=True)
class Scoreboard:
    """What the step reports: the verdict, the files it rests on as they were read and validated
    (once, right after the check), and the report, the summary and the comment rendered from
    that in memory — never again from the files, which the pull request's code (the selftest
    runs it again) could rewrite meanwhile."""

    verdict: Verdict
    files: dict[str, str | None]  # verdict.json, results.json, base.json, history.json as validated
    has_results: bool
    report: str
    summary_text: str  # the report, or as much as fits the job summary less ``room``
    comment_text: str | None  # None: no comment asked for
    room: int  # bytes kept free for the selftest's line

    @classmethod
    def of(cls, verdict: Verdict, results: Results | None, base: Baseline | None,
           files: dict[str, str | None], settings: Settings, room: int,
           history: Sequence[HistoryVersion] = ()) -> Scoreboard:
        from membench_gate.ci.comment import body_from_data
        from membench_gate.report.render import render

        report = render(verdict, results, base, limit=None, history=history)
        summary = report if len(report.encode("utf-8")) <= SUMMARY_LIMIT - room \
            else render(verdict, results, base, limit=SUMMARY_LIMIT - room, history=history)
        comment = body_from_data(verdict, results, base, room=room, history=history) \
            if settings.comment != "off" else None
        return cls(verdict, files, results is not None, report, summary, comment, room)

    @classmethod
    def failed(cls, error: GateError, settings: Settings, room: int) -> Scoreboard:
        """The ERROR ``error``, in place of every file (none is left to be read as this run's)."""
        verdict = error_verdict(error, settings.config, isolation())
        text = canonical_dumps(verdict.model_dump(mode="json"))
        return cls.of(verdict, None, None, dict.fromkeys(ARTIFACT_FILES, text), settings, room)

    def leave(self, paths: dict[str, Path], advisory: bool) -> None:
        """Put in the step's folder the files this rests on — as validated, whatever was written
        there since — the report, and ``step.json`` for the fork-safe comment workflow."""
        for name in ARTIFACT_FILES:
            text = self.files.get(name)
            if text is None:
                paths[name].unlink(missing_ok=True)
            else:
                write_atomic(paths[name], text)
        write_atomic(paths["report.md"], self.report)
        write_atomic(paths[STEP_FILE], canonical_dumps(StepRecord(advisory=advisory).model_dump()))

    def summary(self, selftest: SelftestReport | Literal[False] | None) -> str:
        return _closed(self.summary_text, selftest, self.room)

    def comment(self, selftest: SelftestReport | Literal[False] | None) -> str:
        assert self.comment_text is not None
        return _closed(self.comment_text, selftest, self.room)


def _closed(text: str, selftest: SelftestReport | Literal[False] | None, room: int) -> str:
    """``text`` closed by the selftest's line (``False``: it could not run), within ``room``."""
    if selftest is None:
        return text
    if selftest is False:
        return f"{text}\n{SELFTEST_FAILED}"
    from membench_gate.report.selftest import sensitivity_markdown

    line = sensitivity_markdown(selftest)
    if len(line.encode("utf-8")) + 1 > room:  # many blind metrics: counted, not named
        line = sensitivity_markdown(selftest, listed=False)
    return f"{text}\n{line}"


def _read_once(paths: dict[str, Path], status: int, settings: Settings, room: int) -> Scoreboard:
    """The check's verdict and the files beside it, each read once and validated, and rendered.

    The exit status is the verdict: a file that says PASS next to a process that exited 1 (or
    a process that exited 0 next to a file that says REGRESSION) was written by something else,
    or left by a run that did not finish — neither is a verdict to post or to pass on. Nor is a
    verdict whose results or base baseline cannot be read: whatever cannot be shown as this
    check's outcome is an ERROR.
    """
    from membench_gate.ci.comment import parse_data, parse_history_data, read_history_file

    try:
        files = {name: _read(paths[name]) for name in ARTIFACT_FILES if name != HISTORY_FILE}
        files[HISTORY_FILE] = read_history_file(paths[HISTORY_FILE])
        data = files["verdict.json"]
        if data is None:
            raise GateError(f"the check exited {status} and wrote no verdict file")
        verdict = load_json(data, str(paths["verdict.json"]))
        if not isinstance(verdict, dict) or not isinstance(verdict.get("exit_code"), int) \
                or not isinstance(verdict.get("verdict"), str):
            raise GateError(f"{paths['verdict.json']} is not a verdict")
        if verdict["exit_code"] != status:
            raise GateError(f"the check exited {status} but its verdict file says "
                            f"{verdict['verdict']} (exit {verdict['exit_code']}): the file is "
                            "not this check's verdict")
        if settings.results and verdict["verdict"] != "error":
            files["results.json"] = _read(Path(settings.results))
        parsed, results, base = parse_data(files, paths["verdict.json"].parent)
    except GateError as exc:
        return Scoreboard.failed(exc, settings, room)
    # Only the history block rests on it: a history.json that is not valid is left out (and
    # out of the artifact), the verdict stands.
    history, note = parse_history_data(files[HISTORY_FILE], str(paths[HISTORY_FILE]))
    if note is not None:
        files[HISTORY_FILE] = None
        print(annotation("warning", note, "membench-gate history"), flush=True)
    text = {name: data.decode("utf-8") if data is not None else None
            for name, data in files.items()}
    return Scoreboard.of(parsed, results, base, text, settings, room, history)


def _read(path: Path) -> bytes | None:
    from membench_gate.files import read_file

    return read_file(path) if path.exists() else None


SELFTEST_FAILED = "**Gate sensitivity:** the selftest could not run; the job log has the reason.\n"


def _selftest(settings: Settings, paths: dict[str, Path], env: Mapping[str, str]
              ) -> SelftestReport | Literal[False]:
    """Run ``membench-gate selftest`` (input ``selftest``): its validated report, or False when
    it could not run. Its outcome never changes the verdict: blind metrics are a warning about
    the gate itself."""
    from membench_gate.report.selftest import read_report

    _run_quarantined(["selftest", "--config", settings.config, "--json",
                      str(paths["selftest.json"]), *_budget_args(settings),
                      *_jobs_args(settings)], env)
    try:
        report = read_report(paths["selftest.json"])
    except GateError as exc:
        print(annotation("warning", f"selftest could not run: {exc}", "membench-gate selftest"),
              flush=True)
        return False
    if report.blind:
        print(annotation("warning", f"gate sensitivity {report.covered}/{report.total}: no mutant "
                         f"breaches {', '.join(report.blind)}", "membench-gate selftest"),
              flush=True)
    return report


def _comment(body: str, settings: Settings) -> str:
    from membench_gate.ci.comment import post

    pr = settings.context.pull_request
    if pr is None:
        print("comment: not a pull request run; nothing posted")
        return ""
    url, warning = post(body, pr, settings.comment_key, settings.comment, settings.context)
    if warning:
        print(annotation("warning", warning, "membench-gate comment"), flush=True)
    return url or ""


if __name__ == "__main__":  # (through the entry shim membench_gate.action)
    try:
        raise SystemExit(main())
    except GateError as exc:
        print(annotation("error", str(exc), "membench-gate"))
        print(visible(f"membench-gate: error: {exc}"), file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
