"""The justification checks of rule 8: a blessed regression must be explained, specifically.

A justification passes when its text is 40 to 4,000 characters; is not a placeholder ("n/a",
"todo", "update baseline", … matched fuzzily, or a text marked as one: "TODO" or "FIXME"
anywhere, "wip:" first, "placeholder text", lorem ipsum, or the reason ``bless`` drafts still
in it); has at least 6 distinct words besides the metric, cell and item names it mentions;
names every breached metric or its cell (fuzzy); and is not a near-copy of the base baseline's
justification.

The checks are meant to be hard to game. Text is compared after Unicode NFKC, with marks and
invisible characters dropped and confusable letters folded to the Latin letter they imitate
(``uрdate bаseline`` with a Cyrillic р and а is still "update baseline"); names, repeated words,
lone Latin letters and bare numbers do not count as words; a copy of the base's text with names
swapped or more text appended is still a near-copy; a letter repeated ("aaaa") is not a word.

Confusables are folded with the small table below rather than a dependency: the maintained
libraries detect mixed scripts but do not map to a skeleton, TR39's full table is mostly
irrelevant to English prose, and the letters that pass for Latin ones are few. The table is the
lowercase and uppercase Latin look-alikes of Unicode's confusables.txt (Cyrillic, Greek,
Armenian and a few IPA letters); NFKC already folds fullwidth and mathematical letters.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from membench_gate.model import metrics

# The reason ``bless`` drafts for a maintainer to replace (``--justification '<write the reason
# here>. Accepted changes: …'``): a text that still holds it, in any case, spacing or brackets, is
# a placeholder however long the rest is.
DRAFT_REASON = "<write the reason here>"
MIN_CHARS = 40
# A reason is a paragraph, not a log: past this, the fuzzy checks would take seconds.
MAX_CHARS = 4000
MIN_WORDS = 6
PLACEHOLDERS = (
    "n/a", "na", "none", "todo", "tbd", "wip", "lgtm", "ok", "fix", "fixes", "test", "asdf",
    "update baseline", "updated baseline", "baseline update", "new baseline", "bless",
    "bless baseline", "blessed", "regenerate baseline", "regenerated baseline", "refresh baseline",
    "accept regression", "accepted", "expected", "as expected", "intentional", "see pr",
    "see description", "see above", "whatever", "no reason", "because", "ignore", "placeholder",
)
# Marks that say the reason is still to be written: an uppercase marker of unfinished text anywhere
# ("… TODO: explain later"), one opening the text with a colon or a dash ("wip: …", "tbd - …"),
# "placeholder text/reason/for …" and lorem ipsum. A lowercase "todo list" or "placeholder pages"
# in a sentence is prose, and "XXX-large" a name.
_UNFINISHED = re.compile(r"(?<![\w-])(?:TODO|TBD|TBA|FIXME|XXX)(?![\w-])")
_UNFINISHED_FIRST = re.compile(r"\W*(?:todo|tbd|tba|fixme|wip)\s*[:\-\u2013\u2014]", re.IGNORECASE)
_UNFINISHED_ANYWHERE = re.compile(r"\bplaceholder\s+(?:text|reason|justification|for)\b|"
                                  r"\blorem\s+ipsum\b", re.IGNORECASE)
_PLACEHOLDER_RATIO = 85
_MENTION_RATIO = 90
_COPY_RATIO = 90
_COPY_MIN_CHARS = 20  # below this, "contains the base's text" says nothing

# Look-alike -> the Latin letter it imitates (pairs: look-alike, Latin).
_FOLD_PAIRS = (
    "аaɑaαa⍺aАAΑAвBВBΒBьbЬbƄbϲcсcᴄcСCϹCԁdԀDеeҽe℮eЕEΕEɡgցgһhհhНHΗHіiıiιiɩiІIΙIӀI"
    "јjϳjЈJκkкkΚKКKӏlⅼlΜMМMոnпnηnΝNоoοoօoᴏoОOΟOՕOрpρp⍴pРPΡPԛqգqгrᴦrѕsʂsЅSτtТTΤT"
    "υuսuʋuνvѵvԝwѡwхxχx×xХXΧXуyγyүyУYΥYᴢzΖZ"
)
_FOLD: dict[int, str] = {ord(_FOLD_PAIRS[i]): _FOLD_PAIRS[i + 1]
                         for i in range(0, len(_FOLD_PAIRS), 2)}
# The ligatures NFKC leaves whole ("ﬁ" is NFKC's; casefold spells ß as "ss"); a letter with a
# stroke ("ø", "ł", "đ") is read by its name (below).
_FOLD.update({ord(k): v for k, v in {"æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE"}.items()})
_ASCII_WORD = re.compile("[a-z0-9]+")  # what isalnum() keeps of lowercased ASCII
# Any other Latin letter is read as the plain one its name says it is — small capitals ("ʀ"),
# letters with a stroke, bar or hook ("ɇ", "ƀ"), insular or turned forms, and letters set in a
# circle, a square or parentheses ("🅦", "⒲", which NFKC leaves or spells "(w)") — and so are
# regional indicators, the e's that Unicode's names do not call one (schwa, epsilon, Coptic eie),
# and the Cherokee and Lisu capitals drawn as Latin ones.
_LATIN_NAME = re.compile(
    r"(?:(?:PARENTHESIZED|CIRCLED|SQUARED|NEGATIVE CIRCLED|NEGATIVE SQUARED|FULLWIDTH) )?"
    r"LATIN (?:(SMALL|CAPITAL) )?LETTER (?:SMALL CAPITAL |INSULAR |TURNED |REVERSED |OPEN |"
    r"CLOSED |SCRIPT |BLACKLETTER |LONG |DOTLESS )?([A-Z])(?: .+)?"
    r"|REGIONAL INDICATOR SYMBOL LETTER ([A-Z])")
_NAMED = {"LATIN SMALL LETTER SCHWA": "e", "LATIN CAPITAL LETTER SCHWA": "E",
          "GREEK SMALL LETTER EPSILON": "e", "GREEK CAPITAL LETTER EPSILON": "E",
          "CYRILLIC SMALL LETTER UKRAINIAN IE": "e", "CYRILLIC CAPITAL LETTER UKRAINIAN IE": "E",
          "CYRILLIC SMALL LETTER TE": "t", "CYRILLIC SMALL LETTER EN": "h",
          "COPTIC SMALL LETTER EIE": "e", "COPTIC CAPITAL LETTER EIE": "E",
          "COPTIC SMALL LETTER O": "o", "COPTIC CAPITAL LETTER O": "O"}
# Cherokee and Lisu letters that are drawn as Latin capitals (pairs: letter, Latin).
_SCRIPT_PAIRS = (
    "ᎠDᎡRᎢTᎥIᎪAᎬEᎳWᎻHᎷMᏀGᏚSᏃZᏟCᏢPᏦKᏞLᏙVᎾOᏁN"
    "ꓐBꓑPꓓDꓔTꓖGꓗKꓙJꓚCꓜZꓝFꓟMꓠNꓡLꓢSꓣRꓦVꓧHꓪWꓫXꓬYꓮAꓰEꓲIꓳOꓴU"
)
_NAMED.update({unicodedata.name(_SCRIPT_PAIRS[i]): _SCRIPT_PAIRS[i + 1]
               for i in range(0, len(_SCRIPT_PAIRS), 2)})
# Characters that show nothing yet are not format characters: Hangul fillers, the Arabic tatweel.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u0640")


class _Folding(dict[int, str]):
    """A translation table, and every other character looked up by its name on first use."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        name = unicodedata.name(char, "") if code > 0x7F else ""
        found = _LATIN_NAME.fullmatch(name)
        if found and found[3]:
            letter = found[3]
        elif found:
            letter = found[2] if found[1] == "CAPITAL" else found[2].lower()
        elif name in _NAMED:
            letter = _NAMED[name]
        elif char in _BLANK_LETTERS or unicodedata.category(char) in ("Cn", "Co"):
            letter = ""  # nothing a reader sees
        else:
            letter = char
        self[code] = letter
        return letter


