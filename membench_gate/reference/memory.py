"""The reference memory: a small, real, deterministic memory system.

It is the embedded default adapter and the system this repository gates on its own pull requests.
Nothing here is special-cased by the suites: it is just another adapter.

- Hash embedder: lowercase, non-alphanumerics to spaces, tokens longer than 2 characters; each token
  hashed with 32-bit FNV-1a; +1.0 in bucket ``h % dims`` and +0.5 in bucket ``(h >> 8) % dims``;
  L2-normalised, so cosine is a dot product.
- Composite score (VetoBench's published 5-signal formula):
  ``0.32·cosine + 0.27·file_overlap + 0.18·recency + 0.13·relevance + 0.10·approval``.
- Abstains when the cosine of the best hit is below ``tau`` (``tau = 0`` turns the floor off).
- Write: ``write(session)`` keeps the sentences of a conversation that state something, attributed
  to an entity and stamped with ``{source, session, turn}`` (rules in :func:`extract`);
  each is stored like a record whose embedded text is prefixed with its entity, so a later question
  naming the person finds it. Hits carry ``text``, ``entity`` and ``provenance``.
- Lifecycle (``Record.meta`` ``status`` / ``superseded_by``), as RoBrain documents it: a superseded
  decision is demoted below every active one (still searchable: history stays queryable), and the
  vetoes it recorded that still stand are carried forward by its replacement — indexed with the
  replacement's text, so a task that invites an old veto finds the current decision. A veto counts
  as overturned (not carried) when the replacement's own text names the rejected option.
- Push: entity and alias mentions in the turn, exact first, then fuzzy (rapidfuzz) for weak aliases,
  misspellings and surname-only mentions; at most ``k`` ids; entities mentioned in earlier turns
  are suppressed.

Ranking a query is one matrix–vector product over the stored matrix (the columns of the query's
non-zero buckets: the product is the same, the rest of the matrix is zeros times zeros).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone
from itertools import chain

import numpy as np
from rapidfuzz import fuzz

from membench_gate.adapter.types import Answer, Hit, Query, Record, Session

FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193
WEIGHTS = {"cosine": 0.32, "file_overlap": 0.27, "recency": 0.18, "relevance": 0.13,
           "approval": 0.10}
HALF_LIFE_DAYS = 30.0
MAX_AGE_DAYS = 3650.0
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# Scores are rounded before ranking so that the last bits of a BLAS sum (which may differ between
# CPUs) cannot reorder two records that tie.
_RANK_DECIMALS = 9
# An active record's composite lies in [0, 1]: subtracting 1 ranks a superseded one after all of them.
SUPERSEDED_DEMOTION = 1.0


def fnv1a_32(data: bytes) -> int:
    """32-bit FNV-1a: the definition, one token at a time (:func:`_hash_words` hashes a batch)."""
    h = FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFF
    return h


# ``\w`` is ``str.isalnum()`` or ``_``: this replaces exactly the characters that are not
# alphanumeric, one space each, in C rather than a Python loop over every character.
_NON_ALNUM = re.compile(r"[\W_]")
# The tokens of the normalised text are its maximal runs of alphanumerics: found in one C-level
# scan, without building the normalised string and splitting it.
_TOKEN = re.compile(r"[^\W_]{3,}")
# The same for ASCII text, byte by byte: letters lowercased, digits and letters kept, every other
# byte a space (``bytes.translate``, then ``bytes.split``).
_ASCII_WORDS = bytes(
    byte | 0x20 if 0x41 <= byte <= 0x5A else byte if chr(byte).isalnum() and byte < 0x80 else 0x20
    for byte in range(256)
)
# Between the texts of a batch, tokenised as one string. ``\x00`` is not alphanumeric, so no
# text's words contain it (a batch whose texts do is tokenised text by text).
_ASCII_WORDS_AND_SEPARATOR = b"\x00" + _ASCII_WORDS[1:]
# Tokens up to this long are hashed together, byte position by byte position; longer ones (a
# checksum, a pasted blob) one by one, so that one very long token costs no more than its bytes.
_BATCH_HASH_MAX = 64
# Rows embedded per step (dims × rows cells): small enough for the step's scratch arrays to stay
# in cache, so the matrix itself is written once.
_STEP_CELLS = 1 << 16


def normalize_text(text: str) -> str:
    """Lowercase, every non-alphanumeric character to a space."""
    return _NON_ALNUM.sub(" ", text.lower())


def tokenize(text: str) -> list[str]:
    """Tokens of the embedder: the words of :func:`normalize_text` longer than 2 characters."""
    return _TOKEN.findall(text.lower())


def _word_bytes(text: str) -> bytes:
    """The text's words as UTF-8, separated by spaces; ASCII words of 1-2 letters left in."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS)
    return b" ".join(token.encode("utf-8") for token in tokenize(text))


