"""Small helpers every suite's scorer uses to record its items."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from membench_gate.adapter.types import Hit


def hit_list(hits: Sequence[Hit], k: int) -> list[dict[str, Any]]:
    """The ranked hits an item records (the top ``k``, best first), so ``membench-gate show``
    can say what came back instead of the gold."""
    return [{"id": hit.id, "score": hit.score} for hit in hits[:k]]


def outcome(passed: bool) -> str:
    return "pass" if passed else "fail"


def ratio(part: float, whole: float) -> float:
    return part / whole if whole else 0.0
