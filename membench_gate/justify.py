"""The justification checks of rule 8: a blessed regression must be explained, specifically.

A justification passes when its text is at least 40 characters and 6 words, is not a placeholder
("n/a", "todo", "update baseline", … matched fuzzily), names every breached metric or its cell
(fuzzy), and is not a near-copy of the base baseline's justification.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rapidfuzz import fuzz

MIN_CHARS = 40
MIN_WORDS = 6
PLACEHOLDERS = (
    "n/a", "na", "none", "todo", "tbd", "wip", "lgtm", "ok", "fix", "fixes", "test", "asdf",
    "update baseline", "updated baseline", "baseline update", "new baseline", "bless",
    "bless baseline", "blessed", "regenerate baseline", "regenerated baseline", "refresh baseline",
    "accept regression", "accepted", "expected", "as expected", "intentional", "see pr",
    "see description", "see above", "whatever", "no reason", "because", "ignore", "placeholder",
)
_PLACEHOLDER_RATIO = 85
_MENTION_RATIO = 90
_COPY_RATIO = 90


def _norm(text: str) -> str:
    return " ".join("".join(c if c.isalnum() else " " for c in text.lower()).split())


@dataclass(frozen=True)
class JustificationCheck:
    """Outcome of the checks: ``ok`` and, if not, the first failed check in one line."""

    ok: bool
    failed: str | None = None


def breach_subject(key: str) -> tuple[str, str | None]:
    """The cell of a breach key and its metric or item (``veto/files_known:mrr`` → both)."""
    for sep in (":", "#"):
        if sep in key:
            cell, _, what = key.partition(sep)
            return cell, what
    return key, None


def mentions(text: str, needle: str) -> bool:
    """Does ``text`` name ``needle``, fuzzily (``net_at_1`` matches "NET at 1")?"""
    needle_n, text_n = _norm(needle), _norm(text)
    if not needle_n:
        return False
    if needle_n in text_n:
        return True
    return fuzz.partial_ratio(needle_n, text_n) >= _MENTION_RATIO


def is_placeholder(text: str) -> bool:
    normalized = _norm(text)
    if len(set(normalized.split())) <= 3:
        return True
    # Padding a placeholder with repetitions ("update baseline update baseline …") stays one.
    stripped = normalized
    for phrase in sorted(PLACEHOLDERS, key=len, reverse=True):
        stripped = stripped.replace(_norm(phrase), " ")
    if len(set(stripped.split())) < 3:
        return True
    return any(fuzz.ratio(normalized, _norm(p)) >= _PLACEHOLDER_RATIO for p in PLACEHOLDERS)


def check_justification(text: str | None, breach_keys: Iterable[str],
                        base_text: str | None = None) -> JustificationCheck:
    """Run the rule-8 text checks in order and name the first that fails."""
    if text is None or not text.strip():
        return JustificationCheck(False, "no justification")
    stripped = " ".join(text.split())
    if len(stripped) < MIN_CHARS:
        return JustificationCheck(False, f"too short: {len(stripped)} characters, need {MIN_CHARS}")
    words = len(stripped.split())
    if words < MIN_WORDS:
        return JustificationCheck(False, f"too short: {words} words, need {MIN_WORDS}")
    if is_placeholder(stripped):
        return JustificationCheck(False, "reads like a placeholder, not a reason")
    missing = []
    for key in sorted(set(breach_keys)):
        cell, what = breach_subject(key)
        if not (mentions(stripped, cell) or (what is not None and mentions(stripped, what))):
            missing.append(key)
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        cell, what = breach_subject(missing[0])
        named = f"{what!r} or its cell {cell!r}" if what else f"the cell {cell!r}"
        return JustificationCheck(False, f"does not name {named}{more}")
    if base_text and fuzz.ratio(_norm(stripped), _norm(base_text)) >= _COPY_RATIO:
        return JustificationCheck(False, "is a near-copy of the base baseline's justification")
    return JustificationCheck(True)
