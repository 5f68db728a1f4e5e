"""Sealing itself, without act: the withheld environment, when a run is sealed, and an adapter process
started through the gate's one boundary (rpc) as the sandbox user — its uid, working directory,
environment, what it can read, and that nothing it leaves behind outlives it.

The privileged tests need root or passwordless sudo (they skip otherwise); they make the sandbox
by hand (a user, a copy, a home and a temp folder) so they test starting and stopping, not the
preparation (tests/e2e/action/test_seal.py runs that, as the action does).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from membench_gate.adapter import rpc, seal
from membench_gate.errors import GateError
from tests.support.cli import assert_error_verdict, run_cli
from tests.support.sealkit import require_privilege, root_run, uid_processes, world_python

SECRETS = {"GITHUB_TOKEN": "ghs_secret", "GH_TOKEN": "t", "ACTIONS_RUNTIME_TOKEN": "t",
           "ACTIONS_ID_TOKEN_REQUEST_URL": "u", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "t",
           "INPUT_GITHUB_TOKEN": "t", "GITHUB_OUTPUT": "/o", "GITHUB_ENV": "/e",
           "GITHUB_PATH": "/p", "GITHUB_STATE": "/s", "GITHUB_STEP_SUMMARY": "/m",
           "RUNNER_TEMP": "/runner/temp"}

# A command adapter on the standard library alone: it answers what it is and what it can read,
# and on request leaves a detached process (setsid, double fork) behind, like a daemon would.
PROBE_ADAPTER = r'''
import json, os, sys

def readable(path):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, "rb").close()
    except OSError:
        return False
    return True

def detach():
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        pid = os.fork()
        if pid == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            # It keeps forking children, too: the sweep must outrun it.
            code = "import os, time\nwhile True:\n    os.fork() == 0 and os._exit(0)\n    time.sleep(0.05)"
            os.execv(sys.executable, [sys.executable, "-c", code, "membench-detached"])
        os.write(w, str(pid).encode())
        os._exit(0)
    os.close(w)
    pid = int(os.read(r, 64))
    os.wait()
    return pid

for line in sys.stdin:
    request = json.loads(line)
    method, params = request["method"], request["params"]
    if method == "initialize":
        result = {"protocol": 1, "name": "probe", "capabilities": {}}
    elif method == "introspect":
        result = {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
                  "groups": os.getgroups(),
                  "cwd": os.getcwd(), "env": dict(os.environ),
                  "read": {p: readable(p) for p in params["paths"]}}
    elif method == "detach":
        result = {"pid": detach()}
    else:
        result = None
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)
    if method == "shutdown":
        break
'''


@pytest.fixture(autouse=True)
def _forget_the_seal() -> Iterator[None]:
    """Each test decides anew (the decision is once per process, as in a command)."""
    seal.reset()
    yield
    seal.reset()


# -- the withheld environment: one list ------------------------------------------------------------

@pytest.mark.slow
def test_one_withheld_list_for_the_adapter_the_install_and_the_gates_child() -> None:
    from membench_gate.ci import action

    env = {"PATH": "/bin", "GITHUB_SHA": "abc", "ACTIONS_CACHE_URL": "c", **SECRETS}
    kept = {"PATH": "/bin", "GITHUB_SHA": "abc", "ACTIONS_CACHE_URL": "c"}
    assert seal.withhold(env) == kept
    assert rpc.adapter_environment(env) == kept
    assert action.withhold is seal.withhold  # the action's child gets the same list
    assert not hasattr(action, "_WITHHELD")


def test_a_sandbox_environment_is_the_withheld_one_with_its_own_home_and_temp(tmp_path: Path) -> None:
    sandbox = seal.Sandbox(tmp_path, True, "", Path("/ws/repo"), tmp_path / "venv",
                           tmp_path / "work", tmp_path / "home", tmp_path / "tmp", "sbx", 990, 990,
                           interpreter=Path(sys.executable))
    env = sandbox.environment({"PATH": "/bin", "HOME": "/home/runner", "TMPDIR": "/home/x",
                               "PWD": "/ws/repo", "GITHUB_WORKSPACE": "/ws/repo",
                               "PYTHONHOME": "/x", "BAD-NAME": "1", **SECRETS},
                              tmp_path / "work")
    assert not set(SECRETS) & set(env)
    assert env["PATH"] == f"{tmp_path / 'venv' / 'bin'}{os.pathsep}/bin"
    assert (env["HOME"], env["TMPDIR"], env["USER"]) == (str(tmp_path / "home"),
                                                         str(tmp_path / "tmp"), "sbx")
    assert env["GITHUB_WORKSPACE"] == str(tmp_path / "work")
    assert env["PWD"] == str(tmp_path / "work")
    assert "PYTHONHOME" not in env and "BAD-NAME" not in env
    assert sandbox.place(Path("/ws/repo/sub/membench.toml")) == tmp_path / "work/sub/membench.toml"
    with pytest.raises(GateError, match="outside the sealed checkout"):
        sandbox.place(Path("/elsewhere"))


# -- when a run is sealed ------------------------------------------------------------------------

def _unsealed_dir(tmp_path: Path, checkout: Path) -> Path:
    root = tmp_path / "prepared"
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    (root / seal.SEAL_FILE).write_text(json.dumps(seal.Sandbox(
        root, False, "not root, and there is no sudo", checkout, venv).to_json()))
    return root


def test_locally_the_default_is_unsealed_and_the_gate_starts_adapters_as_before() -> None:
    assert seal.establish(env={}) == "unsealed"
    assert seal.current() is None
    assert rpc.adapter_argv(None, "m:A", [Path("/x")])[0] == sys.executable


def test_seal_flag_without_a_sandbox_is_an_error_naming_why() -> None:
    with pytest.raises(GateError, match=r"cannot seal: no sandbox prepared \(MEMBENCH_SEAL_DIR"):
        seal.establish(required=True, env={})
    with pytest.raises(GateError, match="cannot seal: no sandbox prepared"):
        seal.establish(env={"MEMBENCH_SEAL": "required", "CI": "true"})


def test_in_ci_without_a_sandbox_the_run_is_unsealed() -> None:
    assert seal.establish(env={"CI": "true"}) == "unsealed"
    assert seal.isolation() == "unsealed"


def test_a_bad_mode_or_folder_is_an_error() -> None:
    with pytest.raises(GateError, match="MEMBENCH_SEAL: expected auto, required or off, got 'maybe'"):
        seal.establish(env={"MEMBENCH_SEAL": "maybe"})
    with pytest.raises(GateError, match=r"MEMBENCH_SEAL_DIR: /nonexistent/seal\.json is not a "
                                        r"prepared sandbox"):
        seal.establish(env={"MEMBENCH_SEAL_DIR": "/nonexistent"})


def test_an_unsealed_sandbox_still_gives_the_memorys_interpreter(tmp_path: Path) -> None:
    root = _unsealed_dir(tmp_path, tmp_path)
    assert seal.establish(env={"MEMBENCH_SEAL_DIR": str(root), "CI": "true"}) == "unsealed"
    argv = rpc.adapter_argv(None, "m:A", [tmp_path])
    assert argv[:4] == [str(root / "venv/bin/python"), "-m", "membench_gate.host", "m:A"]
    assert argv[4:] == ["--path", str(tmp_path)]
    with pytest.raises(GateError, match="cannot seal: not root, and there is no sudo"):
        seal.establish(required=True, env={"MEMBENCH_SEAL_DIR": str(root)})


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "check", "bless", "doctor", "selftest", "show"])
def test_every_command_that_starts_an_adapter_refuses_an_unsealed_run_with_seal(
        command: str, tmp_path: Path) -> None:
    (tmp_path / "membench.toml").write_text('[suites.abstention]\nfixtures = ["builtin"]\n')
    args = [command, "--seal"] + (["abstention/default#probe-001"] if command == "show" else [])
    args += ["--json", str(tmp_path / "verdict.json")] if command == "check" else []
    (tmp_path / "verdict.json").write_text('{"verdict": "pass", "exit_code": 0}')
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    assert done.stderr.strip().splitlines() == [
        "membench-gate: error: cannot seal: no sandbox prepared (MEMBENCH_SEAL_DIR is not set: "
        "the action's install step prepares one; elsewhere python -m membench_gate.ci.sandbox "
        "prepare)"]
    if command == "check":  # the stale file is replaced, never left to be read as this run's
        assert_error_verdict(tmp_path / "verdict.json")


@pytest.mark.slow
def test_the_verdict_and_the_report_say_whether_the_run_was_sealed(tmp_path: Path) -> None:
    (tmp_path / "membench.toml").write_text('[suites.abstention]\nfixtures = ["builtin"]\n')
    done = run_cli("check", "--json", str(tmp_path / "v.json"), "--report",
                   str(tmp_path / "r.md"), cwd=tmp_path, env={"CI": "true"})
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["isolation"] == "unsealed", done.stderr
    report = (tmp_path / "r.md").read_text()
    assert "**Unsealed:** the pull request's code ran as the gate's own user" in report
    from membench_gate.model.verdict import Verdict
    from membench_gate.report.render import render

    sealed = render(Verdict(verdict="error", exit_code=4, mode=None, notes=["x"],
                            isolation="sealed"), None, None, limit=None)
    assert "Sealed: the pull request's code ran as another user" in sealed
    neither = render(Verdict(verdict="error", exit_code=4, mode=None, notes=["x"]), None, None,
                     limit=None)
    assert "ealed" not in neither


# -- an adapter process as the sandbox user --------------------------------------------------------

@pytest.fixture
def sealed_dir(sandbox_name: str, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A sandbox made by hand for the ``sandbox_name`` user: (its folder, the checkout)."""
    import pwd
    import tempfile

    require_privilege(sudo=False)
    try:
        pwd.getpwnam(sandbox_name)
    except KeyError:
        done = root_run("useradd", "--system", "--user-group", "--no-create-home", "--home-dir",
                        "/nonexistent", "--shell", "/usr/sbin/nologin", sandbox_name)
        assert done.returncode == 0, done.stderr
    entry = pwd.getpwnam(sandbox_name)
    checkout = tmp_path / "checkout"
    checkout.mkdir(mode=0o700)
    (checkout / "adapter.py").write_text(PROBE_ADAPTER)
    root = Path(tempfile.mkdtemp(prefix="membench-seal-", dir="/tmp"))
    root.chmod(0o755)
    try:
        shutil.copytree(checkout, root / "work")
        for name in ("home", "tmp", "venv/bin"):
            (root / name).mkdir(parents=True, mode=0o700)
        done = root_run("chown", "-R", f"{entry.pw_uid}:{entry.pw_gid}", str(root / "work"),
                        str(root / "home"), str(root / "tmp"), str(root / "venv"))
        assert done.returncode == 0, done.stderr
        sandbox = seal.Sandbox(root, True, "", checkout, root / "venv", root / "work",
                               root / "home", root / "tmp", sandbox_name, entry.pw_uid,
                               entry.pw_gid, interpreter=Path(os.path.realpath(world_python())))
        (root / seal.SEAL_FILE).write_text(json.dumps(sandbox.to_json()))
        yield root, checkout
    finally:
        root_run("pkill", "-KILL", "-u", sandbox_name)
        root_run("rm", "-rf", str(root))


