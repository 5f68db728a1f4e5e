"""Untrusted text cannot act. On a terminal or in a CI log, its control, format and bidirectional
characters show as escapes on every console surface (``show``, ``run``/``check`` lines, error
lines, the adapter's stderr tail, ``doctor``, annotations). In the comment, no link, mention,
reference or emoji is made of it, while it reads the same; the templates' own text is untouched.

The Markdown is read with cmark-gfm, the parser GitHub renders comments with, and its GFM
extensions (``table``, ``autolink``, ``strikethrough``, ``tagfilter``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from membench_gate.ci.actions_env import annotation
from membench_gate.gate.rules import decide
from membench_gate.model.results import Baseline, Cell, Justification, Results
from membench_gate.model.selftest import SelftestReport
from membench_gate.model.verdict import Verdict
from membench_gate.report import render as report
from membench_gate.report.render import render
from membench_gate.report.selftest import render_table
from membench_gate.report.summary import verdict_summary
from tests.support.cli import cli_env

# The module's fixture runs the CLI on a crafted repository.
pytestmark = pytest.mark.slow

# What a hostile artifact or adapter puts in text a terminal shows: clear the screen, set the
# window title, write the clipboard (OSC 52), a C1 control sequence introducer, text reversed.
TERMINAL = "\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x9b31m\u202eevil"
SHOWN = r"\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x9b31m\u202eevil"
# A character that acts instead of showing, other than the line break between output lines.
ACTS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069"
                  "\ufeff]")


def gate(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """The real CLI in a subprocess, its output captured as the bytes a terminal would get."""
    return subprocess.run([sys.executable, "-m", "membench_gate", *args], cwd=cwd, env=cli_env(),
                          capture_output=True, timeout=300, check=False)


def text_of(output: bytes) -> str:
    text = output.decode("utf-8")  # strictly: a lone surrogate or a stray byte fails here
    assert not ACTS.search(text), ACTS.findall(text)
    return text


def regression(ids: list[str], justification: str) -> tuple[Verdict, Results, Baseline]:
    """veto/files_known loses recall: ``ids`` fail newly, the justification says ``justification``."""
    def results(recall: float, failed: list[str]) -> Results:
        return Results(schema_version=1, fixtures_hash="a" * 64, config={}, digests={},
                       cells={"veto/files_known": Cell(metrics={"veto_recall_at_k": recall},
                                                       gold_total=20, failed=failed)},
                       receipt={"tool_version": "0", "git_sha": "b" * 40, "started_at": "x",
                                "duration": 1, "adapter": "x"}, items={})

    base = results(0.9, ["scn-1"]).to_baseline()
    head = results(0.7, ["scn-1", *ids])
    committed = head.to_baseline(Justification(text=justification, breaches=["x"]))
    return decide(base, committed, head), head, base


# ------------------------------------------------------------------ the terminal and the log

def hostile_fixtures(folder: Path) -> Path:
    """A two-fact abstention suite whose ids and question carry terminal escapes (and a line
    break that would start a workflow command), next to its config."""
    (folder / "fx").mkdir(parents=True)
    facts = [{"id": f"f1{TERMINAL}", "text": "The billing API listens on port 8443."},
             {"id": "f2", "text": "Deploys are frozen on Fridays after 3pm."}]
    probes = [{"id": f"p1{TERMINAL}", "gold_fact_id": f"f1{TERMINAL}",
               "question": f"Which port does the billing API listen on?{TERMINAL}\n::error::x"},
              {"id": "p2", "question": "When are deploys frozen?", "gold_fact_id": "f2"}]
    (folder / "fx/facts.json").write_text(json.dumps(facts), encoding="utf-8")
    (folder / "fx/probes.json").write_text(json.dumps(probes), encoding="utf-8")
    (folder / "membench.toml").write_text(
        '[adapter.options]\ntau = 0.3\n[suites.abstention]\nfixtures = ["fx"]\nk = 1\n',
        encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results file of a real run on those fixtures, alone in a folder (a CI artifact)."""
    source = hostile_fixtures(tmp_path_factory.mktemp("source"))
    done = gate("run", "--out", "results.json", cwd=source)
    assert done.returncode == 0, done.stderr
    text_of(done.stdout)  # the run's own summary names no id
    folder = tmp_path_factory.mktemp("artifact")
    shutil.copy(source / "results.json", folder / "results.json")
    return folder


def test_show_prints_what_an_artifact_carries_as_escapes(artifact: Path) -> None:
    done = gate("show", f"abstention/default#p1{TERMINAL}", "--results", "results.json",
                cwd=artifact)
    assert done.returncode == 0, done.stderr
    page = text_of(done.stdout).splitlines()
    assert page[0] == f"abstention/default#p1{SHOWN}  (k = 1)"
    # The question's line break is shown, not taken: no line of the page starts a command.
    assert page[1] == f"asked:      Which port does the billing API listen on?{SHOWN}\\x0a::error::x"
    assert f"gold:       f1{SHOWN}" in page
    assert page[page.index("came back:") + 1].startswith(f"   1. f1{SHOWN}  ")
    assert page[-1].startswith(f"head:       PASS — gold f1{SHOWN}: rank 1")
    assert not any(line.startswith("::") for line in page)


