"""Sealed runs end to end: the action as a GitHub-hosted runner runs it, and a pull request that attacks it.

``act`` runs a memory repository's ``pull_request`` workflow on this machine (``-self-hosted``: no
container) as a non-root "runner" user with passwordless sudo, like GitHub's runners, with the
action vendored as ``./membench-gate-action`` and the fake GitHub API in another process. pip
installs from a local wheelhouse, so nothing leaves the machine.

Three runs of one repository:

1. an honest pull request, sealed: PASS, ``isolation=sealed``, the report says so;
2. a pull request whose ``install:`` and adapter try everything (tests/support/attackrepo.py) — a project
   named ``membench-gate`` with a ``membench_gate/`` package and a ``src/sitecustomize.py``, build
   code that appends to ``$GITHUB_PATH``, file-command files found by scanning, the gate's
   ``verdict.json``/``report.md`` during ``selftest``, a detached ``setsid`` double-forked process,
   ``/proc/*/environ`` and ``.git/config`` for the token, fixture files in the checkout, the
   action's folder and site-packages — sealed: the verdict stays the honest REGRESSION, the attack
   code ran (as the sandbox user) and reached nothing, no token in anything it wrote, no process
   of it left after the step;
3. the same pull request with ``seal: off``, the control: the same attacks reach their targets
   (the test can see an attack), and the run says ``isolation=unsealed``, in the report too.
"""

from __future__ import annotations

import base64
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.actkit import (
    ACTION_DIR,
    SETUP_PYTHON_STAND_IN,
    TOKEN,
    FakeServer,
    gate_workflow,
    offline_args,
    read_log,
    vendor_action,
)
from tests.support.attackrepo import attack_files, honest_files
from tests.support.gaterepo import Checkout, action_spec, blessed_origin, push_pr
from tests.support.gitrepos import git, pr_clone
from tests.support.sealkit import Shared, User, hand_over, run_as, uid_processes

OUTPUTS = list(action_spec()["outputs"])


# The pull request's install runs sealed (or not, as the run asks); the recording step also notes
# when the gate's steps ended and which processes were left.
WORKFLOW = gate_workflow(
    OUTPUTS,
    inputs=("          install: pip install -e .\n"
            "          seal: ${{ env.E2E_SEAL }}\n"
            "          selftest: ${{ env.E2E_SELFTEST }}\n"),
    record=('          date +%s.%N > "$E2E_OUT/ended-$E2E_RUN"\n'
            '          ps -eo uid=,pid=,ppid=,stat=,args= > "$E2E_OUT/ps-$E2E_RUN.txt"\n'))


@dataclass
class World:
    runner: User
    sandbox: str
    shared: Shared
    private: Path  # the runner's own: checkouts, outputs, act's cache (no other user reads it)
    ours: Path  # this process's own: the origin and the developer's clone (git wants one owner)
    act: Path
    fake: FakeServer
    origin: tuple[Path, str]
    dev: Path


@dataclass
class Run:
    returncode: int
    entries: list[dict[str, Any]]
    lines: list[str]
    outputs: dict[str, str]
    report: str
    ps: str  # every process (uid, pid, ppid, state, command), right after the action's steps
    ended: float  # when the action's steps had ended
    findings: list[dict[str, Any]]
    job: list[str]  # where this job keeps its files: its folders, the runner's, the sandbox's

    def found(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["kind"] == kind]

    def reached(self, kind: str) -> list[str]:
        """What the attack reached of this job's own files (the workspace, the runner's temp
        folder, the action, the sandbox): a machine may hold other copies of the public shipped
        fixtures, which are no secret of this job."""
        return [f["detail"] for f in self.found(kind)
                if any(place in f["detail"] for place in self.job)]

    def log_tail(self) -> str:
        return "\n".join(self.lines[-80:])


@pytest.fixture(scope="module")
def world(runner_user: User, sandbox_name: str, shared: Shared, act: Path,
          fake_api: FakeServer, tmp_path_factory: pytest.TempPathFactory) -> World:
    private = shared.root / "private"
    private.mkdir()
    binary = shared.bin / "act"
    shutil.copy2(act, binary)
    binary.chmod(0o755)
    ours = tmp_path_factory.mktemp("seal-e2e")
    origin = blessed_origin(ours / "origin", {**honest_files(),
                                              ".github/workflows/gate.yml": WORKFLOW},
                            setup=vendor_action)
    dev = pr_clone(origin[0], ours / "dev", branch="feature")
    stand_in = private / "setup-python-stand-in"
    stand_in.mkdir()
    (stand_in / "action.yml").write_text(SETUP_PYTHON_STAND_IN, encoding="utf-8")
    private.chmod(0o700)
    hand_over(private, runner_user)
    return World(runner_user, sandbox_name, shared, private, ours, binary, fake_api, origin, dev)


