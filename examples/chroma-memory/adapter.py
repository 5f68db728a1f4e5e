"""A memory backed by Chroma, the vector store, gated like any other (``pip install chromadb``).

The recipe for "bring your own vector store": keep the store, give it an embedding function that
is deterministic and offline, and make the ranking deterministic around it.

- Embeddings: a hashed bag of words (no model download, no network, identical on every machine).
  Swap in your real embedding function; keep it pinned and offline in CI.
- Sources: every record carries its ``source`` as metadata and every query filters on it, so one
  conversation's memories never answer another's.
- Ties: Chroma's HNSW index may return equal distances in any order — and, at the cut-off, any
  subset of them. So the adapter over-fetches, drops candidates that share nothing with the query,
  re-sorts by ``(score desc, id)`` and only then cuts to k. (``membench-gate doctor`` caught the
  version of this file that cut first.)
- Abstention: the best cosine similarity under ``tau`` abstains; the hits are returned anyway.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

import chromadb
from chromadb.config import Settings

from membench_gate import Answer, Hit, Query, Record

_WORD = re.compile(r"[^\W_]+")


class HashEmbedding(chromadb.EmbeddingFunction):
    """Deterministic bag-of-words embedding: each word of 3+ letters hashed into ``dims`` buckets."""

    def __init__(self, dims: int = 384) -> None:
        self.dims = dims

    def __call__(self, input: Sequence[str]) -> list[list[float]]:
        return [self.embed(text) for text in input]

    def embed(self, text: str) -> list[float]:
        vec = [0.0] * self.dims
        for word in _WORD.findall(text.lower()):
            if len(word) > 2:
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                vec[int.from_bytes(digest[:4], "little") % self.dims] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    @staticmethod
    def name() -> str:
        return "membench-hash-bow"


class ChromaMemory:
    def __init__(self, tau: float = 0.3, dims: int = 384) -> None:
        self.tau = tau
        self.embed = HashEmbedding(dims)
        self.client = chromadb.EphemeralClient(Settings(anonymized_telemetry=False,
                                                        allow_reset=True))
        self.reset()

    def reset(self) -> None:
        self.client.reset()
        self.collection = self.client.create_collection(
            "memory", embedding_function=self.embed, metadata={"hnsw:space": "cosine"})

    def ingest(self, records: list[Record]) -> None:
        if not records:
            return
        self.collection.add(
            ids=[r.id for r in records],
            documents=[r.text for r in records],
            metadatas=[{"source": r.source, "files": "\n".join(r.files)} for r in records],
        )

    def search(self, query: Query) -> Answer:
        found = self.collection.query(query_texts=[query.text], n_results=4 * query.k + 16,
                                      where={"source": query.source},
                                      include=["distances", "metadatas"])
        wanted = set(query.files)
        hits = []
        for ident, distance, meta in zip(found["ids"][0], found["distances"][0],
                                         found["metadatas"][0], strict=True):
            cosine = 1.0 - float(distance)
            files = set(filter(None, str(meta.get("files", "")).split("\n")))
            overlap = len(files & wanted) / len(wanted) if wanted else 0.0
            if cosine > 1e-9 or overlap > 0:  # a shared word or file, else not a candidate
                hits.append((round(0.7 * cosine + 0.3 * overlap, 9), cosine, ident))
        hits.sort(key=lambda h: (-h[0], h[2]))  # ties in one order, every time
        best = max((h[1] for h in hits), default=0.0)
        return Answer([Hit(ident, score) for score, _, ident in hits[: query.k]],
                      abstain=best < self.tau)
