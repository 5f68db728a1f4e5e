"""Preparing the sandbox the pull request's code runs in: ``python -I -m membench_gate.ci.sandbox prepare``.

The action's install step runs this once per job, before any code of the pull request:

1. a fresh folder under the system's temp folder (every user can reach it) holding the memory's own
   virtual environment, with membench-gate installed and its shipped fixtures removed;
2. where it can seal (Linux, root or passwordless ``sudo``, and ``seal`` not ``off``): the sandbox
   user (created when missing), the checkout and the action's folder closed to other users, a probe
   that the sandbox user can read none of them (nor any fixture folder or the baseline), the sealed
   copy of the checkout (no ``.git``, fixture folders or baseline), a home and a temp folder, all
   handed to the sandbox user;
3. ``seal.json`` recording it, ``MEMBENCH_SEAL_DIR`` exported to ``$GITHUB_ENV`` for the gate and
   every later step, and the outputs ``seal-dir`` and ``isolation``;
4. ``install:`` in the memory's environment — sealed: as the sandbox user in the sealed copy, then
   every process of that user killed.

Where it cannot seal, the folder still holds the memory's environment (the gate's own is never the
install's) and ``seal.json`` says why the run is unsealed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from membench_gate.adapter.seal import (
    DEFAULT_USER,
    DIR_VARIABLE,
    MODE_VARIABLE,
    MODES,
    SEAL_FILE,
    USER_VARIABLE,
    Privilege,
    Sandbox,
    as_sandbox,
    close_step_files,
    helper_python,
    privilege,
    sweep,
    venv_python,
)
from membench_gate.ci.actions_env import RunnerFiles
from membench_gate.errors import GateError

# Groups whose members are root in all but name: a sandbox user in one is no sandbox.
_PRIVILEGED_GROUPS = frozenset({"root", "sudo", "admin", "wheel", "docker", "lxd", "adm"})


@dataclass(frozen=True)
class Request:
    """What the preparation is asked for: the action's inputs, or ``prepare``'s options."""

    mode: str = "auto"
    config: Path = Path("membench.toml")
    install: str = ""  # the install command (run by :func:`run_install`)
    gate_source: str = ""  # what pip installs membench-gate from into the memory's environment
    user: str = DEFAULT_USER
    ci: bool = False
    action_path: Path | None = None
    python: str = field(default_factory=lambda: sys.executable)  # the memory environment's base


class CannotSeal(Exception):
    """Sealing turned out impossible here (a user that is no sandbox, a folder it can read)."""


def prepare(request: Request, checkout: Path | None = None) -> tuple[Sandbox | None, str]:
    """Prepare the sandbox in the working directory's checkout: sealed when it can be and
    ``mode`` allows (``required`` mode raises a :class:`GateError` naming why it cannot seal).
    Returns it and why it is unsealed ("" when sealed); no sandbox at all when it is unsealed
    and there is nothing to install (the adapter then runs on the gate's interpreter, as the
    gate's user). ``install:`` is not run here (:func:`run_install`)."""
    if request.mode not in MODES:
        raise GateError(f"input seal: expected auto, required or off, got {request.mode!r}")
    checkout = Path(os.path.abspath(checkout or Path.cwd()))
    reason, how = "", None
    if request.mode == "off":
        reason = "sealing is off (seal: off)"
    elif request.mode == "auto" and not request.ci:
        reason = "a local run (sealing is for CI; --seal asks for it)"
    else:
        how, reason = privilege()
        if how is None and request.mode == "required":
            raise GateError(f"cannot seal: {reason}")
    if how is not None:
        try:
            sandbox = _seal(checkout, how, request)
            return sandbox, ""
        except CannotSeal as exc:
            reason = str(exc)
    if request.mode == "required":
        raise GateError(f"cannot seal: {reason}")
    if not request.install:
        return None, reason
    root = _new_root()
    _memory_venv(root / "venv", request)
    sandbox = Sandbox(root, False, reason, checkout, root / "venv")
    _write(sandbox)
    return sandbox, reason


def _new_root() -> Path:
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="membench-seal-", dir=_shared_tmp()))
    root.chmod(0o755)
    return root


