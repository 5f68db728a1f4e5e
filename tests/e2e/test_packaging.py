"""The wheel ships the fixtures and templates and runs from anywhere; heavy imports stay lazy."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import REPO


def python(*args: str, cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    isolation = ([] if importlib.util.find_spec("hatchling") is None
                 else ["--no-build-isolation"])
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", str(out),
         str(REPO)],
        cwd=out, capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = out.glob("membench_gate-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return target


def test_wheel_ships_fixtures_templates_and_entry_point(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names
                            if n.endswith(".dist-info/entry_points.txt"))
    assert "membench_gate/_data/fixtures/veto/decisions.json" in names
    assert "membench_gate/_data/templates/scoreboard.md.j2" in names
    shipped = {n.removeprefix("membench_gate/_data/") for n in names
               if n.startswith("membench_gate/_data/fixtures/")}
    in_repo = {p.relative_to(REPO).as_posix() for p in (REPO / "fixtures").rglob("*.json")}
    assert shipped == in_repo
    assert "membench_gate/suites/veto/scoring.py" in names
    assert "membench_gate/schemas/results.schema.json" in names
    assert not any(n.startswith("tests/") for n in names)
    assert "membench-gate = membench_gate.cli:console" in entry_points


def test_installed_wheel_runs_from_an_unrelated_directory(installed: Path, tmp_path: Path) -> None:
    config = tmp_path / "project" / "membench.toml"
    config.parent.mkdir()
    config.write_text(
        '[suites.veto]\nfixtures = ["builtin"]\n[suites.abstention]\nfixtures = ["builtin"]\n'
        '[suites.push]\nfixtures = ["builtin"]\n', encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "r.json"

    where = python("-c", "import membench_gate, membench_gate.suites.common.folders as f; "
                         "print(membench_gate.__file__); print(f.data_dir())",
                   cwd=elsewhere, pythonpath=installed)
    assert where.returncode == 0, where.stderr
    module_file, data_dir = (Path(line) for line in where.stdout.splitlines())
    assert module_file.is_relative_to(installed)
    assert data_dir == installed / "membench_gate" / "_data"

    proc = python("-m", "membench_gate", "run", "--config", str(config), "--out", str(out),
                  cwd=elsewhere, pythonpath=installed)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out.read_text(encoding="utf-8"))
    assert {"veto/files_known", "abstention/default", "push/know_to_ask",
            "push/push"} <= set(results["cells"])
    assert results["cells"]["veto/files_known"]["gold_total"] > 0

    # The same measurement, the same bytes, as the source checkout gives (receipt apart).
    source_out = tmp_path / "source.json"
    proc = python("-m", "membench_gate", "run", "--config", str(config), "--out",
                  str(source_out), cwd=elsewhere, pythonpath=REPO)
    assert proc.returncode == 0, proc.stderr
    from_source = json.loads(source_out.read_text(encoding="utf-8"))
    results.pop("receipt")
    from_source.pop("receipt")
    assert results == from_source


_HEAVY = ("github",)  # PyGithub
_PROBE = (
    "import sys\n{body}\n"
    "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r})\n"
    "print(heavy)\n"
)


@pytest.mark.parametrize("body", [
    "import membench_gate",
    "import membench_gate.cli.main, membench_gate.run.runner, membench_gate.reference",
    "from membench_gate.cli.main import main\nassert main(['run', '--suite', 'veto']) == 0",
    "from membench_gate.cli.main import main\nassert main(['explain', 'mrr']) == 0",
])
def test_heavy_imports_stay_lazy(body: str) -> None:
    proc = python("-c", _PROBE.format(body=body, heavy=set(_HEAVY)), cwd=REPO, pythonpath=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_checking_a_results_file_imports_no_adapter_machinery(tmp_path: Path) -> None:
    # check --results reads files and git: no numpy, no fuzzy matching (no justification to
    # judge), no adapter client, no GitHub client. It does load the fixtures and the suites: the file
    # is re-derived by replaying the suites on its recorded answers (the runner's digests included),
    # which needs neither an adapter process nor its client.
    from tests.support.cli import bless, run_cli, seed_repo

    config = (REPO / "membench.toml").read_text(encoding="utf-8")
    repo = seed_repo(tmp_path / "repo", {"membench.toml": config}, blessed=False)
    bless(repo)
    assert run_cli("run", "--out", "r.json", cwd=repo).returncode == 0
    probe = ("import sys\n"
             "from membench_gate.cli.main import main\n"
             "code = main(['check', '--results', 'r.json'])\n"
             "assert code == 0, code\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "{'numpy', 'rapidfuzz', 'github'} or m in {'membench_gate.adapter.rpc', "
             "'membench_gate.adapter.host', 'membench_gate.reference'}))\n")
    proc = python("-c", probe, cwd=repo, pythonpath=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
