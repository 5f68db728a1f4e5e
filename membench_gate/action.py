"""The composite action's gate step: ``python -m membench_gate.action``.

Inputs arrive as environment variables set by ``action.yml`` (never ``${{ }}`` inside a script).
It runs ``membench-gate check`` in a subprocess wrapped in stop-commands (so nothing the
adapter prints can issue workflow commands), then writes the outputs, the step summary, at most
ten annotations, posts the sticky comment, and exits with the verdict — or 0 when
``fail-on-regression`` is false (an ERROR still fails: a broken gate must be visible).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from membench_gate.actions_env import (
    MAX_ANNOTATIONS,
    annotation,
    append,
    format_outputs,
    pull_request_number,
)
from membench_gate.errors import GateError
from membench_gate.report import SUMMARY_LIMIT

_TRUE = {"true", "1", "yes", "on"}
# Not for the child, which runs the PR's adapter code: the token, and the runner's file commands
# (stop-commands covers printed commands, not these files).
_WITHHELD = ("GITHUB_TOKEN", "INPUT_GITHUB-TOKEN", "INPUT_GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT",
            "GITHUB_STATE", "GITHUB_STEP_SUMMARY")
_ANNOTATION_ORDER = ("zero", "floor", "metric", "metric-missing", "cell-missing", "gold-total",
                     "item-removed", "newly-failed")
_FALSE = {"false", "0", "no", "off", ""}


@dataclass(frozen=True)
class Inputs:
    config: str
    token: str
    comment: str
    comment_key: str
    fail_on_regression: bool
    base_ref: str
    include_holdout: bool
    out_dir: Path


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return default if raw == "" else False
    raise GateError(f"input {name.removeprefix('MEMBENCH_').lower().replace('_', '-')}: "
                    f"expected true or false, got {raw!r}")


def read_inputs(env: Mapping[str, str]) -> Inputs:
    comment = env.get("MEMBENCH_COMMENT", "update").strip() or "update"
    if comment not in ("update", "recreate", "off"):
        raise GateError(f"input comment: expected update, recreate or off, got {comment!r}")
    out_dir = Path(env.get("RUNNER_TEMP") or ".") / "membench-gate"
    return Inputs(
        config=env.get("MEMBENCH_CONFIG", "").strip() or "membench.toml",
        token=env.get("GITHUB_TOKEN", ""),
        comment=comment,
        comment_key=env.get("MEMBENCH_COMMENT_KEY", "").strip() or "default",
        fail_on_regression=_flag(env, "MEMBENCH_FAIL_ON_REGRESSION", True),
        base_ref=env.get("MEMBENCH_BASE_REF", "").strip(),
        include_holdout=_flag(env, "MEMBENCH_INCLUDE_HOLDOUT", False),
        out_dir=out_dir,
    )


def _gate(args: list[str], env: Mapping[str, str]) -> int:
    """Run a membench-gate command with its output going to the log, workflow commands disabled.

    The child (which runs the PR's adapter code) gets no token, and its stderr is merged into
    stdout so nothing it prints can arrive after the resume line.
    """
    token = secrets.token_hex(16)
    child_env = {k: v for k, v in env.items() if k not in _WITHHELD}
    print(f"::stop-commands::{token}", flush=True)
    try:
        done = subprocess.run([sys.executable, "-m", "membench_gate", *args], env=child_env,
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


def _error_exit(message: str, env: Mapping[str, str]) -> int:
    """Outputs, summary and annotation of a gate that could not run at all."""
    outputs = dict.fromkeys(("verdict", "exit-code", "mode", "base-sha", "report-path",
                             "results-path", "comment-url"), "")
    outputs.update({"verdict": "error", "exit-code": "4"})
    append("GITHUB_OUTPUT", format_outputs(outputs), env)
    append("GITHUB_STEP_SUMMARY", "## membench-gate: ⛔ ERROR\n\nThe gate could not run; the job "
           "log has the one-line reason.\n", env)
    print(annotation("error", message, "membench-gate"), flush=True)
    print(f"membench-gate: error: {message}", file=sys.stderr)
    return 4


def main(env: Mapping[str, str] | None = None) -> int:
    env = dict(os.environ) if env is None else env
    if env.get("GITHUB_TOKEN"):
        print(f"::add-mask::{env['GITHUB_TOKEN']}", flush=True)
    try:
        inputs = read_inputs(env)
    except GateError as exc:
        return _error_exit(str(exc), env)
    out = inputs.out_dir
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in ("results.json", "verdict.json", "report.md",
                                           "base.json")}
    for path in paths.values():
        path.unlink(missing_ok=True)
    holdout = ["--include-holdout"] if inputs.include_holdout else []
    base_ref = ["--base-ref", inputs.base_ref] if inputs.base_ref else []
    _gate(["check", "--config", inputs.config, "--out", str(paths["results.json"]),
                  "--json", str(paths["verdict.json"]), "--report", str(paths["report.md"]),
                  "--base-out", str(paths["base.json"]), *base_ref, *holdout], env)
    verdict = json.loads(paths["verdict.json"].read_text(encoding="utf-8")) \
        if paths["verdict.json"].exists() else {"verdict": "error", "exit_code": 4,
                                                 "notes": ["the gate failed; see the log"]}
    comment_url = ""
    if paths["verdict.json"].exists() and inputs.comment != "off":
        try:
            comment_url = _comment(paths, inputs, env)
        except Exception as exc:  # a comment is never worth a changed verdict
            print(annotation("warning", f"could not comment: {type(exc).__name__}: {exc}",
                             "membench-gate comment"), flush=True)
    outputs = {
        "verdict": verdict["verdict"],
        "exit-code": str(verdict["exit_code"]),
        "mode": verdict.get("mode") or "",
        "base-sha": (verdict.get("base") or {}).get("sha") or "",
        "report-path": str(paths["report.md"]) if paths["report.md"].exists() else "",
        "results-path": str(paths["results.json"]) if paths["results.json"].exists() else "",
        "comment-url": comment_url,
    }
    append("GITHUB_OUTPUT", format_outputs(outputs), env)
    if paths["report.md"].exists():
        append("GITHUB_STEP_SUMMARY", _summary(paths), env)
    else:
        append("GITHUB_STEP_SUMMARY", "## membench-gate: ⛔ ERROR\n\nThe gate could not run; "
               "the job log has the one-line reason.\n", env)
    for line in _annotations(verdict):
        print(line, flush=True)
    exit_code = int(verdict["exit_code"])
    if not inputs.fail_on_regression and exit_code in (1, 2, 3):
        print(f"membench-gate: advisory mode (fail-on-regression: false): verdict "
              f"{verdict['verdict']} does not fail the job")
        return 0
    return exit_code


def _summary(paths: dict[str, Path]) -> str:
    """The report for the job summary: the file itself, or re-rendered to fit 1 MiB."""
    text = paths["report.md"].read_text(encoding="utf-8")
    if len(text.encode("utf-8")) <= SUMMARY_LIMIT:
        return text
    from membench_gate.comment import read_data
    from membench_gate.report import render

    return render(*read_data(paths["verdict.json"].parent), limit=SUMMARY_LIMIT)


def _comment(paths: dict[str, Path], inputs: Inputs, env: Mapping[str, str]) -> str:
    from membench_gate.comment import body_from_data, post, read_data, target_from_env

    pr = pull_request_number(env)
    if pr is None:
        print("comment: not a pull request run; nothing posted")
        return ""
    body = body_from_data(*read_data(paths["verdict.json"].parent))
    url, warning = post(body, pr, inputs.comment_key, inputs.comment, target_from_env(env))
    if warning:
        print(annotation("warning", warning, "membench-gate comment"), flush=True)
    return url or ""


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except GateError as exc:
        print(annotation("error", str(exc), "membench-gate"))
        print(f"membench-gate: error: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
