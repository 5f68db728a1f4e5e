"""Sealed runs: the pull request's code runs as another user and reaches nothing the verdict rests on.

The memory's ``install:`` and its adapter are the pull request's code. Sealed, they run as an
unprivileged sandbox user (``membench-sandbox``: no login shell, no sudo), from a copy of the
checkout without ``.git``, the fixture folders or the baseline, with a home and a temp folder of
their own and the environment of :func:`withhold` — no token, no runner file-command path, no
``RUNNER_TEMP``. A different user cannot write the gate's files, read its processes' environment
(``/proc/<pid>/environ``) or its folders, which the preparation closes to other users; and when the
gate is done with the adapters, every process of that user is killed, detached ones included.

Two halves:

- **Preparation**, once per job (``python -I -m membench_gate.ci.sandbox prepare``, the action's install
  step): the sandbox user, the sealed copy, the memory's own virtual environment (membench-gate
  installed in it without the shipped fixtures, so ``python -m membench_gate.host`` and ``from
  membench_gate import …`` work there), a probe that the sandbox user can read none of the gate's
  folders, then ``install:`` run sealed. It is all recorded in ``seal.json`` of a fresh folder,
  which later steps find as ``MEMBENCH_SEAL_DIR``. Where sealing is impossible (neither root nor
  passwordless ``sudo``, not Linux) the folder still holds the memory's environment, and says why
  the run is unsealed.
- **Use**, in every command that starts an adapter (run, check, bless, doctor, selftest, show):
  :func:`establish` decides once per process whether it is sealed; :mod:`membench_gate.adapter.rpc` starts
  every adapter process through :func:`current` and hands it back with :func:`release`.

As root no helper is needed (``Popen(user=…)``); otherwise ``sudo -n`` runs the commands that need
root (``useradd``, ``chown``) and starts the sandbox's processes as ``sudo -n -u USER -- env -i -C
DIR K=V … argv``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from membench_gate.defaults import GATE_ONLY_VARIABLE
from membench_gate.errors import GateError

MODES = ("auto", "required", "off")
DEFAULT_USER = "membench-sandbox"
SEAL_FILE = "seal.json"
DIR_VARIABLE = "MEMBENCH_SEAL_DIR"  # the prepared folder, for every later command of the job
MODE_VARIABLE = "MEMBENCH_SEAL"  # the action's input ``seal``
USER_VARIABLE = "MEMBENCH_SEAL_USER"  # another sandbox user (two runners on one machine)
WORKER_VARIABLE = "MEMBENCH_WORKER"  # which adapter process this is, 1 to N (docs/adapters.md)
SWEEP_SECONDS = 10.0
Isolation = Literal["sealed", "unsealed"]

# What the pull request's code never gets (install, adapters) — and the gate's own child process
# neither: credentials, and the runner's file-command paths and temp folder (an adapter must not be
# able to post as the workflow, or set the job's outputs, environment, path or summary).
WITHHELD = frozenset({
    "GITHUB_TOKEN", "GH_TOKEN", "INPUT_GITHUB-TOKEN", "INPUT_GITHUB_TOKEN",
    "GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY",
    "RUNNER_TEMP",
})
_STEP_FILES = ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def withheld(name: str) -> bool:
    """Whether the variable ``name`` is kept from the pull request's code (and the gate's child)."""
    upper = name.upper()
    return (upper in WITHHELD or (upper.startswith("ACTIONS_") and "TOKEN" in upper)
            or upper.startswith("ACTIONS_ID_TOKEN_REQUEST_"))


def withhold(env: Mapping[str, str], drop: Iterable[str] = (),
             passed: Iterable[str] = ()) -> dict[str, str]:
    """``env`` without what :func:`withheld` names: the one list, used everywhere; nor with what
    the gate set in its own environment for itself alone (:data:`GATE_ONLY_VARIABLE`); nor with
    the names in ``drop`` (the gate's own credentials, such as the live suites' key) unless
    ``passed`` names them too (``[adapter] pass_env``: what withheld() names is never passed)."""
    own = {GATE_ONLY_VARIABLE, *env.get(GATE_ONLY_VARIABLE, "").split(",")}
    own.update(set(drop) - set(passed))
    return {name: value for name, value in env.items()
            if not withheld(name) and name not in own}


# -- the sandbox: a prepared folder, read back ---------------------------------------------------

@dataclass(frozen=True)
class Sandbox:
    """A prepared folder (``seal.json``): the memory's environment, and — sealed — the sandbox
    user and the sealed copy of the checkout its processes run in."""

    root: Path
    sealed: bool
    reason: str  # why the run is unsealed ("" when sealed)
    checkout: Path  # the checkout the copy mirrors (the working directory of the preparation)
    venv: Path | None  # the memory's virtual environment: install: ran there, the adapter on it
    copy: Path | None = None
    home: Path | None = None
    tmp: Path | None = None
    user: str | None = None
    uid: int | None = None
    gid: int | None = None
    # The real interpreter behind the memory's environment, resolved before the sandbox owned it
    # (its ``bin/python`` is the sandbox's to replace): what the gate's own little programs run
    # on as the sandbox user (the sweep).
    interpreter: Path | None = None

    @property
    def python(self) -> Path | None:
        """The memory's interpreter (None: the gate's own serves)."""
        return venv_python(self.venv) if self.venv is not None else None

    @property
    def isolation(self) -> Isolation:
        return "sealed" if self.sealed else "unsealed"

    def place(self, path: Path) -> Path:
        """Where ``path`` of the checkout is for the sandbox's processes: in the sealed copy."""
        if not self.sealed or self.copy is None:
            return path
        absolute = Path(os.path.abspath(path))
        try:
            return self.copy / absolute.relative_to(self.checkout)
        except ValueError:
            raise GateError(f"seal: {absolute} is outside the sealed checkout {self.checkout} "
                            "(run from the checkout's root, with the config inside it)") from None

    def environment(self, env: Mapping[str, str], cwd: Path | None = None) -> dict[str, str]:
        """The environment of a sandbox process: :func:`withhold` of ``env``, the memory's
        environment activated, and — sealed — the sandbox's own home and temp folder."""
        out = withhold(env)
        if self.python is not None:
            out["PATH"] = os.pathsep.join([str(self.python.parent),
                                           *filter(None, [out.get("PATH")])])
            out["VIRTUAL_ENV"] = str(self.venv)
            out.pop("PYTHONHOME", None)  # it would point the memory's interpreter elsewhere
        if not self.sealed:
            return out
        # Only plain names: they travel on a command line (``env -i K=V``), and no other kind is
        # something a program reads.
        out = {k: v for k, v in out.items() if _NAME.fullmatch(k) and "\0" not in v}
        for name in ("PWD", "OLDPWD", "MAIL", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME",
                     "XDG_CACHE_HOME", "XDG_DATA_HOME", "SUDO_USER", "SUDO_UID", "SUDO_GID",
                     "SUDO_COMMAND"):
            out.pop(name, None)
        assert self.home is not None and self.tmp is not None and self.user is not None
        # A worker's own folder (:func:`worker_tmp`) is inside the sandbox's: kept.
        given = Path(env.get("TMPDIR") or "/")
        tmp = given if given.parent == self.tmp else self.tmp
        out.update(HOME=str(self.home), TMPDIR=str(tmp), TMP=str(tmp),
                   TEMP=str(tmp), USER=self.user, LOGNAME=self.user)
        if cwd is not None:
            out["PWD"] = str(cwd)
        if out.get("GITHUB_WORKSPACE") and self.copy is not None:
            out["GITHUB_WORKSPACE"] = str(self.place(Path(out["GITHUB_WORKSPACE"])))
        return out

    def popen(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str],
              **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start ``argv`` as the pull request's code: in the sandbox when sealed, else as the
        gate's own user with the memory's environment."""
        if not self.sealed:
            return subprocess.Popen(list(argv), cwd=cwd, env=self.environment(env), **kwargs)
        where = self.place(cwd)
        return as_sandbox(self, argv, where, self.environment(env, where), **kwargs)

    def to_json(self) -> dict[str, Any]:
        return {"sealed": self.sealed, "reason": self.reason, "checkout": str(self.checkout),
                "venv": _str(self.venv), "copy": _str(self.copy), "home": _str(self.home),
                "tmp": _str(self.tmp), "user": self.user, "uid": self.uid, "gid": self.gid,
                "interpreter": _str(self.interpreter)}

    @classmethod
    def read(cls, root: Path) -> Sandbox:
        """The sandbox prepared in ``root``; a :class:`GateError` naming the file if it is not one."""
        path = root / SEAL_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            sealed = data["sealed"]
            fields = dict(
                root=root, sealed=sealed, reason=str(data["reason"]),
                checkout=Path(data["checkout"]), venv=_path(data["venv"]),
                copy=_path(data["copy"]), home=_path(data["home"]), tmp=_path(data["tmp"]),
                user=data["user"], uid=data["uid"], gid=data["gid"],
                interpreter=_path(data.get("interpreter")))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise GateError(f"{DIR_VARIABLE}: {path} is not a prepared sandbox "
                            f"({type(exc).__name__}: {exc})") from None
        if not isinstance(sealed, bool) or (sealed and not (
                isinstance(fields["uid"], int) and isinstance(fields["gid"], int) and fields["venv"]
                and isinstance(fields["user"], str) and fields["copy"] and fields["home"]
                and fields["tmp"] and fields["interpreter"])):
            raise GateError(f"{DIR_VARIABLE}: {path} is not a prepared sandbox (fields missing)")
        return cls(**fields)


def _str(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _path(text: object) -> Path | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise TypeError(f"expected a path, got {text!r}")
    return Path(text)


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


# -- privilege: what it takes to act as root and as the sandbox user -----------------------------

@dataclass(frozen=True)
class Privilege:
    """How this process acts as root and as the sandbox user: ``root`` (it is root) or
    ``sudo`` (passwordless ``sudo -n``)."""

    how: Literal["root", "sudo"]

    def root_argv(self, argv: Sequence[str]) -> list[str]:
        return list(argv) if self.how == "root" else ["sudo", "-n", "--", *argv]


def privilege() -> tuple[Privilege | None, str]:
    """How this process can seal, or ``None`` and why it cannot."""
    if not sys.platform.startswith("linux"):
        return None, f"sealing needs Linux (this is {sys.platform})"
    if os.geteuid() == 0:
        return Privilege("root"), ""
    import shutil  # (only here: its import costs a check that seals nothing)

    if shutil.which("sudo") is None:
        return None, "not root, and there is no sudo"
    try:
        done = subprocess.run(["sudo", "-n", "true"], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"not root, and sudo -n true failed ({exc})"
    if done.returncode != 0:
        return None, "not root, and sudo asks for a password (sudo -n true failed)"
    return Privilege("sudo"), ""


def as_sandbox(sandbox: Sandbox, argv: Sequence[str], cwd: Path, env: Mapping[str, str],
                **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start ``argv`` as the sandbox user in ``cwd`` with exactly the environment ``env``."""
    assert sandbox.uid is not None and sandbox.gid is not None and sandbox.user is not None
    # A session of its own: no controlling terminal, so sudo never puts a pseudo-terminal between
    # the gate and the process (``use_pty``), and a signal to the gate's group misses it.
    kwargs.setdefault("start_new_session", True)
    if os.geteuid() == 0:
        return subprocess.Popen(list(argv), cwd=cwd, env=dict(env), user=sandbox.uid,
                                group=sandbox.gid, extra_groups=[], **kwargs)
    # ``env -i`` after sudo: the environment is exactly ``env`` whatever sudo's own policy keeps;
    # ``-C``: the gate's working directory is closed to the sandbox user.
    return subprocess.Popen(["sudo", "-n", "-u", sandbox.user, "--", "env", "-i", "-C", str(cwd),
                             *(f"{k}={v}" for k, v in sorted(env.items())), *argv],
                            env=_sudo_env(), **kwargs)