def run_act(world: World, label: str, files: dict[str, str], seal: str, selftest: bool) -> Run:
    """Push ``files`` as the PR's next commit and run the workflow on it as the runner user."""
    findings = world.shared.root / f"findings-{label}"
    findings.mkdir(mode=0o777)
    findings.chmod(0o1777)  # every user the attack runs as writes its own file here
    made = push_pr(world.origin, world.dev, world.ours, label,
                   {k: v.replace("@FINDINGS@", str(findings)) for k, v in files.items()})
    # The runner's own checkout and origin (the gate fetches the base commit from it).
    origin = world.private / f"origin-{label}.git"
    shutil.copytree(world.origin[0], origin, symlinks=True)
    checkout = Checkout(world.private / made.path.name, world.private / made.event.name,
                        made.base_sha, made.head_sha, made.merge_sha)
    shutil.copytree(made.path, checkout.path, symlinks=True)
    shutil.copy2(made.event, checkout.event)
    git(checkout.path, "remote", "set-url", "origin", f"file://{origin}")
    _persist_credentials(checkout)
    out = world.private / f"out-{label}"
    out.mkdir()
    hand_over(world.private, world.runner)
    # act's folders (workspace, RUNNER_TEMP, file commands) where every user can look, as on a
    # runner whose home is open: what keeps the sandbox out must be the gate's doing.
    act_work = world.shared.root / f"act-{label}"
    act_work.mkdir()
    hand_over(act_work, world.runner)
    args = offline_args(world.act, checkout.event, ".github/workflows/gate.yml", world.fake,
                        act_work,
                        {"actions/setup-python@v5": world.private / "setup-python-stand-in"},
                        {"E2E_OUT": str(out), "E2E_RUN": label, "E2E_SEAL": seal,
                         "E2E_SELFTEST": str(selftest).lower(),
                         "MEMBENCH_SEAL_USER": world.sandbox})
    done = run_as(world.runner, args, checkout.path, world.shared.env(world.runner, {
        "ACT_DISABLE_VERSION_CHECK": "1",
        "XDG_CONFIG_HOME": str(world.private / "xdg-config"),
    }))
    lines = (done.stdout + done.stderr).splitlines()
    outputs_file = out / f"outputs-{label}.json"
    assert outputs_file.is_file(), "\n".join(lines[-80:])
    report = out / f"report-{label}.md"
    return Run(done.returncode, read_log(lines), lines,
               json.loads(outputs_file.read_text(encoding="utf-8")),
               report.read_text(encoding="utf-8") if report.is_file() else "",
               (out / f"ps-{label}.txt").read_text(encoding="utf-8"),
               float((out / f"ended-{label}").read_text(encoding="utf-8")), _findings(findings),
               [str(act_work), str(world.private), str(world.runner.home), "/tmp/membench-seal-"])


def _persist_credentials(checkout: Checkout) -> None:
    """What actions/checkout leaves in ``.git/config`` unless ``persist-credentials: false``."""
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    git(checkout.path, "config", "http.https://github.com/.extraheader",
        f"AUTHORIZATION: basic {basic}")


def _findings(folder: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        out += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return out


def _survivors(run: Run) -> list[str]:
    return [line for line in run.ps.splitlines() if "membench-survivor" in line]


def _kill_survivors(run: Run, user: User) -> None:
    from tests.support.sealkit import root_run

    for pid in {f["pid"] for f in run.findings if f["role"].startswith("survivor")}:
        root_run("kill", "-KILL", str(pid))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
            "membench-survivor" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
            for pid in _pids_of(user.uid)):
        time.sleep(0.2)


def _pids_of(uid: int) -> list[int]:
    return [pid for pid in uid_processes(uid) if Path(f"/proc/{pid}").exists()]


# -- the tests -----------------------------------------------------------------------------------

