"""The reference memory's embedder: tokens hashed with 32-bit FNV-1a into a fixed-size vector.

Lowercase, non-alphanumerics to spaces, tokens longer than 2 characters; each token hashed with
32-bit FNV-1a; +1.0 in bucket ``h % dims`` and +0.5 in bucket ``(h >> 8) % dims``; L2-normalised,
so cosine is a dot product.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193
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