def _shared_tmp() -> str:
    """A temp folder every user reaches (a runner's own home or ``TMPDIR`` may be closed)."""
    for candidate in ("/tmp", "/var/tmp"):
        if os.path.isdir(candidate) and os.stat(candidate).st_mode & 0o1003 == 0o1003:
            return candidate  # world-writable and sticky
    import tempfile

    return tempfile.gettempdir()


def _memory_venv(venv: Path, request: Request) -> None:
    """The memory's virtual environment, with membench-gate installed and its shipped fixtures
    removed (the host and the adapter types stay; the gold does not)."""
    _run([request.python, "-m", "venv", "--system-site-packages", str(venv)],
         "create the memory's virtual environment")
    python = venv_python(venv)
    _run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
          request.gate_source or _default_gate_source()],
         "install membench-gate into the memory's virtual environment")
    where = subprocess.run([str(python), "-I", "-c", "import membench_gate, os; "
                            "print(os.path.dirname(os.path.abspath(membench_gate.__file__)))"],
                           capture_output=True, text=True, check=False)
    package = Path(where.stdout.strip())
    if where.returncode != 0 or not (package.is_relative_to(venv)
                                     or package.is_relative_to(venv.resolve())):
        raise GateError(f"seal: membench-gate did not install into {venv} (it imports from "
                        f"{package if where.stdout.strip() else 'nowhere'})")
    shutil.rmtree(package / "_data" / "fixtures", ignore_errors=True)


def _default_gate_source() -> str:
    """What to install membench-gate from: this source checkout, or the released version."""
    from membench_gate import __version__

    project = Path(__file__).resolve().parent.parent
    if (project / "pyproject.toml").is_file() and (project / "fixtures").is_dir():
        return str(project)
    return f"membench-gate=={__version__}"


def _run(argv: Sequence[str], what: str) -> None:
    done = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        last = ((done.stderr or done.stdout).strip().splitlines() or ["no output"])[-1]
        raise GateError(f"seal: cannot {what}: {last[:300]}")


def _seal(checkout: Path, how: Privilege, request: Request) -> Sandbox:
    import pwd

    interpreter = Path(os.path.realpath(request.python))
    closed = _closed_on_the_way(interpreter)
    if closed is not None:
        raise CannotSeal(f"another user cannot run {interpreter}: {closed} is closed to other "
                         "users (use a Python every user may run, such as setup-python's)")
    user = _sandbox_user(request.user, how)
    entry = pwd.getpwnam(user)
    for path in _closed_folders(checkout, request):
        path.chmod(path.stat().st_mode & ~0o077)
    root = _new_root()
    sandbox = Sandbox(root, True, "", checkout, root / "venv", root / "work", root / "home",
                      root / "tmp", user, entry.pw_uid, entry.pw_gid, interpreter=interpreter)
    # Before anything is handed over: a folder it can read means no seal.
    readable = _probe(sandbox, [p for p in _unreadable(checkout, request) if p.exists()])
    if readable:
        shutil.rmtree(root, ignore_errors=True)
        raise CannotSeal(f"the sandbox user {user} can read {readable[0]} (make it readable by "
                         "its owner only)")
    assert sandbox.venv is not None and sandbox.copy is not None and sandbox.home is not None \
        and sandbox.tmp is not None
    _memory_venv(sandbox.venv, request)
    _copy_checkout(checkout, sandbox.copy, request)
    for folder in (sandbox.home, sandbox.tmp):
        folder.mkdir(mode=0o700)
    _run(how.root_argv(["chown", "-R", "-h", f"{entry.pw_uid}:{entry.pw_gid}", str(sandbox.venv),
                        str(sandbox.copy), str(sandbox.home), str(sandbox.tmp)]),
         "hand the sandbox its folders")
    _write(sandbox)
    return sandbox


