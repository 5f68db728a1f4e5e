"""The top of the scoreboard and of the console (docs/gate.md, "Reading the scoreboard"): the
verdict, a headline ranked as the breach table, the next step, then the breaches with base → head
values — read as a reviewer reads them, on the rendered Markdown and the console text."""

from __future__ import annotations

import shlex

from membench_gate.gate.rules import decide, floors_of
from membench_gate.model.results import Baseline, Cell, Justification, Results
from membench_gate.model.verdict import BaseInfo, Breach
from membench_gate.report.render import render
from membench_gate.report.summary import verdict_summary
from tests.unit.report.test_render import parse, to_html

CONFIG = {"suites": {"abstention": {"k": 5, "lambdas": [1, 2, 5, 10]}, "recall": {"k": 10}}}
PROBES = [f"probe-{i:03d}" for i in range(40)]


def _probe_items(failed: list[str]) -> dict[str, dict]:
    return {p: {"outcome": "fail" if p in failed else "pass", "answerable": True,
                "abstained": False, "gold": ["fact-1"], "hits": [{"id": "fact-9", "score": 0.2}]}
            for p in PROBES}


def run(nets: tuple[float, float, float, float], failed: list[str],
        recall: tuple[float, list[str]] = (1.0, []), hash_: str = "f") -> Results:
    """A run of an abstention cell (NET at λ 1, 2, 5, 10) and a recall cell of two queries."""
    net = dict(zip(("net_at_1", "net_at_2", "net_at_5", "net_at_10"), nets, strict=True))
    queries = {q: {"outcome": "fail" if q in recall[1] else "pass", "answerable": True,
                   "matched": q not in recall[1]} for q in ("q-1", "q-2")}
    return Results(
        schema_version=1, fixtures_hash=hash_ * 64, config=CONFIG, digests={},
        receipt={"git_sha": "b" * 40},
        cells={"abstention/default": Cell(metrics={**net, "controls_passing": 0},
                                          gold_total=len(PROBES), failed=failed),
               "recall/default": Cell(metrics={"recall_any_at_k": recall[0]}, gold_total=2,
                                      failed=recall[1])},
        items={"abstention/default": _probe_items(failed), "recall/default": queries})


BASE_NETS = (0.30, 0.10, -0.50, -1.50)


def _base() -> Baseline:
    return run(BASE_NETS, ["probe-001"]).to_baseline()


def test_the_top_is_verdict_headline_next_step_then_breaches_with_values() -> None:
    base = _base()
    head = run((0.272, 0.072, -0.714, -2.024), ["probe-001", "probe-002"])
    verdict = decide(base, base, head)
    markdown = render(verdict, head, base)
    lines = markdown.splitlines()
    assert lines[0] == "## membench-gate: ❌ REGRESSION"
    # The headline says NET where the table ranks it: NET(10) −52.4 pts first, not NET(1).
    assert lines[2] == "**NET(10) −52.4 pts · 1 item newly failing (abstention/default#probe-002)**"
    assert lines[4].startswith("**Next step:** fix the regression, or accept it on purpose")
    next_block = markdown.split("```sh\n")[1].split("```")[0]
    [bless] = [shlex.split(line) for line in next_block.splitlines()]
    # No results file was saved: the bless runs the suites itself (no file to name).
    assert bless[:3] == ["membench-gate", "bless", "--justification"]
    table = parse(to_html(markdown)).tables[0]
    assert table[0] == ["", "breach", "base", "head", "Δ", "detail"]
    assert [row[1:5] for row in table[1:3]] == [
        ["NET(10) on abstention/default", "-1.5", "-2.024", "−52.4 pts"],
        ["NET(5) on abstention/default", "-0.5", "-0.714", "−21.4 pts"],
    ]
    # The commands come right after the breaches, before the item stories and the tables.
    order = [markdown.index(h) for h in ("**Next step:**", "### Breaches", "### Commands",
                                         "### Newly failing items", "### Scores")]
    assert order == sorted(order)


def test_the_console_says_verdict_headline_and_next_step_first() -> None:
    base = _base()
    head = run((0.272, 0.072, -0.714, -2.024), ["probe-001", "probe-002"])
    verdict = decide(base, base, head)
    lines = verdict_summary(verdict, head, base).splitlines()
    assert lines[0] == "membench-gate: REGRESSION (exit 1)"
    assert lines[1] == "  NET(10) −52.4 pts · 1 item newly failing (abstention/default#probe-002)"
    assert lines[2].startswith("  next step: fix the regression, or accept it on purpose")
    assert shlex.split(lines[3])[:3] == ["membench-gate", "bless", "--justification"]
    # Where the check saved its results (check --out), the bless reads them from there.
    lines = verdict_summary(verdict, head, base, results_path="out/r.json").splitlines()
    assert shlex.split(lines[3])[:4] == ["membench-gate", "bless", "--results", "out/r.json"]


