"""The scoreboard read top-down (docs/gate.md, "Reading the scoreboard"): headline in words,
breaches by severity with Δ, better/worse marks, controls on one line, each number once, why for
newly failed items, unbanked improvements, the chart — checked on the HTML GitHub's parser
(cmark-gfm) makes."""

from __future__ import annotations

import importlib.util
import re
import shlex

import pytest
from markupsafe import Markup

from membench_gate.gate.rules import decide
from membench_gate.model.results import Baseline, Cell, Results
from membench_gate.model.verdict import Breach
from membench_gate.report.render import _easing, _environment, render
from membench_gate.report.summary import verdict_summary
from tests.support.paths import REPO
from tests.unit.report.test_render import parse, to_html

CONFIG = {"suites": {"veto": {"k": 5}, "abstention": {"k": 5, "lambdas": [1, 2, 5]},
                     "push": {"budget": 3}}}


def results(cells: dict[str, Cell], items: dict | None = None) -> Results:
    return Results(schema_version=1, fixtures_hash="f" * 64, config=CONFIG, cells=cells,
                   digests={}, receipt={"git_sha": "b" * 40}, items=items or {})


def base_cells() -> dict[str, Cell]:
    return {
        "veto/files_known": Cell(metrics={"veto_recall_at_k": 0.9655, "mrr": 0.81},
                                 gold_total=29, failed=["scn-029"]),
        "abstention/default": Cell(metrics={"net_at_1": 0.3021, "net_at_2": 0.0723,
                                            "net_at_5": -0.617, "controls_passing": 0,
                                            "coverage": 0.7617}, gold_total=235, failed=[]),
        "abstention/control_floor_off": Cell(metrics={"net_at_1": -0.2}, gold_total=1,
                                             failed=[]),
        "push/default": Cell(metrics={"false_fire_rate": 0.1, "push_precision": 0.9,
                                      "source_isolation_violations": 0}, gold_total=77,
                             failed=[]),
    }


def regression(invariant: bool = True) -> tuple:
    base = Baseline(schema_version=1, fixtures_hash="f" * 64, config=CONFIG, cells=base_cells())
    head_cells = base_cells()
    failing = [f"scn-{i:03d}" for i in range(1, 8)]
    head_cells["veto/files_known"] = Cell(metrics={"veto_recall_at_k": 0.7241, "mrr": 0.61},
                                          gold_total=29, failed=["scn-029", *failing])
    head_cells["abstention/default"] = Cell(
        metrics={**base_cells()["abstention/default"].metrics, "net_at_1": 0.2713},
        gold_total=235, failed=[f"probe-{i:03d}" for i in range(18)])
    head_cells["push/default"] = Cell(metrics={"false_fire_rate": 0.05, "push_precision": 0.9,
                                               "source_isolation_violations": 2 if invariant
                                               else 0},
                                      gold_total=77, failed=[])
    items = {"veto/files_known": {i: {
        "outcome": "fail", "asked": f"Add a soft-delete flag for {i}", "gold": ["dec-002"],
        "rank": None, "abstained": False,
        "hits": [{"id": "dec-003", "score": 0.4172}, {"id": "dec-001", "score": 0.3848}]}
        for i in failing}}
    head = results(head_cells, items)
    verdict = decide(base, base, head, floors=[])
    return verdict, head, base


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


def test_headline_says_the_biggest_moves_in_words_and_breaches_rank_by_severity() -> None:
    verdict, head, base = regression()
    markdown = render(verdict, head, base)
    lines = markdown.splitlines()
    assert lines[0] == "## membench-gate: ❌ REGRESSION"
    assert lines[2] == ("**source-isolation violations 2 (must be 0) · veto recall@5 −24.1 pts · "
                        "NET(1) −3.1 pts · 25 items newly failing · false fire rate on "
                        "push/default −5 pts (better)**")
    breaches = parse(to_html(markdown)).tables[0]
    assert breaches[0] == ["", "breach", "base", "head", "Δ", "detail"]
    assert [row[1] for row in breaches[1:]] == [
        "source-isolation violations on push/default",  # invariant
        "veto recall@5 on veto/files_known",             # −24 pts before −3 pts
        "NET(1) on abstention/default",
        "18 items newly failing on abstention/default",   # items last, biggest first
        "7 items newly failing on veto/files_known",
    ]
    assert [row[2:5] for row in breaches[1:3]] == [["0", "2", "2 (must be 0)"],
                                                   ["0.9655", "0.7241", "−24.1 pts"]]
    # The heading counts breaches (one per newly failing item) and says how many rows hold them.
    assert len(verdict.breaches) == 28
    assert "### Breaches (28 in 5 rows), most severe first" in lines
    # Jargon is explained, and moved below the scores.
    assert "same-hash" not in markdown.split("### Commands")[0]
    assert "Same fixtures and suite options as the base" in markdown