def _closed_on_the_way(path: Path) -> Path | None:
    """The first folder on the way to ``path`` that other users cannot search (or ``path``
    itself, when they cannot run it); None when another user may run it."""
    for folder in reversed(path.parents):
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None if os.stat(path).st_mode & 0o001 else path


def _create_user(name: str, shell: str, how: Privilege, attempts: int = 5) -> None:
    """``useradd`` the sandbox user. Jobs preparing at once on one machine (a matrix on a
    self-hosted runner) race for it: one creates it, the others find it made, or retry while
    ``/etc/passwd`` is locked."""
    import pwd
    import time

    for attempt in range(attempts):
        try:
            _run(how.root_argv(["useradd", "--system", "--user-group", "--no-create-home",
                                "--home-dir", "/nonexistent", "--shell", shell, name]),
                 f"create the sandbox user {name}")
            return
        except GateError:
            try:
                pwd.getpwnam(name)
                return  # made by another job meanwhile
            except KeyError:
                if attempt == attempts - 1:
                    raise
            time.sleep(0.2 * (attempt + 1))


def _sandbox_user(name: str, how: Privilege) -> str:
    """The sandbox user, created when missing: a system user with its own group, no home, no
    login shell. An existing one must be unprivileged."""
    import grp
    import pwd

    if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,30}", name):
        raise CannotSeal(f"{USER_VARIABLE}: {name!r} is not a user name")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        shell = next((s for s in ("/usr/sbin/nologin", "/sbin/nologin") if os.path.exists(s)),
                     "/bin/false")
        _create_user(name, shell, how)
        entry = pwd.getpwnam(name)
    if entry.pw_uid in (0, os.getuid()):
        raise CannotSeal(f"the sandbox user {name} is uid {entry.pw_uid}: not another user")
    groups = set()
    for gid in os.getgrouplist(name, entry.pw_gid):
        try:
            groups.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            continue
    privileged = sorted(groups & _PRIVILEGED_GROUPS)
    if privileged:
        raise CannotSeal(f"the sandbox user {name} is in the group {privileged[0]}")
    return name


def _closed_folders(checkout: Path, request: Request) -> list[Path]:
    """The folders the preparation closes to other users for the rest of the job (group and
    others lose every access; the owner keeps his): the checkout — its ``.git`` may hold the
    token, and it holds the fixtures and the baseline — and the action's own folder. Only
    folders of this user, never a top-level one."""
    folders = [checkout, *([request.action_path] if request.action_path is not None else [])]
    out = []
    for folder in dict.fromkeys(Path(os.path.abspath(f)) for f in folders):
        if folder.is_dir() and len(folder.parts) > 2 and folder.stat().st_uid == os.getuid():
            out.append(folder)
    return out


def _unreadable(checkout: Path, request: Request) -> list[Path]:
    """What the sandbox user must not read, probed before anything is handed over: the
    checkout, the action's folder, every fixture folder (the gate's shipped ones included) and
    the baseline."""
    folders, files = _withheld_from_copy(checkout, request)
    paths = [checkout, *([request.action_path] if request.action_path else []), *folders, *files]
    return list(dict.fromkeys(Path(os.path.abspath(p)) for p in paths))


def _withheld_from_copy(checkout: Path, request: Request) -> tuple[list[Path], list[Path]]:
    """The fixture folders and the baseline file the sealed copy leaves out: what the working
    tree's config names, and the shipped fixtures wherever the gate or the action keeps them."""
    from membench_gate.files import data_dir

    folders = [data_dir() / "fixtures"]
    if request.action_path is not None:
        folders.append(request.action_path / "fixtures")
    files: list[Path] = []
    config = request.config if request.config.is_absolute() else checkout / request.config
    for kind, path in _config_paths(config):
        (files if kind == "baseline" else folders).append(path)
    return folders, files


