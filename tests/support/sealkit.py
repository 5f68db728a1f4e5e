"""Users and folders for the sealed-run tests: a non-root "runner" user with passwordless sudo (as on a
GitHub-hosted runner), a sandbox user name for the gate to create, a folder both can reach, a Python
interpreter every user may run, and a local wheelhouse so pip needs no index.

The direct tests of the seal need root or passwordless sudo on Linux; the runner-user tests (which
lay out files in folders they hand to that user) need root and the ``sudo`` command, as CI has
them. Each skips cleanly otherwise. Every user, group, sudoers file and folder made here is removed
by the fixture that made it — processes of those users killed first.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.gitrepos import ISOLATED_ENV
from tests.support.paths import REPO

PROJECT = REPO


def _root() -> bool:
    return os.geteuid() == 0


def privileged_here(sudo: bool = True) -> str:
    """Why these tests cannot run here, or "" when they can: root or passwordless sudo, and the
    ``sudo`` command itself when ``sudo`` (a runner user needs it to seal)."""
    if not sys.platform.startswith("linux"):
        return "sealed runs need Linux"
    if (sudo or not _root()) and shutil.which("sudo") is None:
        return "sudo is not installed"
    if not _root():
        done = subprocess.run(["sudo", "-n", "true"], capture_output=True, check=False)
        if done.returncode != 0:
            return "neither root nor passwordless sudo"
    if _world_python() is None:
        return "no python3 with venv that every user may run"
    return ""


def require_privilege(sudo: bool = True) -> None:
    reason = privileged_here(sudo)
    if reason:
        pytest.skip(f"sealed runs: {reason}")


def require_root() -> None:
    """The runner-user tests lay out files in the folders they hand to that user: as root."""
    require_privilege()
    if not _root():
        pytest.skip("sealed runs as a runner user: these tests run as root (as CI does)")


def as_root(*argv: str) -> list[str]:
    return list(argv) if _root() else ["sudo", "-n", "--", *argv]


def root_run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(as_root(*argv), capture_output=True, text=True, check=False)


def _reachable(path: Path) -> bool:
    """Every other user may reach and run ``path`` (each folder on the way is world-searchable)."""
    real = Path(os.path.realpath(path))
    if not real.is_file() or not os.stat(real).st_mode & 0o001:
        return False
    return all(os.stat(parent).st_mode & 0o001 for parent in real.parents)


def _world_python() -> Path | None:
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable):
        path = Path(candidate)
        if path.exists() and _reachable(path):
            done = subprocess.run([str(path), "-c", "import sys, venv, ensurepip; "
                                   "assert sys.version_info >= (3, 10)"],
                                  capture_output=True, check=False)
            if done.returncode == 0:
                return path
    return None


def world_python() -> Path:
    found = _world_python()
    assert found is not None
    return found


# -- users -----------------------------------------------------------------------------------------

def _kill_all(user: str) -> None:
    for _ in range(50):
        root_run("pkill", "-KILL", "-u", user)
        if root_run("pgrep", "-u", user).returncode != 0:
            return


def uid_processes(uid: int) -> list[int]:
    """Live (not zombie) processes whose real, effective or saved uid is ``uid``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            status = Path(f"/proc/{name}/status").read_text(encoding="utf-8")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "").split()[:1] != ["Z"] \
                and str(uid) in fields.get("Uid", "").split()[:3]:
            found.append(int(name))
    return found


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: Path


def _entry(name: str) -> Any:  # a pwd.struct_passwd (pwd is POSIX only: imported here)
    import pwd

    return pwd.getpwnam(name)


def remove_user(name: str) -> None:
    try:
        _entry(name)
    except KeyError:
        return
    _kill_all(name)
    root_run("userdel", "-r", "-f", name)
    root_run("groupdel", name)


@pytest.fixture(scope="session")
def runner_user() -> Iterator[User]:
    """A non-root user with passwordless sudo and a world-searchable home: a GitHub runner."""
    require_root()
    name = f"mbrun-{secrets.token_hex(3)}"
    sudoers = Path(f"/etc/sudoers.d/{name}")
    done = root_run("useradd", "--create-home", "--shell", "/bin/bash", "--user-group", name)
    assert done.returncode == 0, done.stderr
    entry = _entry(name)
    try:
        root_run("chmod", "755", entry.pw_dir)
        rule = subprocess.run(as_root("tee", str(sudoers)), input=f"{name} ALL=(ALL) NOPASSWD:ALL\n",
                              capture_output=True, text=True, check=False)
        assert rule.returncode == 0, rule.stderr
        root_run("chmod", "440", str(sudoers))
        yield User(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))
    finally:
        root_run("rm", "-f", str(sudoers))
        remove_user(name)
        remove_sandboxes_of(User(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir)))


