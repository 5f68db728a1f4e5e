"""The reference memory: a small, real, deterministic memory system.

It is the embedded default adapter and the system this repository gates on its own pull requests.
Nothing here is special-cased by the suites: it is just another adapter.

- Hash embedder: lowercase, non-alphanumerics to spaces, tokens longer than 2 characters; each token
  hashed with 32-bit FNV-1a; +1.0 in bucket ``h % dims`` and +0.5 in bucket ``(h >> 8) % dims``;
  L2-normalised, so cosine is a dot product.
- Composite score (VetoBench's published 5-signal formula):
  ``0.32·cosine + 0.27·file_overlap + 0.18·recency + 0.13·relevance + 0.10·approval``.
- Abstains when the cosine of the best hit is below ``tau`` (``tau = 0`` turns the floor off).
- Push: entity and alias mentions in the turn, exact first, then fuzzy (rapidfuzz) for weak aliases,
  misspellings and surname-only mentions; at most ``k`` ids; entities mentioned in earlier turns
  are suppressed.

Ranking a query is one matrix–vector product over the stored matrix (the columns of the query's
non-zero buckets: the product is the same, the rest of the matrix is zeros times zeros).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

import numpy as np
from rapidfuzz import fuzz

from membench_gate.adapter import Answer, Hit, Query, Record

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


def fnv1a_32(data: bytes) -> int:
    """32-bit FNV-1a."""
    h = FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFF
    return h


def normalize_text(text: str) -> str:
    """Lowercase, every non-alphanumeric character to a space."""
    return "".join(ch if ch.isalnum() else " " for ch in text.lower())


def tokenize(text: str) -> list[str]:
    """Tokens of the embedder: longer than 2 characters."""
    return [tok for tok in normalize_text(text).split() if len(tok) > 2]


class HashEmbedder:
    """Deterministic bag-of-words embedder with two hashed buckets per token."""

    def __init__(self, dims: int = 512) -> None:
        if dims < 2:
            raise ValueError("dims must be at least 2")
        self.dims = dims
        self._buckets: dict[str, tuple[int, int]] = {}

    def buckets(self, token: str) -> tuple[int, int]:
        cached = self._buckets.get(token)
        if cached is None:
            h = fnv1a_32(token.encode("utf-8"))
            cached = (h % self.dims, (h >> 8) % self.dims)
            self._buckets[token] = cached
        return cached

    def embed(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dims, dtype=np.float64)
        for token in tokenize(text):
            first, second = self.buckets(token)
            vec[first] += 1.0
            vec[second] += 0.5
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, column-major (ranking reads a query's columns)."""
        rows: list[int] = []
        cols: list[int] = []
        for row, text in enumerate(texts):
            for token in tokenize(text):
                rows += (row, row)
                cols += self.buckets(token)
        matrix = np.zeros((len(texts), self.dims), dtype=np.float64, order="F")
        # 1.0 and 0.5 add exactly in any order: the matrix is the same on every machine.
        weights = np.tile([1.0, 0.5], len(rows) // 2)
        np.add.at(matrix, (np.array(rows, dtype=np.intp), np.array(cols, dtype=np.intp)), weights)
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        return matrix


def _days(moment: datetime | None) -> float:
    if moment is None:
        return float("nan")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH).total_seconds() / 86400.0


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
        self._matrix = np.zeros((0, self.embedder.dims), dtype=np.float64)
        self._ids = np.array([], dtype=object)
        self._sources = np.array([], dtype=object)
        self._created = np.array([], dtype=np.float64)
        self._static = np.array([], dtype=np.float64)  # relevance and approval terms
        self._file_index: dict[str, list[int]] = {}
        self._file_counts: dict[str, int] = {}

    def ingest(self, records: Sequence[Record]) -> None:
        if not records:
            return
        start = len(self._records)
        self._records.extend(records)
        # Column-major: a query touches only the buckets of its own tokens, so ranking reads those
        # columns of the stored matrix and nothing else.
        added = self.embedder.embed_many([r.text for r in records])
        self._matrix = added if start == 0 else np.asfortranarray(np.vstack([self._matrix, added]))
        self._ids = np.concatenate([self._ids, np.array([r.id for r in records], dtype=object)])
        self._sources = np.concatenate(
            [self._sources, np.array([r.source for r in records], dtype=object)]
        )
        self._created = np.concatenate(
            [self._created, np.array([_days(r.created_at) for r in records])]
        )
        static = np.array([
            WEIGHTS["relevance"] * float(r.relevance or 0.0)
            + WEIGHTS["approval"] * (1.0 if r.reviewed_at is not None else 0.0)
            for r in records
        ])
        self._static = np.concatenate([self._static, static])
        for offset, record in enumerate(records):
            for path in set(record.files):
                self._file_index.setdefault(path, []).append(start + offset)

    # -- search ----------------------------------------------------------------------------------

    def scores(self, query: Query) -> tuple[np.ndarray, np.ndarray]:
        """Composite scores and cosines of every stored record for ``query`` (-inf: excluded)."""
        vector = self.embedder.embed(query.text)
        buckets = np.flatnonzero(vector)
        cosine = self._matrix[:, buckets] @ vector[buckets]
        composite = WEIGHTS["cosine"] * cosine + self._static
        files = set(query.files)
        if files:
            overlap = np.zeros(len(self._records))
            for path in files:
                indices = self._file_index.get(path)
                if indices:
                    np.add.at(overlap, indices, 1.0)
            composite += WEIGHTS["file_overlap"] * np.minimum(1.0, overlap / len(files))
        if query.as_of is not None:
            age = np.clip(_days(query.as_of) - self._created, 0.0, MAX_AGE_DAYS)
            recency = np.where(np.isnan(age), 0.0, 0.5 ** (age / HALF_LIFE_DAYS))
            composite += WEIGHTS["recency"] * recency
        composite = np.where(self._sources == query.source, composite, -np.inf)
        return composite, cosine

    def search(self, query: Query) -> Answer:
        if not self._records or query.k <= 0:
            return Answer(hits=[], abstain=True)
        composite, cosine = self.scores(query)
        allowed = np.flatnonzero(np.isfinite(composite))
        if allowed.size == 0:
            return Answer(hits=[], abstain=True)
        rounded = np.round(composite[allowed], _RANK_DECIMALS)
        k = min(query.k, allowed.size)
        if k < allowed.size:
            # Keep every record tied with the k-th best, then order by (score desc, insertion).
            kth = -np.partition(-rounded, k - 1)[k - 1]
            keep = np.flatnonzero(rounded >= kth)
        else:
            keep = np.arange(allowed.size)
        order = keep[np.lexsort((allowed[keep], -rounded[keep]))][:k]
        top = allowed[order]
        hits = [Hit(str(self._ids[i]), float(composite[i])) for i in top]
        abstain = bool(cosine[top[0]] < self.tau)
        return Answer(hits=hits, abstain=abstain)

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
