"""A memory repository gated on the built-in fixtures: its config, a blessed baseline on main in
a bare origin, the adapters a pull request may bring, and the environment variables GitHub's
runner gives a composite action's step.

Shared by the check and bless CLI tests, tests/e2e/action/test_gate_step.py (the gate step as a
subprocess) and the end-to-end tests under ``act``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.cli import seed_repo
from tests.support.gitrepos import actions_checkout, bare_origin, commit, git, write_event
from tests.support.paths import REPO

PROJECT = REPO
ACTION_YML = PROJECT / "action.yml"
REPOSITORY = "acme/memory"
PR_NUMBER = 5

CONFIG = """\
[adapter]
python = "{adapter}"
[adapter.options]
tau = {tau}
[suites.veto]
fixtures = ["builtin"]
k = {k}
[suites.abstention]
fixtures = ["builtin"]
[suites.push]
fixtures = ["builtin"]
{extra}"""

# Abstains on everything and pushes nothing: every metric of every cell gets worse at once.
SILENT_ADAPTER = '''\
from membench_gate import Answer


class Silent:
    def __init__(self, **options):
        pass

    def reset(self):
        pass

    def ingest(self, records):
        pass

    def search(self, query):
        return Answer(hits=[], abstain=True)

    def push(self, query):
        return []
'''

# The reference memory, printing workflow commands on stdout and stderr while it is measured.
NOISY_ADAPTER = '''\
import sys

from membench_gate.reference import ReferenceMemory

BAIT = ("::error::pwned", "::set-output name=x::y", "::warning::pwned-too")


def _shout():
    for line in BAIT:
        print(line, flush=True)
        print(line, file=sys.stderr, flush=True)


_shout()


class Noisy(ReferenceMemory):
    def __init__(self, **options):
        super().__init__(**options)
        _shout()

    def ingest(self, records):
        _shout()
        super().ingest(records)
'''

# Silent, and leaves an unterminated line on stdout when the interpreter exits (a progress
# bar's last frame, a print(..., end="")).
UNTERMINATED_ADAPTER = '''\
import atexit
import sys

from silent import Silent

atexit.register(lambda: sys.stdout.write("adapter: done"))


class Unterminated(Silent):
    pass
'''

# Ends the interpreter from inside the adapter with a verdict-like code: not a verdict.
EXITING_ADAPTER = '''\
import sys


class Exiting:
    def __init__(self, **options):
        sys.exit(2)
'''


# What the adapter appends to $GITHUB_OUTPUT: a forged verdict, then a heredoc left open to
# swallow the gate's own lines — with the action's delimiter from before it was random, or
# with one of the runner's own form.
FORGERIES = {
    "Fixed": "verdict=pass\nexit-code=0\nswallowed<<MEMBENCH_GATE_EOF\n",
    "Open": "verdict=pass\nexit-code=0\nverdict<<ghadelimiter_0c6b2f4e-9d1a-4d7e-8f0a\npass\n",
}
FORGED_SUMMARY = "## membench-gate: ✅ PASS\n\nNothing got worse.\n\n"

# Silent, and forges what the action reports (Fixed, Open: the runner's files; Rewriter: the
# check's files, when the selftest runs it). It finds the runner's files the way an attacker
# can: in the environment of the nearest ancestor that has them (the gate step's own process),
# and in GitHub's folder of them under $RUNNER_TEMP.
FORGER = f"""\
import glob
import json
import os
from pathlib import Path

from silent import Silent