def _probe() -> tuple[list[str], dict[str, str]]:
    argv = [str(world_python()), "adapter.py"]
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": "/root", **SECRETS}
    return argv, env


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.slow
def test_a_sealed_adapter_runs_as_the_sandbox_user_and_leaves_nothing_behind(
        sealed_dir: tuple[Path, Path]) -> None:
    root, checkout = sealed_dir
    sandbox = seal.Sandbox.read(root)
    assert seal.establish(env={"MEMBENCH_SEAL_DIR": str(root), "CI": "true"}) == "sealed"
    argv, env = _probe()
    gate_environ = f"/proc/{os.getpid()}/environ"
    with rpc.start(argv, checkout, {}, 30, env) as client:
        info = client.process.call("introspect", {"paths": [str(checkout), gate_environ,
                                                            str(sandbox.tmp)]})
        detached = client.process.call("detach", {})["pid"]
        assert _alive(detached)
    assert (info["uid"], info["euid"], info["gid"]) == (sandbox.uid, sandbox.uid, sandbox.gid)
    assert set(info["groups"]) <= {sandbox.gid}  # no other group: none of the runner's
    assert info["cwd"] == str(sandbox.copy)
    assert not set(SECRETS) & set(info["env"]), sorted(set(SECRETS) & set(info["env"]))
    assert (info["env"]["TMPDIR"], info["env"]["HOME"]) == (str(sandbox.tmp), str(sandbox.home))
    assert info["read"] == {str(checkout): False, gate_environ: False, str(sandbox.tmp): True}
    # The gate is done with the adapter: every process of the sandbox user is gone, the detached
    # one (and what it kept forking) included.
    assert not _alive(detached)
    assert sandbox.uid is not None and not uid_processes(sandbox.uid)


