"""Seed pages of a conversation and the record each copy becomes (docs/suites.md, "push").

A page is unique by ``(slug, source)``. A slug seeded in one source only is the record
``id = slug``; a slug seeded in several sources of one conversation (a *twin*) is one record per
copy, ``id = "<slug>@<source>"``, so an injected foreign copy is told apart from the own one.
Every copy has ``entity = slug``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from membench_gate.adapter.types import Record, new_record
from membench_gate.suites.common.fixtures import Item, unique

PageKey = tuple[str, str]  # (slug, source)


class Page(Item):
    slug: str = Field(min_length=1)
    text: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)
    source: str = "default"


def page_ids(pages: Sequence[Page], where: str) -> dict[PageKey, str]:
    """The record id of each ``(slug, source)`` of ``pages`` (all of them, held out or not, so a
    copy keeps its id whatever is held out); a page given twice is an error naming ``where``."""
    unique(((f"{p.slug} (source {p.source})", where) for p in pages), "page")
    sources: dict[str, set[str]] = {}
    for page in pages:
        sources.setdefault(page.slug, set()).add(page.source)
    return {(p.slug, p.source): p.slug if len(sources[p.slug]) == 1 else f"{p.slug}@{p.source}"
            for p in pages}


def page_records(pages: Sequence[Page], ids: dict[PageKey, str]) -> list[Record]:
    """The records ``pages`` are ingested as, in order."""
    return [new_record(ids[(p.slug, p.source)], p.text, p.source, entity=p.slug,
                       aliases=tuple(p.aliases)) for p in pages]
