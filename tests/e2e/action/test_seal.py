"""The action's install step as a runner runs it (its own ``run:`` script, as the runner's user), and
every command that starts an adapter afterwards, sealed: doctor, run, check, show, bless — on a
Python memory and on the Node example. Then the runners where nothing can seal: without sudo the
run is unsealed and says so; with ``seal: required`` that is an ERROR; and a fixture folder the
sandbox user could read makes a run unsealed too (the probe), never a sealed run that is not.

The act runs (tests/e2e/action/test_seal_under_act.py) show the same through the whole workflow;
these are the parts act would make slow, one step at a time.
"""

from __future__ import annotations

import json
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.actkit import ACTION_FILES, ACTION_TREES
from tests.support.attackrepo import honest_files
from tests.support.cli import seed_repo
from tests.support.gaterepo import PROJECT, action_spec, config_text, evaluate, parse_file_command
from tests.support.sealkit import Shared, User, hand_over, root_run, run_as, uid_processes

# A Python memory (the reference one) that writes down who runs it and where, in its temp folder.
WHOAMI = '''\
import json, os
from membench_gate.reference import ReferenceMemory


class WhoAmI(ReferenceMemory):
    def __init__(self, **options):
        super().__init__(**options)
        # TMPDIR is this process's own folder (removed with it), inside the sandbox's temp
        # folder, which outlives it: the log goes there.
        if os.environ.get("TMPDIR"):
            log = os.path.join(os.path.dirname(os.environ["TMPDIR"]), "whoami.jsonl")
            with open(log, "a") as out:
                out.write(json.dumps({"uid": os.getuid(), "cwd": os.getcwd()}) + "\\n")
'''

# The abstention suite on a fixture folder of the repository's own, the rest on builtin ones.
CONFIG = config_text(adapter="whoami:WhoAmI").replace(
    '[suites.abstention]\nfixtures = ["builtin"]', '[suites.abstention]\nfixtures = ["fx"]')


@dataclass
class Step:
    returncode: int
    log: str
    outputs: dict[str, str]
    env: dict[str, str]  # what it wrote to $GITHUB_ENV
    path: list[str]  # what it added to $GITHUB_PATH

    @property
    def seal_dir(self) -> Path:
        return Path(self.env["MEMBENCH_SEAL_DIR"])

    @property
    def gate(self) -> Path:
        """The gate's own ``membench-gate`` (its virtual environment's)."""
        return Path(self.path[0]) / "membench-gate"


def _install_step() -> dict:
    return next(s for s in action_spec()["runs"]["steps"] if s.get("name") == "Install membench-gate")


def _action_copy(where: Path) -> Path:
    """The action as the runner has it (``$GITHUB_ACTION_PATH``)."""
    copy = where / "action"
    copy.mkdir(parents=True)
    for name in ACTION_FILES:
        if (PROJECT / name).is_file():
            shutil.copy2(PROJECT / name, copy / name)
    for name in ACTION_TREES:
        shutil.copytree(PROJECT / name, copy / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return copy


def install_step(user: User, shared: Shared, home: Path, checkout: Path, sandbox: str,
                 inputs: dict[str, str]) -> Step:
    """Run the action's "Install membench-gate" step in ``checkout`` as ``user``."""
    files = checkout.parent / "files"
    files.mkdir()
    commands = {name: files / name.lower() for name in ("GITHUB_ENV", "GITHUB_OUTPUT",
                                                        "GITHUB_PATH", "GITHUB_STEP_SUMMARY")}
    for path in commands.values():
        path.touch()
    hand_over(home, user)
    step = _install_step()
    given = {"install": "", "seal": "auto", "config": "membench.toml", **inputs}
    env = {name: evaluate(str(value), given, {}) for name, value in step["env"].items()}
    env = shared.env(user, {
        "CI": "true", "GITHUB_ACTIONS": "true", "RUNNER_TEMP": str(home / "temp"),
        "GITHUB_ACTION_PATH": str(home / "action"), "GITHUB_WORKSPACE": str(checkout),
        "MEMBENCH_SEAL_USER": sandbox, **{k: str(v) for k, v in commands.items()}, **env})
    done = run_as(user, ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c",
                         step["run"]], checkout, env)
    return Step(done.returncode, done.stdout + done.stderr,
                parse_file_command(commands["GITHUB_OUTPUT"].read_text()),
                parse_file_command(commands["GITHUB_ENV"].read_text()),
                commands["GITHUB_PATH"].read_text().split())


@pytest.fixture(scope="module")
def runner_home(runner_user: User, shared: Shared) -> Path:
    """The runner's own folder (others cannot read it), with the action and a temp folder kept
    for the module: the gate's environment is made once."""
    home = shared.root / f"runner-{runner_user.name}"
    home.mkdir(mode=0o700)
    _action_copy(home)
    (home / "temp").mkdir()
    hand_over(home, runner_user)
    return home


