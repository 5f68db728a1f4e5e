"""The reference write path's entity resolution against the pages in the store: a sentence naming
a page (its slug's last segment as words, or an alias; whole words, any case) is about the page's
slug, before the speaker rules; everything else as without pages."""

from __future__ import annotations

from membench_gate import Query, Record, Session, Turn
from membench_gate.reference import ReferenceMemory
from membench_gate.reference.write import extract, page_names

PAGES = (
    Record(id="people/vada-tavenner", text="Vada Tavenner founded Tidecraft.", source="work",
           entity="people/vada-tavenner", aliases=("Vada",)),
    Record(id="companies/widget-co", text="Widget Co sells widgets.", source="work",
           entity="companies/widget-co"),
    Record(id="companies/widget", text="Widget is a shell.", source="work",
           entity="companies/widget"),
)


def _session(*turns: tuple[str, str]) -> Session:
    return Session("s", "work", tuple(Turn(f"t{i}", who, text)
                                      for i, (who, text) in enumerate(turns, 1)))


def entities(*turns: tuple[str, str], pages: tuple[Record, ...] = PAGES) -> list[str]:
    return [r.entity for r in extract(_session(*turns), pages)]


def test_the_slug_words_and_the_aliases_name_a_page() -> None:
    assert page_names(PAGES[:2]) == [
        (("vada", "tavenner"), "people/vada-tavenner"), (("vada",), "people/vada-tavenner"),
        (("widget", "co"), "companies/widget-co")]
    assert entities(("user", "I met VADA TAVENNER for the Tidecraft review."),
                    ("user", "I committed to sending Vada the diligence checklist."),
                    ("user", "We decided to pass on the widget-co seed round."),
                    ("user", "Pricing at Widget Co is too rich for this stage.")) == [
        "people/vada-tavenner", "people/vada-tavenner", "companies/widget-co",
        "companies/widget-co"]


def test_whole_words_only_and_the_earliest_mention_wins() -> None:
    # "vadarium" holds "vada" but is not the word; "Priya" is a speaker: the speaker rules apply.
    assert entities(("Priya", "I archived the vadarium notes from last week.")) == ["Priya"]
    # The earliest mention wins: Vada before Widget Co.
    assert entities(("user", "Vada says pricing at Widget Co worries the partners.")) == [
        "people/vada-tavenner"]
    # At one position the longer name wins ("widget co" over the page "widget").
    assert entities(("user", "The Widget Co board meets on Friday.")) == ["companies/widget-co"]
    assert entities(("user", "The Widget board meets on Friday.")) == ["companies/widget"]


def test_a_leading_pronoun_follows_the_page_named_before() -> None:
    assert entities(("user", "Just got off the call with Vada Tavenner."),
                    ("user", "She is worried about the gross margin.")) == [
        "people/vada-tavenner", "people/vada-tavenner"]


def test_without_pages_or_with_a_page_not_named_the_rules_are_unchanged() -> None:
    turns = (("Priya", "I only drink green tea before noon."),
             ("Marco", "Dana runs the mobile team. She prefers async standups."))
    assert entities(*turns, pages=()) == entities(*turns) == ["Priya", "Dana", "Dana"]
    unnamed = Record(id="x", text="No entity.", source="work")  # a record without an entity
    assert extract(_session(*turns), (unnamed,)) == extract(_session(*turns))


def test_the_memory_resolves_against_its_own_pages_of_the_session_source() -> None:
    memory = ReferenceMemory()
    memory.ingest([PAGES[0], Record(id="people/ola", text="Ola.", source="personal",
                                    entity="people/ola")])
    memory.write(_session(("user", "Vada prefers async updates over standing calls."),
                          ("user", "Ola moved to Lisbon in spring.")))
    hits = memory.search(Query("async updates", 5, source="work")).hits
    written = {h.text: h.entity for h in hits if h.provenance is not None}
    # Ola's page is of another source: the sentence is attributed by the speaker rules.
    assert written == {"Vada prefers async updates over standing calls.": "people/vada-tavenner",
                       "Ola moved to Lisbon in spring.": "Ola"}
    memory.reset()
    memory.write(_session(("user", "Vada prefers async updates over standing calls.")))
    assert memory.search(Query("async", 1, source="work")).hits[0].entity == "Vada"