def _batch_bytes(texts: Sequence[str]) -> bytes:
    """The words of all ``texts`` (see :func:`_word_bytes`), the texts separated by ``\x00``."""
    joined = " \x00 ".join(texts)
    if joined.isascii() and joined.count("\x00") == len(texts) - 1:
        return joined.encode("ascii").translate(_ASCII_WORDS_AND_SEPARATOR)
    return b" \x00 ".join(map(_word_bytes, texts))


def _hash_words(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Where each token of ``data`` starts, and its FNV-1a hash: the tokens are the runs of bytes
    above the space (``\x00`` and spaces separate them) longer than 2 bytes.

    The tokens are hashed together, byte position by byte position, longest first so that the
    tokens still going on at position j are a prefix: a few array operations per position instead
    of a Python loop over every byte.
    """
    data_bytes = np.frombuffer(data, dtype=np.uint8)
    inside = np.zeros(len(data_bytes) + 2, dtype=bool)
    np.greater(data_bytes, 0x20, out=inside[1:-1])
    edges = np.flatnonzero(inside[1:] != inside[:-1])
    starts, lengths = edges[0::2], edges[1::2] - edges[0::2]
    long = lengths > 2
    starts, lengths = starts[long], lengths[long]
    hashes = np.full(len(starts), FNV_OFFSET, dtype=np.uint32)
    batch = np.flatnonzero(lengths <= _BATCH_HASH_MAX)
    order = batch[np.argsort(-lengths[batch])]
    at = starts[order]
    going = np.searchsorted(-lengths[order], -np.arange(int(lengths[order].max(initial=0))),
                            "left")
    batch_hashes = hashes[order]
    for position, count in enumerate(going.tolist()):
        head = batch_hashes[:count]
        head ^= data_bytes[at[:count] + position]
        head *= np.uint32(FNV_PRIME)  # modulo 2**32, as unsigned arithmetic wraps
    hashes[order] = batch_hashes
    for i in np.flatnonzero(lengths > _BATCH_HASH_MAX).tolist():
        hashes[i] = fnv1a_32(data[starts[i]:starts[i] + lengths[i]])
    return starts, hashes


class HashEmbedder:
    """Deterministic bag-of-words embedder with two hashed buckets per token.

    Texts are tokenised and hashed a batch at a time with array operations (see
    :func:`_hash_words`): no Python work per token.
    """

    def __init__(self, dims: int = 512) -> None:
        if dims < 2:
            raise ValueError("dims must be at least 2")
        self.dims = dims

    def embed(self, text: str) -> np.ndarray:
        _, hashes = _hash_words(_word_bytes(text))
        hashes = hashes.astype(np.intp)
        # Counts of 1.0 and 0.5 are exact in any order.
        vec = np.bincount(hashes % self.dims, minlength=self.dims) \
            + 0.5 * np.bincount((hashes >> 8) % self.dims, minlength=self.dims)
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The token count of each text and the hashes of all their tokens, in order: what
        :meth:`fill` needs, 4 bytes a token, far less than the rows it will become."""
        lengths = np.empty(len(texts), dtype=np.intp)
        parts = [np.empty(0, dtype=np.uint32)]
        step = 4096  # texts tokenised at a time
        for start in range(0, len(texts), step):
            chunk = texts[start:start + step]
            data = _batch_bytes(chunk)
            starts, hashes = _hash_words(data)
            separators = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0)
            text = np.searchsorted(separators, starts)  # separators before a token: its text
            lengths[start:start + len(chunk)] = np.bincount(text, minlength=len(chunk))
            parts.append(hashes)
        return lengths, np.concatenate(parts)

    def fill(self, out: np.ndarray, lengths: np.ndarray, hashes: np.ndarray) -> None:
        """Write the embeddings of texts given by :meth:`tokens` into ``out`` (``dims × texts``:
        one text a column, possibly a strided view of a larger matrix).

        Rows are counted with ``np.bincount``: the sums are of 1.0s and 0.5s, exact in any order,
        and so is each squared norm, so the result is bit for bit that of :meth:`embed`'s rules
        whatever the order of work. Each step is computed in a small block and copied into
        ``out`` once.
        """
        dims = self.dims
        step = max(1, _STEP_CELLS // dims)
        ends = np.cumsum(lengths)
        for row in range(0, len(lengths), step):
            count = min(step, len(lengths) - row)
            first_token = int(ends[row - 1]) if row else 0
            h = hashes[first_token:int(ends[row + count - 1])].astype(np.intp)
            owner = np.repeat(np.arange(count, dtype=np.intp), lengths[row:row + count])
            block = np.bincount((h >> 8) % dims * count + owner, minlength=dims * count) * 0.5
            block += np.bincount(h % dims * count + owner, minlength=dims * count)
            block = block.reshape(dims, count)
            norms = np.sqrt(np.einsum("ij,ij->j", block, block))
            np.divide(block, norms, out=block, where=norms > 0)
            out[:, row:row + count] = block

    def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, column-major (ranking reads a query's columns)."""
        columns = np.empty((self.dims, len(texts)), dtype=np.float64)
        self.fill(columns, *self.tokens(texts))
        return columns.T


def _days(moment: datetime | None) -> float:
    if moment is None:
        return float("nan")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH).total_seconds() / 86400.0


def _meta(record: Record, key: str) -> object:
    meta = record.meta
    return meta.get(key) if isinstance(meta, dict) or hasattr(meta, "get") else None


def _rejected(record: Record) -> list[str]:
    options = _meta(record, "rejected")
    return [o for o in options if isinstance(o, str)] if isinstance(options, list) else []


def _kth_largest_bound(values: np.ndarray, k: int, width: int = 64) -> float:
    """A lower bound of the k-th largest of ``values``: the k-th largest of the maxima of blocks
    of ``width`` (k blocks hold a value at least that large). -inf when there are fewer blocks
    than k. Reading the array once in C, it spares a partition of the whole array per query."""
    whole = len(values) // width * width
    maxima = values[:whole].reshape(-1, width).max(axis=1)
    if whole < len(values):
        maxima = np.append(maxima, values[whole:].max())
    if len(maxima) < k:
        return -np.inf
    return float(np.partition(maxima, len(maxima) - k)[len(maxima) - k])


class ReferenceMemory:
    """The embedded reference memory system (see the module docstring).

    Options (``[adapter.options]``): ``dims`` (embedding size), ``tau`` (abstention floor on the
    best hit's cosine; 0 = off), ``fuzzy_threshold`` (rapidfuzz ratio, 0–100, for weak mentions).
    """

    def __init__(self, dims: int = 512, tau: float = 0.0, fuzzy_threshold: float = 85.0) -> None:
        if not 0.0 <= tau <= 1.0:
            raise ValueError("tau must be between 0 and 1")
        self.embedder = HashEmbedder(dims)
        self.tau = float(tau)
        self.fuzzy_threshold = float(fuzzy_threshold)
        self.reset()

    # -- storage ---------------------------------------------------------------------------------

    def reset(self) -> None:
        self._records: list[Record] = []
        self._matrix = np.zeros((0, self.embedder.dims), dtype=np.float64, order="F")
        # Batches not yet in the matrix, as token numbers (see HashEmbedder.tokens), and rows to
        # embed from another text than the stored one (lifecycle re-indexing).
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._reindex: dict[int, str] = {}
        self._source_codes: dict[str, int] = {}
        self._sources = np.array([], dtype=np.int32)
        self._created = np.array([], dtype=np.float64)
        self._static = np.array([], dtype=np.float64)  # relevance and approval terms
        self._file_index: dict[str, list[int]] = {}
        self._demotion = np.array([], dtype=np.float64)
        self._lifecycle = False
        # Relevance values so large or non-finite that a composite may overflow: ranking then
        # scores every record of the source (see search).
        self._extreme = False

    def ingest(self, records: Sequence[Record]) -> None:
        self._store(records, [r.text for r in records])

    def _store(self, records: Sequence[Record], texts: Sequence[str]) -> None:
        """Add ``records``, embedding ``texts`` (their text, or more: see :meth:`write`)."""
        if not records:
            return
        start = len(self._records)
        self._records.extend(records)
        # The gate sends a corpus in batches: a batch is kept as token numbers (a few bytes a
        # token) and all join the matrix at the next search, each row written once, so ingesting
        # n records costs O(n) and no more memory than the matrix and those numbers.
        self._pending.append(self.embedder.tokens(texts))
        sources = [r.source for r in records]
        codes = self._source_codes
        for source in dict.fromkeys(sources):
            codes.setdefault(source, len(codes))
        self._sources = np.concatenate([
            self._sources,
            np.fromiter(map(codes.__getitem__, sources), dtype=np.int32, count=len(records)),
        ])
        self._created = np.concatenate(
            [self._created, np.array([_days(r.created_at) for r in records])]
        )
        # Element-wise, the same double arithmetic as ``0.13 * relevance + 0.10 * approval``.
        static = (
            WEIGHTS["relevance"] * np.array([float(r.relevance or 0.0) for r in records])
            + WEIGHTS["approval"] * np.array([r.reviewed_at is not None for r in records],
                                             dtype=np.float64)
        )
        self._static = np.concatenate([self._static, static])
        self._extreme = self._extreme or not bool(np.all(np.abs(static) < 1e300))
        for offset, record in enumerate(records):
            for path in set(record.files):
                self._file_index.setdefault(path, []).append(start + offset)
        self._demotion = np.concatenate([self._demotion, np.zeros(len(records))])
        if self._lifecycle or any(_meta(r, "status") or _meta(r, "superseded_by")
                                  for r in records if r.meta):
            self._lifecycle = True
            self._apply_lifecycle()

    def _apply_lifecycle(self) -> None:
        """Demote superseded records; re-index each replacement with its inherited vetoes.

        Recomputed from the records' own texts after every ingest, so the order in which a
        decision and its replacement arrive does not matter.
        """
        position = {r.id: i for i, r in enumerate(self._records)}
        replaced: dict[str, list[int]] = {}
        for i, record in enumerate(self._records):
            superseded = _meta(record, "status") == "superseded"
            self._demotion[i] = SUPERSEDED_DEMOTION if superseded else 0.0
            successor = _meta(record, "superseded_by")
            if superseded and isinstance(successor, str):
                replaced.setdefault(successor, []).append(i)
        for successor, direct in replaced.items():
            target = position.get(successor)
            if target is None or _meta(self._records[target], "status") == "superseded":
                continue
            current = self._records[target]
            own = normalize_text(current.text).split()
            carried: list[str] = []
            queue, seen = list(direct), set(direct)
            while queue:
                old = self._records[queue.pop(0)]
                for option in _rejected(old):
                    overturned = all(tok in own for tok in normalize_text(option).split())
                    if not overturned and option not in carried and option not in _rejected(current):
                        carried.append(option)
                for nxt in replaced.get(old.id, ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        queue.append(nxt)
            self._reindex[target] = " ".join([current.text, *carried])

    # -- search ----------------------------------------------------------------------------------

    def _settle(self) -> None:
        """Build the matrix: earlier rows copied once, pending batches embedded in place."""
        if self._pending:
            old = self._matrix
            # Column-major: a query touches only the buckets of its own tokens, so ranking reads
            # those columns of the stored matrix and nothing else. ``columns`` is its transpose,
            # C-ordered: one bucket a row.
            columns = np.empty((self.embedder.dims, len(self._records)), dtype=np.float64)
            columns[:, :len(old)] = old.T
            row = len(old)
            del old
            self._matrix = columns.T
            for lengths, numbers in self._pending:
                self.embedder.fill(columns[:, row:row + len(lengths)], lengths, numbers)
                row += len(lengths)
            self._pending = []
        for row, text in self._reindex.items():
            self._matrix[row, :] = self.embedder.embed(text)
        self._reindex = {}

    def search(self, query: Query) -> Answer:
        """Rank the records of the query's source by the composite score, best first.

        Every step that decides a score is the same arithmetic, on the same numbers, as scoring
        every record in full (``tests/unit/reference/test_memory.py`` holds that straightforward
        version and compares scores bit for bit): the cosines are one matrix–vector product over the
        query's columns; the composite, ``0.32·cosine + static − demotion + 0.27·overlap +
        0.18·recency``, is summed in that order; scores are rounded to 9 decimals to rank, ties
        kept in insertion order, and each hit reports its rounded score. What is saved is work
        whose result cannot matter: file overlap is added only where it is not zero, and
        recency — the last term, between 0 and 0.18 — is computed only for records whose score
        without it, plus 0.18, can still round to a top-k score (the bound is the k-th largest
        score without it, see :func:`_kth_largest_bound`).
        """
        code = self._source_codes.get(query.source)
        if not self._records or query.k <= 0 or code is None:
            return Answer(hits=[], abstain=True)
        self._settle()
        vector = self.embedder.embed(query.text)
        buckets = np.flatnonzero(vector)
        cosine = self._matrix[:, buckets] @ vector[buckets]
        partial = np.multiply(cosine, WEIGHTS["cosine"])
        partial += self._static
        if self._lifecycle:
            partial -= self._demotion
        files = set(query.files)
        if files:
            touched = [self._file_index[path] for path in files if path in self._file_index]
            if touched:
                rows, shared = np.unique(np.fromiter(chain.from_iterable(touched), np.intp),
                                         return_counts=True)
                partial[rows] += WEIGHTS["file_overlap"] * np.minimum(1.0, shared / len(files))
        allowed = self._sources == code if len(self._source_codes) > 1 else None
        recency_max = WEIGHTS["recency"] if query.as_of is not None else 0.0
        candidates = None
        if not self._extreme:
            ranked = partial if allowed is None else np.where(allowed, partial, -np.inf)
            bound = _kth_largest_bound(ranked, query.k)
            if bound > -np.inf:
                upper = ranked + recency_max if recency_max else ranked
                candidates = np.flatnonzero(np.round(upper, _RANK_DECIMALS)
                                            >= np.round(bound, _RANK_DECIMALS))
        if candidates is None:
            candidates = np.flatnonzero(allowed) if allowed is not None else np.arange(len(partial))
        composite = partial[candidates]
        if query.as_of is not None:
            age = np.clip(_days(query.as_of) - self._created[candidates], 0.0, MAX_AGE_DAYS)
            recency = np.where(np.isnan(age), 0.0, 0.5 ** (age / HALF_LIFE_DAYS))
            composite += WEIGHTS["recency"] * recency
        finite = np.isfinite(composite)
        if not finite.all():
            candidates, composite = candidates[finite], composite[finite]
        if candidates.size == 0:
            return Answer(hits=[], abstain=True)
        rounded = np.round(composite, _RANK_DECIMALS)
        k = min(query.k, candidates.size)
        # Keep every record tied with the k-th best, then order by (score desc, insertion).
        kth = -np.partition(-rounded, k - 1)[k - 1]
        keep = np.flatnonzero(rounded >= kth)
        order = keep[np.lexsort((candidates[keep], -rounded[keep]))][:k]
        # The score a hit is ranked by is the score it reports: two records whose scores round
        # to the same value are ranked by insertion, and so reported as tied, never out of order.
        hits = [self._hit(int(candidates[j]), float(rounded[j])) for j in order]
        abstain = bool(cosine[candidates[order[0]]] < self.tau)
        return Answer(hits=hits, abstain=abstain)

    def _hit(self, index: int, score: float) -> Hit:
        record = self._records[index]
        provenance = record.meta.get("provenance")
        return Hit(record.id, score, text=record.text, entity=record.entity,
                   provenance=dict(provenance) if isinstance(provenance, dict) else None)

    # -- write -----------------------------------------------------------------------------------

    def write(self, session: Session) -> None:
        """Keep what the conversation states (see :func:`extract`), each memory embedded with its
        entity's name in front so that a question naming the person finds it."""
        records = extract(session)
        self._store(records, [f"{r.entity} {r.text}" for r in records])

    # -- push ------------------------------------------------------------------------------------

    def _names(self, record: Record) -> list[list[str]]:
        names = [record.entity.replace("-", " ").replace("_", " ")] if record.entity else []
        names += list(record.aliases)
        return [toks for toks in (normalize_text(n).split() for n in names) if toks]

    def _mention(self, record: Record, tokens: list[str], text: str) -> float:
        """1.0 for an exact name/alias mention, the fuzzy score (0–1) for a weak one, else 0."""
        names = self._names(record)
        for name in names:
            width = len(name)
            if any(tokens[i:i + width] == name for i in range(len(tokens) - width + 1)):
                return 1.0
        best = 0.0
        for name in names:
            if len(name) > 1:
                # A whole multi-word name, slightly misspelled ("Elana Ruiz").
                best = max(best, fuzz.partial_ratio(" ".join(name), text))
            # Surname-only or misspelled single names: compare significant name tokens one by one.
            # The first token of a multi-word name is skipped: first names alone are too common.
            for part in name[1:] if len(name) > 1 else name:
                if len(part) >= 4:
                    best = max(best, max((fuzz.ratio(part, tok) for tok in tokens if len(tok) >= 3),
                                         default=0.0))
        return best / 100.0 if best >= self.fuzzy_threshold else 0.0

    def _mentioned(self, text: str, candidates: list[Record]) -> dict[str, float]:
        normalized = normalize_text(text)
        tokens = normalized.split()
        found = {}
        for record in candidates:
            score = self._mention(record, tokens, normalized)
            if score > 0:
                found[record.id] = score
        return found

    def push(self, query: Query) -> list[str]:
        candidates = [r for r in self._records if r.entity and r.source == query.source]
        if not candidates or query.k <= 0:
            return []
        already: set[str] = set()
        for earlier in query.context:
            already.update(self._mentioned(earlier, candidates))
        found = self._mentioned(query.text, [r for r in candidates if r.id not in already])
        ranked = sorted(found.items(), key=lambda item: (-item[1], item[0]))
        return [ident for ident, _ in ranked[:query.k]]


# -- the write path: rules, no model ------------------------------------------------------------

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


def extract(session: Session) -> list[Record]:
    """The reference write path: a conversation → the records it should leave behind.

    Rules, applied per sentence in order (no model, same input → same records):

    1. segment each turn into sentences (:func:`sentences`);
    2. a sentence opening with a retraction ("scratch that", "actually, no", "I take that back",
       "correction", …) deletes what it takes back (:func:`_retract`); what follows the cue is
       read as a sentence of its own;
    3. questions, hypotheticals ("if", "what if", "suppose", "imagine", "hypothetically", …),
       sentences with quotation marks or hearsay ("claims", "according to", "apparently", …) and
       sentences of fewer than three words of three letters are skipped;
    4. the rest is kept verbatim, attributed to an entity (:func:`_entity`) and stamped with the
       provenance ``{source, session, turn}``.
    """
    known = _names(session)
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
            entity = _entity(sentence, turn.speaker, known, previous)
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