def memory_repo(home: Path, name: str, files: dict[str, str], user: User,
                tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A blessed memory repository (made by this process), copied into ``home`` as ``user``'s
    checkout ``name``; its files for the commands' outputs go beside it."""
    made = seed_repo(tmp_path_factory.mktemp(f"seed-{name}") / "repo", files)
    where = home / name
    shutil.copytree(made, where / "checkout", symlinks=True)
    hand_over(where, user)
    return where / "checkout"


def cli(user: User, shared: Shared, step: Step, checkout: Path, *args: str,
        extra: dict[str, str] | None = None):
    """The gate's ``membench-gate ARGS`` in ``checkout`` as ``user``, with the sandbox prepared."""
    env = shared.env(user, {"MEMBENCH_SEAL_DIR": str(step.seal_dir), **(extra or {})})
    return run_as(user, [str(step.gate), *args], checkout, env)


def _whoami(step: Step) -> list[dict]:
    sandbox = json.loads((step.seal_dir / "seal.json").read_text())
    log = Path(sandbox["tmp"]) / "whoami.jsonl"
    done = root_run("cat", str(log))
    return [json.loads(line) for line in done.stdout.splitlines()]


# -- sealed ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sealed(runner_user: User, shared: Shared, runner_home: Path, sandbox_name: str,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[Step, Path]:
    fx = json.loads((PROJECT / "fixtures/abstention/facts.json").read_text())
    probes = json.loads((PROJECT / "fixtures/abstention/probes.json").read_text())
    files = {**honest_files(), "membench.toml": CONFIG, "whoami.py": WHOAMI,
             "fx/facts.json": json.dumps(fx), "fx/probes.json": json.dumps(probes)}
    checkout = memory_repo(runner_home, "sealed", files, runner_user, tmp_path_factory)
    step = install_step(runner_user, shared, runner_home, checkout, sandbox_name,
                        {"install": "pip install -e . && id -u > \"$TMPDIR/install-uid\""})
    assert step.returncode == 0, step.log[-3000:]
    return step, checkout


def test_the_install_step_prepares_a_sealed_sandbox(sealed: tuple[Step, Path], sandbox_name: str,
                                                     runner_home: Path) -> None:
    import pwd

    step, checkout = sealed
    assert step.outputs["isolation"] == "sealed"
    assert f"sealed: the install command and the adapter run as {sandbox_name}" in step.log
    sandbox = json.loads((step.seal_dir / "seal.json").read_text())
    uid = pwd.getpwnam(sandbox_name).pw_uid
    assert (sandbox["sealed"], sandbox["user"], sandbox["uid"]) == (True, sandbox_name, uid)
    # The install ran as the sandbox user, and left no process behind.
    assert root_run("cat", f"{sandbox['tmp']}/install-uid").stdout.strip() == str(uid)
    assert not uid_processes(uid)
    # The sealed copy: the checkout without .git, the config's fixture folder or the baseline.
    copy = Path(sandbox["copy"])
    listed = set(root_run("ls", "-A", str(copy)).stdout.split())
    assert {"membench.toml", "whoami.py", "src", "pyproject.toml"} <= listed
    assert not {".git", "fx"} & listed
    assert root_run("test", "-e", str(copy / "baselines/main.json")).returncode != 0
    # The gate's own environment and folders: no other user's.
    venv = step.gate.parent.parent
    assert stat.S_IMODE(venv.stat().st_mode) == 0o700
    assert stat.S_IMODE(checkout.stat().st_mode) & 0o077 == 0
    assert stat.S_IMODE((runner_home / "action").stat().st_mode) & 0o077 == 0
    # The memory's environment is the sandbox's, with the gate's package but not its fixtures.
    memory = Path(sandbox["venv"])
    assert memory.stat().st_uid == uid
    package = root_run("find", str(memory), "-path", "*/membench_gate/host.py").stdout.split()
    assert package, "membench-gate is not installed in the memory's environment"
    data = Path(package[0]).parent / "_data"
    assert root_run("test", "-e", str(data / "fixtures")).returncode != 0
    assert root_run("test", "-d", str(data / "templates")).returncode == 0


def test_doctor_run_check_show_and_bless_run_the_adapter_sealed(
        sealed: tuple[Step, Path], runner_user: User, shared: Shared, sandbox_name: str) -> None:
    import pwd

    step, checkout = sealed
    uid = pwd.getpwnam(sandbox_name).pw_uid
    copy = json.loads((step.seal_dir / "seal.json").read_text())["copy"]
    verdict = checkout.parent / "verdict.json"
    for args in (["doctor", "--seal"],
                 ["run", "--seal", "--out", str(checkout.parent / "results.json")],
                 ["check", "--seal", "--base-ref", "HEAD", "--json", str(verdict)],
                 ["show", "--seal", "veto/files_known#scn-001", "--base-ref", "HEAD"],
                 ["bless", "--seal"]):
        before = len(_whoami(step))
        done = cli(runner_user, shared, step, checkout, *args)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        runs = _whoami(step)[before:]
        assert runs and {r["uid"] for r in runs} == {uid}, (args, runs)
        assert {r["cwd"] for r in runs} == {copy}
        assert not uid_processes(uid), args
    result = json.loads(root_run("cat", str(verdict)).stdout)
    assert (result["verdict"], result["isolation"]) == ("pass", "sealed")


def test_the_node_example_runs_sealed(runner_user: User, shared: Shared, runner_home: Path,
                                      sandbox_name: str,
                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    example = PROJECT / "examples/node-memory"
    files = {name: (example / name).read_text() for name in ("membench.toml", "adapter.js")}
    checkout = memory_repo(runner_home, "node", files, runner_user, tmp_path_factory)
    where = checkout.parent
    step = install_step(runner_user, shared, runner_home, checkout, sandbox_name, {})
    assert (step.returncode, step.outputs["isolation"]) == (0, "sealed"), step.log[-3000:]
    for args in (["doctor", "--seal"], ["check", "--seal", "--base-ref", "HEAD", "--json",
                                        str(where / "verdict.json")]):
        done = cli(runner_user, shared, step, checkout, *args)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    verdict = json.loads(root_run("cat", str(where / "verdict.json")).stdout)
    assert (verdict["verdict"], verdict["isolation"]) == ("pass", "sealed")


def test_a_fixture_folder_the_sandbox_can_read_means_no_seal(
        runner_user: User, shared: Shared, runner_home: Path, sandbox_name: str,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = shared.root / "open-fixtures"  # world-readable, outside the checkout
    outside.mkdir()
    for name in ("facts.json", "probes.json"):
        shutil.copy2(PROJECT / "fixtures/abstention" / name, outside / name)
    config = CONFIG.replace('fixtures = ["fx"]', f'fixtures = ["{outside}"]')
    checkout = memory_repo(runner_home, "probe", {**honest_files(), "membench.toml": config,
                                                   "whoami.py": WHOAMI},
                           runner_user, tmp_path_factory)
    step = install_step(runner_user, shared, runner_home, checkout, sandbox_name,
                        {"seal": "auto"})
    assert step.returncode == 0, step.log[-3000:]
    assert step.outputs["isolation"] == "unsealed"
    assert f"unsealed: the sandbox user {sandbox_name} can read {outside}" in step.log
    assert "::warning title=membench-gate seal::unsealed run: the sandbox user" in step.log


# -- where nothing can seal ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def plain_home(plain_user: User, shared: Shared) -> Path:
    home = shared.root / f"plain-{plain_user.name}"
    home.mkdir(mode=0o700)
    _action_copy(home)
    (home / "temp").mkdir()
    hand_over(home, plain_user)
    return home


def test_without_sudo_the_run_is_unsealed_and_says_so(
        plain_user: User, shared: Shared, plain_home: Path, sandbox_name: str,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    checkout = memory_repo(plain_home, "plain", {**honest_files(), "membench.toml": config_text()},
                           plain_user, tmp_path_factory)
    where = checkout.parent
    step = install_step(plain_user, shared, plain_home, checkout, sandbox_name,
                        {"install": "pip install -e ."})
    assert step.returncode == 0, step.log[-3000:]
    assert step.outputs["isolation"] == "unsealed"
    reason = "not root, and sudo asks for a password (sudo -n true failed)"
    assert f"membench-gate: unsealed: {reason}" in step.log
    assert f"::warning title=membench-gate seal::unsealed run: {reason}" in step.log
    # The install went to the memory's own environment, not the gate's.
    memory = json.loads((step.seal_dir / "seal.json").read_text())["venv"]
    assert list(Path(memory).glob("lib/python*/site-packages/*acme_memory*"))
    assert not list(step.gate.parent.parent.glob("lib/python*/site-packages/*acme_memory*"))
    report = where / "report.md"
    done = cli(plain_user, shared, step, checkout, "check", "--base-ref", "HEAD", "--json",
               str(where / "verdict.json"), "--report", str(report), extra={"CI": "true"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((where / "verdict.json").read_text())["isolation"] == "unsealed"
    assert "**Unsealed:**" in report.read_text()
    refused = cli(plain_user, shared, step, checkout, "doctor", "--seal")
    assert refused.returncode == 4
    assert refused.stderr.strip().splitlines()[-1] == f"membench-gate: error: cannot seal: {reason}"


def test_seal_required_where_nothing_can_seal_is_an_error(
        plain_user: User, shared: Shared, plain_home: Path, sandbox_name: str,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    checkout = memory_repo(plain_home, "required", {"membench.toml": config_text()}, plain_user,
                           tmp_path_factory)
    step = install_step(plain_user, shared, plain_home, checkout, sandbox_name,
                        {"seal": "required"})
    assert step.returncode == 4, step.log[-3000:]
    reason = "cannot seal: not root, and sudo asks for a password (sudo -n true failed)"
    assert f"::error title=membench-gate::{reason}" in step.log
    assert f"membench-gate: error: {reason}" in step.log
    assert "MEMBENCH_SEAL_DIR" not in step.env
