"""The blessed baselines of a branch, metric by metric: ``membench-gate history``'s table and
HTML page, and the comment's chart of the metrics a pull request moves.

Every blessed baseline is a commit that changed the baseline file; :mod:`membench_gate.base.git`
reads those versions, this module reads what they say. Pure: versions in, text out, the same
bytes for the same history (no clock, no randomness, no iteration order left to chance).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol

from membench_gate.errors import GateError, visible
from membench_gate.model import metrics
from membench_gate.model.canonical import round4
from membench_gate.model.history import (
    EXCERPT_CHARS,
    MAX_CELLS,
    MAX_METRICS,
    MAX_VERSIONS,
    NAME,
    History,
    HistoryVersion,
)
from membench_gate.model.results import Baseline, Results, parse_baseline
from membench_gate.report import findings
from membench_gate.report.summary import metric_text

# How many blessed baselines of the base branch the comment's chart shows (the newest).
COMMENT_HISTORY = MAX_VERSIONS
# Metrics the comment charts at most, the biggest moves first: the chart is a glance, the
# history command shows every metric.
COMMENT_CHARTS = 6
_EXCERPT = EXCERPT_CHARS  # characters of a justification in the table
LINE_COLOUR = "#0969da"  # the scoreboard's head colour: one line, the branch's own numbers


class Version(Protocol):
    """A commit that changed the baseline file (:class:`membench_gate.base.git.Version`)."""

    @property
    def sha(self) -> str: ...
    @property
    def date(self) -> str: ...
    @property
    def data(self) -> bytes | None: ...


class Blessed(NamedTuple):
    """A blessed baseline: the commit that wrote it, the commit date and the baseline."""

    sha: str
    date: str
    baseline: Baseline


Key = tuple[str, str]  # (cell, metric)


def blessed(versions: Iterable[Version], rel: str) -> tuple[list[Blessed], list[str]]:
    """The baselines among ``versions`` (of the file ``rel``), oldest first, and a note for
    each version that is not one — deleted, or no baseline this version can read — naming its
    commit: one bad commit never hides the rest of the history."""
    found: list[Blessed] = []
    notes: list[str] = []
    for version in versions:
        at = f"{version.sha[:12]} ({version.date[:10]})"
        if version.data is None:
            notes.append(f"skipped {at}: it removed {rel}")
            continue
        try:
            found.append(Blessed(version.sha, version.date,
                                 parse_baseline(version.data, f"{rel} at {version.sha[:12]}")))
        except GateError as exc:
            notes.append(f"skipped {at}: {exc}")
    return found, notes


def gated_keys(history: Sequence[Blessed]) -> list[Key]:
    """Every gated metric (zero-gated ones included) of any baseline of ``history``, cell by
    cell, in the scoreboard's metric order."""
    keys = {(cell, name) for entry in history for cell, data in entry.baseline.cells.items()
            for name in data.metrics if metrics.gate_kind(cell, name) != "report"}
    return sorted(keys, key=lambda k: (k[0], findings.metric_order(*k)))


def parse_key(text: str, history: Sequence[Blessed]) -> Key:
    """A ``--metric CELL:METRIC`` that some baseline of ``history`` holds."""
    cell, sep, name = text.rpartition(":")
    if not sep or not cell or not name:
        raise GateError(f"--metric '{text}': expected CELL:METRIC, e.g. "
                        "veto/files_known:veto_recall_at_k")
    if not any(name in entry.baseline.cells[cell].metrics for entry in history
               if cell in entry.baseline.cells):
        raise GateError(f"--metric '{text}': no blessed baseline has metric {name} in cell "
                        f"{cell} (the metrics are listed by membench-gate history)")
    return cell, name


def value(entry: Blessed, key: Key) -> float | None:
    cell = entry.baseline.cells.get(key[0])
    found = cell.metrics.get(key[1]) if cell is not None else None
    return float(found) if isinstance(found, (int, float)) and not isinstance(found, bool) \
        and math.isfinite(found) else None


