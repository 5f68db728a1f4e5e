"""Everything membench-gate takes from its environment, read once into typed objects.

A workflow step gets GitHub's context as environment variables (``GITHUB_*``, ``RUNNER_TEMP``) plus the
event payload as a JSON file (:class:`Context`), and our action's inputs as the ``MEMBENCH_*`` variables
action.yml sets from them (:class:`Settings`; never ``${{ }}`` inside a script). Commands take these objects
instead of reading ``os.environ``, so a bad input is caught in one place and named as the input the user
wrote.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from membench_gate.adapter.seal import MODES as SEAL_MODES
from membench_gate.errors import GateError
from membench_gate.files import load_json

AUTO_WORKERS = 4  # the input workers left empty: the runner's cores, at most this many


def auto_workers() -> int:
    """The input ``workers`` left empty: the runner's cores, at most :data:`AUTO_WORKERS`."""
    return max(1, min(os.cpu_count() or 1, AUTO_WORKERS))
COMMENT_MODES = ("update", "recreate", "off")
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True)
class Context:
    """What the runner tells every step. Empty outside GitHub Actions; building it never fails (the event
    payload is read on first use)."""

    actions: bool = False  # GITHUB_ACTIONS: workflow commands (annotations) are understood
    ci: bool = False  # CI or GITHUB_ACTIONS: local-only escape hatches are refused (rule 9)
    token: str = ""
    repository: str = ""
    api_url: str = "https://api.github.com"
    event_name: str = ""
    event_path: Path | None = None
    ref: str = ""
    sha: str = ""  # GITHUB_SHA: the commit the run is for (GitHub's merge commit in a PR run)
    output_path: Path | None = None  # GITHUB_OUTPUT
    summary_path: Path | None = None  # GITHUB_STEP_SUMMARY
    runner_temp: Path | None = None
    # The whole environment it was read from, passed on (less what is withheld) to child processes.
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Context:
        """The context of this step (``os.environ`` by default)."""
        env = os.environ if env is None else env

        def path(name: str) -> Path | None:
            return Path(env[name]) if env.get(name) else None

        def truthy(name: str) -> bool:
            return env.get(name, "").strip().lower() not in (_FALSE | {""})

        return cls(
            actions=truthy("GITHUB_ACTIONS"),
            ci=truthy("CI") or truthy("GITHUB_ACTIONS"),
            # Our step passes the github-token input as GITHUB_TOKEN; INPUT_GITHUB_TOKEN is how the runner
            # hands an input to a JavaScript or container action.
            token=env.get("GITHUB_TOKEN", "") or env.get("INPUT_GITHUB_TOKEN", ""),
            repository=env.get("GITHUB_REPOSITORY", ""),
            api_url=env.get("GITHUB_API_URL", "") or cls.api_url,
            event_name=env.get("GITHUB_EVENT_NAME", ""),
            event_path=path("GITHUB_EVENT_PATH"),
            ref=env.get("GITHUB_REF", ""),
            sha=env.get("GITHUB_SHA", ""),
            output_path=path("GITHUB_OUTPUT"),
            summary_path=path("GITHUB_STEP_SUMMARY"),
            runner_temp=path("RUNNER_TEMP"),
            environ=dict(env),
        )

    @cached_property
    def event(self) -> dict[str, Any]:
        """The event payload (``GITHUB_EVENT_PATH``), or {} outside Actions."""
        if self.event_path is None:
            return {}
        try:
            raw = self.event_path.read_bytes()
        except OSError as exc:
            raise GateError(f"{self.event_path}: cannot read the event payload: "
                            f"{exc.strerror}") from exc
        try:
            data = load_json(raw, "JSON")
        except GateError as exc:
            raise GateError(f"{self.event_path}: cannot read the event payload: {exc}") from exc
        if not isinstance(data, dict):
            raise GateError(f"{self.event_path}: the event payload is not a JSON object")
        return data

    @property
    def pull_request(self) -> int | None:
        """The PR number of a ``pull_request`` run (payload, then ``refs/pull/N/merge``)."""
        pull = self.event.get("pull_request")
        number = pull.get("number") if isinstance(pull, dict) else None
        if isinstance(number, int) and not isinstance(number, bool):
            return number
        parts = self.ref.split("/")
        if len(parts) == 4 and parts[:2] == ["refs", "pull"] and parts[2].isdigit():
            return int(parts[2])
        return None


