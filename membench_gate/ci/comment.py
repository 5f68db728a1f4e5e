"""``membench-gate comment``: the sticky PR comment, in a normal run or the fork-safe
``workflow_run`` mode.

In ``--from-artifact`` mode nothing the PR produced is trusted as text: the artifact's files are
validated with the pydantic models, ids are escaped (control characters refused), the PR is found
from the triggering run (its ``pull_requests``, or through the API by head sha and head repository),
free text (the justification, notes, breach details, the blessed baselines' justifications) is
dropped or re-derived, and the Markdown is rendered again from data. ``history.json`` only adds
the scoreboard's history block: one that is missing or not valid leaves the block out, with a
warning, and never stops the comment. The artifact's verdict must be what the triggering run concluded
(:func:`corroborate`): a PASS beside a run that failed is refused, nothing posted.

A failure to comment is a warning and never changes an exit code.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from membench_gate.ci.actions_env import annotation
from membench_gate.ci.github import MARKER_ROOM
from membench_gate.ci.settings import Context, Settings
from membench_gate.errors import ExitCode, GateError, visible
from membench_gate.files import load_json, read_file
from membench_gate.model.history import HISTORY_FILE, MAX_BYTES, HistoryVersion, parse_history
from membench_gate.model.results import Baseline, Results, parse_baseline, parse_results, validation_message
from membench_gate.model.verdict import Verdict
from membench_gate.report.render import COMMENT_LIMIT, render

_DATA_FILES = ("results.json", "verdict.json", "base.json")  # what a comment rests on
ARTIFACT_FILES = (*_DATA_FILES, HISTORY_FILE)
STEP_FILE = "step.json"  # how the gate step ended (StepRecord), uploaded with them
# What the body may take of a comment: the marker line comes before it.
BODY_LIMIT = COMMENT_LIMIT - MARKER_ROOM
# Ids are escaped like any text when rendered; here only what cannot be an id is refused.
_BAD_ID = re.compile(r"[\x00-\x1f\x7f]")
_MAX_ID = 300


def read_verdict(path: Path) -> Verdict:
    return parse_verdict(read_file(path), str(path))


def parse_verdict(data: bytes, label: str) -> Verdict:
    """A verdict file's bytes, validated."""
    try:
        return Verdict.model_validate(load_json(data, label))
    except ValidationError as exc:
        raise GateError(validation_message(label, exc)) from exc


def body_from_data(verdict: Verdict, results: Results | None, base: Baseline | None,
                   room: int = 0, history: Sequence[HistoryVersion] = ()) -> str:
    """The comment body, within the comment limit less ``room`` bytes (kept free for a line the
    caller closes it with, e.g. the selftest's); ``history`` the base branch's last blessed
    baselines (``history.json``), charted in it."""
    return render(verdict, results, base, limit=BODY_LIMIT - room,
                  full_report="in the job summary of the gating workflow run", history=history)


def _check_ids(verdict: Verdict, results: Results, label: str) -> None:
    """Reject an artifact whose ids are not ids (control characters, pages of text)."""
    names = [*results.cells, *verdict.newly_failed, *verdict.fixed]
    names += [i for cell in results.cells.values() for i in cell.failed]
    names += [i for ids in verdict.newly_failed.values() for i in ids]
    names += [i for ids in verdict.fixed.values() for i in ids]
    names += [b.key for b in verdict.breaches]
    for name in names:
        if not name or len(name) > _MAX_ID or _BAD_ID.search(name):
            raise GateError(f"{label}: {name[:40]!r} is not a valid id or key")


def _scrubbed(verdict: Verdict) -> Verdict:
    """The verdict without free text: details are re-derived from kind, base and head."""
    breaches = [b.model_copy(update={"detail": f"{b.kind}: {b.base} → {b.head}"})
                for b in verdict.breaches]
    check = verdict.justification_check.model_copy(update={
        "text": None,
        "failed_check": "the justification check failed (see the job log)"
        if verdict.justification_check.failed_check else None,
    })
    notes = ["the gate could not compare; the job log of the gating run has the reason"] \
        if verdict.verdict in ("error", "inconclusive") else []
    return verdict.model_copy(update={
        "breaches": breaches, "notes": notes, "justification_check": check,
        "allowed_regression": None, "config": None,
        "base": verdict.base.model_copy(update={"ref": None}),
    })


def read_data(folder: Path) -> tuple[Verdict, Results | None, Baseline | None]:
    """results.json, verdict.json and base.json as ``check --out/--json/--base-out`` write them,
    validated. The results may be missing only when the check could not compare."""
    return parse_data({name: _read_if_there(folder / name) for name in _DATA_FILES}, folder)