def label(key: Key, history: Sequence[Blessed]) -> str:
    """``veto/files_known veto recall@5``: the cell and the metric as the scoreboard says it
    (with the newest baseline's options: its ``k``)."""
    newest = history[-1].baseline if history else None
    return f"{key[0]} {findings.metric_label(key[1], key[0], newest)}"


def direction(key: Key) -> str:
    return "higher is better" if metrics.spec(key[1]).direction == "higher" else \
        "lower is better"


def excerpt(entry: Blessed) -> str:
    """The justification the baseline was blessed with, on one line and cut to fit a table."""
    text = entry.baseline.justification.text if entry.baseline.justification else ""
    text = visible(" ".join(text.split()))
    return text if len(text) <= _EXCERPT else text[:_EXCERPT - 1].rstrip() + "…"


# -- the table ------------------------------------------------------------------------------------

def table(history: Sequence[Blessed], keys: Sequence[Key], notes: Sequence[str],
          heading: str) -> str:
    """``membench-gate history``'s text: ``heading``, then per metric a row per blessed
    baseline (short sha, commit date, value, move from the one before, justification), then
    the notes."""
    lines = [heading, ""]
    for key in keys:
        lines.append(f"{label(key, history)} ({key[0]}:{key[1]}, {direction(key)})")
        rows = [("commit", "date", "value", "Δ", "justification")]
        before: float | None = None
        for entry in history:
            now = value(entry, key)
            move = findings.delta_text(key[1], before, now) if before is not None else ""
            rows.append((entry.sha[:12], entry.date[:10], metric_text(now), move,
                         excerpt(entry)))
            before = now if now is not None else before
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        for row in rows:
            cells = [row[i].ljust(widths[i]) for i in range(4)]
            lines.append(("  " + "  ".join([*cells, row[4]])).rstrip())
        lines.append("")
    lines += notes
    return "\n".join(lines).rstrip("\n") + "\n"


# -- the HTML page --------------------------------------------------------------------------------

_W, _H = 760, 240  # the chart's box, in SVG units
# Room for the axis labels; on the right, half a date label past the last point.
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 44, 16, 56
_STYLE = """\
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2328;
background:#fff;margin:2rem auto;max-width:820px;padding:0 1rem;line-height:1.45}
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin:2rem 0 .25rem}
p.sub{color:#59636e;margin:0 0 1rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0 1rem}
th,td{border:1px solid #d1d9e0;padding:.2rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
td.d{white-space:nowrap}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85em}
svg{display:block;width:100%;height:auto;background:#fff}
svg text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:11px;
fill:#59636e}.notes li{color:#9a6700}"""


def _e(text: Any) -> str:
    return html.escape(visible(str(text)), quote=True)


def _n(x: float) -> str:
    """A coordinate: one decimal, so the same history gives the same bytes."""
    return f"{x:.1f}"


def _ticks(values: Sequence[float], count: bool) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 times a power of ten apart; whole numbers for a
    ``count``) that span ``values``, from 0 up when none is below it: the page's y axis reads
    0.72, 0.74 … rather than the extremes' own digits."""
    low, high = min(values), max(values)
    if high == low:
        pad = 1.0 if count else max(abs(low) * 0.1, 0.05)
        low, high = low - pad, high + pad
    if min(values) >= 0:
        low = max(low, 0.0)
    raw = (high - low) / 4
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    step = max(step, 1.0) if count else step
    start = math.floor(low / step + 1e-9)
    stop = math.ceil(high / step - 1e-9)
    return [float(round4((start + i) * step)) for i in range(stop - start + 1)]