FIXED = {FORGERIES["Fixed"]!r}
OPEN = {FORGERIES["Open"]!r}
SUMMARY = {FORGED_SUMMARY!r}
""" + '''

def _ancestors():
    pid = os.getppid()
    while pid > 1:
        yield pid
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            pid = int(handle.read().rsplit(")", 1)[1].split()[1])


def _cmdlines():
    for pid in _ancestors():
        try:
            yield Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            pass


def _nearest(name):
    for pid in _ancestors():
        try:
            entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\\0")
        except OSError:
            continue
        for entry in entries:
            key, _, value = entry.partition(b"=")
            if key == name.encode() and value:
                return [value.decode()]
    return []


def _files(name, prefix):
    temp = os.environ.get("RUNNER_TEMP", "") or "".join(_nearest("RUNNER_TEMP"))
    return _nearest(name) + glob.glob(os.path.join(temp, "_runner_file_commands", prefix + "*"))


def forge_runner_files(text):
    for path in _files("GITHUB_OUTPUT", "set_output_"):
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
    for path in _files("GITHUB_STEP_SUMMARY", "step_summary_"):
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(SUMMARY)


def forge_scoreboard():
    """Run by the selftest: rewrite the check's files to say PASS."""
    if not any(b"selftest" in argv.split(b"\\0") for argv in _cmdlines()):
        return
    # RUNNER_TEMP is withheld from the adapter: an unsealed one finds it in its parent's.
    folder = Path(os.environ.get("RUNNER_TEMP") or _nearest("RUNNER_TEMP")[0]) / "membench-gate"
    verdict = json.loads((folder / "verdict.json").read_text(encoding="utf-8"))
    verdict.update(verdict="pass", exit_code=0, breaches=[], newly_failed={})
    (folder / "verdict.json").write_text(json.dumps(verdict), encoding="utf-8")
    (folder / "report.md").write_text(SUMMARY, encoding="utf-8")
    (folder.parent / "forged-in-selftest").write_text("yes", encoding="utf-8")


class Fixed(Silent):
    def __init__(self, **options):
        super().__init__(**options)
        forge_runner_files(FIXED)


class Open(Silent):
    def __init__(self, **options):
        super().__init__(**options)
        forge_runner_files(OPEN)


class Rewriter(Silent):
    def __init__(self, **options):
        super().__init__(**options)
        forge_scoreboard()