@pytest.mark.slow
def test_a_sealed_worker_gets_a_temp_folder_of_its_own_in_the_sandbox(
        sealed_dir: tuple[Path, Path]) -> None:
    from membench_gate.run.workers import worker_env

    root, checkout = sealed_dir
    sandbox = seal.Sandbox.read(root)
    assert seal.establish(env={"MEMBENCH_SEAL_DIR": str(root), "CI": "true"}) == "sealed"
    folder, remove = seal.worker_tmp(2)
    assert folder.parent == sandbox.tmp and not remove  # the sandbox's, gone with it
    argv, env = _probe()
    with rpc.start(argv, checkout, {}, 30, {**env, **worker_env(2, folder)}) as client:
        info = client.process.call("introspect", {"paths": [str(folder)]})
    assert (info["env"]["TMPDIR"], info["env"]["MEMBENCH_WORKER"]) == (str(folder), "2")
    assert info["read"] == {str(folder): True}
    assert folder.stat().st_uid == sandbox.uid


@pytest.mark.slow
def test_the_same_adapter_unsealed_reaches_the_checkout_and_outlives_the_gate(
        sealed_dir: tuple[Path, Path]) -> None:
    root, checkout = sealed_dir
    assert seal.establish(env={"MEMBENCH_SEAL_DIR": str(root), "MEMBENCH_SEAL": "off",
                               "CI": "true"}) == "unsealed"
    argv, env = _probe()
    gate_environ = f"/proc/{os.getpid()}/environ"
    with rpc.start(argv, checkout, {}, 30, env) as client:
        info = client.process.call("introspect", {"paths": [str(checkout), gate_environ]})
        detached = client.process.call("detach", {})["pid"]
    try:
        assert info["uid"] == os.getuid()
        assert info["cwd"] == str(checkout)
        assert info["read"] == {str(checkout): True, gate_environ: True}
        time.sleep(0.5)
        assert _alive(detached), "the control: a detached process outlives an unsealed adapter"
    finally:
        if _alive(detached):
            os.killpg(os.getpgid(detached), signal.SIGKILL)  # the session it made (setsid)


