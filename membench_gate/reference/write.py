"""The reference memory's write path: what a conversation states, by rules (no model).

``extract(session, pages)`` keeps the sentences of a conversation that state something, attributed
to an entity and stamped with ``{source, session, turn}``; retractions take back what they correct.

Entities are resolved against the pages in the memory's store first: a sentence that names a page —
the words of its slug's last segment (``people/vada-tavenner`` → "vada tavenner",
``companies/widget-co`` → "widget co", also written "widget-co") or one of its aliases, ignoring
case, as whole words — is about that page's ``entity`` (the slug). When a sentence names several,
the earliest mention wins (the longer name on a tie, then the page stored first). A sentence naming
no page is attributed by the rules of :func:`_entity`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from membench_gate.adapter.types import Record, Session
from membench_gate.reference.embed import normalize_text, tokenize

_ABBREVIATIONS = ("dr.", "mr.", "mrs.", "ms.", "st.", "e.g.", "i.e.", "vs.", "etc.", "approx.")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_HYPOTHETICAL = re.compile(
    r"^(?:what if|if|suppose|supposing|imagine|assuming|hypothetically|let's say|say we|"
    r"in theory|in a world where)\b|\b(?:hypothetically|what if|would have|would've)\b"
)
_REPORTED = re.compile(
    r"\b(?:claims?|claimed|according to|heard that|rumou?rs?|supposedly|allegedly|apparently|"
    r"says that|said that)\b"
)
_QUOTES = ('"', "\u201c", "\u201d", "\u2018")
_RETRACTION = re.compile(
    r"^(?:scratch that|strike that|ignore that|never ?mind|i take (?:that|it) back|"
    r"forget what i (?:just )?said|correction|actually,? no|wait,? no|no,? wait)\b[\s,:;.!\u2014-]*"
)
_FIRST_PERSON = {"i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself"}
_THIRD_PERSON = {"he", "she", "they", "his", "her", "their", "he's", "she's", "they're"}
_NOT_NAMES = {
    "i", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
    "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "ok", "okay",
}
_FUNCTION_WORDS = {
    "a", "an", "the", "this", "that", "these", "those", "it", "its", "we", "our", "us", "you",
    "your", "there", "here", "and", "but", "so", "or", "also", "then", "yes", "no", "not", "let's",
    "lets", "please", "thanks", "sure", "great", "good", "sounds", "just", "everyone", "team",
    "for", "from", "on", "in", "at", "to", "by", "with", "after", "before", "since", "until",
    "when", "once", "all", "both", "one", "two", "next", "last", "every", "each", "some", "most",
    "noted", "agreed", "perfect", "right", "cool", "nice", "yeah", "hey", "hi", "hello", "oh",
    "strong", "decision", "action", "item", "note", "update", "fyi", "reminder", "root", "cause",
    "first", "second", "finally", "quick", "honestly", "actually", "apparently", "anyway",
} | _THIRD_PERSON
_MIN_TOKENS = 3  # embedder tokens: "Sounds good." and "Thanks!" state nothing


def sentences(text: str) -> list[str]:
    """Split a turn into sentences at ``. ! ?`` and line breaks, not after common abbreviations."""
    out: list[str] = []
    for piece in _SENTENCE_END.split(text.strip()):
        piece = piece.strip()
        if not piece:
            continue
        if out and out[-1].lower().endswith(_ABBREVIATIONS):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _words(sentence: str) -> list[str]:
    """Words without surrounding punctuation or a possessive ending ("Jordan's" → "Jordan")."""
    words = [w.strip(".,;:!?()[]\"\u201c\u201d\u2018\u2019") for w in sentence.split()]
    return [re.sub(r"['\u2019]s$", "", w) if w[:1].isupper() else w for w in words]


def _names(session: Session) -> dict[str, str]:
    """Known names: every speaker, by full name and by each part of it (lowercase → speaker)."""
    known: dict[str, str] = {}
    for turn in session.turns:
        known.setdefault(turn.speaker.lower(), turn.speaker)
        for part in turn.speaker.split():
            if part.lower() not in _NOT_NAMES:
                known.setdefault(part.lower(), turn.speaker)
    return known


PageNames = list[tuple[tuple[str, ...], str]]  # (a name's words, the page's entity)


def page_names(pages: Sequence[Record]) -> PageNames:
    """The names each page is mentioned by: its slug's last segment, as words, and its aliases,
    each with the page's entity (pages without an entity name nothing), in store order."""
    names: PageNames = []
    for page in pages:
        if not page.entity:
            continue
        for name in (page.entity.rsplit("/", 1)[-1].replace("_", " "), *page.aliases):
            words = tuple(normalize_text(name).split())
            if words and (words, page.entity) not in names:
                names.append((words, page.entity))
    return names