def _config_paths(config_path: Path) -> Iterable[tuple[str, Path]]:
    """``("fixtures", folder)`` for each folder a suite of the config names (but ``builtin``),
    ``("baseline", file)`` for ``[gate] baseline``; read as plain TOML, so a config the check
    will reject keeps what it names out of the copy all the same."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    base = Path(os.path.abspath(config_path)).parent
    try:
        raw = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raw = {}
    suites = raw.get("suites") if isinstance(raw.get("suites"), dict) else {}
    for table in suites.values():
        entries = table.get("fixtures", []) if isinstance(table, dict) else []
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, str) and entry and entry != "builtin":
                yield "fixtures", Path(os.path.normpath(base / entry))
    gate = raw.get("gate") if isinstance(raw.get("gate"), dict) else {}
    baseline = gate.get("baseline", "baselines/main.json")
    if isinstance(baseline, str) and baseline:
        yield "baseline", Path(os.path.normpath(base / baseline))


def _copy_checkout(checkout: Path, copy: Path, request: Request) -> None:
    """The sealed copy: the checkout without ``.git``, fixture folders and the baseline;
    symlinks stay links (nothing outside the checkout is copied by following one)."""
    folders, files = _withheld_from_copy(checkout, request)
    left_out = {os.path.realpath(p) for p in [*folders, *files]} \
        | {os.path.abspath(p) for p in [*folders, *files]}

    def ignore(directory: str, names: list[str]) -> list[str]:
        skipped = []
        for name in names:
            path = os.path.join(directory, name)
            if name == ".git" or os.path.abspath(path) in left_out \
                    or (not os.path.islink(path) and os.path.realpath(path) in left_out):
                skipped.append(name)
        return skipped

    shutil.copytree(checkout, copy, symlinks=True, ignore=ignore)


# Run as the sandbox user: which of the given paths it can read (list a folder, open a file).
_PROBE = r"""
import json, os, sys
readable = []
for path in json.loads(sys.argv[1]):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, "rb").close()
    except OSError:
        continue
    readable.append(path)
