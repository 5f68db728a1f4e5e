"""The base side of a check: which commit, and what the gate config *there* says.

A pull request must never decide where its own yardstick is read from. So the base commit's
baseline and ``[floors]`` are found through the base commit's own config, read with git at the
config path as given (relative to the repository root, never through a symlink in the working
tree), and every way a pull request could point the gate elsewhere is refused or made a breach:

- a moved ``[gate] baseline`` is compared with the base's baseline at the base's path, and the
  move is the breach ``gate:baseline-moved``, which needs a justification like any other;
- in CI a config or baseline that is a symlink is an ERROR;
- in CI no base commit at all is an ERROR naming what was tried, never a bootstrap pass;
- a first baseline ("bootstrap") in CI is accepted only when the base has no gate at all.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from membench_gate.config import Config, parse_floors, parse_toml
from membench_gate.defaults import DEFAULT_CONFIG
from membench_gate.errors import GateError
from membench_gate.model.results import Baseline, UnknownSchemaVersion, parse_baseline
from membench_gate.model.verdict import BaseInfo, Breach

if TYPE_CHECKING:
    from membench_gate.base.git import Context, Repo, Started, Version

MOVED_KEY = "gate:baseline-moved"



@dataclass
class BaseSide:
    """What the base commit holds: where it is, its baseline and floors, why it is unusable.

    ``has_config`` says the base commit has a gate config at the config path (a gate exists
    there even if no baseline does); ``breaches`` are the base side's own findings (the baseline
    moved), soft breaches like the comparison's.
    """

    info: BaseInfo
    baseline: Baseline | None
    floors: dict[str, float]
    inconclusive: str | None = None
    has_config: bool = False
    breaches: list[Breach] = field(default_factory=list)
    data: bytes | None = None  # the baseline's bytes at the base commit, when it has one
    config_rel: str | None = None  # the base's config, repository-relative, when it has one
    # The last versions of the base's baseline file on the base branch, oldest first (asked
    # for with ``history``): what the report charts the run against.
    history: list[Version] = field(default_factory=list)


def config_relpath(root: Path, config_arg: Path) -> str:
    """The config path as given, relative to the repository root, following no symlink inside
    the repository (``membench.toml -> bench/gate.toml`` stays ``membench.toml``, and
    ``gate/membench.toml`` stays that when ``gate`` links to another folder: the base is read
    at the path as given, and CI refuses the link). Only the folders above the root may be
    reached through a link (a working directory under ``/tmp -> /private/tmp``)."""
    given = Path(os.path.abspath(config_arg))
    real_root = os.path.realpath(root)
    # The outermost folder that is the root (by any path to it): a link inside the repository
    # back to its root (``gate -> .``) is then a component of the path, not where it starts.
    for above in reversed(given.parents):
        if os.path.realpath(above) == real_root:
            return given.relative_to(above).as_posix()
    # Reached through a link from outside the repository: where it leads, inside it.
    parent = Path(os.path.realpath(given.parent))
    try:
        rel = (parent / given.name).relative_to(Path(real_root))
    except ValueError as exc:
        raise GateError(f"--config: {config_arg} is outside the git repository {root}") from exc
    return rel.as_posix()


def beside(config_rel: str, relative: str, what: str) -> str:
    """A path relative to the config's folder, as a repository-relative posix path."""
    if Path(relative).is_absolute() or posixpath.isabs(relative):
        raise GateError(f"{what}: {relative!r} must be a path relative to the config file")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(config_rel), relative))
    if joined == ".." or joined.startswith("../") or joined == ".":
        raise GateError(f"{what}: {relative!r} is outside the git repository")
    return joined


def symlinks_on(root: Path, rel: str) -> list[str]:
    """The components of the repository-relative ``rel`` that are symlinks in the work tree."""
    found, current = [], root
    for part in Path(rel).parts:
        current = current / part
        if current.is_symlink():
            found.append(current.relative_to(root).as_posix())
    return found


def refuse_symlinks(root: Path, config_rel: str, baseline_rel: str) -> None:
    """In CI the config and the baseline must be regular files where they are named: a
    symlink would let the pull request choose what the gate reads as its own config."""
    for what, rel in (("config", config_rel), ("baseline", baseline_rel)):
        links = symlinks_on(root, rel)
        if links:
            raise GateError(f"{rel}: the gate {what} path goes through the symlink {links[0]}; "
                            "in CI the config and the baseline must be regular files (a symlink "
                            "would let a pull request choose what the gate reads)")


def _base_gate(text: str, label: str) -> tuple[str | None, dict[str, float]]:
    """``[gate] baseline`` and ``[floors]`` of the base commit's config — only those: the rest
    may come from another version of this tool."""
    data = parse_toml(text, label)
    gate: Any = data.get("gate", {})
    if not isinstance(gate, dict):
        raise GateError(f"{label}: [gate] must be a table")
    baseline = gate.get("baseline", "baselines/main.json")
    if not isinstance(baseline, str) or not baseline:
        raise GateError(f"{label}: gate.baseline must be a relative path")
    return baseline, parse_floors(data.get("floors", {}), label)


