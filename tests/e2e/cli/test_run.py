"""``membench-gate run`` and ``explain`` through real subprocesses: determinism, bad input, usage."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from membench_gate.model.metrics import REGISTRY
from tests.support.cli import assert_error_verdict, run_cli, without_progress
from tests.support.configs import write_config, write_json
from tests.support.paths import REPO


def without_receipt(text: str) -> str:
    """The results text with the top-level ``receipt`` object cut out, byte for byte otherwise."""
    lines = text.splitlines(keepends=True)
    start = lines.index('  "receipt": {\n')
    end = next(i for i in range(start, len(lines)) if lines[i] in ("  },\n", "  }\n"))
    return "".join(lines[:start] + lines[end + 1:])


def abstention_fixtures(folder: Path, second_probe: dict[str, Any] | None = None) -> Path:
    """Three facts and three probes (answered, answered, unanswerable); ``second_probe`` stands
    in for the second, to plant a fault between two good items."""
    write_json(folder / "facts.json", [
        {"id": "f1", "text": "The billing service stores money as integer cents."},
        {"id": "f2", "text": "Staging deploys run every weekday at 14:00 UTC."},
        {"id": "f3", "text": "The on-call rotation hands over on Mondays at 10:00."},
    ])
    write_json(folder / "probes.json", [
        {"id": "p1", "question": "How does billing store money?", "gold_fact_id": "f1"},
        second_probe or {"id": "p2", "question": "When do staging deploys run?",
                         "gold_fact_id": "f2"},
        {"id": "p3", "question": "Which CDN serves the docs site?", "gold_fact_id": None},
    ])
    return folder


def push_conversation(folder: Path, *turns: tuple[str, str, str, list[str]]) -> Path:
    """A push fixture: one conversation about Ana Lima's page, with ``(id, text, expect, gold)``
    turns."""
    return write_json(folder / "conversations" / "c1.json", {
        "id": "c1", "source": "work",
        "pages": [{"slug": "ana-lima", "text": "Ana Lima runs the billing team.",
                   "aliases": ["Ana"], "source": "work"}],
        "turns": [{"id": ident, "text": text, "expect": expect, "gold": gold, "acceptable": []}
                  for ident, text, expect, gold in turns],
    })


ABSTENTION_FX = '[suites.abstention]\nfixtures = ["fx"]\nk = 3\n'


def assert_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Exit 4, one clear message naming every needle, no traceback."""
    assert proc.returncode == 4, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert "error" in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)


# -- determinism ---------------------------------------------------------------------------------


