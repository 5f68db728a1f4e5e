"""The reference memory against docs/adapters.md, with the expected numbers computed independently here."""

from __future__ import annotations

import functools
import json
import math
import re
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from membench_gate import Answer, Query, Record
from membench_gate.reference import ReferenceMemory
from membench_gate.reference.embed import HashEmbedder, fnv1a_32, normalize_text, tokenize
from tests.support.paths import REPO

DIMS = 64


def utc(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=timezone.utc)


def my_fnv(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h ^= byte
        h = (h * 0x01000193) % 2**32
    return h


def my_embed(text: str, dims: int = DIMS) -> np.ndarray:
    tokens = [t for t in re.sub(r"[^0-9a-zà-ÿ]", " ", text.lower()).split() if len(t) > 2]
    vec = np.zeros(dims)
    for token in tokens:
        h = my_fnv(token.encode("utf-8"))
        vec[h % dims] += 1.0
        vec[(h >> 8) % dims] += 0.5
    norm = math.sqrt(float(vec @ vec))
    return vec / norm if norm else vec


# -- embedder ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "expected"), [
    (b"", 0x811C9DC5), (b"a", 0xE40C292C), (b"foobar", 0xBF9CF968),
])
def test_fnv1a_32_known_vectors(data: bytes, expected: int) -> None:
    assert fnv1a_32(data) == expected
    assert my_fnv(data) == expected


def test_embed_is_l2_normalised_and_matches_the_spec() -> None:
    embedder = HashEmbedder(DIMS)
    for text in ("Store money as integer cents", "Café Über déjà-vu, re-use a an ok",
                 "MQTT over TLS on port 8883"):
        vec = embedder.embed(text)
        assert float(np.linalg.norm(vec)) == pytest.approx(1.0)
        assert np.allclose(vec, my_embed(text))
    # Lowercase, punctuation to spaces, tokens of 1-2 characters dropped.
    assert np.array_equal(embedder.embed("Don't RE-USE it, OK?"), embedder.embed("don use"))
    empty = embedder.embed("a an to")
    assert not empty.any()
    assert not np.isnan(empty).any()


def test_embed_uses_both_buckets() -> None:
    h = fnv1a_32(b"ledger")
    dims = next(d for d in range(64, 128) if h % d != (h >> 8) % d)
    vec = HashEmbedder(dims).embed("ledger")
    assert np.flatnonzero(vec).tolist() == sorted([h % dims, (h >> 8) % dims])
    norm = math.sqrt(1.25)
    assert vec[h % dims] == pytest.approx(1.0 / norm)
    assert vec[(h >> 8) % dims] == pytest.approx(0.5 / norm)


def test_embed_many_agrees_with_embed() -> None:
    embedder = HashEmbedder(DIMS)
    texts = ["Store money as integer cents", "", "Deploy staging on weekdays at 14:00"]
    matrix = embedder.embed_many(texts)
    for row, text in zip(matrix, texts, strict=True):
        assert np.allclose(row, embedder.embed(text))


# -- composite score -----------------------------------------------------------------------------

RECORDS = [
    Record(id="r1", text="Store money as integer cents in the ledger",
           files=("a.py", "b.py", "x.py"), created_at=utc("2024-01-01"),
           reviewed_at=utc("2024-02-01"), relevance=0.9),
    Record(id="r2", text="Deploy staging every weekday; the ledger export runs after",
           files=("a.py",), created_at=utc("2023-06-01")),
    Record(id="r3", text="Ledger amounts were floats in the first prototype",
           files=("c.py",), created_at=utc("2001-01-01"), relevance=0.2),
]


def expected_score(record: Record, query: Query) -> float:
    cosine = float(my_embed(record.text) @ my_embed(query.text))
    overlap = (min(1.0, len(set(query.files) & set(record.files)) / len(set(query.files)))
               if query.files else 0.0)
    recency = 0.0
    if query.as_of is not None and record.created_at is not None:
        age = (query.as_of - record.created_at).total_seconds() / 86400
        recency = 0.5 ** (min(age, 3650) / 30)
    relevance = record.relevance or 0.0
    approval = 1.0 if record.reviewed_at is not None else 0.0
    return 0.32 * cosine + 0.27 * overlap + 0.18 * recency + 0.13 * relevance + 0.10 * approval


