"""How the veto suite asks the adapter and scores what came back (the package says what it
measures)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from membench_gate.adapter.types import Query, Record
from membench_gate.suites.common.fixtures import parse_time
from membench_gate.suites.common.scoring import hit_list, outcome, ratio
from membench_gate.suites.common.suite import Progress, Records, SuiteRun
from membench_gate.suites.veto.fixtures import Fixtures, predecessors
from membench_gate.suites.veto.options import VetoOptions

if TYPE_CHECKING:  # only for annotations: checking a results file never imports the client
    from membench_gate.adapter.rpc import SuiteSession

CONDITIONS = ("files_known", "files_unknown")


def decision_record(d: Any) -> Record:
    """A decision as the memory stores it (the behaviour suite's memory condition too)."""
    return Record(
        id=d.id,
        text=f"{d.decision} {d.rationale}".strip(),
        files=tuple(d.files),
        created_at=parse_time(d.created_at, "created_at") if d.created_at else None,
        reviewed_at=parse_time(d.reviewed_at, "reviewed_at") if d.reviewed_at else None,
        relevance=d.relevance,
        meta={"rejected": [r.option for r in d.rejected], "status": d.status,
              "superseded_by": d.superseded_by},
    )


def run(fx: Fixtures, session: SuiteSession, options: VetoOptions,
        progress: Progress | None = None) -> SuiteRun:
    k = options.k
    session.reset()
    session.ingest([decision_record(d) for d in fx.decisions])
    decisions = {d.id: d for d in fx.decisions}
    scored = [(s, as_of) for s, as_of in fx.scenarios if s.id in fx.digests]
    plain = [(s, as_of) for s, as_of in scored if not s.lifecycle]
    lifecycle = [(s, as_of) for s, as_of in scored if s.lifecycle]
    records: Records = {}
    done, total = 0, len(plain) * len(CONDITIONS) + len(lifecycle)
    cells = [(c, plain) for c in CONDITIONS] + [("lifecycle", lifecycle)]
    for condition, scenarios in cells:
        if not scenarios:
            continue  # a cell with no items is absent (a lifecycle-only folder has just one)
        cell: dict[str, dict[str, Any]] = {}
        for scenario, as_of in scenarios:
            files = () if condition == "files_unknown" else tuple(scenario.files)
            # (named with its cell in errors: the same scenario is asked in each condition)
            answer = session.search(Query(text=scenario.task, k=k, files=files, as_of=as_of),
                                    f"{scenario.id} in veto/{condition}")
            ids = [hit.id for hit in answer.hits[:k]]
            target = scenario.veto_decision_id
            rank = ids.index(target) + 1 if target in ids else None
            detail: dict[str, Any] = {
                "rank": rank,
                "score": answer.hits[rank - 1].score if rank else None,
                "top": ids[0] if ids else None,
                "trap": scenario.trap,
                "asked": scenario.task,
                "files": list(files),
                "gold": [target],
                "hits": hit_list(answer.hits, k),
                "abstained": answer.abstain,
            }
            if scenario.lifecycle:
                stale = set(predecessors(decisions, target))
                detail["stale_above"] = [i for i in ids[:(rank - 1) if rank else len(ids)]
                                         if i in stale]
            cell[scenario.id] = detail
            done += 1
            if progress:
                progress("veto", done, total)
        records[f"veto/{condition}"] = cell
    return score(records, options)


def score(records: Records, options: VetoOptions) -> SuiteRun:
    """Each cell's metrics from its scenarios' records: a scenario passes when the veto ranks
    within k and (lifecycle) no superseded predecessor ranks above it."""
    result = SuiteRun()
    for cell, items in records.items():
        ranks = [item["rank"] for item in items.values()]
        metrics = {
            "veto_recall_at_k": ratio(sum(1 for rank in ranks if rank), len(ranks)),
            "mrr": ratio(math.fsum(1.0 / rank for rank in ranks if rank), len(ranks)),
        }
        if cell == "veto/lifecycle":
            metrics["stale_surfaced"] = ratio(
                sum(1 for item in items.values() if item["stale_above"]), len(items))
        result.add(cell, metrics, {
            ident: {**item, "outcome": outcome(item["rank"] is not None
                                               and not item.get("stale_above"))}
            for ident, item in items.items()})
    return result
