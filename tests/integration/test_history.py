"""``membench-gate history`` and the comment's history chart, on a real repository whose main
holds a dozen blessed baselines (written from a real run of the veto suite, one metric moved per
bless), a commit whose baseline is broken, and a commit that does not touch the baseline."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

from membench_gate.cli.main import main
from membench_gate.model.canonical import canonical_dumps
from membench_gate.model.results import dumps_baseline, parse_results
from tests.support.cli import run_cli
from tests.support.gitrepos import ISOLATED_ENV, LEAKY_VARS, clean_env, git, init

pytestmark = pytest.mark.slow

CONFIG = """\
[adapter]
python = "membench_gate.reference:ReferenceMemory"
[suites.veto]
fixtures = ["builtin"]
k = 5
[gate]
baseline = "baselines/main.json"
"""
BLESSES = 12
BROKEN_AFTER = 6  # the broken baseline is committed after this bless
HOSTILE = "<script>alert(1)</script> | @octocat see https://example.invalid"


class Upstream(NamedTuple):
    repo: Path
    results: Path
    blessed: list[str]  # the shas of the blessed baselines, oldest first
    broken: str  # the sha of the commit whose baseline is not one


def _commit(repo: Path, message: str, files: dict[str, str], day: int) -> str:
    """Commit ``files`` with its own commit date: a history's dates come from git."""
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    date = f"2024-03-{day:02d}T09:30:00+01:00"
    env = clean_env({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    for args in (["add", "-A"], ["commit", "-q", "-m", message]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return git(repo, "rev-parse", "HEAD")


def _recall(i: int) -> float:
    return round(0.6 + 0.01 * i, 4)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    root = tmp_path_factory.mktemp("history")
    repo = init(root / "memory")
    _commit(repo, "memory repo", {"README.md": "memory\n", "membench.toml": CONFIG}, 1)
    results = root / "results.json"
    done = run_cli("run", "--out", results, cwd=repo)
    assert done.returncode == 0, done.stderr
    real = json.loads(dumps_baseline(parse_results(results.read_bytes(), "r").to_baseline()))
    blessed, broken = [], ""
    for i in range(BLESSES):
        data = json.loads(json.dumps(real))
        data["cells"]["veto/files_known"]["metrics"]["veto_recall_at_k"] = _recall(i)
        if i % 3 == 1:
            data["justification"] = {"text": f"bless {i}: recall moves {HOSTILE}",
                                     "breaches": ["veto/files_known:veto_recall_at_k"]}
        blessed.append(_commit(repo, f"bless {i}",
                               {"baselines/main.json": canonical_dumps(data)}, 2 + i))
        if i == BROKEN_AFTER:
            broken = _commit(repo, "a broken baseline", {"baselines/main.json": '{"cells": '},
                             2 + i)
        if i == 8:
            _commit(repo, "code only", {"README.md": "memory, faster\n"}, 2 + i)
    return Upstream(repo, results, blessed, broken)


@pytest.fixture(autouse=True)
def isolate_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's shell: no CI variables, the tests' isolated git."""
    for name in [*LEAKY_VARS, "CI"]:
        monkeypatch.delenv(name, raising=False)
    for name in [n for n in __import__("os").environ if n.startswith("GITHUB_")]:
        monkeypatch.delenv(name)
    for name, value in ISOLATED_ENV.items():
        monkeypatch.setenv(name, value)


def history(capsys: pytest.CaptureFixture[str], repo: Path, *args: str | Path
            ) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["history", "--config", str(repo / "membench.toml"), *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def section(out: str, key: str) -> list[str]:
    """The rows of the table of metric ``key`` (``cell:metric``), header first."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if f"({key}," in line)
    rows = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        rows.append(line)
    return rows


def test_the_table_lists_every_blessed_baseline_with_its_commit_date_and_justification(
        upstream: Upstream, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = history(capsys, upstream.repo)
    assert code == 0, err
    assert out.startswith(f"baselines/main.json on main ({git(upstream.repo, 'rev-parse', 'HEAD')[:12]})"
                          f": {BLESSES} blessed baselines\n")
    rows = section(out, "veto/files_known:veto_recall_at_k")
    assert rows[0].split() == ["commit", "date", "value", "Δ", "justification"]
    assert len(rows) == 1 + BLESSES  # the broken one and the code-only commit are no rows
    for i, (row, sha) in enumerate(zip(rows[1:], upstream.blessed, strict=True)):
        fields = row.split()
        assert fields[:3] == [sha[:12], f"2024-03-{2 + i:02d}", f"{_recall(i):g}"], row
        if i:
            assert fields[3] == "+1", row  # one point up on the bless before
        if i % 3 == 1:
            assert f"bless {i}: recall moves <script>" in row and row.endswith("…"), row
    # Every gated metric of the cells, not only the one that moved; report-only ones are not.
    assert "veto/files_known veto recall@5 (veto/files_known:veto_recall_at_k, higher is " \
           "better)" in out
    assert "(veto/files_unknown:veto_recall_at_k, higher is better)" in out
    assert "(veto/lifecycle:stale_surfaced, lower is better)" in out
    assert ":mrr" not in out  # reported, never gated
    assert f"skipped {upstream.broken[:12]} (2024-03-{2 + BROKEN_AFTER:02d}): baselines/main.json " \
           f"at {upstream.broken[:12]}" in out


def test_metric_and_since_narrow_the_table(upstream: Upstream,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = history(capsys, upstream.repo, "--metric", "veto/files_known:veto_recall_at_k",
                           "--since", upstream.blessed[8])
    assert code == 0
    assert re.findall(r"^\S.*\((\S+), ", out, re.MULTILINE) == \
        ["veto/files_known:veto_recall_at_k"]
    assert [row.split()[0] for row in section(out, "veto/files_known:veto_recall_at_k")[1:]] == \
        [sha[:12] for sha in upstream.blessed[9:]]
    assert f"3 blessed baselines after {upstream.blessed[8]}" in out.splitlines()[0]
    assert "skipped" not in out  # the broken commit is before --since


def test_the_html_page_has_a_chart_per_metric_and_nothing_to_fetch(
        upstream: Upstream, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    for page in (first, second):
        code, out, _ = history(capsys, upstream.repo, "--metric",
                               "veto/files_known:veto_recall_at_k", "--metric",
                               "veto/files_unknown:veto_recall_at_k", "--html", page)
        assert code == 0 and f"wrote {page}" in out
    text = first.read_text(encoding="utf-8")
    assert first.read_bytes() == second.read_bytes()  # the same history, the same bytes
    assert text.count("<svg ") == 2 and text.count("<polyline ") == 2
    assert "<h2>veto/files_known veto recall@5</h2>" in text
    assert "<h2>veto/files_unknown veto recall@5</h2>" in text
    assert text.count("<circle ") == 2 * BLESSES
    assert "http" not in text.replace("https://example.invalid", "")  # only the user's own text
    assert "<script" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "@import" not in text and "url(" not in text and "<img" not in text
    assert "2024-03-03 09:30 +01:00" in text  # the commit date from git, in its own offset
    assert f"skipped {upstream.broken[:12]}" in text


def test_errors_are_one_line(upstream: Upstream, capsys: pytest.CaptureFixture[str],
                             tmp_path: Path) -> None:
    (tmp_path / "membench.toml").write_text(CONFIG, encoding="utf-8")
    code, out, err = history(capsys, tmp_path)
    assert (code, out) == (4, "")
    assert err.strip() == f"membench-gate: error: {tmp_path} is not inside a git repository"

    fresh = init(tmp_path / "fresh")
    _commit(fresh, "gate", {"membench.toml": CONFIG}, 1)
    code, _, err = history(capsys, fresh)
    assert code == 4 and len(err.splitlines()) == 1
    assert "baselines/main.json was never committed on main (" in err

    code, _, err = history(capsys, upstream.repo, "--metric", "veto/files_known:nope")
    assert code == 4 and "no blessed baseline has metric nope in cell veto/files_known" in err
    code, _, err = history(capsys, upstream.repo, "--since", "no-such-rev")
    assert code == 4 and "--since 'no-such-rev' does not name a commit" in err


def test_the_scoreboard_charts_the_moved_metric_over_the_last_blessed_baselines(
        upstream: Upstream, tmp_path: Path) -> None:
    git(upstream.repo, "checkout", "-q", "-b", "pr")
    try:
        _commit(upstream.repo, "a pull request", {"src.txt": "change\n"}, 28)
        report = tmp_path / "report.md"
        done = run_cli("check", "--results", upstream.results, "--report", report,
                       cwd=upstream.repo)
        assert done.returncode in (0, 1), done.stderr
        text = report.read_text(encoding="utf-8")
    finally:
        git(upstream.repo, "checkout", "-q", "main")
    block = text[text.index("<details><summary>History:"):]
    block = block[:block.index("</details>")]
    # The last 10 versions of the file on main, read with git: nine baselines (the broken
    # one is left out), then this run.
    shown = [sha[:7] for sha in upstream.blessed[BLESSES - 9:]]
    assert "over the last 9 blessed baselines of the base branch" in block
    assert 'title "veto/files_known veto recall@5"' in block
    assert "x-axis [" + ", ".join(f'"{s}"' for s in [*shown, "this PR"]) + "]" in block
    run = parse_results(upstream.results.read_bytes(), "r").cells["veto/files_known"] \
        .metrics["veto_recall_at_k"]
    assert "line [" + ", ".join([f"{_recall(i):g}" for i in range(3, BLESSES)]
                                + [f"{round(run, 4):g}"]) + "]" in block
    assert block.count("```mermaid") == 1  # only what this run moves: recall of files_known


def test_no_history_block_on_a_first_baseline(upstream: Upstream, tmp_path: Path) -> None:
    repo = init(tmp_path / "bootstrap")
    _commit(repo, "gate", {"membench.toml": CONFIG}, 1)
    report = tmp_path / "report.md"
    done = run_cli("check", "--results", upstream.results, "--report", report, cwd=repo)
    assert done.returncode == 2, done.stderr  # BLESS REQUIRED: no baseline committed yet
    text = report.read_text(encoding="utf-8")
    assert "introduces one" in text and "History:" not in text and "```mermaid" not in text