def parse_data(files: Mapping[str, bytes | None], folder: Path
               ) -> tuple[Verdict, Results | None, Baseline | None]:
    """:func:`read_data` of files already read: the bytes of each of its files (``None`` for
    a file that is not there), as they were read once."""
    results_data, verdict_data, base_data = (files.get(name) for name in _DATA_FILES)
    results_label, verdict_label, base_label = (str(folder / name) for name in _DATA_FILES)
    if verdict_data is None:
        raise GateError(f"{verdict_label}: file not found")
    verdict = parse_verdict(verdict_data, verdict_label)
    failed = verdict.verdict in ("error", "inconclusive")
    # A check that failed replaces every output it was asked for by its verdict: nothing stale.
    results = None
    if not (failed and (results_data is None or _failed_verdict(results_data, results_label))):
        if results_data is None:
            raise GateError(f"{results_label}: file not found")
        results = parse_results(results_data, results_label)
    base = parse_baseline(base_data, base_label) \
        if base_data is not None and not (failed and _failed_verdict(base_data, base_label)) \
        else None
    return verdict, results, base


def parse_history_data(data: bytes | None, label: str
                       ) -> tuple[list[HistoryVersion], str | None]:
    """The blessed versions of a ``history.json`` (``None``: not there), and why there are none
    to chart when that is worth a warning. It only adds a block to the scoreboard, so a file
    that is missing or not valid leaves the block out and fails nothing; a failed check's
    error verdict in its place (every output is replaced by it) is no history, and no news."""
    if data is None:
        return [], f"{label}: file not found; the history block is left out"
    if _failed_verdict(data, label):
        return [], None
    try:
        return list(parse_history(data, label).versions), None
    except GateError as exc:
        return [], f"{exc}; the history block is left out"


def read_history_file(path: Path) -> bytes | None:
    """The bytes of a ``history.json`` (``None``: not there), never more than one past what
    :func:`parse_history` takes: a file that size is refused unread."""
    try:
        with path.open("rb") as file:
            return file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GateError(f"{path}: cannot read: {exc.strerror}") from exc


def _read_if_there(path: Path) -> bytes | None:
    return read_file(path) if path.exists() else None


def _failed_verdict(data: bytes, label: str) -> bool:
    """Are these bytes the error (or inconclusive) verdict a failed check writes in place of
    its data?"""
    try:
        parsed = load_json(data, label)
    except GateError:
        return False
    return isinstance(parsed, dict) and parsed.get("verdict") in ("error", "inconclusive")


class StepRecord(BaseModel):
    """``step.json``, written by the action's gate step beside the verdict: what else decides
    how the step ended. ``advisory`` is ``fail-on-regression: false``, where a verdict other
    than PASS (ERROR aside) still ends the step with success."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    advisory: bool = False


def expected_conclusion(verdict: Verdict, advisory: bool) -> str:
    """The conclusion of the gating run whose verdict is ``verdict``: ``success`` for PASS (and,
    when ``advisory``, for anything but ERROR), else ``failure``."""
    if verdict.verdict == "pass" or (advisory and verdict.verdict != "error"):
        return "success"
    return "failure"


def read_step(folder: Path) -> StepRecord:
    """The artifact's ``step.json``, validated; a run gated without one was not advisory."""
    path = folder / STEP_FILE
    if not path.exists():
        return StepRecord()
    try:
        return StepRecord.model_validate(load_json(read_file(path), str(path)))
    except ValidationError as exc:
        raise GateError(validation_message(str(path), exc)) from exc


def corroborate(verdict: Verdict, step: StepRecord, context: Context, folder: Path) -> None:
    """Refuse an artifact whose verdict is not what the gating run concluded.

    The artifact comes from a run of the pull request's code, and a process of that run may
    outlive the gate step and rewrite it; the run's ``conclusion`` comes from GitHub. A verdict
    that would have ended the run otherwise (PASS from a run that failed) is not that run's."""
    run = context.event.get("workflow_run")
    conclusion = run.get("conclusion") if isinstance(run, dict) else None
    if not isinstance(conclusion, str):
        raise GateError("--from-artifact needs the workflow_run event payload with the run's "
                        "conclusion (GITHUB_EVENT_PATH)")
    expected = expected_conclusion(verdict, step.advisory)
    if conclusion != expected:
        mode = " (advisory)" if step.advisory else ""
        raise GateError(f"{folder}: verdict {verdict.verdict}{mode} means a run that concluded "
                        f"{expected}, but the gating run concluded {conclusion}: it is not that "
                        "run's verdict; nothing posted")


def load_artifact(folder: Path) -> tuple[Verdict, Results | None, Baseline | None]:
    """The fork-safe artifact: validated data, free text dropped (see the module docstring)."""
    verdict, results, base = read_data(folder)
    if results is not None:
        _check_ids(verdict, results, str(folder))
    return _scrubbed(verdict), results, base