@pytest.fixture(scope="session")
def plain_user() -> Iterator[User]:
    """A non-root user without sudo: a self-hosted runner or a laptop, where nothing can seal."""
    require_root()
    name = f"mbplain-{secrets.token_hex(3)}"
    done = root_run("useradd", "--create-home", "--shell", "/bin/bash", "--user-group", name)
    assert done.returncode == 0, done.stderr
    entry = _entry(name)
    try:
        root_run("chmod", "755", entry.pw_dir)
        yield User(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))
    finally:
        remove_user(name)
        remove_sandboxes_of(User(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir)))


@pytest.fixture(scope="session")
def sandbox_name() -> Iterator[str]:
    """The sandbox user the gate is to create (``MEMBENCH_SEAL_USER``), removed afterwards with
    every sandbox folder prepared for it."""
    require_privilege(sudo=False)
    name = f"mbsbx-{secrets.token_hex(3)}"
    try:
        yield name
    finally:
        remove_user(name)
        remove_sandboxes_named(name)


def remove_sandboxes_named(name: str) -> None:
    """The sandbox folders prepared for the sandbox user ``name``."""
    for root in Path("/tmp").glob("membench-seal-*"):
        try:
            user = json.loads((root / "seal.json").read_text(encoding="utf-8")).get("user")
        except (OSError, ValueError):
            user = None
        if user == name:
            root_run("rm", "-rf", str(root))


def remove_sandboxes_of(user: User) -> None:
    """The sandbox folders ``user`` prepared (sealed or not)."""
    for root in Path("/tmp").glob("membench-seal-*"):
        if root.stat().st_uid == user.uid:
            root_run("rm", "-rf", str(root))


# -- a folder both users reach, a wheelhouse, and running as the runner ----------------------------

@dataclass(frozen=True)
class Shared:
    root: Path  # owned by the runner user, world-searchable
    wheels: Path  # every wheel the action and the repos' installs need: pip needs no index
    bin: Path  # python3 (an interpreter every user may run) and act, first on PATH

    def env(self, user: User, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A runner's environment: this PATH, pip on the wheelhouse, isolated git."""
        return {
            "PATH": os.pathsep.join([str(self.bin), "/usr/local/sbin", "/usr/local/bin",
                                     "/usr/sbin", "/usr/bin", "/sbin", "/bin"]),
            "HOME": str(user.home), "USER": user.name, "LOGNAME": user.name, "LANG": "C.UTF-8",
            "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(self.wheels),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1",
            **ISOLATED_ENV, **(extra or {}),
        }


def hand_over(path: Path, user: User) -> None:
    """``path`` (a tree made by this process) now belongs to ``user``."""
    done = root_run("chown", "-R", f"{user.uid}:{user.gid}", str(path))
    assert done.returncode == 0, done.stderr


def run_as(user: User, argv: Sequence[str], cwd: Path, env: Mapping[str, str],
           timeout: float = 900, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    """``argv`` as ``user`` in ``cwd`` with exactly ``env``."""
    command = ["sudo", "-n", "-u", user.name, "--", "env", "-i", "-C", str(cwd),
               *(f"{k}={v}" for k, v in env.items()), *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          input=input_text, check=False)


@pytest.fixture(scope="session")
def shared(runner_user: User, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="membench-sealtest-", dir="/tmp"))
    try:
        wheels, bin_dir = root / "wheels", root / "bin"
        wheels.mkdir()
        bin_dir.mkdir()
        (bin_dir / "python3").symlink_to(world_python())
        (bin_dir / "python").symlink_to(world_python())
        # Everything pip needs offline: membench-gate and its dependencies, the build backend the
        # action and the repositories' installs use (hatchling; editables for ``pip install -e``).
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "-w", str(wheels),
                               str(PROJECT), "hatchling", "editables"], capture_output=True,
                              text=True,
                              check=False, timeout=900)
        if done.returncode != 0:
            pytest.skip(f"cannot build the wheelhouse: {(done.stderr or done.stdout)[-300:]}")
        root.chmod(0o755)
        hand_over(root, runner_user)
        yield Shared(root, wheels, bin_dir)
    finally:
        root_run("rm", "-rf", str(root))
