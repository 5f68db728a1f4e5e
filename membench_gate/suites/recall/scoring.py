"""How the recall suite asks the adapter and scores what came back (the package says what it
measures)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from membench_gate.adapter.types import Answer, Query, Record, new_record
from membench_gate.suites.common.fixtures import parse_time
from membench_gate.suites.common.scoring import hit_list, outcome, ratio
from membench_gate.suites.common.suite import Progress, Records, SuiteRun
from membench_gate.suites.recall.fixtures import CorpusItem, Fixtures, RecallQuery
from membench_gate.suites.recall.options import RecallOptions

if TYPE_CHECKING:  # only for annotations: checking a results file never imports the client
    from membench_gate.adapter.rpc import SuiteSession

DEFAULT_CELL = "default"


def _record(item: CorpusItem) -> Record:
    return new_record(item.id, item.text, item.source,
                      created_at=parse_time(item.created_at, "created_at") if item.created_at
                      else None, meta={"session": item.session})


def _matches(hit_id: str, gold: list[str], session_of: dict[str, str]) -> str | None:
    """The gold id a hit matches: the item itself, or the session it belongs to."""
    if hit_id in gold:
        return hit_id
    session = session_of.get(hit_id)
    return session if session is not None and session in gold else None


def judge(query: RecallQuery, answer: Answer, k: int, session_of: dict[str, str]) -> dict[str, Any]:
    """One query's record: what came back and, for an answerable query, which gold ids the top k
    matched and at which positions (``credited``) — what every metric is recomputed from."""
    ids = [hit.id for hit in answer.hits[:k]]
    top = answer.hits[0] if answer.hits else None
    detail: dict[str, Any] = {
        "answerable": bool(query.gold),
        "abstained": answer.abstain,
        "top": top.id if top else None,
        "score": top.score if top else None,
        "asked": query.question,
        "gold": list(query.gold),
        "hits": hit_list(answer.hits, k),
    }
    if not query.gold:
        return detail
    matched: list[str] = []
    credited: list[int] = []
    rank: int | None = None
    for position, hit_id in enumerate(ids, 1):
        gold_id = _matches(hit_id, query.gold, session_of)
        if gold_id is None:
            continue
        rank = rank or position
        if gold_id not in matched:  # each gold id is credited once, at its first match
            matched.append(gold_id)
            credited.append(position)
    detail.update(rank=rank, matched=sorted(matched), credited=credited,
                  all=len(matched) == len(query.gold))
    return detail


def _ndcg(item: dict[str, Any], k: int) -> float:
    dcg = 0.0
    for position in item["credited"]:
        dcg += 1.0 / math.log2(position + 1)
    ideal = sum(1.0 / math.log2(p + 1) for p in range(1, min(len(item["gold"]), k) + 1))
    return dcg / ideal if ideal else 0.0


def score(records: Records, options: RecallOptions) -> SuiteRun:
    """Each cell's metrics and outcomes from its queries' records alone: an answerable query
    passes when a gold id matched within k, an unanswerable one when the system abstained."""
    k = options.k
    result = SuiteRun()
    for cell, items in records.items():
        outcomes: dict[str, dict[str, Any]] = {}
        for ident, item in items.items():
            if item["answerable"]:
                outcomes[ident] = {**item, "ndcg": _ndcg(item, k),
                                   "outcome": outcome(bool(item["matched"]))}
            else:
                outcomes[ident] = {**item, "outcome": outcome(item["abstained"])}
        result.add(cell, cell_metrics(outcomes), outcomes)
    return result


def cell_metrics(outcomes: dict[str, dict[str, Any]]) -> dict[str, float]:
    """A cell's metrics from its items' detail alone."""
    answerable = [d for d in outcomes.values() if d["answerable"]]
    unanswerable = [d for d in outcomes.values() if not d["answerable"]]
    metrics: dict[str, float] = {}
    if answerable:
        n = len(answerable)
        metrics["recall_any_at_k"] = ratio(sum(1 for d in answerable if d["matched"]), n)
        metrics["recall_all_at_k"] = ratio(sum(1 for d in answerable if d["all"]), n)
        # fsum: exact, so the mean does not depend on the order items arrive in (a merge).
        metrics["ndcg_at_k"] = ratio(math.fsum(d["ndcg"] for d in answerable), n)
    if unanswerable:
        metrics["false_answer_rate"] = ratio(
            sum(1 for d in unanswerable if not d["abstained"]), len(unanswerable))
    return metrics


def _groups(queries: list[RecallQuery]) -> list[tuple[tuple[str, ...] | None, list[RecallQuery]]]:
    """Queries grouped by haystack (as a set of sessions), in order of first appearance."""
    groups: dict[tuple[str, ...] | None, list[RecallQuery]] = {}
    for query in queries:
        key = tuple(sorted(set(query.haystack))) if query.haystack is not None else None
        groups.setdefault(key, []).append(query)
    return list(groups.items())


def units(fx: Fixtures) -> list[list[str]]:
    """What one reset serves, for the workers (:mod:`membench_gate.run.workers`): the scored
    queries of each haystack together, in order of first appearance; a query without one (the
    whole corpus, ingested by every worker) on its own."""
    out: list[list[str]] = []
    for haystack, members in _groups([q for q in fx.queries if q.id in fx.digests]):
        if haystack is None:
            out += [[query.id] for query in members]
        else:
            out.append([query.id for query in members])
    return out


def run(fx: Fixtures, session: SuiteSession, options: RecallOptions,
        progress: Progress | None = None) -> SuiteRun:
    k = options.k
    queries = [q for q in fx.queries if q.id in fx.digests]
    session_of = {item.id: item.session for item in fx.history}
    built: dict[int, Record] = {}  # records built when first ingested: a worker's haystacks only

    def record(position: int) -> Record:
        if position not in built:
            built[position] = _record(fx.history[position])
        return built[position]

    by_session: dict[str, list[int]] = {}  # session -> positions in the corpus
    for position, item in enumerate(fx.history):
        by_session.setdefault(item.session, []).append(position)
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    done = 0
    for haystack, members in _groups(queries):
        first = members[0].id
        session.reset(first)
        if haystack is None:
            records = [record(p) for p in range(len(fx.history))]
        else:  # the haystack's items in corpus order, whatever the order of its session list
            positions = sorted(p for name in haystack for p in by_session.get(name, ()))
            records = [record(p) for p in positions]
        session.ingest(records, first)
        for query in members:
            as_of = parse_time(query.as_of, "as_of") if query.as_of else None
            answer = session.search(Query(text=query.question, k=k, as_of=as_of), query.id)
            cell = query.category or DEFAULT_CELL
            cells.setdefault(cell, {})[query.id] = judge(query, answer, k, session_of)
            done += 1
            if progress:
                progress("recall", done, len(queries))
    return score({f"recall/{cell}": cells[cell] for cell in sorted(cells)}, options)
