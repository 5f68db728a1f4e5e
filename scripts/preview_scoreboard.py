"""Render the scoreboard of a realistic pull request and screenshot it as GitHub would show it.

Not run by CI: a way for anyone changing the templates to *look* at the result. It runs the
built-in suites twice — the reference memory as the base, and a weakened one (fewer embedding
dimensions, so more hash collisions) as the head — gates the head against the base, renders the
comment, converts it to HTML with cmark-gfm (GitHub's parser) and screenshots it with headless
Chromium. Both runs are this repository's own gate (``membench.toml``), so the preview shows the
suites and options the project gates itself on:

    python scripts/preview_scoreboard.py [--out DIR]
        [--scenario regression|improvement|bless|hostile|stochastic]

``hostile`` is the regression with text from the pull request's side made to act: newly failing
ids, what the adapter returned and the justification carry links, an address, a mention, a
reference, emoji shortcodes and terminal escapes; the comment must show them as plain text.
``stochastic`` gates the veto suite with ``repeats = 5`` on a memory that forgets at random
(seeded): the base forgets 5% of its searches, the head 15%, and the statistical gate decides
which cells dropped beyond the noise.

Writes DIR/scoreboard.md, DIR/scoreboard.html and DIR/scoreboard.png (default DIR: ./preview).
Needs the test extra (cmarkgfm) and a ``chromium`` binary on PATH for the PNG.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import cmarkgfm
from cmarkgfm.cmark import Options

from membench_gate.config import parse_config
from membench_gate.gate.rules import decide
from membench_gate.model.results import Justification, Results
from membench_gate.report.render import COMMENT_LIMIT, render
from membench_gate.run.runner import run

DOGFOOD = Path(__file__).resolve().parent.parent / "membench.toml"
OPTIONS = "[adapter.options]\n"

# Close to github.com's Markdown body: system font, bordered tables, grey code blocks.
CSS = """
body { font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial,
       sans-serif, "Apple Color Emoji", "Noto Color Emoji"; font-size: 14px; line-height: 1.5;
       color: #1f2328; max-width: 900px; margin: 24px auto; padding: 0 16px; }
h2 { border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; font-size: 1.5em; }
h3 { font-size: 1.25em; margin-top: 24px; } h4 { font-size: 1em; }
table { border-collapse: collapse; margin: 8px 0 16px; display: block; overflow: auto; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; }
tr:nth-child(2n) { background: #f6f8fa; } th { font-weight: 600; }
code { background: rgba(129,139,152,.12); border-radius: 6px; padding: .2em .4em;
       font-size: 85%; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { background: #f6f8fa; border-radius: 6px; padding: 16px; overflow: auto; }
pre code { background: none; padding: 0; }
blockquote { color: #59636e; border-left: .25em solid #d1d9e0; margin: 0; padding: 0 1em; }
details { margin: 8px 0; } summary { cursor: pointer; }
"""


def _results(dims: int) -> Results:
    """The dogfood gate with the reference memory's embeddings cut to ``dims`` dimensions: fewer
    dimensions, more hash collisions, worse retrieval."""
    text = DOGFOOD.read_text(encoding="utf-8")
    if text.count(OPTIONS) != 1:
        raise SystemExit(f"{DOGFOOD}: expected one {OPTIONS.strip()} table to set dims in")
    return run(parse_config(text.replace(OPTIONS, f"{OPTIONS}dims = {dims}\n"), DOGFOOD))


# Text a hostile pull request writes where the comment quotes it.
HOSTILE = ["https://evil.example/x", "www.evil.example", "a@b.example", ":rocket:", "@org/team",
           "#1", "\x1b]0;pwned\x07\u202eevil"]


def _hostile(base: Results, head: Results) -> Results:
    """``head`` with its first newly failing items of one cell renamed to the hostile texts, and
    the first hit of each (what the adapter returned) too."""
    data: dict[str, Any] = head.model_dump(mode="json")
    cell = next(c for c in sorted(head.cells)
                if set(head.cells[c].failed) - set(base.cells[c].failed))
    newly = sorted(set(head.cells[cell].failed) - set(base.cells[cell].failed))
    renamed = dict(zip(newly, HOSTILE, strict=False))
    data["cells"][cell]["failed"] = [renamed.get(i, i) for i in data["cells"][cell]["failed"]]
    for old, new in renamed.items():
        detail = data["items"][cell].pop(old)
        if detail.get("hits"):
            detail["hits"][0]["id"] = new
        data["items"][cell][new] = detail
        if old in data["digests"].get(cell, {}):
            data["digests"][cell][new] = data["digests"][cell].pop(old)
    return Results.model_validate(data)


# A memory that forgets at random: the reference memory whose search comes back empty with
# probability 1 - keep, from a seeded generator (the suites call in a fixed order).
FLAKY = """\
import random

from membench_gate import Answer
from membench_gate.reference import ReferenceMemory


class Flaky(ReferenceMemory):
    def __init__(self, keep, seed):
        super().__init__()
        self.keep, self.random = keep, random.Random(seed)

    def search(self, query):
        answer = super().search(query)
        return answer if self.random.random() < self.keep else Answer(hits=[], abstain=False)
"""


def _flaky(keep: float, seed: int) -> Results:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "flaky_preview.py").write_text(FLAKY, encoding="utf-8")
        path = Path(folder) / "membench.toml"
        text = (f'[adapter]\npython = "flaky_preview:Flaky"\n[adapter.options]\nkeep = {keep}\n'
                f'seed = {seed}\n[suites.veto]\nk = 5\nrepeats = 5\n')
        path.write_text(text, encoding="utf-8")
        return run(parse_config(text, path))


def scenario(name: str) -> str:
    """The comment Markdown of one kind of pull request."""
    if name == "stochastic":
        base, head = _flaky(0.95, 1).to_baseline(), _flaky(0.85, 2)
        verdict = decide(base, base, head)
        verdict.base.sha, verdict.base.ref, verdict.base.how = "3f9a1c2e7b4d" + "0" * 28, \
            "main", "merge-commit-parent"
        return render(verdict, head, base, limit=COMMENT_LIMIT,
                      full_report="in the job summary of the gating workflow run")
    strong, weak = _results(512), _results(96)
    if name == "improvement":
        base, head = weak.to_baseline(), strong
        committed = base
    elif name == "bless":
        base, head = strong.to_baseline(), weak
        verdict = decide(base, None, head)
        committed = head.to_baseline(Justification(
            text="Smaller embedding vectors halve the index size; the drop in veto recall on "
                 "veto/files_known and veto/files_unknown, NET on abstention/default and push "
                 "precision on push/push is accepted for the memory budget of the mobile "
                 "client.",
            breaches=sorted(b.key for b in verdict.breaches if b.kind not in ("zero", "floor"))))
    elif name == "hostile":
        base = strong.to_baseline()
        head = _hostile(base, weak)
        committed = head.to_baseline(Justification(
            text="Accepted, see " + ", ".join(HOSTILE) + " for why veto recall on "
                 "veto/files_known and NET on abstention/default dropped.",
            breaches=sorted(b.key for b in decide(base, None, head).breaches)))
    else:
        base, head = strong.to_baseline(), weak
        committed = base
    verdict = decide(base, committed, head)
    verdict.base.sha, verdict.base.ref, verdict.base.how = "3f9a1c2e7b4d" + "0" * 28, "main", \
        "merge-commit-parent"
    return render(verdict, head, base, limit=COMMENT_LIMIT,
                  full_report="in the job summary of the gating workflow run")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("preview"))
    parser.add_argument("--scenario", default="regression",
                        choices=("regression", "improvement", "bless", "hostile", "stochastic"))
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--height", type=int, default=3000)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    markdown = scenario(args.scenario)
    (args.out / "scoreboard.md").write_text(markdown, encoding="utf-8")
    body = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    html = f"<!doctype html><meta charset=utf-8><style>{CSS}</style><body>{body}</body>"
    page = args.out / "scoreboard.html"
    page.write_text(html, encoding="utf-8")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print(f"wrote {page}; no chromium on PATH for the screenshot", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                        f"--window-size={args.width},{args.height}",
                        f"--screenshot={(args.out / 'scoreboard.png').resolve()}",
                        page.resolve().as_uri()],
                       check=True, capture_output=True, timeout=120)
    print(f"wrote {args.out / 'scoreboard.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