def _sudo_env() -> dict[str, str]:
    """What ``sudo`` itself is started with: nothing secret reaches it (it passes nothing on)."""
    return {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C"}


def helper_python(sandbox: Sandbox) -> str:
    """The interpreter of the gate's little programs run as the sandbox user: the one behind the
    memory's environment (the sandbox can run it; it cannot replace it)."""
    return str(sandbox.interpreter or os.path.realpath(sys.executable))


# -- the sweep: when the gate is done with the adapters, no process of the sandbox user remains --

# Run as the sandbox user: ``kill(-1)`` signals every process this user may signal (its own),
# never the caller; repeated until /proc shows none but this one (zombies are already dead).
_SWEEP = r"""
import os, signal, sys, time
me, uid = os.getpid(), str(os.getuid())
deadline = time.monotonic() + float(sys.argv[1])
def left():
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/status", encoding="utf-8") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        if fields.get("State", "").split()[:1] == ["Z"]:
            continue
        if uid in fields.get("Uid", "").split():
            pids.append(name)
    return pids
while True:
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    pids = left()
    if not pids:
        sys.exit(0)
    if time.monotonic() > deadline:
        print(" ".join(pids))
        sys.exit(1)
    time.sleep(0.01)
"""


def sweep(sandbox: Sandbox, seconds: float = SWEEP_SECONDS) -> None:
    """Kill every process of the sandbox user, detached ones included, until none remains."""
    if not sandbox.sealed:
        return
    try:
        done = as_sandbox(sandbox, [helper_python(sandbox), "-I", "-S", "-c", _SWEEP, str(seconds)],
                           Path("/"), {"PATH": os.defpath, "LC_ALL": "C"},
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        out, err = done.communicate(timeout=seconds + 30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GateError(f"seal: cannot kill the processes of {sandbox.user}: {exc}") from None
    if done.returncode != 0:
        left = out.decode("utf-8", "replace").split() or [err.decode("utf-8", "replace").strip()]
        raise GateError(f"seal: processes of {sandbox.user} survive being killed for "
                        f"{seconds:g}s: {' '.join(left)[:200]}")


# -- use: once per process, every command that starts an adapter ---------------------------------

@dataclass
class _State:
    sandbox: Sandbox | None
    isolation: Isolation
    reason: str
    live: int = 0  # sealed processes started and not yet released
    used: bool = False  # a sealed process was started: the last release sweeps
    required: bool = False  # --seal or MEMBENCH_SEAL=required: nothing unsealed may count


_state: _State | None = None
_COUNTING = threading.Lock()  # the live count, kept by several workers' threads at once


def establish(required: bool = False, env: Mapping[str, str] | None = None) -> Isolation:
    """Decide, once for this process, whether the pull request's code runs sealed.

    ``required`` is ``--seal``; otherwise ``MEMBENCH_SEAL`` (the action's input ``seal``:
    ``auto``, ``required``, ``off``; default ``auto``) decides. ``auto`` seals in CI when a
    sandbox was prepared (``MEMBENCH_SEAL_DIR``) and could seal; locally the default is unsealed.
    ``required`` turns an unsealed run into a :class:`GateError` naming why it cannot seal. A
    prepared sandbox's interpreter is the adapter's even when the run is unsealed: ``install:``
    installed the memory there."""
    global _state
    env = os.environ if env is None else env
    mode = "required" if required else env.get(MODE_VARIABLE, "").strip().lower() or "auto"
    if mode not in MODES:
        raise GateError(f"{MODE_VARIABLE}: expected auto, required or off, got {mode!r}")
    root = env.get(DIR_VARIABLE, "").strip()
    sandbox = Sandbox.read(Path(root)) if root else None
    reason = _unsealed_because(mode, sandbox, env)
    if reason and mode == "required":
        raise GateError(f"cannot seal: {reason}")
    if reason and sandbox is not None and sandbox.sealed:
        # Off on purpose: the memory's interpreter still serves, as the gate's own user, from the
        # checkout itself.
        sandbox = Sandbox(sandbox.root, False, reason, sandbox.checkout, sandbox.venv)
    _state = _State(sandbox, "unsealed" if reason else "sealed", reason,
                    required=mode == "required")
    return _state.isolation


def _unsealed_because(mode: str, sandbox: Sandbox | None, env: Mapping[str, str]) -> str:
    """Why this run is not sealed, or "" when it is."""
    if mode == "off":
        return "sealing is off (seal: off)"
    if sandbox is None:
        ci = any(env.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")
                 for name in ("CI", "GITHUB_ACTIONS"))
        if ci or mode == "required":
            return (f"no sandbox prepared ({DIR_VARIABLE} is not set: the action's install step "
                    "prepares one; elsewhere python -m membench_gate.ci.sandbox prepare)")
        return "a local run (sealing is for CI; --seal asks for it)"
    if not sandbox.sealed:
        return sandbox.reason
    how, why = privilege()
    if how is None:
        return why
    try:
        import pwd

        entry = pwd.getpwnam(sandbox.user or "")
    except KeyError:
        return f"the sandbox user {sandbox.user} does not exist"
    if entry.pw_uid != sandbox.uid:
        return f"the sandbox user {sandbox.user} is not uid {sandbox.uid} any more"
    return ""


def worker_tmp(number: int) -> tuple[Path, bool]:
    """A new temp folder of its own for adapter worker ``number``, and whether the gate removes
    it after: sealed, a folder the sandbox user makes in the sandbox's temp folder (which goes
    with the sandbox); else one of the gate's, removed when the worker ends."""
    sandbox = current()
    if sandbox is None or not sandbox.sealed or sandbox.tmp is None:
        return Path(tempfile.mkdtemp(prefix=f"membench-worker-{number}-")), True
    folder = sandbox.tmp / f"worker-{number}-{os.urandom(6).hex()}"
    try:
        done = as_sandbox(sandbox, ["mkdir", "-m", "700", str(folder)], Path("/"),
                          {"PATH": os.defpath, "LC_ALL": "C"}, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, err = done.communicate(timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GateError(f"seal: cannot make worker {number}'s temp folder: {exc}") from None
    if done.returncode != 0:
        raise GateError(f"seal: cannot make worker {number}'s temp folder: "
                        f"{err.decode('utf-8', 'replace').strip()[:200]}")
    return folder, False


def current() -> Sandbox | None:
    """The sandbox the pull request's code runs in (sealed or not), once :func:`establish`ed."""
    return _state.sandbox if _state is not None else None


def measured_isolation(results: Any, label: str) -> Isolation | None:
    """The isolation of a verdict on a results file from an earlier run (``check --results``):
    sealed only if that run said it was (``receipt.isolation``; merged: every shard) and this
    process is too (the base's invariant suites run here). With ``--seal`` (or
    ``MEMBENCH_SEAL=required``) a file measured unsealed is a :class:`GateError`."""
    here = isolation()
    said = getattr(results.receipt, "isolation", None)
    if said != "sealed" and _state is not None and _state.required:
        raise GateError(f"cannot seal: {label} was not measured sealed (receipt.isolation "
                        f"{said or 'not recorded'}): run its shards with --seal in a prepared "
                        "sandbox (docs/shards.md)")
    if here is None:
        return None
    return "sealed" if here == "sealed" and said == "sealed" else "unsealed"


def isolation() -> Isolation | None:
    """``sealed`` or ``unsealed`` once :func:`establish`ed in this process, else ``None``."""
    return _state.isolation if _state is not None else None


def started() -> bool:
    """An adapter process is starting in the current sandbox (called before it starts, so a
    sweep never meets it half-started); True when it is sealed (the caller then hands it back
    with :func:`release`)."""
    if _state is None or _state.sandbox is None or not _state.sandbox.sealed:
        return False
    with _COUNTING:
        _state.live += 1
        _state.used = True
    return True


def release() -> None:
    """A sealed adapter process is done: once none is live, every process of the sandbox user is
    killed — what the adapter left behind (a server, a detached child) included."""
    if _state is None or _state.sandbox is None:
        return
    # Workers end in threads of their own: the last sweeps, and no adapter starts meanwhile
    # (the sweep would kill it).
    with _COUNTING:
        _state.live = max(0, _state.live - 1)
        if _state.live == 0:
            sweep(_state.sandbox)
            _state.used = False


def finish() -> None:
    """End of the command: nothing of the sandbox user outlives it."""
    if _state is not None and _state.sandbox is not None and _state.used:
        _state.live = 0
        _state.used = False
        sweep(_state.sandbox)


def prepared_isolation(env: Mapping[str, str]) -> Isolation:
    """What the sandbox prepared for this job says, for a step that never established one (the
    action's outputs when the check could not say): ``unsealed`` unless it is sealed and on."""
    root = env.get(DIR_VARIABLE, "").strip()
    if not root or env.get(MODE_VARIABLE, "").strip().lower() == "off":
        return "unsealed"
    try:
        return Sandbox.read(Path(root)).isolation
    except GateError:
        return "unsealed"


def reset() -> None:
    """Forget the decision (a test runs several commands in one process)."""
    global _state
    _state = None


def close_step_files(env: Mapping[str, str]) -> None:
    """The runner's file-command files of this step, readable and writable by their owner only
    (a runner whose umask leaves them open to others must not hand them to the sandbox user)."""
    for name in _STEP_FILES:
        value = env.get(name)
        if value and os.path.isfile(value):
            with contextlib.suppress(OSError):
                os.chmod(value, 0o600)