'''


def config_text(tau: float = 0.45, adapter: str = "membench_gate.reference:ReferenceMemory",
                k: int = 5, extra: str = "") -> str:
    """The three built-in suites on ``adapter``; ``extra`` (tables such as ``[floors]``) last."""
    return CONFIG.format(tau=tau, adapter=adapter, k=k, extra=extra)


def blessed_origin(root: Path, files: Mapping[str, str] | None = None,
                   setup: Callable[[Path], None] | None = None) -> tuple[Path, str]:
    """A bare origin whose main has the config, ``files`` and a blessed baseline: (origin, sha).

    ``setup`` may add more to the seed work tree before the first commit.
    """
    seed = seed_repo(root / "seed", {"membench.toml": config_text(), **(files or {})}, setup)
    return bare_origin(seed), git(seed, "rev-parse", "HEAD")


@dataclass
class Checkout:
    """The workspace of one ``pull_request`` run and its event payload."""

    path: Path
    event: Path
    base_sha: str
    head_sha: str
    merge_sha: str


def push_pr(origin: tuple[Path, str], dev: Path, where: Path, label: str,
            files: Mapping[str, str]) -> Checkout:
    """Push a commit with ``files`` (and a README edit) to the ``feature`` branch of ``dev``,
    publish GitHub's merge commit as ``refs/pull/5/merge`` and check that out the way
    actions/checkout does: depth 1, detached, as ``refs/remotes/pull/5/merge``."""
    bare, main_sha = origin
    git(dev, "checkout", "-q", "feature")
    head = commit(dev, f"push {label}", {"README.md": f"memory, push {label}\n", **files})
    git(dev, "push", "-q", "-f", "origin", "feature")
    git(dev, "checkout", "-q", "--detach", main_sha)
    git(dev, "merge", "-q", "--no-ff", "-m", f"Merge {head} into {main_sha}", "feature")
    merge = git(dev, "rev-parse", "HEAD")
    git(dev, "push", "-q", "-f", "origin", f"{merge}:refs/pull/{PR_NUMBER}/merge")
    ci = actions_checkout(f"file://{bare}", where / f"ci-{label}", f"refs/pull/{PR_NUMBER}/merge")
    git(ci, "update-ref", f"refs/remotes/pull/{PR_NUMBER}/merge", "HEAD")
    event = write_event(where / f"event-{label}.json", {
        "action": "synchronize",
        "number": PR_NUMBER,
        "pull_request": {
            "number": PR_NUMBER,
            "head": {"sha": head, "ref": "feature", "repo": {"full_name": REPOSITORY}},
            "base": {"sha": main_sha, "ref": "main", "repo": {"full_name": REPOSITORY}},
        },
        "repository": {"full_name": REPOSITORY, "default_branch": "main"},
    })
    return Checkout(ci, event, main_sha, head, merge)


# -- what action.yml asks of the runner ---------------------------------------------------------

def action_spec() -> dict[str, Any]:
    return yaml.safe_load(ACTION_YML.read_text(encoding="utf-8"))


_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(text: str, inputs: Mapping[str, str], context: Mapping[str, str]) -> str:
    """Substitute the ``${{ inputs.x }}`` / ``${{ github.x }}`` expressions action.yml uses."""

    def value(match: re.Match[str]) -> str:
        expr = match.group(1)
        if expr.startswith("inputs."):
            return inputs[expr.removeprefix("inputs.")]
        if expr in context:
            return context[expr]
        raise AssertionError(f"action.yml uses ${{{{ {expr} }}}}, which this test cannot evaluate")

    return _EXPR.sub(value, text)


def resolved_inputs(given: Mapping[str, str], context: Mapping[str, str]) -> dict[str, str]:
    """Every input of action.yml: the given value, else its default evaluated like the runner."""
    spec = action_spec()["inputs"]
    unknown = set(given) - set(spec)
    assert not unknown, f"not inputs of action.yml: {sorted(unknown)}"
    return {name: given[name] if name in given else evaluate(str(item.get("default", "")), {},
                                                             context)
            for name, item in spec.items()}


def action_step(step_id: str) -> dict[str, Any]:
    """The composite step ``step_id`` of action.yml."""
    return next(s for s in action_spec()["runs"]["steps"] if s.get("id") == step_id)


def step_env(step_id: str, inputs: Mapping[str, str], context: Mapping[str, str]
             ) -> dict[str, str]:
    """The ``env:`` of the composite step ``step_id``, with its expressions evaluated."""
    step = action_step(step_id)
    return {name: evaluate(str(value), inputs, context)
            for name, value in (step.get("env") or {}).items()}


# -- what the runner reads back -----------------------------------------------------------------

def parse_file_command(text: str) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` / ``$GITHUB_ENV`` as the runner reads it (:func:`runner_reads`), every
    entry well formed: a malformed one, or one without a name, fails the test."""
    values, error = runner_reads(text)
    assert error is None, error
    assert "" not in values, "an entry without a name"
    return values


def runner_reads(text: str) -> tuple[dict[str, str], str | None]:
    """``$GITHUB_OUTPUT`` as GitHub's runner processes it after the step: line by line, each
    ``k=v`` or ``k<<DELIM`` setting its output at once (a later one wins), until the end or the
    first malformed entry — whose error fails the step, while what was set before it stays set.
    Returns the outputs set and that error, if any."""
    values: dict[str, str] = {}
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        heredoc, equals = line.find("<<"), line.find("=")
        if equals >= 0 and (heredoc < 0 or equals < heredoc):
            values[line[:equals]] = line[equals + 1:]
            continue
        if heredoc < 0:
            return values, f"Invalid format '{line}'"
        name, delimiter = line[:heredoc], line[heredoc + 2:]
        if not name or not delimiter:
            return values, f"Invalid format '{line}'"
        body: list[str] = []
        while i < len(lines) and lines[i] != delimiter:
            body.append(lines[i])
            i += 1
        if i == len(lines):
            return values, f"Invalid value. Matching delimiter not found '{delimiter}'"
        i += 1
        values[name] = "\n".join(body)
    return values, None


@dataclass
class CommandLog:
    """A step's log as the runner processes it."""

    active: list[str]  # the workflow-command lines the runner acts on
    blocks: list[list[str]]  # lines shown as text between ::stop-commands::T and ::T::
    stopped: bool  # commands were still stopped when the log ended


def workflow_commands(log: str) -> CommandLog:
    """Read a step's log line by line the way the runner does: a command is a line that starts
    with ``::`` (after leading blanks); ``::stop-commands::T`` turns them off until ``::T::``."""
    parsed = CommandLog([], [], False)
    resume: str | None = None
    for line in log.split("\n"):
        stripped = line.lstrip()
        if resume is not None:
            if stripped.rstrip() == resume:
                resume = None
            else:
                parsed.blocks[-1].append(line)
            continue
        if not stripped.startswith("::"):
            continue
        parsed.active.append(stripped.rstrip())
        if stripped.startswith("::stop-commands::"):
            token = stripped.rstrip().removeprefix("::stop-commands::")
            assert token, "stop-commands without a token"
            resume = f"::{token}::"
            parsed.blocks.append([])
    parsed.stopped = resume is not None
    return parsed