def _named_page(sentence: str, names: PageNames) -> str | None:
    """The entity of the page the sentence mentions earliest (whole words, ignoring case); on a
    tie the longer name, then the page stored first; None when it names none."""
    words = normalize_text(sentence).split()
    best: tuple[int, int, int] | None = None
    entity = None
    for order, (name, page) in enumerate(names):
        width = len(name)
        start = next((i for i in range(len(words) - width + 1)
                      if tuple(words[i:i + width]) == name), None)
        if start is not None and (best is None or (start, -width, order) < best):
            best, entity = (start, -width, order), page
    return entity


def _entity(sentence: str, speaker: str, known: dict[str, str], previous: str | None) -> str:
    """Who a sentence is about: the first, in word order, of a first-person word (the speaker), a
    known name, a leading he/she/they (the person talked about just before) or a capitalised word
    that is not a function word (a project, a place, someone not in the conversation); else the
    speaker."""
    for position, word in enumerate(_words(sentence)):
        lower = word.lower().replace("\u2019", "'")
        if lower in _FIRST_PERSON:
            return speaker
        if lower in known:
            return known[lower]
        if position == 0 and lower in _THIRD_PERSON and previous:
            return previous
        if word[:1].isupper() and word.isalpha() and lower not in _NOT_NAMES \
                and lower not in _FUNCTION_WORDS:
            return word
    return speaker


def _states_nothing(sentence: str) -> bool:
    """Questions, hypotheticals, quoted or hearsay claims, and chit-chat are not facts."""
    lower = sentence.lower().replace("\u2019", "'")
    return (sentence.endswith("?") or len(tokenize(sentence)) < _MIN_TOKENS
            or bool(_HYPOTHETICAL.search(lower)) or bool(_REPORTED.search(lower))
            or any(q in sentence for q in _QUOTES))


def _retract(kept: list[Record], speaker: str, correction: str) -> None:
    """Delete what a retraction takes back: among the speaker's memories from their latest turn
    that left any, the one sharing most words with the correction (the latest one on a tie)."""
    mine = [i for i, r in enumerate(kept) if r.meta["speaker"] == speaker]
    if not mine:
        return
    last_turn = kept[mine[-1]].meta["provenance"]["turn"]
    candidates = [i for i in mine if kept[i].meta["provenance"]["turn"] == last_turn]
    words = set(tokenize(correction))
    target = max(reversed(candidates), key=lambda i: len(words & set(tokenize(kept[i].text))))
    del kept[target]


def extract(session: Session, pages: Sequence[Record] = ()) -> list[Record]:
    """The reference write path: a conversation → the records it should leave behind, with the
    entities of ``pages`` (the pages in the store, of the session's source) to name them by.

    Rules, applied per sentence in order (no model, same input → same records):

    1. segment each turn into sentences (:func:`sentences`);
    2. a sentence opening with a retraction ("scratch that", "actually, no", "I take that back",
       "correction", …) deletes what it takes back (:func:`_retract`); what follows the cue is
       read as a sentence of its own;
    3. questions, hypotheticals ("if", "what if", "suppose", "imagine", "hypothetically", …),
       sentences with quotation marks or hearsay ("claims", "according to", "apparently", …) and
       sentences of fewer than three words of three letters are skipped;
    4. the rest is kept verbatim, attributed to an entity — the page it names
       (:func:`_named_page`), else :func:`_entity` — and stamped with the provenance
       ``{source, session, turn}``.
    """
    known = _names(session)
    names = page_names(pages)
    kept: list[Record] = []
    previous: str | None = None
    for turn in session.turns:
        for number, sentence in enumerate(sentences(turn.text), 1):
            retracts = False
            while cue := _RETRACTION.match(sentence.lower().replace("\u2019", "'")):
                retracts = True
                sentence = sentence[cue.end():].strip()
            if retracts:
                _retract(kept, turn.speaker, sentence)
                sentence = sentence[:1].upper() + sentence[1:]
            if not sentence or _states_nothing(sentence):
                continue
            entity = _named_page(sentence, names) or _entity(sentence, turn.speaker, known,
                                                             previous)
            if entity != turn.speaker:
                previous = entity
            kept.append(Record(
                id=f"{session.id}/{turn.id}/{number}", text=sentence, source=session.source,
                entity=entity, meta={
                    "speaker": turn.speaker,
                    "provenance": {"source": session.source, "session": session.id,
                                   "turn": turn.id},
                }))
    return kept
