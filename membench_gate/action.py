"""The composite action's gate step: ``python -m membench_gate.action``.

Inputs arrive as environment variables set by ``action.yml`` (never ``${{ }}`` inside a script).
It runs ``membench-gate check`` in a subprocess wrapped in stop-commands (so nothing the
adapter prints can issue workflow commands), then writes the outputs, the step summary, at most
ten annotations, posts the sticky comment, and exits with the verdict — or 0 when
``fail-on-regression`` is false (an ERROR still fails: a broken gate must be visible).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from membench_gate.actions_env import MAX_ANNOTATIONS, annotation, append, format_outputs
from membench_gate.comment import holds_failed_verdict
from membench_gate.errors import GateError
from membench_gate.report import SUMMARY_LIMIT
from membench_gate.results import load_json
from membench_gate.seal import close_step_files, prepared_isolation, withhold
from membench_gate.settings import Context, Settings

_ANNOTATION_ORDER = ("zero", "floor", "metric", "metric-missing", "cell-missing", "gold-total",
                     "item-removed", "newly-failed")


# How the action starts the gate in a child: isolated (``-I``), so neither the working directory —
# the pull request's checkout — nor a ``PYTHONPATH`` naming it (``.``, the workspace, an empty
# entry) is on ``sys.path``, where a ``membench_gate/`` folder or a ``sitecustomize.py`` would
# stand in for the gate. (The adapter's own process keeps the environment as it is.)
GATE_CHILD = ["-I", "-c", "from membench_gate.cli import console; console()"]


def _run_quarantined(args: list[str], env: Mapping[str, str]) -> int:
    """Run a membench-gate command with its output going to the log, workflow commands disabled.

    The child (which starts the PR's adapter code) gets neither the token nor the runner's file
    commands or temp folder (stop-commands covers printed commands, not these files): the list
    of :func:`membench_gate.seal.withhold`. Its stderr is merged into stdout so nothing it
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
    level = {"regression": "error", "error": "error", "bless-required": "warning",
             "inconclusive": "warning"}.get(verdict.get("verdict", ""))
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
        note = (verdict.get("notes") or [verdict.get("verdict", "")])[0]
        lines.append(annotation(level, note, f"membench-gate {verdict.get('verdict')}"))
    return lines


def _error_exit(message: str, context: Context) -> int:
    """Outputs, summary and annotation of a gate that could not run at all."""
    outputs = dict.fromkeys(("verdict", "exit-code", "mode", "base-sha", "report-path",
                             "results-path", "comment-url"), "")
    outputs.update({"verdict": "error", "exit-code": "4",
                    "isolation": prepared_isolation(context.environ)})
    append(context.output_path, format_outputs(outputs))
    append(context.summary_path, "## membench-gate: ⛔ ERROR\n\nThe gate could not run; the job "
           "log has the one-line reason.\n")
    print(annotation("error", message, "membench-gate"), flush=True)
    print(f"membench-gate: error: {message}", file=sys.stderr)
    return 4


def main(env: Mapping[str, str] | None = None) -> int:
    """Run the gate step in the environment ``env`` (the process environment by default)."""
    context = Context.from_env(env)
    env = context.environ
    if context.token:
        print(f"::add-mask::{context.token}", flush=True)
    try:
        settings = Settings.from_env(env)
    except GateError as exc:
        return _error_exit(str(exc), context)
    out = settings.out_dir
    # The gate's files: no other user reads or writes them (a sealed adapter is another user).
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    out.chmod(0o700)
    close_step_files(env)
    paths = {name: out / name for name in ("results.json", "verdict.json", "report.md",
                                           "base.json", "selftest.json")}
    for path in paths.values():
        path.unlink(missing_ok=True)
    holdout = ["--include-holdout"] if settings.include_holdout else []
    holdout += ["--verify-determinism"] if settings.verify_determinism else []
    base_ref = ["--base-ref", settings.base_ref] if settings.base_ref else []
    # A given results file (merged shards) is gated as it is; the comment and the results-path
    # output read the copy the gate validated.
    source = ["--results", settings.results] if settings.results else [
        "--out", str(paths["results.json"])]
    status = _run_quarantined(["check", "--config", settings.config, *source,
                    "--json", str(paths["verdict.json"]), "--report", str(paths["report.md"]),
                    "--base-out", str(paths["base.json"]), *base_ref, *holdout], env)
    verdict = _trusted_verdict(paths, status, settings.config)
    if settings.results and verdict["verdict"] != "error":
        shutil.copyfile(settings.results, paths["results.json"])
    sensitivity = _selftest(settings, paths, env) if settings.selftest else ""
    comment_url = ""
    if paths["verdict.json"].exists() and settings.comment != "off":
        try:
            comment_url = _comment(paths, settings, sensitivity)
        except Exception as exc:  # a comment is never worth a changed verdict
            print(annotation("warning", f"could not comment: {type(exc).__name__}: {exc}",
                             "membench-gate comment"), flush=True)
    outputs = {
        "verdict": verdict["verdict"],
        "exit-code": str(verdict["exit_code"]),
        "mode": verdict.get("mode") or "",
        "base-sha": (verdict.get("base") or {}).get("sha") or "",
        "report-path": str(paths["report.md"]) if paths["report.md"].exists() else "",
        "results-path": str(paths["results.json"])
        if paths["results.json"].exists() and not holds_failed_verdict(paths["results.json"])
        else "",
        "comment-url": comment_url,
        "isolation": verdict.get("isolation") or prepared_isolation(env),
    }
    append(context.output_path, format_outputs(outputs))
    if paths["report.md"].exists():
        append(context.summary_path,
               _summary(paths) + (f"\n{sensitivity}" if sensitivity else ""))
    else:
        append(context.summary_path, "## membench-gate: ⛔ ERROR\n\nThe gate could not run; "
               "the job log has the one-line reason.\n")
    for line in _annotations(verdict):
        print(line, flush=True)
    exit_code = int(verdict["exit_code"])
    if not settings.fail_on_regression and exit_code in (1, 2, 3):
        print(f"membench-gate: advisory mode (fail-on-regression: false): verdict "
              f"{verdict['verdict']} does not fail the job")
        return 0
    return exit_code


def _trusted_verdict(paths: dict[str, Path], status: int, config: str) -> dict:
    """The verdict file, if the check process's exit status agrees with it; else an ERROR.

    The exit status is the verdict: a file that says PASS next to a process that exited 1 (or
    a process that exited 0 next to a file that says REGRESSION) was written by something else,
    or left by a run that did not finish — neither is a verdict to post or to pass on.
    """
    problem = None
    try:
        verdict = load_json(paths["verdict.json"].read_bytes(), str(paths["verdict.json"]))
        if not isinstance(verdict, dict) or not isinstance(verdict.get("exit_code"), int) \
                or not isinstance(verdict.get("verdict"), str):
            problem = f"{paths['verdict.json']} is not a verdict"
        elif verdict["exit_code"] != status:
            problem = (f"the check exited {status} but its verdict file says "
                       f"{verdict['verdict']} (exit {verdict['exit_code']}): the file is not "
                       "this check's verdict")
    except FileNotFoundError:
        problem = f"the check exited {status} and wrote no verdict file"
    except (OSError, GateError) as exc:
        problem = str(exc)
    if problem is None:
        return verdict
    from membench_gate.check import error_verdict, replace_outputs

    error = error_verdict(GateError(problem), config)
    replace_outputs(error, [paths["verdict.json"], paths["results.json"], paths["base.json"]],
                    [paths["report.md"]])
    return error.model_dump(mode="json")


def _summary(paths: dict[str, Path]) -> str:
    """The report for the job summary: the file itself, or re-rendered to fit 1 MiB."""
    text = paths["report.md"].read_text(encoding="utf-8")
    if len(text.encode("utf-8")) <= SUMMARY_LIMIT:
        return text
    from membench_gate.comment import read_data
    from membench_gate.report import render

    return render(*read_data(paths["verdict.json"].parent), limit=SUMMARY_LIMIT)


def _selftest(settings: Settings, paths: dict[str, Path], env: Mapping[str, str]) -> str:
    """Run ``membench-gate selftest`` (input ``selftest``) and return the scoreboard's line.

    Its outcome never changes the verdict: blind metrics are a warning about the gate itself.
    """
    from membench_gate.selftest import read_report, sensitivity_markdown

    _run_quarantined(["selftest", "--config", settings.config, "--json", str(paths["selftest.json"])], env)
    try:
        report = read_report(paths["selftest.json"])
    except GateError as exc:
        print(annotation("warning", f"selftest could not run: {exc}", "membench-gate selftest"),
              flush=True)
        return "**Gate sensitivity:** the selftest could not run; the job log has the reason.\n"
    if report.blind:
        print(annotation("warning", f"gate sensitivity {report.covered}/{report.total}: no mutant "
                         f"breaches {', '.join(report.blind)}", "membench-gate selftest"),
              flush=True)
    return sensitivity_markdown(report)


def _comment(paths: dict[str, Path], settings: Settings, extra: str = "") -> str:
    from membench_gate.comment import body_from_data, post, read_data

    pr = settings.context.pull_request
    if pr is None:
        print("comment: not a pull request run; nothing posted")
        return ""
    body = body_from_data(*read_data(paths["verdict.json"].parent), extra=extra)
    url, warning = post(body, pr, settings.comment_key, settings.comment, settings.context)
    if warning:
        print(annotation("warning", warning, "membench-gate comment"), flush=True)
    return url or ""


if __name__ == "__main__":
    from membench_gate.cli import without_pydantic_plugins

    without_pydantic_plugins()
    try:
        raise SystemExit(main())
    except GateError as exc:
        print(annotation("error", str(exc), "membench-gate"))
        print(f"membench-gate: error: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