@pytest.mark.parametrize("query", [
    Query(text="ledger money cents", k=3, files=("a.py", "b.py", "c.py"), as_of=utc("2024-03-01")),
    Query(text="ledger money cents", k=3),
    Query(text="floats in the ledger", k=3, files=("c.py",), as_of=utc("2025-01-01")),
])
def test_composite_score_by_hand(query: Query) -> None:
    memory = ReferenceMemory(dims=DIMS, tau=0.0)
    memory.ingest(RECORDS)
    answer = memory.search(query)
    expected = sorted(((expected_score(r, query), r.id) for r in RECORDS), reverse=True)
    assert [hit.id for hit in answer.hits] == [ident for _, ident in expected]
    for hit, (score, _) in zip(answer.hits, expected, strict=True):
        assert hit.score == pytest.approx(score, abs=1e-9)


def test_search_returns_at_most_k_best_first() -> None:
    memory = ReferenceMemory(dims=DIMS)
    memory.ingest(RECORDS)
    answer = memory.search(Query(text="ledger", k=2))
    assert len(answer.hits) == 2
    assert answer.hits[0].score >= answer.hits[1].score


def test_other_sources_are_never_returned() -> None:
    memory = ReferenceMemory(dims=DIMS)
    memory.ingest([
        Record(id="w", text="Ana Lima leads the billing team", source="work"),
        Record(id="p", text="Ana Lima leads the billing team", source="personal"),
        Record(id="w2", text="The billing team ships on Tuesdays", source="work"),
    ])
    work = memory.search(Query(text="who leads billing", k=5, source="work"))
    assert {hit.id for hit in work.hits} == {"w", "w2"}
    personal = memory.search(Query(text="who leads billing", k=5, source="personal"))
    assert [hit.id for hit in personal.hits] == ["p"]
    nobody = memory.search(Query(text="who leads billing", k=5))
    assert nobody.hits == []
    assert nobody.abstain


# -- abstention floor ----------------------------------------------------------------------------


def test_tau_abstains_below_the_best_cosine_and_keeps_the_hits() -> None:
    text = "Store money as integer cents"
    query = Query(text="money cents rounding", k=3)
    cosine = float(my_embed(text) @ my_embed(query.text))
    assert 0.05 < cosine < 0.95
    records = [Record(id="m", text=text)]

    above = ReferenceMemory(dims=DIMS, tau=cosine + 1e-6)
    above.ingest(records)
    answer = above.search(query)
    assert answer.abstain
    assert [hit.id for hit in answer.hits] == ["m"]  # hits are returned even when abstaining

    below = ReferenceMemory(dims=DIMS, tau=cosine - 1e-6)
    below.ingest(records)
    assert not below.search(query).abstain


def test_tau_zero_never_abstains() -> None:
    memory = ReferenceMemory(dims=DIMS, tau=0.0)
    memory.ingest([Record(id="m", text="Store money as integer cents")])
    answer = memory.search(Query(text="weekday staging deploys", k=3))
    assert float(my_embed("weekday staging deploys") @ my_embed("Store money as integer cents")) \
        == 0.0
    assert not answer.abstain
    assert [hit.id for hit in answer.hits] == ["m"]


def test_reset_empties_the_store() -> None:
    memory = ReferenceMemory(dims=DIMS)
    memory.ingest(RECORDS)
    memory.reset()
    assert memory.search(Query(text="ledger", k=3)).hits == []


# -- push ----------------------------------------------------------------------------------------

PEOPLE = [
    Record(id="priya-raman", text="Priya Raman manages the payments team.", source="work",
           entity="priya-raman", aliases=("Priya",)),
    Record(id="rajesh-kumar", text="Rajesh Kumar runs system design interviews.", source="work",
           entity="rajesh-kumar", aliases=("Raj", "Rajesh")),
    Record(id="lena-fischer", text="Lena Fischer is a candidate.", source="work",
           entity="lena-fischer", aliases=("Lena",)),
    Record(id="marcus-webb", text="Marcus Webb heads people operations.", source="work",
           entity="marcus-webb", aliases=("Marcus",)),
    Record(id="chinedu-okafor", text="Chinedu Okafor is the recruiter.", source="work",
           entity="chinedu-okafor", aliases=("Chinedu",)),
    Record(id="raj-malhotra", text="Raj Malhotra climbs on Thursdays.", source="personal",
           entity="raj-malhotra", aliases=("Raj", "Raj M")),
    Record(id="note", text="Priya prefers written scorecards.", source="work"),
]


