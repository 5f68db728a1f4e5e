"""Shards: which items one job of a matrix scores (``run --shard I/N``).

An item belongs to shard ``int(sha256(suite + "/" + id).hexdigest(), 16) % N + 1``, where ``id``
is the item's id in its suite (a push turn is ``<conversation>.<turn>``, a gold slug of it
``<conversation>.<turn>#<slug>``: the two may fall in different shards) — with seams too: an
item is in the same shard for every seam, and each shard runs every seam on its items, so a cell
``<seam>/<suite>/<condition>`` merges as a two-part one does. The mapping depends on
nothing but the suite, the id and N: every job computes the same split without talking to the
others, an item keeps its shard when others are added or removed, and the N shards cover every
item exactly once. Each shard still ingests the whole corpus, so an item's answer is the one an
unsharded run gets (a push conversation, which starts from a reset, is skipped by a shard that
holds none of its items).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from membench_gate.errors import GateError

if TYPE_CHECKING:
    from membench_gate.suites.common.fixtures import SuiteFixtures

MAX_SHARDS = 1000


def shard_index(suite: str, item: str, count: int) -> int:
    """The 1-based shard of ``suite``'s item ``item`` among ``count`` shards."""
    digest = hashlib.sha256(f"{suite}/{item}".encode()).hexdigest()
    return int(digest, 16) % count + 1


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1 ≤ index ≤ count)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, suite: str, item: str) -> bool:
        return shard_index(suite, item, self.count) == self.index

    def restrict(self, suite: str, fixtures: SuiteFixtures) -> SuiteFixtures:
        """The fixtures with only this shard's items left to score (the corpus stays whole)."""
        return replace(fixtures, digests={item: d for item, d in fixtures.digests.items()
                                          if self.holds(suite, item)})


def parse_shard(text: str, label: str = "--shard") -> Shard:
    """``"I/N"`` with 1 ≤ I ≤ N ≤ 1000, else a one-line error naming ``label``."""
    index, sep, count = text.partition("/")
    if (sep and index.isascii() and count.isascii() and index.isdigit() and count.isdigit()
            and 1 <= int(index) <= int(count) <= MAX_SHARDS):
        return Shard(int(index), int(count))
    raise GateError(f"{label}: {text!r} is not a shard I/N with 1 <= I <= N <= {MAX_SHARDS}")
