"""The action trusts no verdict file that its check process's exit status contradicts.

Issue seen: the action read ``verdict.json`` from disk and ignored how ``membench-gate check``
exited, so a file left or forged by anything else decided the job. Here the check process's exit
status is forged at interpreter exit, whatever runs the adapter, and the action must answer ERROR
with every file replaced. The check runs isolated (``python -I``: no ``PYTHONPATH``, no working
directory), so the forger reaches it the only way left, a ``.pth`` file in the site-packages of
a throwaway virtual environment that the step's ``python`` is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.action.test_gate_step import TOKEN, pull_request, run_step
from tests.support.fakegithub import FakeGitHub
from tests.support.gaterepo import PR_NUMBER, REPOSITORY, SILENT_ADAPTER, blessed_origin, config_text

FORGER = '''\
import atexit
import os
import sys


def _forge():
    if sys.argv[:2] == ["-c", "check"]:  # the check the action starts (not an adapter's host)
        os._exit(int(os.environ["FORGED_EXIT"]))


atexit.register(_forge)
'''


def forging_python(venv: Path) -> Path:
    """The python of a new virtual environment that sees this one's packages and imports the
    forger at start-up."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python*/site-packages")
    ours = [p for p in sys.path if p.endswith("site-packages")]
    # .pth lines that start with "import" run at start-up, -I or not.
    (site / "zz-ours.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n"
                                              for p in ours))
    (site / "forger.py").write_text(FORGER)
    (site / "zz-forger.pth").write_text("import forger\n")
    return venv / "bin" / "python"


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return blessed_origin(tmp_path_factory.mktemp("origin"), {"silent.py": SILENT_ADAPTER})


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPOSITORY) as server:
        server.add_pull(PR_NUMBER)
        yield server


@pytest.mark.parametrize(("adapter", "forged", "said"), [
    ("silent:Silent", "0", "regression"),  # a REGRESSION whose process exits 0
    ("membench_gate.reference:ReferenceMemory", "1", "pass"),  # a PASS that exits 1
])
def test_a_verdict_file_the_exit_status_contradicts_is_an_error(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, adapter: str, forged: str, said: str) -> None:
    monkeypatch.setenv("FORGED_EXIT", forged)
    checkout = pull_request(origin, tmp_path, {"membench.toml": config_text(adapter=adapter)})
    run = run_step(checkout, fake, tmp_path, python=str(forging_python(tmp_path / "venv")))
    assert run.returncode == 4, run.log
    assert (run.outputs["verdict"], run.outputs["exit-code"]) == ("error", "4")
    verdict = run.verdict()
    assert verdict["verdict"] == "error"
    assert f"the check exited {forged} but its verdict file says {said}" in verdict["notes"][0]
    report = (run.out_dir / "report.md").read_text(encoding="utf-8")
    assert "ERROR" in report and "PASS" not in report.splitlines()[0]
    assert json.loads((run.out_dir / "results.json").read_text())["verdict"] == "error"
    assert run.outputs["results-path"] == ""
    assert run.annotations("error")
    posted = [c["body"] for c in fake.comments_on(PR_NUMBER)]
    assert len(posted) == 1 and "## membench-gate: ⛔ ERROR" in posted[0]
