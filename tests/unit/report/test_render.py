"""The scoreboard Markdown, rendered with GitHub's own parser (cmark-gfm): structure, escaping of
hostile input, size limits."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from hypothesis import given, settings
from hypothesis import strategies as st

from membench_gate.ci.actions_env import annotation, format_outputs
from membench_gate.gate.rules import decide
from membench_gate.model.results import Baseline, Cell, Justification, Results
from membench_gate.report import render as report
from membench_gate.report.render import COMMENT_LIMIT, escape_md, render
from tests.support.paths import REPO

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "@org/team",
    "#1",
    "| broken | table",
    "``` run of backticks ```",
    "<!-- membench-gate:v1 key=default -->",
    "::error::pwned",
    "<details><summary>x</summary>",
    "$\\color{red}{\\text{PASS}}$ $$x$$",
]


def to_html(markdown: str) -> str:
    # GitHub renders raw HTML (then sanitises it): emulate the permissive part, so any tag that
    # survives escaping shows up here.
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


class Tables(HTMLParser):
    """Collects every table as rows of cell texts, plus the tags seen."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.tags: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse(html: str) -> Tables:
    parser = Tables()
    parser.feed(html)
    return parser


def results(cells: dict[str, Cell], hash_: str = "h" * 64) -> Results:
    return Results(schema_version=1, fixtures_hash=hash_, config={}, cells=cells,
                   digests={}, receipt={"tool_version": "0", "git_sha": "a" * 40,
                                        "started_at": "x", "duration": 1, "adapter": "x"},
                   items={})


BASE_CELLS = {
    "veto/files_known": Cell(metrics={"veto_recall_at_k": 0.9, "mrr": 0.5}, gold_total=20,
                             failed=["scn-1"]),
    "abstention/default": Cell(metrics={"net_at_1": 0.4, "net_at_2": 0.3, "net_at_5": 0.0,
                                        "controls_passing": 0, "coverage": 0.6},
                               gold_total=10, failed=[]),
}


def hostile_case(failed: list[str]) -> tuple[str, str]:
    head_cells = dict(BASE_CELLS)
    head_cells["veto/files_known"] = Cell(metrics={"veto_recall_at_k": 0.8, "mrr": 0.5},
                                          gold_total=20, failed=["scn-1", *failed])
    head_cells["abstention/default"] = Cell(metrics={**BASE_CELLS["abstention/default"].metrics,
                                                     "net_at_1": 0.35}, gold_total=10, failed=[])
    head = results(head_cells)
    base = Baseline(schema_version=1, fixtures_hash="h" * 64, config={}, cells=BASE_CELLS)
    committed = head.to_baseline(Justification(text=" ".join(HOSTILE), breaches=["x"]))
    verdict = decide(base, committed, head)
    markdown = render(verdict, head, base)
    return markdown, to_html(markdown)


def test_tables_keep_their_columns_and_details_render() -> None:
    markdown, html = hostile_case([*HOSTILE, *[f"scn-{i:03d}" for i in range(10, 30)]])
    parsed = parse(html)
    assert len(parsed.tables) >= 3  # breaches, and one per cell with a breach
    for table in parsed.tables:
        widths = {len(row) for row in table}
        assert len(widths) == 1, table  # every row has as many cells as the header
    assert "details" in parsed.tags and "summary" in parsed.tags
    assert markdown.count("<details>") == markdown.count("</details>")
    assert "xychart-beta" in markdown


def test_hostile_input_comes_out_inert() -> None:
    markdown, html = hostile_case(HOSTILE)
    parsed = parse(html)
    assert "img" not in parsed.tags
    assert "onerror" not in html.split("&lt;img")[0]  # never inside a real tag
    assert "@org/team" not in html and "@\u200borg/team" in html
    assert "#1" not in html.replace("#\u200b1", "")
    assert "membench-gate:v1" not in markdown
    assert "<code>`" not in html and "&#96;&#96;&#96;" in markdown
    # The justification is quoted, escaped, in one paragraph.
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


@pytest.mark.parametrize("text", HOSTILE)
def test_escape_md_makes_each_hostile_string_plain_text(text: str) -> None:
    html = to_html(f"| a | b |\n|---|---|\n| {escape_md(text)} | end |\n")
    table = parse(html).tables[0]
    assert [len(row) for row in table] == [2, 2]
    assert table[1][1] == "end"
    assert set(parse(html).tags) <= {"table", "thead", "tbody", "tr", "th", "td"}
    # A dollar sign is escaped, so GitHub's math (``$…$``, ``$$…$$``) never starts from it.
    assert not re.search(r"(?<!\\)\$", escape_md(text))


