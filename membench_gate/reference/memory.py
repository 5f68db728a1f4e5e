"""The reference memory: a small, real, deterministic memory system.

It is the embedded default adapter and the system this repository gates on its own pull requests.
Nothing here is special-cased by the suites: it is just another adapter.

- Hash embedder (:mod:`membench_gate.reference.embed`): lowercase, non-alphanumerics to spaces,
  tokens longer than 2 characters; each token hashed with 32-bit FNV-1a; +1.0 in bucket
  ``h % dims`` and +0.5 in bucket ``(h >> 8) % dims``; L2-normalised, so cosine is a dot product.
- Composite score (VetoBench's published 5-signal formula):
  ``0.32·cosine + 0.27·file_overlap + 0.18·recency + 0.13·relevance + 0.10·approval``.
- Abstains when the cosine of the best hit is below ``tau`` (``tau = 0`` turns the floor off).
- Write (:mod:`membench_gate.reference.write`): ``write(session)`` keeps the sentences of a
  conversation that state something, attributed to an entity — the page of the session's source
  in the store that the sentence names (slug words or alias), else by the speaker rules — and
  stamped with ``{source, session, turn}`` (rules in :func:`extract`); each is stored like a
  record whose embedded text is prefixed with its entity, so a later question naming the person
  finds it.
  Hits carry ``text``, ``entity`` and ``provenance``.
- Lifecycle (``Record.meta`` ``status`` / ``superseded_by``), as RoBrain documents it: a superseded
  decision is demoted below every active one (still searchable: history stays queryable), and the
  vetoes it recorded that still stand are carried forward by its replacement — indexed with the
  replacement's text, so a task that invites an old veto finds the current decision. A veto counts
  as overturned (not carried) when the replacement's own text names the rejected option.
- Push: entity and alias mentions in the turn, exact first, then fuzzy (rapidfuzz) for weak aliases,
  misspellings and surname-only mentions; at most ``k`` ids; entities mentioned in earlier turns
  (``Query.context``, which holds assistant turns too: a page the assistant just recalled is not
  pushed again) are suppressed.

Ranking a query is one matrix–vector product over the stored matrix (the columns of the query's
non-zero buckets: the product is the same, the rest of the matrix is zeros times zeros).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from itertools import chain

import numpy as np
from rapidfuzz import fuzz

from membench_gate.adapter.types import Answer, Hit, Query, Record, Session
from membench_gate.reference.embed import HashEmbedder, normalize_text
from membench_gate.reference.write import extract

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
        self._pages: list[Record] = []
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
        # Ingested records with an entity are pages: the names a later write resolves entities by.
        self._pages.extend(r for r in records if r.entity)

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
        """Keep what the conversation states (see :func:`extract`, with the pages of the
        session's source in the store), each memory embedded with its entity's name in front so
        that a question naming the person finds it."""
        records = extract(session, [p for p in self._pages if p.source == session.source])
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
