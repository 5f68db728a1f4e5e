"""The Markdown scoreboard: verdict + results → ``templates/scoreboard.md.j2``.

One template serves the PR comment, the job summary and ``--report``. Logic code prepares plain,
unescaped data (:mod:`membench_gate.report.findings` says what it means); the template says it. Escaping
happens in one place: the Jinja ``finalize`` hook escapes every value a template prints unless it is
marked trusted (:class:`markupsafe.Markup`, made only by the ``code`` and ``html`` filters, which
escape for their own context). So an id, a justification or an adapter message can never become
Markdown, HTML, a mention or our comment marker, whichever template line prints it.

When the Markdown would exceed the size limit of where it goes (in UTF-8 bytes), whole sections
are dropped — long item lists first, then report-only metrics, then per-cell tables — with a note
saying where the full report is. The report file itself is never cut.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from membench_gate.errors import visible
from membench_gate.files import data_dir
from membench_gate.model import cells as cell_names
from membench_gate.model import metrics
from membench_gate.model.canonical import round4
from membench_gate.model.history import HistoryVersion
from membench_gate.model.results import Baseline, Results
from membench_gate.model.verdict import Breach, Breaches, ItemBreaches, StochasticCell, Verdict
from membench_gate.report import findings
from membench_gate.report import history as blessed_history
from membench_gate.report.findings import shown_id
from membench_gate.report.summary import metric_text

COMMENT_LIMIT = 60_000
SUMMARY_LIMIT = 1024 * 1024
INLINE_IDS = 5  # newly failed items explained in the open; the rest fold into <details>
_ZWSP = "\u200b"
# Any piece of a comment marker, in text we did not write (ids, justifications, adapter output).
_MARKER = re.compile(r"<!--|-->|membench-gate:v\d+", re.IGNORECASE)
# A whole marker, in a body we post (which may hold arrows of its own, e.g. a chart's "-->").
WHOLE_MARKERS = re.compile(r"<!--\s*membench-gate:v1\b.*?-->", re.DOTALL)
# (``$``: GitHub renders ``$…$`` and ``$$…$$`` as math, which could restyle or spoof the text.)
_MD_ESCAPES = {"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "*": "\\*", "_": "\\_",
               "~": "\\~", "$": "\\$", "&": "&amp;", "<": "&lt;", ">": "&gt;", "`": "&#96;"}
_MD_CHARS = re.compile("[" + re.escape("".join(_MD_ESCAPES)) + "]")
_HTML_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "`": "&#96;"}
_HTML_CHARS = re.compile("[" + re.escape("".join(_HTML_ESCAPES)) + "]")
# Where GitHub makes something of plain text: a mention ("@name", "@org/team"; an "@" right after
# a letter or digit is not one: "recall@5"), a reference ("#123", "GH-123", "owner/repo@<sha>"),
# a link ("scheme://…", "www.…", an address "user@host.example") or an emoji (":rocket:"). Each
# pattern ends where a zero-width space breaks what GitHub looks for. It goes in as a character,
# not an entity: GitHub finds mentions, references, addresses and emoji in the rendered text.
_TRIGGERS = re.compile(r"""
    (?<![A-Za-z0-9])@(?=[A-Za-z0-9_-])   # @mention
  | @(?=[\w.-]*\.\w|[0-9A-Fa-f]{7})      # user@host.example, owner/repo@0123abc
  | \#(?=\d) | (?i:gh)-(?=\d)             # #123, GH-123
  | :(?=//) | (?i:www)(?=\.)              # https://…, www.…
  | :(?=[\w+-]+:)                        # :shortcode:
""", re.VERBOSE)
_LEVELS = ("full", "capped-lists", "no-item-lists", "gated-only", "summary", "minimal")
_CAPPED_IDS = 1000  # ids per list at the "capped-lists" level
_SUMMARY_ROWS = 20  # cells, breaches and notes kept at the "summary" level
_BREACH_ROWS = 50  # breach rows in the open; the rest fold
_HEX = re.compile(r"^[0-9a-f]{1,64}$")
_ASKED_CHARS = 240
# Mermaid xychart-beta draws lines in palette order: base first, head second.
BASE_COLOUR, HEAD_COLOUR = "#57606a", "#0969da"

_TITLES = {"pass": "✅ PASS", "regression": "❌ REGRESSION", "bless-required": "⚠️ BLESS REQUIRED",
           "inconclusive": "❔ INCONCLUSIVE", "error": "⛔ ERROR"}
_MODE_WORDS = {
    "same-hash": "Same fixtures and suite options as the base, so every gold item is compared one "
                 "to one.",
    "corpus-bless": "The fixtures or suite options changed since the base: the new numbers need a "
                    "bless, and items whose content is unchanged are still compared one to one.",
    "bootstrap": "There is no baseline at the base commit: this pull request introduces one.",
}
_STOCHASTIC_WORDS = " Stochastic cells are the exception: their pooled counts are compared instead."
# Same fixtures, and every cell stochastic (a live suite alone): no item is compared one to one.
_ALL_STOCHASTIC_WORDS = ("Same fixtures and suite options as the base. Every cell is stochastic: "
                         "each is compared by its pooled counts, not item by item.")
# A corpus-bless that passed was blessed already: nothing more is needed.
_BLESSED_CORPUS = ("The fixtures or suite options changed since the base, and the committed "
                   "baseline holds the new numbers; items whose content is unchanged were "
                   "compared one to one.")


def strip_markers(text: str, pattern: re.Pattern[str] = _MARKER) -> str:
    """``text`` without any piece of a comment marker (or, with :data:`WHOLE_MARKERS`, any whole
    one), removed until none is left: taking one out of ``<!<!---- …`` must not leave a new one
    behind."""
    while True:
        stripped = pattern.sub("", text)
        if stripped == text:
            return text
        text = stripped


def _inert(text: str) -> str:
    """Strip our comment marker, show control and format characters as their escapes, and
    defuse mentions, references, autolinks and emoji shortcodes: the text reads as it was
    written, and GitHub makes nothing of it."""
    # (stripped of a marker, a text may begin or end with a space, which would undo the bold or
    # code it is set in: "**a **" is not bold)
    text = visible(strip_markers(text)).strip()
    # Before Markdown escaping: ":white_check_mark:" must be broken before "_" becomes "\_".
    return _TRIGGERS.sub(lambda m: m.group(0) + _ZWSP, text)


def escape_md(value: Any) -> str:
    """Make untrusted text inert in GitHub Markdown: HTML, table pipes, code spans, mentions,
    issue references and our own comment marker cannot take effect."""
    text = _inert(" ".join(str(value).split()))
    return _MD_CHARS.sub(lambda m: _MD_ESCAPES[m.group(0)], text)


def escape_html(value: Any) -> Markup:
    """Untrusted text inside an HTML element (``<summary>``), where Markdown is not parsed."""
    text = _inert(" ".join(str(value).split()))
    return Markup(_HTML_CHARS.sub(lambda m: _HTML_ESCAPES[m.group(0)], text))


def code_line(value: Any) -> Markup:
    """A line inside a fenced code block: no backticks and no line breaks (nothing can close the
    fence), no marker. Mentions do not work in code blocks, so the line stays pasteable."""
    text = visible(" ".join(strip_markers(str(value)).replace("`", "'").split()))
    return Markup(text)


def _finalize(value: Any) -> Any:
    """Every ``{{ … }}`` of the templates passes here: trusted markup as it is, numbers
    formatted, anything else escaped."""
    if isinstance(value, Markup):
        return str(value)
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return metric_text(value)
    return escape_md(value)


def _hex(value: str | None) -> str | None:
    """A sha or hash shown to people: hex only (a foreign file may hold anything), first 12."""
    return value[:12] if value and _HEX.match(value) else None


@dataclass(frozen=True)
class Row:
    metric: str
    base: Any
    head: Any
    delta: str
    mark: str
    gate: str


def _gate_text(cell: str, name: str, base: Any, head: Any, breached: set[str],
               blessed: bool, stochastic: bool = False) -> str:
    kind = metrics.gate_kind(cell, name)
    if kind == "report":
        return "report"
    if stochastic and kind == "gated":  # the cell's counts are gated, not its metrics one by one
        if cell in breached:
            return "✅ stochastic, blessed" if blessed else "❌ stochastic"
        return "✅ stochastic"
    words = "must be 0" if kind == "zero" else "gated"
    bad = f"{cell}:{name}" in breached or (
        kind == "gated" and findings.judgement(name, base, head) == "worse")
    if bad:
        return f"✅ {words}, blessed" if blessed and kind == "gated" else f"❌ {words}"
    return f"✅ {words}"


def _mark(cell: str, name: str, base: Any, head: Any) -> str:
    word = findings.judgement(name, base, head)
    if not word:
        return ""
    if metrics.gate_kind(cell, name) == "report":
        return word
    return "🟢 better" if word == "better" else "🔴 worse"


def _is_control(cell: str) -> bool:
    return cell_names.parse(cell).condition.startswith("control")


def _prefixes(key: str) -> Iterator[str]:
    """``key`` and each of its beginnings that ends before a ``:`` or ``#``: the cells a
    breach key can belong to."""
    yield key
    for at, char in enumerate(key):
        if char in ":#":
            yield key[:at]


def _cells(verdict: Verdict, results: Results, base: Baseline | None,
           gated_only: bool) -> list[dict[str, Any]]:
    entries = Breaches.of(verdict.breaches).entries
    breached = {e.key for e in entries if isinstance(e, Breach)}
    # A cell is hit when a breach key is the cell or starts with ``cell:`` or ``cell#``.
    hit_cells = {prefix for key in breached for prefix in _prefixes(key)}
    hit_cells |= {prefix for e in entries if isinstance(e, ItemBreaches)
                  for prefix in _prefixes(e.cell)}
    source = results if results.cells else base
    same_items = verdict.mode == "same-hash"
    tested = {t.cell: t for t in verdict.stochastic}
    out = []
    for cell in sorted(set(results.cells) | set(base.cells if base else ())):
        now = results.cells.get(cell)
        before = base.cells.get(cell) if base else None
        names = sorted(set(now.metrics if now else ()) | set(before.metrics if before else ()),
                       key=lambda m, c=cell: findings.metric_order(c, m))
        rows = []
        for name in names:
            if gated_only and metrics.gate_kind(cell, name) == "report":
                continue
            b = before.metrics.get(name) if before else None
            h = now.metrics.get(name) if now else None
            # A rate over few items shows its count; the base's items are the head's only
            # when the fixtures are the same. A stochastic cell's rate is over its passes, not
            # its items (its heading gives the pooled counts): no item count is claimed for it.
            counted = cell not in tested and not (now is not None and now.repeats)
            b_share = findings.share(name, cell, b, results) if same_items and counted else ""
            h_share = findings.share(name, cell, h, results) if counted else ""
            rows.append(Row(findings.metric_label(name, cell, source),
                            f"{metric_text(b)} ({b_share})" if b_share else b,
                            f"{metric_text(h)} ({h_share})" if h_share else h,
                            findings.delta_text(name, b, h), _mark(cell, name, b, h),
                            _gate_text(cell, name, b, h, breached, verdict.blessed,
                                       cell in tested)))
        bad = cell in hit_cells or now is None or any(r.gate.startswith("❌") for r in rows)
        out.append({
            "name": cell,
            "rows": rows,
            "passed": (now.gold_total - len(now.failed)) if now else None,
            "gold_total": now.gold_total if now else None,
            "missing": now is None,
            "newly_failed": len(verdict.newly_failed.get(cell, ())),
            "fixed": len(verdict.fixed.get(cell, ())),
            "control": _is_control(cell),
            "seam": cell_names.seam_of(cell),
            # Compared by its pooled counts, not item by item: the heading says so.
            "stochastic": _stochastic_heading(now, tested.get(cell)),
            "bad": bad,
            "changed": any(r.mark for r in rows),
        })
    return out


def _by_seam(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``cells`` (in name order, so a seam's cells are together), each marked when it is the
    first of its seam: the scoreboard puts a seam's heading above it."""
    return [{**cell, "first_of_seam": bool(cell["seam"]) and
             (at == 0 or cells[at - 1]["seam"] != cell["seam"])}
            for at, cell in enumerate(cells)]


def _mode_words(verdict: Verdict, results: Results) -> str:
    """How the cells were compared, in words (a stochastic cell by its pooled counts)."""
    if verdict.mode == "corpus-bless" and verdict.verdict == "pass":
        words = _BLESSED_CORPUS
    elif verdict.mode == "same-hash" and verdict.stochastic \
            and set(results.cells) <= {t.cell for t in verdict.stochastic}:
        return _ALL_STOCHASTIC_WORDS
    else:
        words = _MODE_WORDS.get(verdict.mode or "", "")
    return words + (_STOCHASTIC_WORDS if verdict.stochastic else "")


def _stochastic_heading(now: Any, tested: StochasticCell | None) -> dict[str, Any] | None:
    if now is None or now.repeats is None:
        return None
    passes, trials = now.counts()
    return {"passes": passes, "trials": trials, "repeats": now.repeats,
            "p": _p_text(tested.adjusted_p) if tested else None}


def _p_text(value: float) -> str:
    return "< 0.0001" if value < 0.0001 else f"{value:.4f}"


def _stochastic_rows(verdict: Verdict) -> list[dict[str, Any]]:
    """The statistical gate's table: per stochastic cell, both counts with their Wilson
    intervals, the one-sided p-value and its Holm adjustment, and what the gate made of it."""
    rows = []
    for t in verdict.stochastic:
        if not t.gated:
            gate = "report (a significant drop, not gated)" if t.significant else "report"
        elif t.significant:
            gate = "✅ significant, blessed" if verdict.blessed else "❌ significant drop"
        else:
            gate = "✅ lower, within the noise" if t.head_rate < t.base_rate else "✅ not lower"
        rows.append({
            "cell": t.cell,
            "base": f"{t.base_passes}/{t.base_trials} ({t.base_rate:.0%})",
            "base_interval": f"[{t.base_interval[0]:.3f}, {t.base_interval[1]:.3f}]",
            "head": f"{t.head_passes}/{t.head_trials} ({t.head_rate:.0%})",
            "head_interval": f"[{t.head_interval[0]:.3f}, {t.head_interval[1]:.3f}]",
            "p": _p_text(t.p_value), "adjusted": _p_text(t.adjusted_p), "gate": gate})
    return rows


def _controls(cells: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Controls that fail as designed are said in one line; one that does not gets its table."""
    controls = [c for c in cells if c["control"]]
    if not controls:
        return None
    return {"fine": [c["name"] for c in controls if not c["bad"] and not c["missing"]],
            "broken": [c["name"] for c in controls if c["bad"] or c["missing"]]}


def _net_chart(results: Results, base: Baseline | None) -> dict[str, Any] | None:
    """The NET(λ) chart, only where it says more than the table: at least three λ, a base to
    compare with, and a curve that moved."""
    points = findings.net_points(results, base)
    if len(points) < 3 or any(b is None for _, b, _ in points):
        return None
    if all(findings.delta("net", b, h) == 0 for _, b, h in points):
        return None
    values = [float(round4(v)) for _, b, h in points for v in (b, h)]
    low, high = min([*values, 0.0]), max([*values, 0.0])
    return {
        "x": ", ".join(f'"{lam}"' for lam, _, _ in points),
        "y_min": round4(low - 0.1), "y_max": round4(high + 0.1),
        "base_line": ", ".join(metric_text(b) for _, b, _ in points),
        "head_line": ", ".join(metric_text(h) for _, _, h in points),
        "palette": f"{BASE_COLOUR}, {HEAD_COLOUR}",
    }


def _stories(verdict: Verdict, results: Results, base: Baseline | None, level: str
             ) -> dict[str, Any]:
    """Newly failed items: the first few with why, the rest as ids (maybe capped). Only the
    ids shown are gathered: a million newly failing items are counted, not copied."""
    total = sum(len(ids) for ids in verdict.newly_failed.values())
    cap = {"full": None, "capped-lists": _CAPPED_IDS}.get(level, 0)
    wanted = total if cap is None else INLINE_IDS + cap
    flat = list(itertools.islice(((cell, i) for cell, ids in sorted(verdict.newly_failed.items())
                                  for i in ids), wanted))
    explained = []
    for cell, item in flat[:INLINE_IDS]:
        story = findings.item_story(results, cell, item)
        asked = story.asked if story else None
        if asked and len(asked) > _ASKED_CHARS:
            asked = asked[:_ASKED_CHARS].rstrip() + "…"
        explained.append({"key": f"{cell}#{shown_id(item)}", "asked": asked,
                          "why": story.why(findings.option_k(results, cell),
                                          findings.option_k(base, cell)) if story else
                          "no per-item detail in these results"})
    shown = flat[INLINE_IDS:]
    groups: dict[str, list[str]] = {}
    for cell, item in shown:
        groups.setdefault(cell, []).append(shown_id(item))
    return {"total": total, "explained": explained,
            "rest": [{"cell": c, "ids": ids} for c, ids in groups.items()],
            "rest_count": len(shown), "hidden": max(0, total - INLINE_IDS) - len(shown)}


def _id_groups(groups: dict[str, list[str]], level: str) -> list[dict[str, Any]]:
    cap = {"full": None, "capped-lists": _CAPPED_IDS}.get(level, 0)
    out = []
    for cell, ids in sorted(groups.items()):
        kept = ids[INLINE_IDS:] if cap is None else ids[INLINE_IDS:INLINE_IDS + cap]
        out.append({"cell": cell, "count": len(ids),
                    "inline": [shown_id(i) for i in ids[:INLINE_IDS]],
                    "rest": [shown_id(i) for i in kept],
                    "hidden": max(0, len(ids) - INLINE_IDS) - len(kept)})
    return out


_EASING_KINDS = ("item-changed", "item-removed", "corpus-removed", "option")
_EASING_SHOWN = 20


def _shown_key(key: str) -> str:
    """A breach key as shown: its item id (after the ``#``) cut as :func:`shown_id` cuts."""
    cell, sep, item = key.partition("#")
    return f"{cell}{sep}{shown_id(item)}" if sep else key


def _easing(verdict: Verdict) -> tuple[list[str], int]:
    """Breaches that make the test easier (docs/gate.md, "Rules"), named beside the fixture
    diff: the first few keys, and how many there are."""
    keys: list[str] = []
    count = 0
    for entry in Breaches.of(verdict.breaches).entries:
        if isinstance(entry, Breach):
            if not _eases(entry.kind):
                continue
            found, n = iter((entry.key,)), 1
        elif _eases(entry.kind):
            found, n = entry.iter_keys(), len(entry.ids)
        else:
            continue
        keys += (_shown_key(key) for key in
                 itertools.islice(found, max(0, _EASING_SHOWN - len(keys))))
        count += n
    return keys, count


def _eases(kind: str) -> bool:
    """By kind alone: a key holds an item id, and an item id can hold anything (``:option:``)."""
    return kind in _EASING_KINDS


@functools.cache
def _environment() -> Environment:
    """One environment per process: templates are compiled once, not per render."""
    env = Environment(loader=FileSystemLoader(str(data_dir() / "templates")),
                      undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                      trim_blocks=True, lstrip_blocks=True, finalize=_finalize)
    env.filters["code"] = code_line
    env.filters["html"] = escape_html
    return env


@functools.cache
def _nothing_measured() -> Results:
    """The results of a run that could not happen (built when first needed: importing this
    module builds no validator)."""
    return Results(schema_version=1, fixtures_hash="", config={}, cells={}, receipt={}, items={})


def context(verdict: Verdict, results: Results | None, base: Baseline | None, *, level: str,
            full_report: str | None = None,
            history: Sequence[HistoryVersion] = (),
            results_path: str | None = None) -> dict[str, Any]:
    """Everything the template shows, as plain data; ``level`` says which sections to keep."""
    check = verdict.justification_check
    ran = results is not None
    results = results or _nothing_measured()  # the gate could not run: the reason and how to reproduce
    short = level in ("summary", "minimal")
    ranked = findings.ranked_breaches(verdict, results, base)
    cells = _cells(verdict, results, base, gated_only=level not in ("full", "capped-lists",
                                                                     "no-item-lists"))
    shown_cells = [c for c in cells if not c["control"] or c["bad"]] if level != "minimal" else []
    open_cells = _by_seam([c for c in shown_cells if c["bad"]])
    quiet_cells = _by_seam([c for c in shown_cells if not c["bad"]])
    base_sha = _hex(verdict.base.sha)
    full_sha = verdict.base.sha if verdict.base.sha and _HEX.match(verdict.base.sha) else None
    # The example `show` command names a newly failing item (else the item of a significantly
    # worse stochastic cell that passed least often, else an item this run fails, else any
    # item — of a cell that is not a control, whose items are meant to fail) with a plain id: a
    # command in the comment is pasted into shells, so odd ids are left to the lists above.
    measured = [c for c in sorted(results.items) if not _is_control(c)]
    candidates = itertools.chain(
        ((c, i) for c, ids in sorted(verdict.newly_failed.items()) for i in ids),
        ((t.cell, i) for t in verdict.stochastic if t.significant and t.gated
         and t.cell in results.cells
         for i in sorted(results.cells[t.cell].passes or {},
                         key=lambda i, c=t.cell: ((results.cells[c].passes or {})[i], i))),
        ((c, i) for c in measured if c in results.cells for i in results.cells[c].failed),
        ((c, i) for c in measured for i in sorted(results.items[c])[:1]))
    first_item = next(((c, i) for c, i in candidates if findings.plain_key(c, i)), None)
    # The first note is the headline when nothing else can be; it is not repeated below.
    said = {findings.headline(verdict, ranked, results, base)}
    notes = [n for n in verdict.notes if n not in said
             and n != "breaches blessed by the committed justification"]
    gains = findings.improvement_rows(verdict, results, base)
    easing, easing_count = _easing(verdict)
    unbanked = verdict.verdict == "pass" and bool(gains or verdict.fixed) and not verdict.banked
    step = findings.next_step(verdict, results if ran else None, base, ranked, results_path)
    return {
        "verdict": verdict,
        "level": level,
        "title": _TITLES[verdict.verdict],
        "headline": findings.headline(verdict, ranked, results, base),
        "mode_words": _mode_words(verdict, results)
        if verdict.verdict not in ("inconclusive", "error") else "",
        "base_sha": base_sha,
        "base_ref": verdict.base.ref,
        "base_how": findings.base_words(verdict.base),
        "head_sha": _hex(results.receipt.git_sha),
        "fixtures_hash": _hex(results.fixtures_hash),
        "base_hash": _hex(base.fixtures_hash) if base else None,
        "breaches": ranked[:_SUMMARY_ROWS] if short else ranked,
        "breaches_hidden": max(0, len(ranked) - _SUMMARY_ROWS) if short else 0,
        "breach_rows": _BREACH_ROWS,
        "stochastic": _stochastic_rows(verdict),
        "alpha": verdict.stochastic[0].alpha if verdict.stochastic else None,
        "open_cells": open_cells[:_SUMMARY_ROWS] if short else open_cells,
        "quiet_cells": [] if short else quiet_cells,
        "cells_hidden": (max(0, len(open_cells) - _SUMMARY_ROWS) + len(quiet_cells))
        if short else 0,
        "controls": _controls(cells),
        "net": _net_chart(results, base) if not short else None,
        "history": {"count": len(history), "colour": blessed_history.LINE_COLOUR,
                    "charts": blessed_history.moved_charts(history, results, base),
                    # The table says why each version was blessed; none without a reason.
                    "blessed": [{"sha": v.sha[:7], "date": v.date[:10],
                                 "justification": v.justification} for v in history]
                    if any(v.justification for v in history) else []}
        if not short else None,
        "stories": _stories(verdict, results, base, level) if level != "minimal" else None,
        "gains": gains,
        "fixed": _id_groups(verdict.fixed, level) if level != "minimal" else [],
        "unbanked": unbanked,
        "diff": {bucket: _id_groups(getattr(verdict.fixture_diff, bucket), level)
                 if level != "minimal" else []
                 for bucket in ("added", "removed", "changed")},
        "easing": easing,
        "easing_more": easing_count - len(easing),
        "justification": {"status": check.status, "text": check.text,
                          "failed": check.failed_check,
                          "inherited": findings.inherited_justification(verdict, base),
                          "asked": findings.asks_for_bless(verdict)},
        "next": step,
        "results_file": results_path,
        "notes": notes[:_SUMMARY_ROWS if level == "summary" else 3] if short else notes,
        # Banking is said in its own section, with its command.
        # The next step's commands are said at the top; here, the alternatives to them.
        "steps": findings.alternatives(verdict, results),
        "reproduce": "membench-gate check" + findings.config_flag(verdict)
        + findings.holdout_flag(results)
        + (f" --base-ref {full_sha}" if full_sha else ""),
        # The next step may show an item already; the example is then not repeated.
        "show": findings.show_command(verdict, *first_item, full_sha, results)
        if first_item and not any(c.startswith("membench-gate show ") for c in step.commands)
        else None,
        "truncated": ran and level != "full",
        "full_report": full_report,
    }


def _least_bytes(verdict: Verdict, level: str, limit: int) -> int:
    """At least how many bytes the item ids listed at ``level`` take (newly failed, fixed, the
    fixture diff): a byte an id (newly failed ids are capped across cells, the other lists per
    cell), and at the full level, where every id is listed, its length as shown (cut at
    :data:`~membench_gate.report.findings.ID_SHOWN`) — when escaping drops nothing from them
    (no whitespace to fold, no comment marker to strip), since escaping only adds. Enough to
    skip a level that cannot fit without rendering it."""
    newly = list(verdict.newly_failed.values())
    others = [*verdict.fixed.values(), *(ids for bucket in ("added", "removed", "changed")
                                        for ids in getattr(verdict.fixture_diff, bucket).values())]
    if level == "capped-lists":
        return min(sum(map(len, newly)), _CAPPED_IDS) + \
            sum(min(len(ids), _CAPPED_IDS) for ids in others)
    if level != "full":
        return 0
    count = sum(map(len, newly)) + sum(map(len, others))
    if count > limit:
        return count
    every = list(itertools.chain.from_iterable([*newly, *others]))
    if not _escaping_keeps("\0".join(every)):
        return count
    return sum(min(len(i), findings.ID_SHOWN) for i in every)


def _escaping_keeps(text: str) -> bool:
    """Does escaping keep every character of ``text``: no whitespace to fold, no comment marker
    to strip? (Plain substring tests first: a regex over megabytes of ids is slow.)"""
    words = text.split(None, 1)
    if len(words) != 1 or len(words[0]) != len(text) or "<!--" in text or "-->" in text:
        return False
    return (":v" not in text and ":V" not in text) or not _MARKER.search(text)


def render(verdict: Verdict, results: Results | None, base: Baseline | None, *,
           limit: int | None = SUMMARY_LIMIT, full_report: str | None = None,
           history: Sequence[HistoryVersion] = (), results_path: str | None = None) -> str:
    """The scoreboard Markdown; with a ``limit`` (UTF-8 bytes), cut by whole sections to fit.
    ``history`` are the last blessed baselines of the base branch, oldest first (read with git
    by ``check``, or its ``history.json``): the metrics this run moves are charted across
    them. ``results_path``: where the check saved its results, for the ``bless --results``
    command."""
    template = _environment().get_template("scoreboard.md.j2")
    text = ""
    for level in _LEVELS:
        # A level whose ids alone take more bytes than the limit cannot fit: not rendered.
        if limit is not None and level != _LEVELS[-1] \
                and _least_bytes(verdict, level, limit) > limit:
            continue
        text = template.render(**context(verdict, results, base, level=level,
                                         full_report=full_report, history=history,
                                         results_path=results_path))
        if limit is None or len(text.encode("utf-8")) <= limit:
            return text
    # Even the minimal scoreboard is too big (only absurd limits): keep whole lines that fit.
    note = "\n_(cut to fit; the full report is the report file, the action's report-path output)_\n"
    kept, size = [], len(note.encode())
    for line in text.splitlines(keepends=True):
        size += len(line.encode())
        if size > limit:
            break
        kept.append(line)
    return "".join(kept) + note