def test_annotation_and_outputs_cannot_inject_workflow_commands() -> None:
    line = annotation("error", "id::error::x\n::warning::injected%", "title: a, b")
    assert "\n" not in line and line.startswith("::error title=title%3A a%2C b::")
    assert line.endswith("%0A::warning::injected%25")
    text = format_outputs({"verdict": "pass\nMEMBENCH_GATE_EOF\nevil=1"})
    first, *rest = text.splitlines()
    delimiter = first.split("<<", 1)[1]
    assert rest[-1] == delimiter and delimiter not in "pass\nMEMBENCH_GATE_EOF\nevil=1"


def test_comment_stays_under_the_limit_with_100000_newly_failed_items() -> None:
    failed = [f"probe-{i:06d}" for i in range(100_000)]
    head_cells = dict(BASE_CELLS)
    head_cells["veto/files_known"] = Cell(metrics={"veto_recall_at_k": 0.0, "mrr": 0.0},
                                          gold_total=100_020, failed=failed)
    head = results(head_cells)
    base = Baseline(schema_version=1, fixtures_hash="h" * 64, config={}, cells=BASE_CELLS)
    verdict = decide(base, base, head)
    assert len(render(verdict, head, base, limit=10**9)) > COMMENT_LIMIT  # the full report is big…
    comment = render(verdict, head, base, limit=COMMENT_LIMIT)
    assert len(comment) <= COMMENT_LIMIT  # …the comment is cut by whole sections
    assert "full report" in comment
    assert comment.count("<details>") == comment.count("</details>")
    for table in parse(to_html(comment)).tables:
        assert len({len(row) for row in table}) == 1


def test_template_is_the_shipped_one() -> None:
    from membench_gate.files import data_dir

    assert (data_dir() / "templates" / "scoreboard.md.j2").is_file()
    assert REPO.joinpath("templates/scoreboard.md.j2").is_file()