def test_show_prints_an_honest_item_as_it_is(artifact: Path) -> None:
    # The control: nothing to escape, nothing changed.
    done = gate("show", "abstention/default#p2", "--results", "results.json", cwd=artifact)
    assert done.returncode == 0, done.stderr
    page = text_of(done.stdout).splitlines()
    assert page[:3] == ["abstention/default#p2  (k = 1)", "asked:      When are deploys frozen?",
                        "gold:       f2"]
    assert "\\x" not in done.stdout.decode() and "\\u" not in done.stdout.decode()


# A memory speaking the protocol by hand that fails its first search: on stderr, and in the
# message of its JSON-RPC error, it writes terminal escapes.
FAILING = r'''
import json, sys

TERMINAL = sys.argv[1]
ids = []
for line in sys.stdin:
    req = json.loads(line)
    method, rid = req["method"], req["id"]
    result = None
    if method == "initialize":
        result = {"protocol": 1, "name": "hostile", "capabilities": {"push": False, "write": False}}
    elif method == "reset":
        ids = []
    elif method == "ingest":
        ids += [r["id"] for r in req["params"]["records"]]
    elif method == "search":
        print("index shard 3: " + TERMINAL, file=sys.stderr, flush=True)
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {
            "code": -32000, "message": "corrupt " + TERMINAL}}) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
    sys.stdout.flush()
    if method == "shutdown":
        break
'''


def failing_adapter(folder: Path) -> Path:
    hostile_fixtures(folder)
    (folder / "failing.py").write_text(FAILING, encoding="utf-8")
    command = json.dumps([sys.executable, "failing.py", TERMINAL])
    config = (folder / "membench.toml").read_text(encoding="utf-8")
    (folder / "membench.toml").write_text(f"[adapter]\ncommand = {command}\n{config}",
                                          encoding="utf-8")
    return folder


def test_an_error_line_its_verdict_and_the_adapter_stderr_show_escapes(tmp_path: Path) -> None:
    folder = failing_adapter(tmp_path)
    done = gate("run", "--out", "r.json", cwd=folder)
    assert done.returncode == 4
    lines = [line for line in text_of(done.stderr).splitlines() if "adapter calls" not in line]
    # The one line names the item by its id and quotes the adapter's message, both escaped.
    assert lines[0].startswith("membench-gate: error: adapter search() failed"), lines
    assert f"item p1{SHOWN} in abstention/default: " in lines[0]
    assert lines[0].endswith(f"corrupt {SHOWN}")
    # The stderr tail without its terminal sequences (CSI, OSC); what else acts shown escaped; the
    # sequences themselves, escaped, with --debug.
    assert lines[1:] == ["  adapter stderr (last lines):", "  | index shard 3: \\u202eevil"]
    debug = gate("run", "--debug", cwd=folder)
    assert text_of(debug.stderr).splitlines()[-1] == f"  | index shard 3: {SHOWN}"
    # The error verdict written over --out says the same line: a script printing its notes
    # (jq -r '.notes[]') shows escapes too.
    [note] = json.loads((folder / "r.json").read_text(encoding="utf-8"))["notes"]
    assert not ACTS.search(note) and f"corrupt {SHOWN}" in note


def test_doctor_shows_an_adapters_message_and_stderr_as_escapes(tmp_path: Path) -> None:
    done = gate("doctor", cwd=failing_adapter(tmp_path))
    assert done.returncode == 1
    table = text_of(done.stdout)
    assert "FAIL" in table and f"corrupt {SHOWN}" in table
    assert "(last stderr line: index shard 3: \\u202eevil)" in table  # its sequences taken out


def test_the_selftest_table_shows_a_mutants_error_as_escapes() -> None:
    table = render_table(SelftestReport(
        mutants={"drop_gold": {"description": "drops the gold", "breached": [],
                              "error": f"adapter search() failed: {TERMINAL}"}},
        metrics={"veto/files_known:veto_recall_at_k": []},
        kinds={"veto/files_known:veto_recall_at_k": "gated"}, blind=[], at_worst=[],
        unmutated_breaches=[], covered=0, total=1))
    assert not ACTS.search(table) and f"ERROR: adapter search() failed: {SHOWN}" in table


def test_the_check_summary_names_newly_failing_ids_as_escapes() -> None:
    verdict, head, base = regression([f"scn-2{TERMINAL}"], "")
    summary = verdict_summary(verdict, head, base)
    assert not ACTS.search(summary.replace("\n", " "))
    assert f"    veto/files_known#scn-2{SHOWN}: no detail recorded" in summary.splitlines()