def test_an_honest_pull_request_passes_sealed(world: World) -> None:
    run = run_act(world, "honest", {}, seal="auto", selftest=False)
    assert run.returncode == 0, run.log_tail()
    assert (run.outputs["OUT_VERDICT"], run.outputs["OUT_ISOLATION"]) == ("pass", "sealed")
    assert run.report.startswith("## membench-gate: ✅ PASS")
    assert "Sealed: the pull request's code ran as another user" in run.report
    assert any(f"sealed: the install command and the adapter run as {world.sandbox}" in line
               for line in run.lines)


def test_an_attacking_pull_request_reaches_nothing_sealed(world: World) -> None:
    import pwd

    run = run_act(world, "attack-sealed", attack_files("@FINDINGS@"), seal="auto", selftest=True)
    sandbox_uid = pwd.getpwnam(world.sandbox).pw_uid
    # The attack ran — at install, in the adapter, in the selftest's adapters — as the sandbox.
    starts = {f["role"] for f in run.found("start")}
    assert {"install", "host", "pth"} <= starts, (sorted(starts), run.outputs, run.log_tail())
    assert {f["uid"] for f in run.findings} == {sandbox_uid}, run.log_tail()
    # ... and reached nothing.
    for kind in ("WROTE", "GOLD", "READ"):
        assert not run.reached(kind), (kind, run.reached(kind)[:8])
    for kind in ("TOKEN", "ENV", "IMPOSTOR"):
        assert not run.found(kind), (kind, [f["detail"] for f in run.found(kind)][:8])
    assert not [f for f in run.findings if f["role"].startswith("survivor")
                and f["detail"] == "alive" and f["t"] > run.ended]
    assert TOKEN not in json.dumps(run.findings)
    assert not [f for f in run.found("IMPORTED") if "membench-gate-venv" in f["exe"]]
    # It saw its targets — the checkout's .git/config, the runner's file commands, the gate's
    # environment — and was refused: the test sees an attack that fails.
    denied = " ".join(f["detail"] for f in run.found("denied"))
    for target in ("hostexecutor/.git/config", "outputcmd.txt", "membench-gate-venv",
                   "membench-gate/verdict.json"):
        assert target in denied, (target, denied[:3000])
    # The honest verdict of a memory that stores nothing.
    assert run.returncode != 0
    assert (run.outputs["OUT_VERDICT"], run.outputs["OUT_EXIT_CODE"]) == ("regression", "1")
    assert run.outputs["OUT_ISOLATION"] == "sealed"
    assert run.report.startswith("## membench-gate: ❌ REGRESSION"), run.report[:200]
    # The selftest's runs went on sealed too: its adapter processes (one per worker, each
    # serving run after run) are the sandbox user's, as the check's are.
    assert len({f["pid"] for f in run.found("start") if f["role"] == "host"}) >= 2
    # Nothing of the sandbox user outlived the step.
    assert not _survivors(run), _survivors(run)
    # A zombie is dead already: a killed orphan (the detached survivor) waits there until init
    # reaps it, and some machines' init takes a second or more; uid_processes leaves zombies out.
    assert not [line for line in run.ps.splitlines()
                if line.split()[0] == str(sandbox_uid) and not line.split()[3].startswith("Z")], run.ps
    assert not uid_processes(sandbox_uid)
    assert TOKEN not in "\n".join(line for line in run.lines if '"add-mask"' not in line
                                  and "add-mask" not in line)


def test_the_same_attacks_unsealed_reach_their_targets(world: World) -> None:
    run = run_act(world, "attack-unsealed", attack_files("@FINDINGS@"), seal="off",
                  selftest=True)
    try:
        assert {f["uid"] for f in run.findings} == {world.runner.uid}
        wrote = " ".join(run.reached("WROTE"))
        assert "command-file" in wrote and "gate-file" in wrote and "gate-venv" in wrote, wrote
        gold = " ".join(run.reached("GOLD"))
        assert "membench_gate/_data/fixtures" in gold and f"{ACTION_DIR}/fixtures" in gold, gold
        assert TOKEN in json.dumps(run.found("TOKEN"))
        assert _survivors(run), "no detached process outlived the step unsealed"
        assert (run.outputs["OUT_VERDICT"], run.outputs["OUT_ISOLATION"]) == ("regression",
                                                                              "unsealed")
        assert "**Unsealed:** the pull request's code ran as the gate's own user" in run.report
        assert any("unsealed: sealing is off (seal: off)" in line for line in run.lines)
    finally:
        _kill_survivors(run, world.runner)