@pytest.fixture
def people() -> ReferenceMemory:
    memory = ReferenceMemory(dims=DIMS)
    memory.ingest(PEOPLE)
    return memory


def push(memory: ReferenceMemory, text: str, k: int = 3, source: str = "work",
         context: tuple[str, ...] = ()) -> list[str]:
    return memory.push(Query(text=text, k=k, source=source, context=context))


@pytest.mark.parametrize(("text", "expected"), [
    ("Can Priya join the debrief on Friday?", ["priya-raman"]),            # exact alias
    ("can priya join the debrief on friday?", ["priya-raman"]),            # lowercase
    ("Priya Raman wants scorecards today.", ["priya-raman"]),              # full name
    ("Kumar will run the system design round.", ["rajesh-kumar"]),          # surname only
    ("Did Fisher send back the take-home?", ["lena-fischer"]),              # misspelled surname
    ("Let's grab lunch before the standup.", []),                           # nobody
])
def test_push_mentions(people: ReferenceMemory, text: str, expected: list[str]) -> None:
    assert push(people, text) == expected


def test_push_suppresses_entities_mentioned_earlier(people: ReferenceMemory) -> None:
    context = ("Priya wants the debrief done by Friday.",)
    assert push(people, "Priya also asked about the scorecards.", context=context) == []
    assert push(people, "Priya and Marcus need to approve the band.", context=context) \
        == ["marcus-webb"]


def test_push_respects_the_budget(people: ReferenceMemory) -> None:
    text = "Priya, Marcus, Lena and Chinedu are all in the offer meeting."
    everyone = push(people, text, k=10)
    assert set(everyone) == {"priya-raman", "marcus-webb", "lena-fischer", "chinedu-okafor"}
    two = push(people, text, k=2)
    assert len(two) == 2
    assert set(two) <= set(everyone)
    assert push(people, text, k=0) == []


def test_push_never_crosses_sources(people: ReferenceMemory) -> None:
    assert push(people, "Raj said the design round went well.") == ["rajesh-kumar"]
    assert push(people, "Raj is training for Fontainebleau.", source="personal") \
        == ["raj-malhotra"]
    assert push(people, "Priya and Raj are both around.", source="personal") == ["raj-malhotra"]
    assert push(people, "Priya is around.", source="oss") == []


def test_push_depends_on_the_query_alone(people: ReferenceMemory) -> None:
    first = push(people, "Ask Marcus about relocation.")
    push(people, "Marcus again, and Lena.", context=("Marcus approved it.",))
    assert push(people, "Ask Marcus about relocation.") == first == ["marcus-webb"]


def test_records_without_an_entity_are_not_pushed(people: ReferenceMemory) -> None:
    assert "note" not in push(people, "Priya prefers written scorecards.", k=10)


# -- vectorised ranking --------------------------------------------------------------------------


def test_search_embeds_the_query_once_not_every_record(monkeypatch: pytest.MonkeyPatch) -> None:
    memory = ReferenceMemory(dims=DIMS)
    memory.ingest([Record(id=f"r{i}", text=f"record number {i} about ledger rows {i % 7}")
                   for i in range(300)])
    calls: list[str] = []
    original = HashEmbedder.embed

    def counting(self: HashEmbedder, text: str) -> np.ndarray:
        calls.append(text)
        return original(self, text)

    monkeypatch.setattr(HashEmbedder, "embed", counting)
    for query in ("ledger rows", "record number 5", "nothing at all"):
        answer = memory.search(Query(text=query, k=5))
        assert isinstance(answer, Answer)
        assert len(answer.hits) == 5
    assert calls == ["ledger rows", "record number 5", "nothing at all"]


def test_normalize_text_is_the_spec_over_all_of_unicode() -> None:
    # The embedder's spec: every character that is not alphanumeric becomes one space.
    text = "".join(chr(i) for i in range(0x30000) if not 0xD800 <= i < 0xE000)
    assert normalize_text(text) == "".join(ch if ch.isalnum() else " " for ch in text.lower())


# -- the optimised ranking against a straightforward one -----------------------------------------
#
# ``search`` skips work whose result cannot matter (file overlap where it is zero, recency for
# records that cannot reach the top k). This is the whole computation done plainly, record by
# record and term by term in the documented order, so that every score can be compared bit for bit.