_FOLD = _Folding(_FOLD)
_BY_NAME = _Folding()  # before NFKC: what it would spell otherwise ("⒲" as "(w)")


def fold(text: str) -> str:
    """Text as a reader sees it: NFKC, no marks or invisible characters, confusables folded to
    Latin, case folded."""
    if text.isascii():  # all of that is lowercasing for ASCII, a hundred thousand keys a check
        return text.lower()
    return _as_seen(text).casefold().translate(_FOLD)


def _as_seen(text: str) -> str:
    """NFKC, no marks or invisible characters, confusables folded to Latin; case kept."""
    text = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text.translate(_BY_NAME)))
    text = "".join(c for c in text if unicodedata.category(c) not in ("Mn", "Me", "Cf"))
    return text.translate(_FOLD)


def _norm(text: str) -> str:
    folded = fold(text)
    if folded.isascii():
        return " ".join(_ASCII_WORD.findall(folded))
    return " ".join("".join(c if c.isalnum() else " " for c in folded).split())


def _name_words(breach_keys: Iterable[str]) -> set[str]:
    """Words that are names — of the breaches, and of every metric and cell — not reasons."""
    names = [*breach_keys, *metrics.REGISTRY, *metrics.CELLS]
    return {word for name in names for word in _norm(name).split()}