@pytest.mark.slow
def test_a_failed_start_in_the_sandbox_is_one_line(sealed_dir: tuple[Path, Path]) -> None:
    root, checkout = sealed_dir
    seal.establish(env={"MEMBENCH_SEAL_DIR": str(root), "CI": "true"})
    # As root the start itself fails; through sudo, ``env`` in the sandbox cannot run it.
    with pytest.raises(GateError, match=r"cannot start '/nonexistent-adapter': no such executable"
                                        r"|adapter initialize\(\) failed: the adapter process "
                                        r"ended without answering \(exit code 127\)"), \
            rpc.start(["/nonexistent-adapter"], checkout, {}, 10, {"PATH": "/bin"}):
        pass


@pytest.mark.slow
def test_a_sandbox_process_that_survives_the_sweep_is_an_error(
        sealed_dir: tuple[Path, Path]) -> None:
    import dataclasses

    root, _ = sealed_dir
    # A sweep that reports a survivor (its helper exits 1): the gate does not go on as if clean.
    broken = dataclasses.replace(seal.Sandbox.read(root), interpreter=Path("/bin/false"))
    with pytest.raises(GateError, match=r"seal: processes of mbsbx-\w+ survive being killed"):
        seal.sweep(broken, seconds=1)


@pytest.mark.slow
def test_an_interpreter_other_users_cannot_run_means_no_seal(tmp_path: Path) -> None:
    from membench_gate.ci.sandbox import Request, prepare

    require_privilege(sudo=False)
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    shutil.copy2(os.path.realpath(world_python()), closed / "python3")
    with pytest.raises(GateError) as refused:
        prepare(Request(mode="required", ci=True, python=str(closed / "python3"),
                        user="mbsbx-never-made"), tmp_path)
    message = str(refused.value)
    assert message.startswith(f"cannot seal: another user cannot run {closed}/python3: "), message
    assert message.endswith("is closed to other users (use a Python every user may run, such as "
                            "setup-python's)"), message
    import pwd

    with pytest.raises(KeyError):  # refused before any user was made
        pwd.getpwnam("mbsbx-never-made")
