"""JSON-like documents for property tests of the canonical writers, and how to compare a fast
writer with its definition outcome for outcome (the bytes, or the same error)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st


def documents(scalars: st.SearchStrategy[Any], keys: st.SearchStrategy[Any],
              max_keys: int) -> st.SearchStrategy[Any]:
    """Values nested from ``scalars``: lists, pairs (tuples) and objects keyed by ``keys``."""
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.tuples(inner, inner),
            st.dictionaries(keys, inner, max_size=max_keys),
        ),
        max_leaves=30,
    )


def outcome(write: Callable[[Any], Any], value: Any) -> Any:
    """What ``write(value)`` gives, or its error as (type, message)."""
    try:
        return write(value)
    except Exception as exc:  # the error itself is what is compared
        return (type(exc), str(exc))