def _chart(history: Sequence[Blessed], key: Key) -> str:
    """One metric's line chart across the blessed baselines, as inline SVG."""
    points = [(i, value(entry, key)) for i, entry in enumerate(history)]
    known = [v for _, v in points if v is not None]
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    title = f"{label(key, history)} across {len(history)} blessed baselines"
    # Inline in HTML, an <svg> needs no namespace: the page names no address at all.
    out = [f'<svg viewBox="0 0 {_W} {_H}" role="img" aria-label="{_e(title)}">']
    if not known:
        out.append(f'<text x="{_LEFT}" y="{_TOP + 20}">no value in any blessed baseline</text>')
        return "\n".join([*out, "</svg>"])
    ticks = _ticks(known, metrics.spec(key[1]).unit == "count")
    low, high = ticks[0], ticks[-1]
    step = plot_w / max(len(history) - 1, 1)

    def x(i: int) -> float:
        return _LEFT + (i * step if len(history) > 1 else plot_w / 2)

    def y(v: float) -> float:
        return _TOP + plot_h * (high - v) / (high - low)

    for v in ticks:  # grid lines and their values
        out.append(f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{_n(y(v))}" y2="{_n(y(v))}" '
                   'stroke="#d1d9e0" stroke-width="1"/>')
        out.append(f'<text x="{_LEFT - 6}" y="{_n(y(v) + 4)}" text-anchor="end">'
                   f'{_e(metrics.format_number(float(round4(v))))}</text>')
    # A label per commit while they fit, else every n-th (the first and last always).
    every = max(1, math.ceil(len(history) / max(1, plot_w // 70)))
    for i, entry in enumerate(history):
        if i % every == 0 or i == len(history) - 1:
            out.append(f'<text x="{_n(x(i))}" y="{_H - _BOTTOM + 18}" text-anchor="middle">'
                       f'{_e(entry.sha[:7])}</text>')
            out.append(f'<text x="{_n(x(i))}" y="{_H - _BOTTOM + 32}" text-anchor="middle">'
                       f'{_e(entry.date[:10])}</text>')
    segments: list[list[str]] = [[]]
    for i, v in points:  # a baseline without the metric breaks the line
        if v is None:
            segments.append([])
        else:
            segments[-1].append(f"{_n(x(i))},{_n(y(v))}")
    for segment in segments:
        if len(segment) > 1:
            out.append(f'<polyline fill="none" stroke="{LINE_COLOUR}" stroke-width="2" '
                       f'points="{" ".join(segment)}"/>')
    for i, v in points:
        if v is not None:
            entry = history[i]
            tip = f"{entry.sha[:12]} {entry.date[:10]}: {metric_text(v)}"
            out.append(f'<circle cx="{_n(x(i))}" cy="{_n(y(v))}" r="3.5" fill="{LINE_COLOUR}">'
                       f'<title>{_e(tip)}</title></circle>')
    out.append("</svg>")
    return "\n".join(out)


def _when(date: str) -> str:
    """``2026-11-29T17:20:02+00:00`` as ``2026-11-29 17:20 +00:00``: the commit's own clock."""
    day, _, rest = date.partition("T")
    return f"{day} {rest[:5]} {rest[8:]}".rstrip() if rest else day


def page(history: Sequence[Blessed], keys: Sequence[Key], notes: Sequence[str],
         heading: str) -> str:
    """``history --html``: a self-contained page (inline SVG and CSS; no script, font, image or
    address to fetch), a chart and a table per metric, escaped text, the same bytes for the
    same history."""
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(heading)}</title>", f"<style>\n{_STYLE}\n</style>", "</head>", "<body>",
           "<h1>membench-gate: blessed baselines</h1>", f'<p class="sub">{_e(heading)}</p>']
    if notes:
        out += ['<ul class="notes">', *(f"<li>{_e(n)}</li>" for n in notes), "</ul>"]
    for key in keys:
        out.append(f"<h2>{_e(label(key, history))}</h2>")
        out.append(f'<p class="sub"><code>{_e(key[0])}:{_e(key[1])}</code> · '
                   f"{_e(direction(key))}</p>")
        out.append(_chart(history, key))
        cells = "".join(f'<td class="n">{_e(metric_text(value(entry, key)))}</td>'
                        for entry in history)
        shas = "".join(f"<th><code>{_e(entry.sha[:7])}</code></th>" for entry in history)
        out += ["<table>", f"<tr><th></th>{shas}</tr>", f"<tr><th>value</th>{cells}</tr>",
                "</table>"]
    # The commits last: a justification can be a paragraph, and the charts are what a reader
    # opens the page for.
    out += ["<h2>The blessed baselines</h2>", "<table>",
            "<tr><th>commit</th><th>committed</th><th>justification</th></tr>"]
    for entry in history:
        text = entry.baseline.justification.text if entry.baseline.justification else ""
        out.append(f"<tr><td><code>{_e(entry.sha[:12])}</code></td>"
                   f'<td class="d">{_e(_when(entry.date))}</td>'
                   f"<td>{_e(' '.join(text.split())) or '—'}</td></tr>")
    out += ["</table>", "</body>", "</html>"]
    return "\n".join(out) + "\n"


# -- the comment's chart --------------------------------------------------------------------------

def _mermaid_text(text: str) -> str:
    """Text inside a quoted Mermaid label: no quote, bracket or line break can end it."""
    return "".join(ch if ch.isalnum() or ch in " ._/@()+-:" else " " for ch in text)


def record(history: Sequence[Blessed]) -> History:
    """What the scoreboard's history block needs of ``history`` (its newest
    :data:`COMMENT_HISTORY`), as ``check --history-out`` writes it: per version the short sha,
    the date, the start of the justification and the gated metrics."""
    versions = []
    for entry in history[-COMMENT_HISTORY:]:
        gated: dict[str, dict[str, float]] = {}
        # Within the file's bounds (far beyond any config's cells): a chart is never worth a
        # failed check, and a name the file cannot hold is no cell this run can move.
        for cell in sorted(c for c in entry.baseline.cells if NAME.match(c))[:MAX_CELLS]:
            names = [n for n in entry.baseline.cells[cell].metrics if NAME.match(n)
                     and metrics.gate_kind(cell, n) != "report"]
            found = {n: v for n in sorted(names) if (v := value(entry, (cell, n))) is not None}
            if found:
                gated[cell] = dict(list(found.items())[:MAX_METRICS])
        versions.append(HistoryVersion(sha=entry.sha[:12], date=entry.date,
                                       justification=excerpt(entry), metrics=gated))
    return History(versions=versions)


def moved_charts(history: Sequence[HistoryVersion], results: Results, base: Baseline | None
                 ) -> list[dict[str, Any]]:
    """One Mermaid line chart per gated metric this run moves against the base (the biggest
    moves first, at most :data:`COMMENT_CHARTS`): its value in each of the last blessed
    baselines of the base branch (:func:`record`), then this run's. Empty without a history (a
    first baseline) or without a move. Only the shas and the values of ``history`` are shown:
    names and labels come from ``results``."""
    if not history or base is None:
        return []
    moved = []
    for cell, now in results.cells.items():
        before = base.cells.get(cell)
        if before is None:
            continue
        for name, head in now.metrics.items():
            diff = findings.delta(name, before.metrics.get(name), head)
            if diff and metrics.gate_kind(cell, name) != "report":
                moved.append((-abs(diff) / metrics.span(name), cell, name))
    charts = []
    for _, cell, name in sorted(moved)[:COMMENT_CHARTS]:
        key = (cell, name)
        # The baselines that hold the metric (a cell added later has no earlier values).
        points = [(entry.sha[:7], v) for entry in history
                  if (v := entry.value(cell, name)) is not None]
        if not points:
            continue
        points.append(("this PR", float(round4(results.cells[cell].metrics[name]))))
        ticks = _ticks([v for _, v in points], metrics.spec(name).unit == "count")
        charts.append({
            "title": _mermaid_text(f"{cell} {findings.metric_label(name, cell, results)}"),
            "x": ", ".join(f'"{sha}"' for sha, _ in points),
            "line": ", ".join(metric_text(v) for _, v in points),
            "y_min": ticks[0], "y_max": ticks[-1],
            "direction": direction(key),
        })
    return charts