def _without(text: str, names: set[str]) -> str:
    return " ".join(w for w in _norm(text).split() if w not in names)


@dataclass(frozen=True)
class JustificationCheck:
    """Outcome of the checks: ``ok`` and, if not, the first failed check in one line."""

    ok: bool
    failed: str | None = None


def breach_subject(key: str) -> tuple[str, str | None]:
    """The cell of a breach key and its metric or item (``veto/files_known:mrr`` → both). A
    cell's name holds neither ``#`` nor ``:`` (seams and conditions are plain names), but an
    item's id may hold both (LoCoMo's ``conv-26:q12``): the first ``#`` ends the cell of an
    item's key, and only a key without one is split at its first ``:``."""
    for sep in ("#", ":"):
        if sep in key:
            cell, _, what = key.partition(sep)
            return cell, what
    return key, None


def _fuzz() -> Any:
    """rapidfuzz's ``fuzz``, imported on first use: a check without justifications to judge
    never needs it."""
    from rapidfuzz import fuzz

    return fuzz


def mentions(text: str, needle: str) -> bool:
    """Does ``text`` name ``needle``, fuzzily (``net_at_1`` matches "NET at 1")?"""
    return _mentions_normed(_norm(text), _norm(needle))


def _mentions_normed(text_n: str, needle_n: str) -> bool:
    if not needle_n:
        return False
    if needle_n in text_n:
        return True
    return _fuzz().partial_ratio(needle_n, text_n) >= _MENTION_RATIO


def is_placeholder(text: str, names: set[str] | None = None) -> bool:
    """Does ``text`` say nothing but a stock phrase (names of metrics and cells set aside)?

    A text of too few words is not one for that alone: the word count says so, and rule 8 names
    the check that failed ("tau 0.6 net_at_1 abstention/default" is short of words, not a stock
    phrase)."""
    if _marked(text) or holds_draft(text):
        return True
    normalized = _without(text, names or set())
    # Padding a placeholder with repetitions ("update baseline update baseline …") stays one.
    stripped = f" {normalized} "
    for phrase in sorted(PLACEHOLDERS, key=len, reverse=True):
        said = f" {_norm(phrase)} "
        while said in stripped:  # (one pass leaves every other repeat: they share a space)
            stripped = stripped.replace(said, " ")
    if stripped.split() != normalized.split() and len(set(stripped.split())) < 3:
        return True
    return any(_fuzz().ratio(normalized, _norm(p)) >= _PLACEHOLDER_RATIO for p in PLACEHOLDERS)