def load_artifact_history(folder: Path) -> tuple[list[HistoryVersion], str | None]:
    """The artifact's ``history.json`` (:func:`parse_history_data`), its justifications
    dropped: free text from the artifact is not posted, however escaped."""
    path = folder / HISTORY_FILE
    try:
        versions, note = parse_history_data(read_history_file(path), str(path))
    except GateError as exc:
        versions, note = [], f"{exc}; the history block is left out"
    return [v.model_copy(update={"justification": ""}) for v in versions], note


def post(body: str, pr: int, key: str, mode: str, context: Context) -> tuple[str | None, str | None]:
    """Post or update the sticky comment on PR ``pr`` of ``context``'s repository: (url, warning)."""
    from membench_gate.ci.github import post_sticky_comment

    outcome = post_sticky_comment(body=body, key=key, mode=mode, token=context.token,
                                  repository=context.repository, pr_number=pr, api_url=context.api_url)
    return outcome.url, outcome.warning


def _warn(message: str, context: Context) -> None:
    if context.actions:
        print(annotation("warning", message, "membench-gate comment"))
    print(visible(f"membench-gate: warning: {message}"), file=sys.stderr)


def _artifact_pr(context: Context) -> int | None:
    from membench_gate.ci.github import find_pr_for_head_sha

    run = context.event.get("workflow_run") or {}
    head_sha = run.get("head_sha")
    if not isinstance(head_sha, str):
        raise GateError("--from-artifact needs a workflow_run event payload with head_sha "
                        "(GITHUB_EVENT_PATH)")
    # Same-repository PRs are named by the event itself; fork PRs are found by head sha and
    # head repository (GitHub leaves pull_requests empty for them).
    for pull in run.get("pull_requests") or []:
        head = pull.get("head") if isinstance(pull, dict) else None
        if isinstance(head, dict) and head.get("sha") == head_sha \
                and isinstance(pull.get("number"), int):
            return int(pull["number"])
    head_repo = (run.get("head_repository") or {}).get("full_name")
    return find_pr_for_head_sha(token=context.token, repository=context.repository,
                                head_sha=head_sha, api_url=context.api_url,
                                head_repository=head_repo if isinstance(head_repo, str) else None)


def comment(settings: Settings, *, report: Path | None = None, verdict: Path | None = None,
            results: Path | None = None, base: Path | None = None, from_artifact: Path | None = None,
            key: str | None = None, mode: str | None = None) -> int:
    """The ``comment`` command: the body from ``from_artifact``, else from ``verdict``/``results``/``base``
    or ``report`` (see :func:`_body`); ``key`` and ``mode`` default to the comment-key and comment inputs.
    Returns 0 even when GitHub refuses: the verdict stands."""
    key, mode = key or settings.comment_key, mode or settings.comment
    if mode == "off":
        print("comment: off")
        return ExitCode.PASS
    context = settings.context
    if from_artifact is not None:
        verdict_data, results_data, base_data = load_artifact(from_artifact)
        corroborate(verdict_data, read_step(from_artifact), context, from_artifact)
        history, note = load_artifact_history(from_artifact)
        if note is not None:
            _warn(note, context)
        body = body_from_data(verdict_data, results_data, base_data, history=history)
        try:
            pr = _artifact_pr(context)
        except GateError as exc:
            _warn(f"could not find the pull request: {exc}", context)
            return ExitCode.PASS
        if pr is None:
            print("comment: no open pull request has this run's head sha; nothing posted")
            return ExitCode.PASS
    else:
        body = _body(report, verdict, results, base)
        pr = context.pull_request
        if pr is None:
            print("comment: not a pull request run; nothing posted")
            return ExitCode.PASS
    url, warning = post(body, pr, key, mode, context)
    if warning:
        _warn(warning, context)
    else:
        print(visible(f"comment: {url}"))
    return ExitCode.PASS


def _body(report: Path | None, verdict: Path | None, results: Path | None, base: Path | None) -> str:
    """Rendered from data when the results are given; else the ``report`` Markdown as it is; else the
    verdict alone (a check that could not run)."""
    if verdict is not None and (results is not None or report is None):
        parsed = parse_results(read_file(results), str(results)) if results is not None else None
        baseline = parse_baseline(read_file(base), str(base)) if base else None
        return body_from_data(read_verdict(verdict), parsed, baseline)
    if report is not None:
        if verdict is not None:
            read_verdict(verdict)  # validated, so a broken file is an error, not ignored
        text = read_file(report).decode("utf-8", "replace")
        if len(text.encode("utf-8")) <= BODY_LIMIT:
            return text
        # Whole lines only, closing an open code fence: never a half-rendered comment.
        note = "\n_(cut to fit a comment; the full report is in the job summary)_\n"
        kept, size, fenced = [], len(note.encode()) + 8, False
        for line in text.splitlines(keepends=True):
            size += len(line.encode("utf-8"))
            if size > BODY_LIMIT:
                break
            kept.append(line)
            fenced ^= line.startswith("```")
        return "".join(kept) + ("```\n" if fenced else "") + note
    raise GateError("comment needs --verdict (with --results), --report, or --from-artifact")