@functools.cache
def spec_row(text: str, dims: int) -> np.ndarray:
    """A stored row, by the spec: counts of 1.0 and 0.5 per bucket, divided by its L2 norm."""
    counts = [0.0] * dims
    for token in normalize_text(text).split():
        if len(token) > 2:
            h = my_fnv(token.encode("utf-8"))
            counts[h % dims] += 1.0
            counts[(h >> 8) % dims] += 0.5
    norm = math.sqrt(sum(c * c for c in counts))  # exact: sums of multiples of 0.25
    return np.array([c / norm if norm else 0.0 for c in counts])


def days(moment: datetime | None) -> float:
    return float("nan") if moment is None else \
        (moment - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds() / 86400.0


def straightforward_search(records: list[Record], query: Query, dims: int,
                           tau: float) -> tuple[list[tuple[str, float]], bool]:
    matrix = np.asfortranarray(np.array([spec_row(r.text, dims) for r in records]))
    vector = spec_row(query.text, dims)
    columns = np.flatnonzero(vector)
    # The cosine is the matrix-vector product over the query's non-zero columns: one BLAS call,
    # whose summation order is its own, so both sides must make the same call.
    cosine = matrix[:, columns] @ vector[columns]
    composite = 0.32 * cosine + np.array(
        [0.13 * float(r.relevance or 0.0) + 0.10 * (1.0 if r.reviewed_at is not None else 0.0)
         for r in records])
    if any(r.meta.get("status") == "superseded" for r in records):
        composite = composite - np.array(
            [1.0 if r.meta.get("status") == "superseded" else 0.0 for r in records])
    files = set(query.files)
    if files:
        overlap = np.array([float(len(files & set(r.files))) for r in records])
        composite += 0.27 * np.minimum(1.0, overlap / len(files))
    if query.as_of is not None:
        age = np.clip(days(query.as_of) - np.array([days(r.created_at) for r in records]),
                      0.0, 3650.0)
        composite += 0.18 * np.where(np.isnan(age), 0.0, 0.5 ** (age / 30.0))
    allowed = [i for i, r in enumerate(records)
               if r.source == query.source and math.isfinite(composite[i])]
    if not allowed or query.k <= 0:
        return [], True
    rounded = {i: round(float(composite[i]), 9) for i in allowed}
    ranked = sorted(allowed, key=lambda i: (-rounded[i], i))[:query.k]
    # A hit reports the score it was ranked by (numpy's rounding, as the memory's own).
    return ([(records[i].id, float(np.round(composite[i], 9))) for i in ranked],
            bool(cosine[ranked[0]] < tau))


def random_store(rng: np.random.Generator, count: int) -> list[Record]:
    words = ["ledger", "cents", "money", "deploy", "staging", "kafka", "retry", "audit", "refund",
             "tenant", "invoice", "rollback", "canary", "schema", "index", "Café", "ΟΔΟΣ", "the"]
    paths = [f"src/m{i}.py" for i in range(6)]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(0, 9)))) for _ in range(count // 3)]
    records = []
    for i in range(count):
        created = None if rng.random() < 0.1 else \
            utc("2024-01-01") + timedelta(days=int(rng.integers(0, 900)))
        records.append(Record(
            # Repeated texts and metadata make exact ties; a few records never match anything.
            id=f"r{i:04d}", text=str(texts[int(rng.integers(len(texts)))]),
            source=("work", "work", "personal")[int(rng.integers(3))],
            files=tuple(rng.choice(paths, size=int(rng.integers(0, 3)), replace=False)),
            created_at=created, reviewed_at=created if rng.random() < 0.3 else None,
            relevance=(None, 0.0, 0.5, 1.0)[int(rng.integers(4))],
            meta={"status": "superseded"} if rng.random() < 0.05 else {}))
    return records


def random_query(rng: np.random.Generator, records: list[Record]) -> Query:
    words = str(records[int(rng.integers(len(records)))].text).split()
    return Query(
        text=" ".join(rng.permutation(words)[:int(rng.integers(0, 4))]) + " retry",
        k=int(rng.choice([1, 3, 5, 10, 40, 10_000])),
        source=("work", "personal", "nobody")[int(rng.choice(3, p=[0.6, 0.35, 0.05]))],
        files=tuple(rng.choice([f"src/m{i}.py" for i in range(6)],
                               size=int(rng.integers(0, 3)), replace=False)),
        as_of=None if rng.random() < 0.3 else utc("2026-06-01") - timedelta(days=int(
            rng.integers(0, 1200))))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_search_is_bit_for_bit_the_straightforward_ranking(seed: int) -> None:
    rng = np.random.default_rng(seed)
    records = random_store(rng, 600)
    memory = ReferenceMemory(dims=DIMS, tau=0.3)
    stored: list[Record] = []
    ties = 0
    while len(stored) < len(records):
        # Batches of any size, searched in between: rows join the matrix at different times.
        batch = records[len(stored):len(stored) + int(rng.integers(1, 150))]
        memory.ingest(batch)
        stored += batch
        for _ in range(25):
            query = random_query(rng, stored)
            expected = straightforward_search(stored, query, DIMS, 0.3)
            answer = memory.search(query)
            got = ([(hit.id, hit.score) for hit in answer.hits], answer.abstain)
            assert got == expected, query
            scores = [round(score, 9) for _, score in expected[0]]
            ties += len(scores) - len(set(scores))
    assert ties > 100  # the data did exercise the tie order


def test_search_equals_the_straightforward_ranking_when_recency_decides() -> None:
    # Equal cosines and metadata: only the creation dates order these records, and most of them are
    # outside the top k before recency is added.
    records = [Record(id=f"d{i:03d}", text="ledger cents rounding", created_at=utc("2025-01-01")
                      + timedelta(days=int(day)))
               for i, day in enumerate(np.random.default_rng(7).permutation(300))]
    memory = ReferenceMemory(dims=DIMS)
    memory.ingest(records)
    query = Query(text="ledger cents", k=5, as_of=utc("2026-01-01"))
    answer = memory.search(query)
    expected = straightforward_search(records, query, DIMS, 0.0)
    assert ([(hit.id, hit.score) for hit in answer.hits], answer.abstain) == expected
    assert [hit.id for hit in answer.hits] == \
        [r.id for r in sorted(records, key=lambda r: r.created_at, reverse=True)[:5]]


ASCII_EDGES = ["", "a an to", "Don't RE-USE it, OK?", "snake_case_NAME\tTAB\nnew-line 8883",
               "x" * 300 + " yz" * 50, "UPPER lower MiXeD 1234 a1b2c3", "  \x0b\x0c\r  "]


@pytest.mark.parametrize("extra", [
    [],  # all ASCII: the batch is tokenised as one string
    ["nul\x00inside a text"],  # a separator inside a text: text by text
    ["Café ÜBER déjà-vu", "ΟΔΟΣ ΣΟΦΟΣ. ΑΣ'Β", "İstanbul ǅemal ﬁne", "日本語のテキスト abc"],
])
def test_embed_many_is_the_spec_bit_for_bit(extra: list[str]) -> None:
    records = random_store(np.random.default_rng(4), 200)
    texts = [r.text for r in records if r.text.isascii()] + ASCII_EDGES + extra
    embedder = HashEmbedder(DIMS)
    embedder.embed("ledger cents")  # words already numbered before the batch
    matrix = embedder.embed_many(texts)
    assert matrix.flags["F_CONTIGUOUS"]
    assert np.array_equal(matrix, np.array([spec_row(text, DIMS) for text in texts]))


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=60))
def test_tokenize_is_normalize_then_split(text: str) -> None:
    assert tokenize(text) == [tok for tok in normalize_text(text).split() if len(tok) > 2]


def test_scores_are_reported_best_first_when_they_round_to_a_tie() -> None:
    # Two facts whose scores differ only past the ninth decimal are ranked as tied (by insertion)
    # and must be reported as tied: the gate refuses hits whose scores go up.
    facts = json.loads((REPO / "fixtures" / "abstention" / "facts.json").read_text("utf-8"))
    memory = ReferenceMemory(tau=0.35)
    memory.ingest([Record(f["id"], f["text"]) for f in facts])
    ties = 0
    for fact in facts:
        hits = memory.search(Query(fact["text"], k=5)).hits
        scores = [hit.score for hit in hits]
        assert scores == sorted(scores, reverse=True), (fact["id"], hits)
        ties += len(scores) - len(set(scores))
    assert ties  # the fixtures do hold such near-ties (fact-005's query among them)