def test_lower_is_better_metrics_read_right_and_values_are_the_breach_tables() -> None:
    verdict, head, base = regression()
    html = to_html(render(verdict, head, base))
    tables = parse(html).tables
    push = next(t for t in tables if ["false fire rate", "0.1", "0.05", "−5 pts 🟢 better",
                                      "✅ gated"] in t)
    assert push[0] == ["metric", "base", "head", "Δ", "gate"]
    veto = next(t for t in tables if any(r[0] == "veto recall@5" for r in t))
    assert ["veto recall@5", "0.9655", "0.7241", "−24.1 pts 🔴 worse", "❌ gated"] in veto
    text = text_of(html.split('<pre lang="mermaid">')[0])  # the chart draws the table's values
    # A breached metric's values: in its breach row (base → head) and its cell's table, no more
    # (no NET table); an unbreached one's once.
    for value, times in (("0.9655", 2), ("0.7241", 2), ("0.3021", 2), ("0.2713", 2),
                         ("0.81", 1)):
        assert text.count(value) == times, value


def test_controls_that_fail_as_designed_take_one_line() -> None:
    verdict, head, base = regression()
    markdown = render(verdict, head, base)
    assert "Controls fail as designed (abstention/control\\_floor\\_off)" in markdown
    assert "#### abstention/control" not in markdown


def test_newly_failed_items_say_why_and_the_rest_fold() -> None:
    verdict, head, base = regression()
    html = to_html(render(verdict, head, base))
    assert ("abstention/default#probe-000</strong> — no per-item detail in these results"
            in html)
    markdown = render(verdict, head, base)
    section = markdown.split("### Newly failing items (25)")[1].split("###")[0]
    assert section.split("<details>")[0].count("\n- **") == 5
    assert "<details><summary>20 more newly failing items</summary>" in section
    verdict.newly_failed = {"veto/files_known": verdict.newly_failed["veto/files_known"]}
    markdown = render(verdict, head, base)
    # The gold rank before → after: it passed at base, so its gold was in the base's top k.
    assert ("**veto/files\\_known#scn-001** — gold dec-002: in the top 5 at base → not in the "
            "top 5 now; came back "
            "instead: dec-003 (0.4172), dec-001 (0.3848)<br>asked: _Add a soft-delete flag for "
            "scn-001_") in markdown


def test_commands_work_as_printed() -> None:
    verdict, head, base = regression(invariant=False)
    markdown = render(verdict, head, base)
    blocks = [block.split("```")[0] for block in markdown.split("```sh\n")[1:3]]
    commands = [shlex.split(line) for block in reversed(blocks) for line in block.splitlines()
                if not line.startswith("#")]
    assert commands[0][:2] == ["membench-gate", "check"]
    assert commands[1][:3] == ["membench-gate", "show", "abstention/default#probe-000"]
    bless = next(c for c in commands if c[1] == "bless")
    assert "--results" not in bless  # none saved: the bless runs the suites itself
    saved = render(verdict, head, base, results_path="out/r.json")
    assert "membench-gate bless --results out/r.json --justification" in saved
    text = bless[bless.index("--justification") + 1]
    for key in ("veto/files_known:veto_recall_at_k", "abstention/default:net_at_1",
                "abstention/default"):
        assert key in text
    assert "more" not in text  # every breach is named: nothing to fill in but the reason


def test_console_orders_like_the_comment_and_suggests_runnable_commands() -> None:
    verdict, head, base = regression()
    out = verdict_summary(verdict, head, base)
    lines = out.splitlines()
    assert lines[0] == "membench-gate: REGRESSION (exit 1)"
    assert lines[1].strip().startswith("source-isolation violations 2 (must be 0) · veto recall@5")
    order = [lines.index(next(line for line in lines if needle in line)) for needle in (
        "source-isolation violations on push/default", "veto recall@5 on veto/files_known",
        "NET(1) on abstention/default", "18 items newly failing")]
    assert order == sorted(order)
    assert "abstention/default#probe-000: no detail recorded" in out
    verdict.newly_failed.pop("abstention/default")
    out = verdict_summary(verdict, head, base)
    assert "veto/files_known#scn-001: gold dec-002: in the top 5 at base → not in the top 5 " \
        "now; came back instead: " \
        "dec-003 (0.4172), dec-001 (0.3848)" in out
    for line in lines:
        if line.strip().startswith("membench-gate "):
            shlex.split(line)  # parses as a shell command
            assert "<why" not in line and "more" not in line