# Brackets a template's blank is set in ("<…>", "[…]", "‹…›", "⟨…⟩", "˂…˃": Unicode's opening and
# closing punctuation and the arrowheads that pass for angle brackets).
_DRAFT_RATIO, _DRAFT_LOOSE_RATIO = 94, 85
_OPENING, _CLOSING = "<\u02c2\u2039", ">\u02c3\u203a"
# Read as the draft is looked for: what Markdown and HTML render to nothing or to another letter
# (an entity, a comment, emphasis marks), the digits and signs that pass for letters ("wr1te",
# "REAS0N", "WRlTE"), punctuation inside a word ("rea’son", "w·r·i·t·e"), bidirectional
# controls that show a reversed text the right way round.
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_EMPHASIS = str.maketrans("", "", "*_~`\\")
_LEET = str.maketrans("01l|3457$@", "oiiieastsa")
_INSIDE_WORD = re.compile(r"(?<=[^\W_])[^\w\s]+(?=[^\W_])")
_PHRASE_BREAK = re.compile(r"[^\w\s]+")
_BIDI = re.compile("[\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")
_DRAFT_WORDS = _norm(DRAFT_REASON).split()  # write, the, reason, here
_DRAFT_SQUEEZED = "".join(_DRAFT_WORDS)


def _bracket(char: str, opening: bool) -> bool:
    return char in (_OPENING if opening else _CLOSING) or \
        unicodedata.category(char) in (("Ps", "Pi") if opening else ("Pe", "Pf"))


def _draft_reading(text: str) -> str:
    text = _HTML_COMMENT.sub("", html.unescape(text)).translate(_EMPHASIS)
    return _INSIDE_WORD.sub("", fold(text).translate(_LEET))


# Scripts written without spaces between words: Han, Hiragana, Katakana.
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def _pieces(text: str) -> list[str]:
    """The words of ``text`` as the word count reads them: split at spaces, and a run of Chinese
    or Japanese characters, which has none, in pairs (a word of those is mostly one or two)."""
    out: list[str] = []
    for word in text.split():
        runs = _UNSPACED.findall(word)
        if not runs:
            out.append(word)
            continue
        rest = _UNSPACED.sub(" ", word).split()
        out += rest + [run[i:i + 2] for run in runs for i in range(0, len(run), 2)]
    return out


def holds_draft(text: str) -> bool:
    """Does ``text`` still hold :data:`DRAFT_REASON` as a reader would see it — in any case,
    spacing, brackets, look-alikes, entities or invisible characters, or a letter or two off
    ("<write teh reason here>", "<write the real reason here>" in brackets)?

    Its four words in a row within a phrase are the draft; a phrase a little off is, when it
    stands alone between stops, or a bracketed one starting with its w — a little more off
    beside the rest of the drafted text ("Accepted changes: …"). Never a sentence that
    only holds words like it ("after the rewrite, the reason here is …"), nor two phrases
    ("… the first write. The reason here is latency")."""
    if len(text) > 4 * MAX_CHARS:  # not read: rule 8 refuses it as too long, in a moment
        return False
    readings = [_draft_reading(text)]
    if _BIDI.search(text):
        readings.append(readings[0][::-1])
    # Beside the rest of the drafted text ("… Accepted changes: …"), any phrase is its slot.
    alone = _DRAFT_LOOSE_RATIO if "accepted changes" in " ".join(
        _PHRASE_BREAK.sub(" ", readings[0]).split()) else _DRAFT_RATIO
    count, fuzz = len(_DRAFT_WORDS), _fuzz()
    for seen in readings:
        bracketed: list[str] = []
        opened: int | None = None
        for at, char in enumerate(seen):
            if _bracket(char, opening=True):
                opened = at + 1
            elif opened is not None and _bracket(char, opening=False):
                bracketed.append(seen[opened:at])
                opened = None
        for phrase in _PHRASE_BREAK.split(seen):
            words = phrase.split()
            squeezed = "".join(words)
            if _DRAFT_SQUEEZED in squeezed and any(
                    words[i:i + count] == _DRAFT_WORDS for i in range(len(words))):
                return True
            if squeezed and fuzz.ratio(_DRAFT_SQUEEZED, squeezed) >= alone:
                return True
        for phrase in bracketed:
            squeezed = "".join(_PHRASE_BREAK.sub(" ", phrase).split())
            if squeezed.startswith("w") and \
                    fuzz.ratio(_DRAFT_SQUEEZED, squeezed) >= _DRAFT_LOOSE_RATIO:
                return True
    return False


