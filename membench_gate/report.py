"""The Markdown scoreboard: verdict + results → ``templates/scoreboard.md.j2``.

One template serves the PR comment, the job summary and ``--report``. Logic code prepares data;
the template says it. Every untrusted string (ids, the justification, notes quoting adapter
messages) goes through :func:`escape_md`. When the Markdown would exceed the size limit of where it
goes (in UTF-8 bytes), whole sections are dropped — long item lists first, then report-only metrics,
then per-cell tables — with a note saying where the full report is. The report file itself is
never cut.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from membench_gate import metrics
from membench_gate.fixtures import data_dir
from membench_gate.gate import HARD_KINDS, Verdict, breach_keys
from membench_gate.results import Baseline, Results, round4
from membench_gate.summary import config_flag, next_steps
from membench_gate.summary import fmt as fmt_number

COMMENT_LIMIT = 60_000
SUMMARY_LIMIT = 1024 * 1024
INLINE_IDS = 5
_ZWSP = "\u200b"
_MARKER = re.compile(r"<!--|-->|membench-gate:v\d+", re.IGNORECASE)
_MD_ESCAPES = {"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "*": "\\*", "_": "\\_",
               "~": "\\~", "&": "&amp;", "<": "&lt;", ">": "&gt;", "`": "&#96;"}
_MD_CHARS = re.compile("[" + re.escape("".join(_MD_ESCAPES)) + "]")
# "@name" / "@org/team" mentions and "#123" issue references.
_MENTION = re.compile(r"@(?=[A-Za-z0-9_-])|#(?=\d)")
_ITEM_KINDS = ("newly-failed", "item-removed")
_LEVELS = ("full", "capped-lists", "no-item-lists", "gated-only", "summary", "minimal")
_CAPPED_IDS = 1000  # ids per list at the "capped-lists" level
_SUMMARY_ROWS = 20  # cells, groups, breaches and notes kept at the "summary" level
_HEX = re.compile(r"^[0-9a-f]{1,64}$")
_NET = re.compile(r"^net_at_(\d+(?:\.\d+)?)$")


def escape_md(value: Any) -> str:
    """Make untrusted text inert in GitHub Markdown: HTML, table pipes, code spans, mentions,
    issue references and our own comment marker cannot take effect."""
    text = " ".join(str(value).split())
    text = _MARKER.sub("", text)
    # A zero-width space after @ and # keeps "@org/team" and "#123" from linking or notifying.
    text = _MENTION.sub(lambda m: m.group(0) + _ZWSP, text)
    return _MD_CHARS.sub(lambda m: _MD_ESCAPES[m.group(0)], text)


def fmt(value: Any) -> str:
    """A number as shown to people, or any other value escaped."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return fmt_number(value)
    return escape_md(value)


@dataclass(frozen=True)
class Row:
    metric: str
    base: str
    head: str
    delta: str
    gate: str


def _delta(name: str, base: float | None, head: float | None) -> str:
    if base is None or head is None:
        return "—"
    diff = round4(float(round4(head)) - float(round4(base)))
    if diff == 0:
        return "0"
    arrow = "▲" if diff > 0 else "▼"
    return f"{arrow} {'+' if diff > 0 else ''}{diff}"


def _hex(value: str | None) -> str | None:
    """A sha or hash shown to people: hex only (a foreign file may hold anything), first 12."""
    return value[:12] if value and _HEX.match(value) else None


def _gate_cell(cell: str, name: str, base: float | None, head: float | None,
               breached: set[str], blessed: bool) -> str:
    kind = metrics.gate_kind(cell, name)
    if kind == "report":
        return "report"
    if f"{cell}:{name}" in breached:
        return f"✅ {kind}, blessed" if blessed else f"❌ {kind}"
    if kind == "gated" and base is not None and head is not None and \
            metrics.is_adverse(name, float(round4(base)), float(round4(head))):
        return f"✅ {kind}, blessed" if blessed else f"❌ {kind}"
    return f"✅ {kind}"


_KIND_ORDER = {"zero": 0, "gated": 1, "report": 2}


def _metric_order(cell: str, name: str) -> tuple[int, str, float]:
    """Invariants first, then gated, then report metrics; NET(λ) in numeric order of λ."""
    match = _NET.match(name)
    lam = float(match.group(1)) if match else 0.0
    return _KIND_ORDER[metrics.gate_kind(cell, name)], "net_at_" if match else name, lam


