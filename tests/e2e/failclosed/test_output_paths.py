"""An output path that cannot be what it is asked to be is refused before any work: a directory,
two outputs naming one file, an output that is one of the gate's inputs (the config, the
baseline, a fixture folder, a file given to read). Exit 4, one line naming the flag, no adapter
started, no input touched — through the CLI on a real repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.memrepo import gate, memory_repo_with_results

# Every input of the small memory's gate, as bytes: none of them may change.
INPUTS = ("membench.toml", "baselines/main.json", "fx/facts.json", "fx/probes.json")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return memory_repo_with_results(tmp_path_factory.mktemp("outputs") / "repo")


def _snapshot(repo: Path) -> dict[str, bytes | list[str]]:
    found: dict[str, bytes | list[str]] = {name: (repo / name).read_bytes() for name in INPUTS}
    found["files"] = sorted(str(p.relative_to(repo)) for p in repo.rglob("*")
                            if ".git" not in p.parts)
    return found


def refused(repo: Path, *args: str) -> str:
    """Run ``args``: exit 4, one line on stderr, no adapter call, every input as it was and no
    file added. The line."""
    before = _snapshot(repo)
    done = gate(repo, *args)
    assert done.returncode == 4, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("membench-gate: error: "), done.stderr
    assert _snapshot(repo) == before
    return lines[0].removeprefix("membench-gate: error: ")


def test_an_output_that_is_a_directory_is_named_and_nothing_is_left(repo: Path) -> None:
    folder = repo / "reports"
    folder.mkdir()
    try:
        assert refused(repo, "check", "--json", "reports") == \
            "--json reports: is a directory (give a file to write)"
        assert refused(repo, "run", "--out", str(folder)) == \
            f"--out {folder}: is a directory (give a file to write)"
        assert list(folder.iterdir()) == []  # no temp file beside it or in it
    finally:
        folder.rmdir()


def test_an_output_under_a_file_is_refused_before_any_work(repo: Path) -> None:
    # A file where the output's folder would be: refused up front, naming the flag (it once
    # failed after every suite had run, as an internal error).
    blocker = repo.parent / "a-file"
    blocker.write_text("not a folder\n")
    try:
        assert refused(repo, "run", "--out", f"{blocker}/r.json") == \
            f"--out {blocker}/r.json: {blocker} is a file, not a folder (give a path whose " \
            "folders are folders)"
        assert refused(repo, "check", "--json", f"{blocker}/deeper/v.json").startswith(
            f"--json {blocker}/deeper/v.json: {blocker} is a file")
        assert blocker.read_text() == "not a folder\n"
    finally:
        blocker.unlink()


def test_two_outputs_naming_one_file_are_refused(repo: Path) -> None:
    again = repo.parent / "v.json"  # the same file, spelt another way
    line = refused(repo, "check", "--json", "../v.json", "--report", str(again))
    assert line == (f"--json ../v.json and --report {again} name the same file: give each "
                    "output a file of its own")
    # The file asked for gets the error verdict (fail closed), never this run's numbers.
    assert "same file" in (repo.parent / "v.json").read_text()


@pytest.mark.parametrize(("args", "line"), [
    (("run", "--out", "membench.toml"),
     "--out membench.toml: is the config file, an input of the gate"),
    (("check", "--json", "baselines/main.json"),
     "--json baselines/main.json: is the baseline file ([gate] baseline of membench.toml), an "
     "input of the gate"),
    (("check", "--out", "fx/new.json"),
     "--out fx/new.json: is in the fixture folder 'fx' of [suites.abstention], an input of the "
     "gate"),
    (("check", "--results", "../results.json", "--report", "../results.json"),
     "--report ../results.json: is the --results file, an input of the gate"),
    (("check", "--results", "../results.json", "--out", "../results.json"),
     "--out ../results.json: is the --results file, an input of the gate"),
    (("merge", "../results.json", "--out", "baselines/main.json"),
     "--out baselines/main.json: is the baseline file"),
    (("selftest", "--json", "membench.toml"), "--json membench.toml: is the config file"),
    (("history", "--html", "baselines/main.json"), "--html baselines/main.json: is the baseline"),
])
def test_an_output_that_is_an_input_of_the_gate_is_refused(repo: Path, args: tuple[str, ...],
                                                           line: str) -> None:
    results = (repo.parent / "results.json").read_bytes()
    said = refused(repo, *args)
    assert said.startswith(line) and said.endswith(": write the output to another file"), said
    assert (repo.parent / "results.json").read_bytes() == results


def test_a_symlink_to_the_config_is_the_config(repo: Path) -> None:
    link = repo.parent / "gate.toml"
    link.symlink_to(repo / "membench.toml")
    try:
        assert refused(repo, "run", "--config", str(link), "--out", "membench.toml").startswith(
            "--out membench.toml: is the config file")
    finally:
        link.unlink()


def test_the_other_outputs_still_get_the_error_verdict(repo: Path) -> None:
    stale = repo.parent / "stale.json"
    stale.write_text('{"verdict": "pass", "exit_code": 0}\n')
    refused(repo, "check", "--json", str(stale), "--out", "membench.toml")
    verdict = json.loads(stale.read_text())
    assert verdict["verdict"] == "error" and "is the config file" in verdict["notes"][0]