def read_base(config: Config, base_ref: str | None, context: Context | None = None,
              config_arg: Path | None = None, git: Started | None = None,
              history: int = 0) -> BaseSide:
    """Resolve the base commit and read its config, baseline and floors — never the PR's.

    ``context`` says whether this is CI and which event the run serves (default: a local run,
    no event). ``config_arg`` is the config path as the user gave it (``--config``); it defaults
    to the config's own path; ``git`` are the repository's git processes when they were started
    ahead for its folder; ``history`` how many of the last versions of the base's baseline on
    the base branch to read too (none by default). Raises ``GateError`` in CI when no base
    commit can be found (with
    what was tried), and for a base whose config or baseline cannot be read.
    """
    from membench_gate.base import git as gitbase

    ci = context is not None and context.ci
    config_arg = config.path if config_arg is None else config_arg
    with gitbase.open_repo(Path(os.path.abspath(config_arg)).parent, git) as repo:
        config_rel = config_relpath(repo.root, config_arg)
        head_baseline = beside(config_rel, config.baseline, "gate.baseline")
        if ci:
            refuse_symlinks(repo.root, config_rel, head_baseline)
        tried: list[str] = []
        base = repo.resolve_base(base_ref, context, tried)
        if base is None:
            if ci:
                raise GateError("no base commit to compare with (CI is set, so this is not a "
                                "first baseline): tried " + "; ".join(tried or ["HEAD (no commit "
                                "yet)"]) + ". Pass --base-ref, or check out with history "
                                "(fetch-depth: 0)")
            return BaseSide(BaseInfo(), None, {})
        at = f"at base {base.sha[:12]}"
        base_config = config_rel
        config_bytes = repo.read_file(base.sha, config_rel)
        if config_bytes is None and config_rel != DEFAULT_CONFIG and _moved_away(repo):
            # The gate's config moved away from where the base keeps it: the base's gate is
            # still the yardstick (its baseline and floors), never "no gate at the base". (A
            # config the commit still has at the default path is another gate, kept.)
            config_bytes = repo.read_file(base.sha, DEFAULT_CONFIG)
            base_config = DEFAULT_CONFIG if config_bytes is not None else config_rel
        floors: dict[str, float] = {}
        base_baseline = head_baseline
        if config_bytes is not None:
            label = f"{base_config} {at}"
            relative, floors = _base_gate(_decode(config_bytes, label), label)
            base_baseline = beside(base_config, relative or config.baseline,
                                   f"{label}: gate.baseline")
        data = repo.read_file(base.sha, base_baseline)
        versions = repo.file_history(base.sha, base_baseline, limit=history) \
            if history and data is not None else []
    # Made without validating: git gave the sha (40 or 64 hex digits, read by pattern) and the
    # lookup the ref and how, so the validator would only be built to agree.
    info = BaseInfo.model_construct(ref=base.ref, sha=base.sha, how=base.how, tip=base.tip)
    side = BaseSide(info, None, floors, has_config=config_bytes is not None, data=data,
                    config_rel=base_config if config_bytes is not None else None,
                    history=versions)
    if data is None:
        return side
    try:
        side.baseline = parse_baseline(data, f"{base_baseline} {at}")
    except UnknownSchemaVersion as exc:
        side.inconclusive = str(exc)
        return side
    if base_baseline != head_baseline:
        side.breaches.append(Breach(
            key=MOVED_KEY, kind="baseline-moved", base=base_baseline, head=head_baseline,
            detail=f"gate.baseline moved from {base_baseline} to {head_baseline}: compared with "
                   f"the base's baseline at {base_baseline}"))
    return side


def read_base_in_repository(config: Config, base_ref: str | None, context: Context | None = None,
                            config_arg: Path | None = None) -> BaseSide | None:
    """:func:`read_base`, or None when the config is in no git repository and no ``base_ref``
    asks for a base: there is nothing to compare with (``bless`` writes a first baseline,
    ``show`` says so). With a ``base_ref``, being outside a repository is an error."""
    from membench_gate.base import git as gitbase

    try:
        gitbase.repo_root(config.base_dir)
    except GateError:
        if base_ref:
            raise
        return None
    return read_base(config, base_ref, context, config_arg=config_arg)


def _moved_away(repo: Repo) -> bool:
    """Whether the commit checked (HEAD, as git has it: not the work tree's files) has no gate
    config at the default path."""
    head = repo.rev("HEAD")
    if head is None:
        return False
    try:
        return repo.read_file(head, DEFAULT_CONFIG) is None
    except GateError:  # a symlink or a folder there: something is there, not a move
        return False


def _decode(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GateError(f"{label}: not UTF-8 text ({exc.reason})") from exc