def _marked(text: str) -> bool:
    """Is ``text`` marked as unfinished (see ``_UNFINISHED``)? Read as :func:`fold` reads it,
    invisible characters dropped and look-alikes folded, but with its case kept."""
    text = _as_seen(text)
    return bool(_UNFINISHED.search(text) or _UNFINISHED_FIRST.match(text)
                or _UNFINISHED_ANYWHERE.search(text))


def is_near_copy(text: str, base_text: str, names: set[str]) -> bool:
    """Is ``text`` the base's justification again — names swapped, text appended or cut?"""
    mine, theirs = _without(text, names), _without(base_text, names)
    if not mine or not theirs:
        return False
    fuzz = _fuzz()
    if fuzz.ratio(mine, theirs) >= _COPY_RATIO:
        return True
    shorter = min(len(mine), len(theirs))
    return shorter >= _COPY_MIN_CHARS and fuzz.partial_ratio(mine, theirs) >= _COPY_RATIO


def check_justification(text: str | None, breach_keys: Iterable[str],
                        base_text: str | None = None) -> JustificationCheck:
    """Run the rule-8 text checks in order and name the first that fails."""
    if text is None or not text.strip():
        return JustificationCheck(False, "no justification")
    keys = sorted(set(breach_keys))
    names = _name_words(keys)
    stripped = " ".join(text.split())
    if len(stripped) < MIN_CHARS:
        return JustificationCheck(False, f"too short: {len(stripped)} characters, need {MIN_CHARS}")
    if len(stripped) > MAX_CHARS:
        return JustificationCheck(False, f"too long: {len(stripped)} characters, at most "
                                         f"{MAX_CHARS} (a reason, not a log)")
    if is_placeholder(stripped, names):
        return JustificationCheck(False, "reads like a placeholder, not a reason")
    # A lone Latin letter, a bare number or one letter repeated is not a word: "a b c 1 2" and
    # "aaaa bbbb cccc" explain nothing. (Identifiers such as "p95" or "v2" count, and so does
    # every piece of a non-Latin script.)
    words = sum(1 for word in set(_pieces(_without(stripped, names)))
                if not word.isdigit() and not (len(word) == 1 and word.isascii())
                and not (len(word) > 1 and len(set(word)) == 1))
    if words < MIN_WORDS:
        return JustificationCheck(False, f"too short: {words} distinct word"
                                         f"{'' if words == 1 else 's'} besides metric, cell and "
                                         f"item names, need {MIN_WORDS}")
    missing = []
    text_n = _norm(stripped)
    named_in_text = functools.cache(lambda needle: _mentions_normed(text_n, _norm(needle)))
    for key in keys:
        cell, what = breach_subject(key)
        if not (named_in_text(cell) or (what is not None and named_in_text(what))):
            missing.append(key)
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        cell, what = breach_subject(missing[0])
        named = f"{what!r} or its cell {cell!r}" if what else f"the cell {cell!r}"
        return JustificationCheck(False, f"does not name {named}{more}")
    if base_text and is_near_copy(stripped, base_text, names):
        return JustificationCheck(False, "is a near-copy of the base baseline's justification")
    return JustificationCheck(True)