print(json.dumps({"uid": os.getuid(), "readable": readable}))
"""


def _probe(sandbox: Sandbox, paths: list[Path]) -> list[str]:
    """Of ``paths``, those the sandbox user can read; :class:`CannotSeal` if it cannot run."""
    import json

    try:
        done = as_sandbox(sandbox, [helper_python(sandbox), "-I", "-S", "-c", _PROBE,
                                    json.dumps([str(p) for p in paths])],
                          Path("/"), {"PATH": os.defpath, "LC_ALL": "C"},
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = done.communicate(timeout=60)
        answer = json.loads(out) if done.returncode == 0 else {}
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise CannotSeal(f"cannot run a process as {sandbox.user} ({exc})") from None
    if answer.get("uid") != sandbox.uid:
        raise CannotSeal(f"cannot run {helper_python(sandbox)} as {sandbox.user} "
                         f"({err.decode('utf-8', 'replace').strip()[:200] or 'no answer'})")
    return [str(p) for p in answer.get("readable", [])]


def _write(sandbox: Sandbox) -> None:
    import json

    path = sandbox.root / SEAL_FILE
    path.write_text(json.dumps(sandbox.to_json(), indent=2, sort_keys=True) + "\n",
                    encoding="utf-8")
    path.chmod(0o644)


def run_install(sandbox: Sandbox, command: str, env: Mapping[str, str]) -> int:
    """Run ``install:`` (``bash -euo pipefail -c``) in the memory's environment — sealed: as the
    sandbox user, in the sealed copy — with its output in the log and workflow commands stopped,
    and return its exit status. Sealed, nothing it started survives it."""
    import secrets

    token = secrets.token_hex(16)
    print(f"::stop-commands::{token}", flush=True)
    try:
        process = sandbox.popen(["bash", "-euo", "pipefail", "-c", command], sandbox.checkout,
                                env, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        status = process.wait()
    finally:
        # On a line of its own: the install's last line may lack a newline.
        print(f"\n::{token}::", flush=True)
        sweep(sandbox)
    return status


# -- ``python -m membench_gate.ci.sandbox prepare`` ----------------------------------------------------

def _truthy(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """``prepare``: the action's install step (inputs from ``MEMBENCH_*``), or by hand.

    Exports ``MEMBENCH_SEAL_DIR`` to ``$GITHUB_ENV`` and writes the step outputs ``seal-dir``
    and ``isolation``; its last line is ``MEMBENCH_SEAL_DIR=…`` for a shell to use."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]  # exit 4, as the CLI
            raise GateError(f"{message} (usage: {self.prog} --help)")

    env = os.environ if env is None else env
    parser = Parser(prog="python -m membench_gate.ci.sandbox",
                    description="prepare the sandbox the pull request's code runs in "
                                "(docs/action.md, 'Trust boundary')")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    prep = commands.add_parser("prepare", help="the sandbox user, the sealed copy, the memory's "
                                               "environment; then the install command in it")
    prep.add_argument("--config", default=env.get("MEMBENCH_CONFIG") or "membench.toml")
    prep.add_argument("--install", default=env.get("MEMBENCH_INSTALL", ""),
                      help="command that installs the memory (run sealed)")
    prep.add_argument("--gate-source", default="",
                      help="what pip installs membench-gate from into the memory's environment "
                           "(default: this source checkout, else the released version)")
    prep.add_argument("--python", default=sys.executable,
                      help="interpreter the memory's environment is made from (default: this one)")
    prep.add_argument("--seal", default=(env.get(MODE_VARIABLE) or "auto").strip().lower(),
                      help="auto, required or off (default: $MEMBENCH_SEAL, else auto)")
    args = parser.parse_args(argv)
    action_path = env.get("GITHUB_ACTION_PATH")
    request = Request(mode=args.seal, config=Path(args.config), install=args.install,
                      gate_source=args.gate_source,
                      user=env.get(USER_VARIABLE, "").strip() or DEFAULT_USER,
                      ci=_truthy(env, "CI") or _truthy(env, "GITHUB_ACTIONS"),
                      action_path=Path(action_path) if action_path else None, python=args.python)
    close_step_files(env)
    runner = RunnerFiles(env)  # what the step's files hold before any code of the PR runs
    sandbox, reason = prepare(request)
    _say(sandbox, reason, request)
    _export(runner, sandbox)
    if sandbox is not None and request.install:
        status = run_install(sandbox, request.install, env)
        if status != 0:
            print(f"::error title=membench-gate::the install command failed (exit {status})",
                  flush=True)
            return status
    if sandbox is not None:
        print(f"{DIR_VARIABLE}={sandbox.root}", flush=True)
    return 0


def _say(sandbox: Sandbox | None, reason: str, request: Request) -> None:
    if sandbox is not None and sandbox.sealed:
        print(f"membench-gate: sealed: the install command and the adapter run as "
              f"{sandbox.user} in {sandbox.copy}", flush=True)
        return
    print(f"membench-gate: unsealed: {reason}", flush=True)
    if request.ci and request.mode == "auto":
        from membench_gate.ci.actions_env import annotation

        print(annotation("warning", f"unsealed run: {reason}; the pull request's code runs as "
                         "the job's own user", "membench-gate seal"), flush=True)


def _export(runner: RunnerFiles, sandbox: Sandbox | None) -> None:
    """``MEMBENCH_SEAL_DIR`` for the gate and every later step; the step's outputs."""
    from membench_gate.ci.actions_env import format_outputs

    if sandbox is not None:
        runner.append("GITHUB_ENV", f"{DIR_VARIABLE}={sandbox.root}\n")  # a mkdtemp path
    runner.append("GITHUB_OUTPUT", format_outputs({
        "seal-dir": str(sandbox.root) if sandbox is not None else "",
        "isolation": sandbox.isolation if sandbox is not None else "unsealed"}))


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except GateError as exc:
        if os.environ.get("GITHUB_ACTIONS", "").strip().lower() == "true":
            from membench_gate.ci.actions_env import annotation

            print(annotation("error", str(exc), "membench-gate"), flush=True)
        print(f"membench-gate: error: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