@dataclass(frozen=True)
class Settings:
    """The action's inputs (action.yml names them; the step's ``env:`` passes each as ``MEMBENCH_<NAME>``),
    validated, with the :class:`Context` they run in. Unset inputs take action.yml's defaults."""

    context: Context = field(default_factory=Context)
    config: str = "membench.toml"
    comment: str = "update"
    comment_key: str = "default"
    fail_on_regression: bool = True
    base_ref: str = ""
    include_holdout: bool = False
    selftest: bool = False  # also run membench-gate selftest and show the gate sensitivity
    verify_determinism: bool = False
    results: str = ""  # a results file to gate instead of running (merged shards)
    budget_minutes: float | None = None  # the check's time budget (else the config's, or CI's)
    seal: str = "auto"  # auto, required or off: whether the PR's code runs sealed (seal.py)
    # Adapter processes side by side (--jobs); the input left empty: the cores, at most 4.
    workers: int = field(default_factory=auto_workers)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read and check every input; a bad one is a :class:`GateError` naming the input."""
        env = os.environ if env is None else env

        def text(name: str, default: str) -> str:
            return env.get(f"MEMBENCH_{name.upper().replace('-', '_')}", "").strip() or default

        def flag(name: str, default: bool) -> bool:
            raw = text(name, "").lower()
            if raw and raw not in _TRUE | _FALSE:
                raise GateError(f"input {name}: expected true or false, got {raw!r}")
            return raw in _TRUE if raw else default

        def minutes(name: str) -> float | None:
            from membench_gate.budget import parse_minutes

            raw = text(name, "")
            try:
                return parse_minutes(raw) if raw else None
            except ValueError as exc:
                raise GateError(f"input {name}: {exc}") from None

        def workers(name: str) -> int:
            from membench_gate.defaults import MAX_WORKERS

            raw = text(name, "")
            if not raw:
                return auto_workers()
            if raw.isascii() and raw.isdigit() and 1 <= int(raw) <= MAX_WORKERS:
                return int(raw)
            raise GateError(f"input {name}: expected a whole number from 1 to {MAX_WORKERS}, "
                            f"or empty for the runner's cores (at most {AUTO_WORKERS}), got "
                            f"{raw!r}")

        comment = text("comment", cls.comment)
        if comment not in COMMENT_MODES:
            raise GateError(f"input comment: expected update, recreate or off, got {comment!r}")
        seal = text("seal", cls.seal).lower()
        if seal not in SEAL_MODES:
            raise GateError(f"input seal: expected auto, required or off, got {seal!r}")
        return cls(
            context=Context.from_env(env),
            config=text("config", cls.config),
            comment=comment,
            comment_key=text("comment-key", cls.comment_key),
            fail_on_regression=flag("fail-on-regression", cls.fail_on_regression),
            base_ref=text("base-ref", cls.base_ref),
            include_holdout=flag("include-holdout", cls.include_holdout),
            selftest=flag("selftest", cls.selftest),
            verify_determinism=flag("verify-determinism", cls.verify_determinism),
            results=text("results", cls.results),
            budget_minutes=minutes("budget-minutes"),
            seal=seal,
            workers=workers("workers"),
        )

    @property
    def out_dir(self) -> Path:
        """Where the action keeps the files of this run (``$RUNNER_TEMP/membench-gate``)."""
        return (self.context.runner_temp or Path(".")) / "membench-gate"