def _cells(verdict: Verdict, results: Results, base: Baseline | None,
           gated_only: bool) -> list[dict[str, Any]]:
    breached = {b.key for b in verdict.breaches}
    names = sorted(set(results.cells) | set(base.cells if base else ()))
    out = []
    for cell in names:
        now = results.cells.get(cell)
        before = base.cells.get(cell) if base else None
        metric_names = sorted(set(now.metrics if now else ()) | set(before.metrics if before
                                                                      else ()),
                              key=lambda m, c=cell: _metric_order(c, m))
        rows = []
        for name in metric_names:
            if gated_only and metrics.gate_kind(cell, name) == "report":
                continue
            b = before.metrics.get(name) if before else None
            h = now.metrics.get(name) if now else None
            rows.append(Row(escape_md(name), fmt(b), fmt(h), _delta(name, b, h),
                            _gate_cell(cell, name, b, h, breached, verdict.blessed)))
        hit = any(key == cell or key.startswith((f"{cell}:", f"{cell}#")) for key in breached)
        bad = hit or any(r.gate.startswith("❌") for r in rows)
        if now is None:
            status = "❔ missing"
        elif bad and verdict.blessed and not any(r.gate.startswith("❌") for r in rows):
            status = "✅ blessed"
        else:
            status = "❌" if bad else "✅"
        out.append({
            "name": escape_md(cell),
            "rows": rows,
            "passed": (now.gold_total - len(now.failed)) if now else None,
            "gold_total": now.gold_total if now else None,
            "missing": now is None,
            "newly_failed": len(verdict.newly_failed.get(cell, ())),
            "fixed": len(verdict.fixed.get(cell, ())),
            "status": status,
            "ok": status == "✅",
        })
    return out


def _net_chart(results: Results, base: Baseline | None) -> dict[str, Any] | None:
    cell = "abstention/default"
    now = results.cells.get(cell)
    if now is None:
        return None
    before = base.cells.get(cell) if base else None
    lams = sorted((float(m.group(1)), n) for n in now.metrics if (m := _NET.match(n))
                  and math.isfinite(float(m.group(1))))
    if not lams:
        return None
    rows = [{"lam": metrics.format_number(lam), "base": before.metrics.get(n) if before else None,
             "head": now.metrics[n]} for lam, n in lams]
    values = [float(round4(v)) for r in rows for v in (r["base"], r["head"]) if v is not None]
    low, high = min([*values, 0.0]), max([*values, 0.0])
    return {
        "rows": [{"lam": r["lam"], "base": fmt(r["base"]), "head": fmt(r["head"]),
                  "delta": _delta("net", r["base"], r["head"])} for r in rows],
        "x": ", ".join(f'"{r["lam"]}"' for r in rows),
        "y_min": round4(low - 0.1), "y_max": round4(high + 0.1),
        "base_line": ", ".join(fmt(r["base"]) for r in rows)
        if all(r["base"] is not None for r in rows) else None,
        "head_line": ", ".join(fmt(r["head"]) for r in rows),
    }


@dataclass(frozen=True)
class _Prepared:
    """The expensive part, done once for every level: escaped id lists."""

    newly_failed: list[dict[str, Any]]
    fixed: list[dict[str, Any]]
    diff: dict[str, list[dict[str, Any]]]


def _id_lists(groups: dict[str, list[str]]) -> list[dict[str, Any]]:
    return [{"cell": escape_md(cell), "count": len(ids), "ids": [escape_md(i) for i in ids]}
            for cell, ids in sorted(groups.items())]


def _prepare(verdict: Verdict) -> _Prepared:
    return _Prepared(
        newly_failed=_id_lists(verdict.newly_failed),
        fixed=_id_lists(verdict.fixed),
        diff={bucket: _id_lists(getattr(verdict.fixture_diff, bucket))
              for bucket in ("added", "removed", "changed")},
    )


def _shown(groups: list[dict[str, Any]], level: str) -> list[dict[str, Any]]:
    """Id groups cut for a level: the first few inline, the rest (maybe capped) folded."""
    rest_cap = {"full": None, "capped-lists": _CAPPED_IDS}.get(level, 0)
    kept = groups if level not in ("summary", "minimal") else groups[:_SUMMARY_ROWS]
    out = []
    for group in kept:
        ids = group["ids"]
        rest = ids[INLINE_IDS:] if rest_cap is None else ids[INLINE_IDS:INLINE_IDS + rest_cap]
        out.append({"cell": group["cell"], "count": group["count"],
                    "inline": ids[:INLINE_IDS], "rest": rest,
                    "hidden": len(ids) - INLINE_IDS - len(rest) if len(ids) > INLINE_IDS else 0})
    return out


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(str(data_dir() / "templates")),
                      undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["md"] = escape_md
    env.filters["num"] = fmt
    return env


_EMPTY = Results(schema_version=1, fixtures_hash="", config={}, cells={}, receipt={}, items={})