def test_shipped_json_schemas_are_up_to_date_and_validate_real_files(tmp_path: Path) -> None:
    import json

    import jsonschema

    from membench_gate.model.schemas import MODELS, SCHEMA_DIR, schema_text

    for name, model in MODELS.items():
        assert (SCHEMA_DIR / f"{name}.schema.json").read_text() == schema_text(model), name
    root = REPO
    baseline = json.loads((root / "baselines/main.json").read_text())
    jsonschema.validate(baseline, json.loads((SCHEMA_DIR / "baseline.schema.json").read_text()))
    broken = {**baseline, "cells": {"x/y": {"metrics": {}, "gold_total": -1, "failed": []}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, json.loads((SCHEMA_DIR / "baseline.schema.json").read_text()))


def _many_cells(cells: int, per_cell: int, notes: int = 0, id_text: str = "item") -> tuple:
    base_cells = {f"s{c:04d}/cond": Cell(metrics={"veto_recall_at_k": 1.0}, gold_total=per_cell,
                                         failed=[]) for c in range(cells)}
    head_cells = {name: Cell(metrics={"veto_recall_at_k": 0.0}, gold_total=per_cell,
                             failed=[f"{id_text}-{c}-{i}" for i in range(per_cell)])
                  for c, name in enumerate(base_cells)}
    base = Baseline(schema_version=1, fixtures_hash="a" * 64, config={}, cells=base_cells)
    head = results(head_cells, hash_="a" * 64)
    verdict = decide(base, base, head)
    verdict.notes += [f"note {i}: something worth saying about this run" for i in range(notes)]
    return verdict, head, base


@pytest.mark.slow
def test_cutting_keeps_whole_sections_and_the_commands() -> None:
    verdict, head, base = _many_cells(1000, 3, notes=3000)
    comment = render(verdict, head, base, limit=COMMENT_LIMIT)
    assert len(comment.encode()) <= COMMENT_LIMIT
    assert "### Commands" in comment and "membench-gate bless" in comment
    assert "more cells in the full report" in comment and "#### s0000/cond" in comment
    assert comment.count("<details>") == comment.count("</details>")
    assert comment.count("```") % 2 == 0
    for table in parse(to_html(comment)).tables:
        assert len({len(row) for row in table}) == 1
    full = render(verdict, head, base, limit=None)  # the report file is never cut
    assert "item-999-2" in full and len(full.encode()) > COMMENT_LIMIT


def test_limits_are_utf8_bytes() -> None:
    verdict, head, base = _many_cells(20, 3000, id_text="項目の識別子")
    summary = render(verdict, head, base, limit=200_000)
    assert len(summary.encode("utf-8")) <= 200_000
    assert len(render(verdict, head, base, limit=None).encode("utf-8")) > 200_000


def test_odd_metric_names_and_missing_cells_render(tmp_path: Path) -> None:
    cells = {"abstention/default": Cell(metrics={"net_at_x": 1.0, "net_at_1": 0.2},
                                        gold_total=3, failed=[])}
    base = Baseline(schema_version=1, fixtures_hash="b" * 64, config={},
                    cells={**cells, "veto/files_known": Cell(metrics={}, gold_total=1, failed=[])})
    head = results(cells, hash_="b" * 64)
    verdict = decide(base, base, head, inconclusive=["results from another config"])
    markdown = render(verdict, head, base)
    assert "#### veto/files\\_known — not measured in this run" in markdown
    assert "None" not in markdown and "| net at x | 1 | 1 | 0 | report |" in markdown
    assert "xychart" not in markdown  # one λ (net_at_x is not one): the table says it all


def test_an_error_report_names_the_reason_and_claims_no_cut() -> None:
    from membench_gate.model.verdict import Verdict

    verdict = Verdict(verdict="error", exit_code=4, mode=None,
                      notes=["membench.toml: unknown key 'suits' (did you mean 'suites'?)"])
    markdown = render(verdict, None, None)
    assert markdown.startswith("## membench-gate: ⛔ ERROR")
    assert "unknown key" in markdown and "left out to fit" not in markdown


def test_ids_at_the_start_of_a_folded_line_stay_plain_text() -> None:
    ids = [f"ok-{i}" for i in range(5)] + ["# heading", "1. one", "+ plus", "- dash"]
    verdict, head, base = _many_cells(1, 0)
    verdict.newly_failed = {"s0000/cond": ids}
    tags = parse(to_html(render(verdict, head, base))).tags
    assert not {"h1", "ol"} & set(tags)


# Ids that escaping shrinks (whitespace folded, markers stripped) or grows (mentions, pipes).
# Repeated, so what escaping does to them can outweigh the rest of the scoreboard.
odd_ids = st.builds(lambda parts, times: "".join(parts) * times,
                    st.lists(st.sampled_from(["<!--", "-->", " \t\t ", "membench-gate:v1", "a",
                                              "<!--", " \t\t ", "@b", "|", "ü"]),
                             min_size=1, max_size=12), st.integers(1, 12))


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.lists(odd_ids, min_size=10, max_size=80, unique=True),
       st.lists(odd_ids, max_size=30, unique=True))
def test_a_level_left_unrendered_is_one_that_could_not_fit(newly: list[str],
                                                           fixed: list[str]) -> None:
    # render() skips a level whose ids alone exceed the limit: at every limit that matters, the
    # result must be the first level that fits, as rendering every level in turn finds it.
    base = Baseline(schema_version=1, fixtures_hash="a" * 64, config={}, cells={
        "veto/files_known": Cell(metrics={"veto_recall_at_k": 0.5}, gold_total=200,
                                 failed=fixed)})
    head = results({"veto/files_known": Cell(metrics={"veto_recall_at_k": 0.5}, gold_total=200,
                                             failed=newly)}, hash_="a" * 64)
    verdict = decide(base, base, head)
    template = report._environment().get_template("scoreboard.md.j2")
    sizes = {level: len(template.render(**report.context(verdict, head, base, level=level))
                        .encode()) for level in report._LEVELS}
    for limit in sorted({n + d for n in sizes.values() for d in (-1, 0)}):
        fitting = [level for level in report._LEVELS if sizes[level] <= limit]
        if fitting:
            expected = template.render(**report.context(verdict, head, base, level=fitting[0]))
            assert render(verdict, head, base, limit=limit) == expected, (limit, fitting[0])