def test_unbanked_improvements_come_with_the_bless_command() -> None:
    base = Baseline(schema_version=1, fixtures_hash="f" * 64, config=CONFIG, cells=base_cells())
    better_cells = base_cells()
    better_cells["veto/files_known"] = Cell(metrics={"veto_recall_at_k": 1.0, "mrr": 0.9},
                                            gold_total=29, failed=[])
    head = results(better_cells)
    verdict = decide(base, base, head)
    assert verdict.verdict == "pass" and not verdict.banked
    markdown = render(verdict, head, base)
    assert "### Improvements not banked yet" in markdown
    assert "| veto recall@5 on veto/files\\_known | 0.9655 | 1 | 🟢 +3.5 pts |" in markdown
    assert "fixed on **veto/files\\_known** (1): scn-029" in markdown
    assert "```sh\nmembench-gate bless\n```" in markdown
    banked = decide(base, head.to_baseline(), head)
    assert banked.verdict == "pass" and banked.banked
    markdown = render(banked, head, base)
    assert "not banked" not in markdown and "membench-gate bless" not in markdown
    assert "<p>Banked: the committed baseline holds this run's numbers.</p>" in to_html(markdown)


def test_net_chart_has_colours_and_a_legend_only_when_it_adds_something() -> None:
    verdict, head, base = regression()
    markdown = render(verdict, head, base)
    chart = markdown.split("```mermaid\n")[1].split("```")[0]
    assert '"plotColorPalette": "#57606a, #0969da"' in chart
    assert chart.count("    line [") == 2 and '["1", "2", "5"]' in chart
    assert "Legend: ⬛ grey line = base · 🟦 blue line = head" in markdown
    unchanged = decide(base, base, results(base_cells()))
    assert "xychart" not in render(unchanged, results(base_cells()), base)
    bootstrap = decide(None, None, head)
    assert "xychart" not in render(bootstrap, head, None)  # no base line: the table says it


def test_new_breach_kinds_render_generically() -> None:
    verdict, head, base = regression()
    verdict.breaches += [
        Breach.model_construct(key="gate:baseline-moved", kind="baseline-moved", base="a.json",
                               head="b.json", detail="the baseline path moved"),
        Breach.model_construct(key="veto:option:k", kind="option", base=5, head=10,
                               detail="suite option k changed"),
        Breach.model_construct(key="veto/files_known#scn-040", kind="item-changed", base="fail",
                               head="pass", detail="changed and now passing"),
        Breach.model_construct(key="veto:corpus-removed", kind="corpus-removed", base=3,
                               head=None, detail="3 corpus items removed"),
    ]
    # As a reader sees it: ":option:" could be an emoji shortcode, so a zero-width space breaks it.
    markdown = render(verdict, head, base).replace("\u200b", "")
    rows = [r[1] for r in parse(to_html(markdown)).tables[0][1:]]
    assert rows.index("NET(1) on abstention/default") < rows.index("baseline file moved") \
        < rows.index("1 item changed (gated as removed and re-added) on veto/files_known")
    assert "veto option k changed: 5 → 10" in rows
    assert "corpus items of veto removed or changed" in rows
    assert "**easier than the base**" in markdown
    assert "veto:option:k" in markdown.split("### Fixture diff")[1]


def test_escaping_happens_in_one_place() -> None:
    env = _environment()
    template = env.from_string("{{ a }} | {{ b }} | {{ c | code }} | {{ d }}")
    out = template.render(a="<b>@org #12 `x` | y</b>", b=Markup("<br>"), c="a`b\n<!-- x -->",
                          d=0.123456)
    assert out == ("&lt;b&gt;@\u200borg #\u200b12 &#96;x&#96; \\| y&lt;/b&gt; | <br> | "
                   "a'b x | 0.1235")


@pytest.mark.slow
def test_the_preview_script_renders_the_dogfood_gate_weakened() -> None:
    """scripts/preview_scoreboard.py is run by hand: this keeps it working as the code moves."""
    spec = importlib.util.spec_from_file_location(
        "preview_scoreboard", REPO / "scripts" / "preview_scoreboard.py")
    assert spec is not None and spec.loader is not None
    preview = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(preview)
    markdown = preview.scenario("regression")
    assert markdown.startswith("## membench-gate: ❌ REGRESSION")
    assert "veto/files_known" in markdown and "Base: `3f9a1c2e7b4d` (main)" in markdown


def test_an_item_id_that_reads_like_an_option_is_not_an_easing() -> None:
    # Item ids come from fixtures and can hold anything; only a breach's kind says it eases.
    verdict = regression()[0]
    assert _easing(verdict) == ([], 0)
    verdict.breaches += [
        Breach.model_construct(key="veto/files_known#scn:option:k", kind="newly-failed",
                               base="pass", head="fail", detail="now failing"),
        Breach.model_construct(key="veto:option:k", kind="option", base=5, head=10,
                               detail="suite option k changed"),
    ]
    assert _easing(verdict) == (["veto:option:k"], 1)