def test_the_bless_of_a_comment_is_one_a_maintainer_can_run() -> None:
    # A PR comment (the action, the comment command) names no file on the runner: its bless runs
    # the suites on a checkout of the branch, and it says how to bless saved numbers instead.
    base = _base()
    head = run((0.272, 0.072, -0.714, -2.024), ["probe-001", "probe-002"])
    verdict = decide(base, base, head)
    markdown = render(verdict, head, base)
    [bless] = markdown.split("```sh\n")[1].split("```")[0].splitlines()
    assert "--results" not in bless
    note = markdown.split("```sh\n")[1].split("```\n")[1].strip().splitlines()[0]
    assert note.startswith("<sub>Run on a checkout of this branch: the bless runs the suites "
                           "again") and "`--results FILE`" in note
    saved = render(verdict, head, base, results_path="r.json")
    assert "<sub>`r.json`: the results this check measured and saved" in saved


def test_the_bless_compares_with_the_base_the_check_was_given() -> None:
    # check --base-ref REV: a bless against the auto-detected base would record other breaches.
    base = _base()
    head = run((0.272, 0.072, -0.714, -2.024), ["probe-001", "probe-002"])
    verdict = decide(base, base, head)
    verdict.base = BaseInfo(ref="HEAD~2", sha="c" * 40, how="explicit")
    line = verdict_summary(verdict, head, base).splitlines()[3]
    assert shlex.split(line)[:4] == ["membench-gate", "bless", "--base-ref", "c" * 40]
    verdict.base = BaseInfo(ref="origin/main", sha="c" * 40, how="remote-default-branch")
    assert "--base-ref" not in verdict_summary(verdict, head, base).splitlines()[3]


def test_a_floor_this_run_does_not_measure_is_said_so_with_what_resolves_it() -> None:
    # NET(3) is off the λ list: no code to fix, a measurement to restore or a floor to drop.
    base = _base()
    head = run(BASE_NETS, ["probe-001"])
    verdict = decide(base, base, head, floors=floors_of({"abstention/default:net_at_3": 0.1}, {}))
    assert verdict.verdict == "regression"
    [breach] = verdict.breaches
    assert breach.detail == ("floor >= 0.1 (base config), but this run does not measure net_at_3 "
                             "on abstention/default: abstention/default does not report net_at_3")
    lines = verdict_summary(verdict, head, base).splitlines()
    assert lines[1] == "  floor on NET(3) on abstention/default: not measured by this run"
    assert lines[2] == (
        "  next step: the floor on NET(3) on abstention/default names a metric this run does not "
        "measure (abstention/default does not report net_at_3): measure it again (a floor cannot "
        "be blessed or waived), or drop the floor — from [floors] here when only this config "
        "sets it; a floor of the base branch's config holds until a pull request that still "
        "measures it removes it there")
    row = next(r for r in parse(to_html(render(verdict, head, base))).tables[0]
               if r[1].startswith("NET(3)"))
    assert row[4] == "not measured (floor 0.1)"
    # A floor measured and broken is still code to fix.
    broken = decide(base, base, head, floors=floors_of({"abstention/default:net_at_1": 0.9}, {}))
    assert "next step: fix the code: NET(1) on abstention/default cannot be blessed" in \
        verdict_summary(broken, head, base)


def test_a_clear_improvement_that_swapped_one_item_names_the_gain_and_the_item() -> None:
    base = _base()
    head = run((0.507, 0.40, 0.10, -0.60), ["probe-007"])  # probe-001 fixed, probe-007 fails
    verdict = decide(base, base, head)
    assert verdict.verdict == "regression"  # the rules' verdict, unchanged
    markdown = render(verdict, head, base)
    headline = markdown.splitlines()[2]
    assert headline == ("**1 item newly failing (abstention/default#probe-007) · NET(10) on "
                        "abstention/default +90 pts (better)**")
    step = markdown.splitlines()[4]
    assert step == ("**Next step:** abstention/default#probe-007 newly fails: see why, then fix "
                    "it, or bless with a justification if it is intended")
    commands = [shlex.split(line) for line in
                markdown.split("```sh\n")[1].split("```")[0].splitlines()]
    assert [c[:3] for c in commands] == [["membench-gate", "show", "abstention/default#probe-007"],
                                         ["membench-gate", "bless", "--justification"]]