@pytest.mark.parametrize("text", [
    "<!<!---- membench-membench-gate:v1gate:v1 key=x -->",
    "<!-<!---- membench-gate:v1 -->->",
    "membench-membench-membench-gate:v2gate:v2gate:v2",
])
def test_a_marker_rebuilt_by_stripping_is_stripped_too(text: str) -> None:
    # Removing one piece must not join the pieces around it into a new one.
    for out in (escape_md(text), str(report.escape_html(text)), str(report.code_line(text))):
        assert "<!--" not in out and "-->" not in out, out
        assert not re.search(r"membench-gate:v\d", out, re.IGNORECASE), out


def test_control_and_bidi_characters_show_as_escapes() -> None:
    text = "id-\u202eevil\u2066-\x1b[31m-\x00"
    for out in (escape_md(text), str(report.escape_html(text)), str(report.code_line(text))):
        assert not re.search("[\x00-\x1f\u202a-\u202e\u2066-\u2069]", out), out
        assert "u202e" in out and "x1b" in out, out


def test_the_example_item_of_a_pass_is_one_the_run_fails_and_never_a_controls() -> None:
    # Nothing newly failing: the example `show` is an item this run fails, of a measured cell —
    # not the first item of the first cell in name order, a control's that fails as designed.
    cells = {"abstention/control_floor_off": Cell(metrics={"net_at_1": 0.0}, gold_total=2,
                                                  failed=["c-1", "c-2"]),
             "veto/files_known": Cell(metrics={"veto_recall_at_k": 0.5}, gold_total=2,
                                      failed=["scn-2"])}
    head = results(cells)
    head.items = {"abstention/control_floor_off": {"c-1": {}, "c-2": {}},
                  "veto/files_known": {"scn-1": {}, "scn-2": {}}}
    same = head.to_baseline()
    markdown = render(decide(same, same, head), head, same)
    assert "membench-gate show 'veto/files_known#scn-2'" in markdown
    assert "control_floor_off#" not in markdown
    head.cells["veto/files_known"] = Cell(metrics={"veto_recall_at_k": 1.0}, gold_total=2,
                                          failed=[])
    same = head.to_baseline()
    markdown = render(decide(same, same, head), head, same)
    assert "membench-gate show 'veto/files_known#scn-1'" in markdown


def test_long_ids_are_cut_as_shown_and_leave_the_rest_of_the_comment_whole() -> None:
    # Fixture ids have no length limit: forty of 6,000 characters once pushed every section after
    # the breach table out of a comment. Shown, each is cut; the results keep it whole.
    long_ids = [f"id{n:02d}-" + "x" * 6000 for n in range(40)]
    head_cells = dict(BASE_CELLS)
    head_cells["veto/files_known"] = Cell(metrics={"veto_recall_at_k": 0.8, "mrr": 0.5},
                                          gold_total=60, failed=["scn-1", "scn-7", *long_ids])
    head = results(head_cells)
    base = Baseline(schema_version=1, fixtures_hash="h" * 64, config={}, cells=BASE_CELLS)
    markdown = render(decide(base, base, head), head, base, limit=COMMENT_LIMIT)
    assert "### Commands" in markdown and "cut to fit" not in markdown
    assert "left out to fit" not in markdown
    assert "Newly failing items (41)" in markdown
    assert "id00-" + "x" * 54 + "…" + "x" * 40 in markdown and "x" * 100 not in markdown
    # The example `show` names an id it can print whole.
    assert "membench-gate show 'veto/files_known#scn-7'" in markdown


def test_an_id_ending_in_a_stripped_marker_stays_bold() -> None:
    # The marker's pieces are stripped and what is left between them stays, without the spaces
    # at its ends (which would undo the bold it is set in).
    text = escape_md("<!-- membench-gate:v1 key=default -->")
    assert text == "key=default"
    assert "<strong>key=default</strong>" in to_html(f"- **{text}** — why\n")


def test_a_cut_id_keeps_its_head_and_its_tail() -> None:
    from membench_gate.report.findings import ID_SHOWN, plain_key, shown_id

    one, two = ("conv/" + "a" * 95 + tail for tail in ("-q1", "-q2"))
    assert shown_id(one) != shown_id(two)
    assert len(shown_id(one)) == ID_SHOWN and shown_id(one).endswith("a-q1")
    assert shown_id("x" * ID_SHOWN) == "x" * ID_SHOWN
    assert not plain_key("veto/files_known", "scn-1\n") and plain_key("veto/files_known", "scn-1")