def context(verdict: Verdict, results: Results | None, base: Baseline | None, *, level: str,
            full_report: str | None = None, prepared: _Prepared | None = None) -> dict[str, Any]:
    """Everything the template shows, already escaped; ``level`` says which sections to keep."""
    prepared = prepared or _prepare(verdict)
    check = verdict.justification_check
    ran = results is not None
    results = results or _EMPTY  # the gate could not run: the reason and how to reproduce
    short = level in ("summary", "minimal")
    overview = _cells(verdict, results, base, gated_only=True)
    breaches = [{"key": escape_md(b.key), "kind": b.kind, "base": fmt(b.base),
                 "head": fmt(b.head), "detail": escape_md(b.detail)}
                for b in verdict.breaches if b.kind not in _ITEM_KINDS]
    notes = [escape_md(n) for n in verdict.notes]
    base_sha = verdict.base.sha if verdict.base.sha and _HEX.match(verdict.base.sha) else None
    return {
        "verdict": verdict,
        "level": level,
        "title": {"pass": "✅ PASS", "regression": "❌ REGRESSION",
                  "bless-required": "⚠️ BLESS REQUIRED", "inconclusive": "❔ INCONCLUSIVE",
                  "error": "⛔ ERROR"}[verdict.verdict],
        "base_sha": _hex(base_sha),
        "base_ref": escape_md(verdict.base.ref) if verdict.base.ref else None,
        "base_how": verdict.base.how,
        "head_sha": _hex(results.receipt.git_sha),
        "fixtures_hash": _hex(results.fixtures_hash),
        "base_hash": _hex(base.fixtures_hash) if base else None,
        "breaches": breaches[:_SUMMARY_ROWS] if short else breaches,
        "breaches_hidden": max(0, len(breaches) - _SUMMARY_ROWS) if short else 0,
        "item_breaches": {kind: sum(1 for b in verdict.breaches if b.kind == kind)
                          for kind in _ITEM_KINDS},
        "hard": breach_keys(verdict, HARD_KINDS),
        "invariants": [] if level == "minimal" else [
            {"cell": escape_md(c), "metric": escape_md(m), "value": fmt(v), "ok": round4(v) == 0}
            for c, cell in sorted(results.cells.items()) for m, v in sorted(cell.metrics.items())
            if metrics.gate_kind(c, m) == "zero"],
        "overview": [c for c in overview if not (short and c["ok"])][:_SUMMARY_ROWS]
        if short else overview,
        "overview_hidden": sum(1 for c in overview if c["ok"]) if short else 0,
        "cells": _cells(verdict, results, base, gated_only=level != "full")
        if level in ("full", "capped-lists", "no-item-lists", "gated-only") else [],
        "net": _net_chart(results, base) if not short else None,
        "newly_failed": _shown(prepared.newly_failed, level) if level != "minimal" else [],
        "fixed": _shown(prepared.fixed, level) if level != "minimal" else [],
        "diff": {bucket: _shown(groups, level) if level != "minimal" else []
                 for bucket, groups in prepared.diff.items()},
        "justification": {"status": check.status,
                          "text": escape_md(check.text) if check.text else None,
                          "failed": escape_md(check.failed_check) if check.failed_check else None},
        "notes": notes[:_SUMMARY_ROWS if level == "summary" else 3] if short else notes,
        "steps": [_plain(s) for s in next_steps(verdict)],
        "reproduce": _plain("membench-gate check" + config_flag(verdict)
                            + (f" --base-ref {base_sha}" if base_sha else "")),
        "truncated": ran and level != "full",
        "full_report": escape_md(full_report) if full_report else None,
    }


def _plain(command: str) -> str:
    """A line for a code block: no backticks, no line breaks (nothing can close the fence)."""
    return " ".join(command.replace("`", "'").split())


def render(verdict: Verdict, results: Results | None, base: Baseline | None, *,
           limit: int | None = SUMMARY_LIMIT, full_report: str | None = None) -> str:
    """The scoreboard Markdown; with a ``limit`` (UTF-8 bytes), cut by whole sections to fit."""
    template = _environment().get_template("scoreboard.md.j2")
    prepared = _prepare(verdict)
    text = ""
    for level in _LEVELS:
        text = template.render(**context(verdict, results, base, level=level,
                                         full_report=full_report, prepared=prepared))
        if limit is None or len(text.encode("utf-8")) <= limit:
            return text
    # Even the minimal scoreboard is too big (only absurd limits): keep whole lines that fit.
    note = "\n_(cut to fit; see the report file)_\n"
    kept, size = [], len(note.encode())
    for line in text.splitlines(keepends=True):
        size += len(line.encode())
        if size > limit:
            break
        kept.append(line)
    return "".join(kept) + note