def test_annotations_keep_their_encoding_and_show_controls_as_escapes() -> None:
    line = annotation("error", f"veto/files_known#scn-1{TERMINAL}\n::warning::x%",
                      f"membench-gate {TERMINAL}")
    assert not ACTS.search(line)
    # The runner's own encoding of line breaks and percent signs stays what the runner decodes.
    assert line == (f"::error title=membench-gate {SHOWN}::"
                    f"veto/files_known#scn-1{SHOWN}%0A::warning::x%25")


# ------------------------------------------------------------------ the comment

# What GitHub turns into a link, a notification or an emoji when it renders a comment.
LINKS = ["https://evil.example/x", "www.evil.example", "a@b.example", "HTTPS://EVIL.example/y",
         "ftp://evil.example", "xmpp:c@d.example/r", "mailto:e@f.example"]
SHORTCODES = [":rocket:", ":white_check_mark:", ":+1:"]
EXTENSIONS = ["table", "autolink", "strikethrough", "tagfilter"]
ZWSP = "\u200b"


class Rendered(HTMLParser):
    """The links cmark-gfm made, the text a reader sees, and the part of it outside code (where
    GitHub looks for emoji shortcodes: in code they stay text)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.text: list[str] = []
        self.prose: list[str] = []
        self._in_code = 0
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.append(dict(attrs).get("href") or "")
        self._in_code += tag in ("code", "pre")

    def handle_endtag(self, tag: str) -> None:
        self._in_code -= tag in ("code", "pre")

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if not self._in_code:
            self.prose.append(data)

    @property
    def seen(self) -> str:
        """What a person reads: the zero-width spaces are not seen."""
        return "".join(self.text).replace(ZWSP, "")


def rendered(markdown: str) -> Rendered:
    # GitHub renders raw HTML (then sanitises it): let it through, so what escaping missed shows.
    return Rendered(cmarkgfm.markdown_to_html_with_extensions(
        markdown, options=Options.CMARK_OPT_UNSAFE, extensions=EXTENSIONS))


def assert_no_link_or_shortcode(page: Rendered, *texts: str) -> None:
    assert page.links == []
    raw = "".join(page.prose)
    for code in SHORTCODES:
        assert code not in raw, code  # the shortcode text is not there for GitHub to replace
    for text in texts:
        assert text in page.seen, text  # ...while it reads as written


def test_the_checker_sees_links_and_shortcodes_in_plain_markdown() -> None:
    # The control for the tests below: unescaped, the same strings do become links.
    page = rendered(" ".join([*LINKS, *SHORTCODES]))
    assert len(page.links) == len(LINKS)
    assert all(code in "".join(page.prose) for code in SHORTCODES)


def test_ids_and_the_justification_make_no_link_mention_or_emoji() -> None:
    attacks = [*LINKS, *SHORTCODES, "@org/team", "#12", "GH-12"]
    verdict, head, base = regression(attacks, "Recall on veto/files_known drops; see "
                                     + " and ".join(attacks))
    markdown = render(verdict, head, base)
    page = rendered(markdown)
    assert_no_link_or_shortcode(page, *attacks)
    prose = "".join(page.prose)
    assert "@org/team" not in prose and "#12" not in prose and "GH-12" not in prose
    # The gate's own words are not touched: a metric label keeps its "@".
    assert "**veto recall@k −20 pts · 13 items newly failing**" in markdown
    assert "recall@" + ZWSP not in markdown


def test_an_adapters_message_in_the_error_report_makes_no_link_or_emoji() -> None:
    message = ("adapter search() failed in suite veto, item scn-1 in veto/files_known: index at "
               "https://evil.example/x down, ask a@b.example or see www.evil.example :rocket:")
    markdown = render(Verdict(verdict="error", exit_code=4, mode=None, notes=[message]),
                      None, None)
    assert_no_link_or_shortcode(rendered(markdown), message)


def test_inside_html_and_code_the_text_stays_inert_too() -> None:
    text = "https://evil.example/x a@b.example www.evil.example :rocket: \x1b[2J"
    summary = str(report.escape_html(text))
    assert_no_link_or_shortcode(rendered(f"<details><summary>{summary}</summary>\n\nx\n\n"
                                         "</details>\n"), "https://evil.example/x")
    assert "\x1b" not in summary and "\x1b" not in str(report.code_line(text))


def test_the_templates_own_links_and_shortcodes_still_render() -> None:
    # Escaping is the finalize hook's, per value: the template's text around a value is trusted.
    template = report._environment().from_string(
        "Docs: https://docs.example/gate :rocket: | {{ value }}\n")
    page = rendered(template.render(value="https://evil.example/x :rocket:"))
    assert page.links == ["https://docs.example/gate"]
    assert "".join(page.prose).count(":rocket:") == 1
    assert "https://evil.example/x :rocket:" in page.seen