def test_the_bases_justification_is_not_this_pull_requests_failure() -> None:
    blessed = run(BASE_NETS, ["probe-001"]).to_baseline(Justification(
        text="Raising the abstention floor trades NET on abstention/default for fewer wrong "
             "answers, which the support review asked for",
        breaches=[f"abstention/default#probe-{i:03d}" for i in range(2, 50)]))
    head = run((0.272, 0.072, -0.714, -2.024), ["probe-001", "probe-002"])
    verdict = decide(blessed, blessed, head)
    assert verdict.justification_check.status == "failed"  # the rules judged the base's text
    markdown = render(verdict, head, blessed)
    section = markdown.split("### Justification")[1].split("###")[0]
    assert "No justification from this pull request yet: a bless writes one." in section
    assert "❌" not in section and "does not match" not in markdown
    console = verdict_summary(verdict, head, blessed)
    assert "does not match" not in console and "none from this change yet" in console
    # A pull request not asked to bless does not see the base's justification at all.
    same = run(BASE_NETS, ["probe-001"])
    quiet = decide(blessed, blessed, same)
    assert "### Justification" not in render(quiet, same, blessed)
    assert "justification" not in verdict_summary(quiet, same, blessed)


def test_after_allow_regression_the_bless_suggested_carries_a_justification() -> None:
    base = _base()
    head = run((0.272, 0.072, -0.714, -2.024), ["probe-002"])  # and probe-001 fixed
    verdict = decide(base, base, head, allow_regression="trying a lower floor")
    assert verdict.verdict == "pass"
    for text in (render(verdict, head, base), verdict_summary(verdict, head, base)):
        bless = next(shlex.split(line.strip()) for line in text.splitlines()
                     if line.strip().startswith("membench-gate bless"))
        assert "--justification" in bless and "--results" not in bless
    saved = verdict_summary(verdict, head, base, results_path="r.json")
    assert "membench-gate bless --results r.json --justification" in saved


def test_a_blessed_pass_needs_no_bless_and_inconclusive_compared_nothing() -> None:
    base = _base()
    head = run(BASE_NETS, ["probe-001"], hash_="e")  # the fixtures changed: corpus-bless
    verdict = decide(base, head.to_baseline(), head)
    assert (verdict.verdict, verdict.mode) == ("pass", "corpus-bless")
    console = verdict_summary(verdict, head, base)
    markdown = render(verdict, head, base)
    assert "a bless is needed" not in console and "need a bless" not in markdown
    assert "next step: nothing to do" in console
    assert "**Next step:** nothing to do" in markdown
    unsure = decide(base, base, run(BASE_NETS, ["probe-001"]), inconclusive=["other config"])
    assert unsure.verdict == "inconclusive"
    console = verdict_summary(unsure, head, base)
    assert "compared one to one" not in console
    assert "no verdict can rest on this comparison" in console.splitlines()[2]


def test_rates_over_few_items_show_their_counts() -> None:
    base = _base()
    head = run(BASE_NETS, ["probe-001"], recall=(0.5, ["q-2"]))
    verdict = decide(base, base, head)
    markdown = render(verdict, head, base)
    assert markdown.splitlines()[2].startswith("**recall any@10 −50 pts (2/2 → 1/2)")
    row = next(r for r in parse(to_html(markdown)).tables[0] if r[1].startswith("recall any"))
    assert row[2:5] == ["1 (2/2)", "0.5 (1/2)", "−50 pts"]
    # NET is no share of items; forty probes are not few.
    assert "/40)" not in markdown


def test_an_added_fixture_folder_is_called_what_it_is() -> None:
    base = _base()
    head = run(BASE_NETS, ["probe-001"])
    verdict = decide(base, base, head)
    verdict.breaches += [Breach(
        key="abstention:option:fixtures", kind="option", base='["builtin"]',
        head='["builtin", "team-probes"]', detail="suite option fixtures changed")]
    verdict.verdict, verdict.exit_code = "regression", 1
    markdown = render(verdict, head, base).replace("\u200b", "")
    assert markdown.splitlines()[2] == "**fixture folder team-probes added to abstention**"
    rows = [r[1] for r in parse(to_html(markdown)).tables[0][1:]]
    assert rows == ["fixture folder team-probes added to abstention"]


def test_the_show_of_a_check_that_scored_the_holdout_carries_the_flag() -> None:
    # The newly failing item may be held out: run as printed, `show` must score the holdout too
    # (docs/gate.md, "One item"), in the comment's next step and in the console's.
    base = _base()
    head = run((0.507, 0.40, 0.10, -0.60), ["probe-007"])
    holdout = head.model_copy(update={"config": {**CONFIG, "include_holdout": True}})
    for results, flagged in ((head, False), (holdout, True)):
        verdict = decide(base, base, results)
        markdown = render(verdict, results, base)
        shown = [shlex.split(line) for line in markdown.split("```sh\n")[1].split("```")[0]
                 .splitlines() if line.startswith("membench-gate show ")]
        console = [shlex.split(line.strip()) for line in
                   verdict_summary(verdict, results, base).splitlines()
                   if line.strip().startswith("membench-gate show ")]
        assert shown and console
        for command in shown + console:
            assert ("--include-holdout" in command) is flagged, command