def test_two_runs_and_another_cwd_are_byte_identical_apart_from_receipt(tmp_path: Path) -> None:
    outs = [tmp_path / "a.json", tmp_path / "b.json", tmp_path / "elsewhere" / "c.json"]
    for out in outs[:2]:
        proc = run_cli("run", "--out", out)
        assert proc.returncode == 0, proc.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run_cli("run", "--config", REPO / "membench.toml", "--out", outs[2], cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr

    texts = [out.read_text(encoding="utf-8") for out in outs]
    stripped = [without_receipt(text) for text in texts]
    assert stripped[0] == stripped[1] == stripped[2]
    assert len(stripped[0]) < len(texts[0])  # the receipt really was there and was cut
    receipt = json.loads(texts[0])["receipt"]
    assert set(receipt) >= {"tool_version", "git_sha", "started_at", "duration", "adapter", "shard"}
    assert receipt["shard"] is None  # every key written, null when it does not apply
    assert "receipt" not in json.loads(stripped[0])


def test_run_summary_on_stdout_and_progress_on_stderr(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli("run", "--out", out)
    assert proc.returncode == 0
    # Not a terminal (a CI log): one line per suite, with the suite's true number of calls (and
    # periodic lines in between when the machine is slow).
    ends = without_progress(proc.stderr)
    assert ends == [line for line in ends
                    if re.fullmatch(r"(abstention|push|recall|veto|writeback): (\d+)/\2 adapter calls "
                                    r"done in \d+\.\ds", line)]
    assert [line.split(":")[0] for line in ends] == [
        "abstention", "push", "recall", "veto", "writeback"]
    assert "abstention: 470/470" in proc.stderr  # 235 probes, each asked twice (the control)
    for cell in ("veto/files_known", "abstention/default", "push/know_to_ask", "push/push",
                 "writeback/fidelity"):
        assert cell in proc.stdout
    assert str(out) in proc.stdout


def test_run_without_out_writes_no_file(tmp_path: Path) -> None:
    # As the README and the help say: no default file, the summary only (--out FILE writes one).
    config = write_config(tmp_path, ABSTENTION_FX)
    abstention_fixtures(tmp_path / "fx")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    proc = run_cli("run", "--config", config, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "abstention/default" in proc.stdout and "results written to" not in proc.stdout
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_suite_filter_and_include_holdout(tmp_path: Path) -> None:
    plain, holdout = tmp_path / "plain.json", tmp_path / "holdout.json"
    assert run_cli("run", "--suite", "veto", "--out", plain).returncode == 0
    assert run_cli("run", "--suite", "veto", "--include-holdout", "--out", holdout).returncode == 0
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (plain, holdout))
    assert set(a["cells"]) == {"veto/files_known", "veto/files_unknown", "veto/lifecycle"}
    assert a["config"]["include_holdout"] is False
    assert b["config"]["include_holdout"] is True
    assert a["fixtures_hash"] != b["fixtures_hash"]
    scenarios = json.loads((REPO / "fixtures/veto/scenarios.json").read_text())["scenarios"]
    for condition in ("files_known", "files_unknown", "lifecycle"):
        # Lifecycle (stale-*) scenarios are scored in veto/lifecycle only.
        stale = condition == "lifecycle"
        ids = {s["id"] for s in scenarios if s["trap"].startswith("stale-") == stale}
        held = {s["id"] for s in scenarios if s.get("holdout")} & ids
        assert held
        cell = f"veto/{condition}"
        assert a["cells"][cell]["gold_total"] == len(ids) - len(held)
        assert b["cells"][cell]["gold_total"] == len(ids)
        assert not held & set(a["items"][cell])
        assert held <= set(b["items"][cell])


def test_unknown_suite_filter_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert_error(run_cli("run", "--suite", "vetoo", "--out", out), "vetoo")
    assert_error_verdict(out)


# -- bad input -----------------------------------------------------------------------------------


def test_malformed_fixture_json_names_file_line_and_column(tmp_path: Path) -> None:
    fx = abstention_fixtures(tmp_path / "fx")
    (fx / "facts.json").write_text(
        '[\n  {"id": "f1", "text": "ok"},\n  {"id": "f2" "text": "missing comma"}\n]\n',
        encoding="utf-8")
    config = write_config(tmp_path, ABSTENTION_FX)
    out = tmp_path / "r.json"
    proc = run_cli("run", "--config", config, "--out", out, cwd=tmp_path)
    assert_error(proc, "fx/facts.json:3:15")
    assert_error_verdict(out)


@pytest.mark.parametrize("suite", ["veto", "abstention", "push"])
def test_gold_id_that_does_not_exist(tmp_path: Path, suite: str) -> None:
    fx = tmp_path / "fx"
    if suite == "abstention":
        abstention_fixtures(fx, {"id": "p2", "question": "Who owns the CDN?",
                                 "gold_fact_id": "fact-999"})
        missing, file = "fact-999", "fx/probes.json"
    elif suite == "veto":
        write_json(fx / "decisions.json", [{
            "id": "dec-1", "decision": "Store money as integer cents.", "rationale": "Exact sums.",
            "rejected": [{"option": "Floats", "reason": "They drift."}], "files": ["money.py"],
            "created_at": "2024-01-01", "reviewed_at": None, "relevance": 0.5,
        }])
        write_json(fx / "scenarios.json", {"as_of": "2024-06-01", "scenarios": [{
            "id": "scn-1", "task": "Use floats for amounts.", "files": ["money.py"],
            "veto_decision_id": "dec-404", "trap": "direct", "rejected_option": "Floats",
        }]})
        missing, file = "dec-404", "fx/scenarios.json"
    else:
        push_conversation(fx, ("t1", "Ask Ana about invoices.", "retrieve", ["nobody-here"]))
        missing, file = "nobody-here", "fx/conversations/c1.json"
    config = write_config(tmp_path, f'[suites.{suite}]\nfixtures = ["fx"]\n')
    out = tmp_path / "r.json"
    proc = run_cli("run", "--config", config, "--out", out, cwd=tmp_path)
    assert_error(proc, missing, file)
    assert_error_verdict(out)


def test_adapter_module_that_does_not_exist(tmp_path: Path) -> None:
    abstention_fixtures(tmp_path / "fx")
    config = write_config(tmp_path, ABSTENTION_FX, adapter="no_such_memory_pkg:Memory")
    out = tmp_path / "r.json"
    assert_error(run_cli("run", "--config", config, "--out", out), "no_such_memory_pkg")
    assert_error_verdict(out)


def test_adapter_module_that_raises_on_import(tmp_path: Path) -> None:
    abstention_fixtures(tmp_path / "fx")
    (tmp_path / "crashing_adapter.py").write_text(
        'raise RuntimeError("needs the vector-store extension")\n', encoding="utf-8")
    config = write_config(tmp_path, ABSTENTION_FX, adapter="crashing_adapter:Memory")
    out = tmp_path / "r.json"
    out.write_text("previous results\n", encoding="utf-8")
    proc = run_cli("run", "--config", config, "--out", out)
    assert_error(proc, "crashing_adapter", "needs the vector-store extension")
    assert_error_verdict(out)  # never stale: an earlier run's file is not left to be gated


def test_adapter_factory_that_raises(tmp_path: Path) -> None:
    abstention_fixtures(tmp_path / "fx")
    config = write_config(tmp_path, ABSTENTION_FX, adapter="adapters_for_tests:broken_factory")
    out = tmp_path / "r.json"
    proc = run_cli("run", "--config", config, "--out", out)
    assert_error(proc, "broken_factory", "missing API key for the vector store")
    assert_error_verdict(out)


def _exploding_push_fixture(folder: Path) -> None:
    push_conversation(folder, ("t1", "Ask Ana about invoices.", "retrieve", ["ana-lima"]),
                      ("t2", "KABOOM: what about the refunds?", "silent", []))


@pytest.mark.parametrize("suite", ["abstention", "push"])
def test_adapter_that_raises_mid_suite(tmp_path: Path, suite: str) -> None:
    fx = tmp_path / "fx"
    if suite == "abstention":
        abstention_fixtures(fx, {"id": "p-boom", "question": "KABOOM when do deploys run?",
                                 "gold_fact_id": "f2"})
        needles = ("abstention", "p-boom", "index shard 3 is corrupt (KABOOM)")
    else:
        _exploding_push_fixture(fx)
        needles = ("push", "c1.t2", "entity index unavailable (KABOOM)")
    config = write_config(tmp_path, f'[suites.{suite}]\nfixtures = ["fx"]\n',
                          adapter="adapters_for_tests:Exploding")
    out = tmp_path / "r.json"
    proc = run_cli("run", "--config", config, "--out", out, cwd=tmp_path)
    assert_error(proc, *needles)
    assert_error_verdict(out)
    assert proc.stdout == ""


def test_adapter_that_returns_the_wrong_shape(tmp_path: Path) -> None:
    abstention_fixtures(tmp_path / "fx")
    config = write_config(tmp_path, ABSTENTION_FX, adapter="adapters_for_tests:WrongShape")
    out = tmp_path / "r.json"
    proc = run_cli("run", "--config", config, "--out", out)
    assert_error(proc, "search()", "abstention", "p1", "Answer")
    assert_error_verdict(out)


def test_duplicate_ids_across_merged_folders(tmp_path: Path) -> None:
    abstention_fixtures(tmp_path / "fx")
    abstention_fixtures(tmp_path / "more")
    config = write_config(tmp_path, '[suites.abstention]\nfixtures = ["fx", "more"]\n')
    out = tmp_path / "r.json"
    proc = run_cli("run", "--config", config, "--out", out)
    assert_error(proc, "duplicate", "'f1'", "more/facts.json")
    assert_error_verdict(out)


def test_merged_folders_are_scored_together(tmp_path: Path) -> None:
    abstention_fixtures(tmp_path / "fx")
    write_json(tmp_path / "more" / "facts.json",
               [{"id": "f9", "text": "Docs are served by the Fastly CDN."}])
    write_json(tmp_path / "more" / "probes.json",
               [{"id": "p9", "question": "Which CDN serves the docs?", "gold_fact_id": "f9"},
                {"id": "p10", "question": "Who is on call?", "gold_fact_id": "f3"}])
    config = write_config(tmp_path, '[suites.abstention]\nfixtures = ["fx", "more"]\n')
    out = tmp_path / "r.json"
    proc = run_cli("run", "--config", config, "--out", out)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["cells"]["abstention/default"]["gold_total"] == 5
    assert set(results["items"]["abstention/default"]) == {"p1", "p2", "p3", "p9", "p10"}


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    _exploding_push_fixture(tmp_path / "fx")
    config = write_config(tmp_path, '[suites.push]\nfixtures = ["fx"]\n',
                          adapter="adapters_for_tests:Exploding")
    out = tmp_path / "r.json"
    proc = run_cli("run", "--config", config, "--out", out, "--debug")
    assert proc.returncode == 4
    assert "Traceback" in proc.stderr
    assert "entity index unavailable" in proc.stderr
    assert_error_verdict(out)


def test_missing_config_file(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert_error(run_cli("run", "--config", tmp_path / "nope.toml", "--out", out), "nope.toml")
    assert_error_verdict(out)


@pytest.mark.parametrize(("toml", "bad", "suggestion"), [
    ('[suites.veto]\nfixture = ["builtin"]\n', "fixture", "fixtures"),
    ('[suites.veto]\n[gate]\ninclude_holdouts = true\n', "include_holdouts", "include_holdout"),
    ('[suite.veto]\n', "suite", "suites"),
])
def test_unknown_config_key_suggests(tmp_path: Path, toml: str, bad: str, suggestion: str) -> None:
    config = write_config(tmp_path, toml)
    out = tmp_path / "r.json"
    proc = run_cli("run", "--config", config, "--out", out)
    assert_error(proc, repr(bad), f"did you mean {suggestion!r}")
    assert_error_verdict(out)


# -- usage ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["run", "--nope"], [], ["frobnicate"], ["run", "--suite"]])
def test_bad_usage_exits_4(argv: list[str]) -> None:
    proc = run_cli(*argv)
    assert proc.returncode == 4, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip()


def test_explain_one_metric() -> None:
    proc = run_cli("explain", "net_at_5")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("net_at_5 (abstention")
    assert "NET(λ) = (correct − λ·wrong) / n" in proc.stdout
    assert len(proc.stdout.strip().splitlines()) == 1


def test_explain_everything() -> None:
    proc = run_cli("explain")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == len(REGISTRY)
    assert {line.split(" ", 1)[0] for line in lines} == set(REGISTRY)


def test_explain_unknown_metric() -> None:
    proc = run_cli("explain", "nope")
    assert_error(proc, "nope")
    assert proc.stdout == ""


def test_an_error_line_cannot_start_a_workflow_command(tmp_path: Path) -> None:
    # What the user passed (a path here, an id or an adapter's words elsewhere) is shown with
    # its control characters escaped: one line, whatever it holds.
    done = run_cli("run", "--config", "nope\n::error title=x::PASS\x1b[31m.toml", cwd=tmp_path)
    assert done.returncode == 4
    assert done.stderr.splitlines() == [
        "membench-gate: error: nope\\x0a::error title=x::PASS\\x1b[31m.toml: config file not "
        "found (pass --config)"]


@pytest.mark.parametrize("columns", ["44", "100", None])
def test_help_is_laid_out_as_argparse_lays_it_out(columns: str | None) -> None:
    # The gate tells argparse the terminal's width (sparing it the import of shutil): the help
    # of every command is what argparse's own formatters give at that width.
    import argparse
    import shutil

    from membench_gate.cli import parser as cli

    env = {} if columns is None else {"COLUMNS": columns}
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("COLUMNS", raising=False)
        for key, value in env.items():
            patch.setenv(key, value)
        expected = shutil.get_terminal_size().columns - 2
        assert cli._Formatter("x")._width == expected
        for only in (None, *cli.COMMANDS):
            ours = cli.build_parser(only)
            theirs = cli.build_parser(only)
            for parser in (theirs, *_subparsers(theirs)):
                parser.formatter_class = {
                    cli._RawFormatter: argparse.RawDescriptionHelpFormatter,
                    cli._Formatter: argparse.HelpFormatter}[parser.formatter_class]
            for mine, plain in zip((ours, *_subparsers(ours)), (theirs, *_subparsers(theirs)),
                                   strict=True):
                assert mine.format_help() == plain.format_help()


def _subparsers(parser: Any) -> list[Any]:
    import argparse

    return [sub for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for sub in action.choices.values()]
