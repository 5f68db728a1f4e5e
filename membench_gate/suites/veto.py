"""veto: does the decision that rejected an approach come back for a task that invites it?

Each decision is ingested as one record (``decision + " " + rationale``; the vetoes themselves are
metadata, not text). Each scenario asks ``search`` with the task — with the task's files in
``files_known``, without them in ``files_unknown`` — and passes when the vetoing decision ranks
within k.
"""

from __future__ import annotations

from typing import Any

from membench_gate import metrics
from membench_gate.adapter import Query, Record
from membench_gate.fixtures import SuiteFixtures, parse_time
from membench_gate.rpc import SuiteSession
from membench_gate.suites import Progress, SuiteRun, hit_list, ratio

SCORER_VERSION = 1
CONDITIONS = metrics.CONDITIONS["veto"]


def run(fx: SuiteFixtures, session: SuiteSession, options: dict[str, Any],
        progress: Progress | None = None) -> SuiteRun:
    k = int(options["k"])
    session.reset()
    session.ingest([
        Record(
            id=d.id,
            text=f"{d.decision} {d.rationale}".strip(),
            files=tuple(d.files),
            created_at=parse_time(d.created_at, "created_at") if d.created_at else None,
            reviewed_at=parse_time(d.reviewed_at, "reviewed_at") if d.reviewed_at else None,
            relevance=d.relevance,
            meta={"rejected": [r.option for r in d.rejected]},
        )
        for d in fx.decisions
    ])
    scenarios = [(s, as_of) for s, as_of in fx.scenarios if s.id in fx.digests]
    result = SuiteRun()
    done, total = 0, len(scenarios) * len(CONDITIONS)
    for condition in CONDITIONS:
        outcomes: dict[str, dict[str, Any]] = {}
        reciprocal = 0.0
        for scenario, as_of in scenarios:
            files = tuple(scenario.files) if condition == "files_known" else ()
            answer = session.search(Query(text=scenario.task, k=k, files=files, as_of=as_of),
                                    scenario.id)
            ids = [hit.id for hit in answer.hits[:k]]
            rank = ids.index(scenario.veto_decision_id) + 1 if scenario.veto_decision_id in ids \
                else None
            reciprocal += 1.0 / rank if rank else 0.0
            outcomes[scenario.id] = {
                "outcome": "pass" if rank else "fail",
                "rank": rank,
                "score": answer.hits[rank - 1].score if rank else None,
                "top": ids[0] if ids else None,
                "trap": scenario.trap,
                "asked": scenario.task,
                "files": list(files),
                "gold": [scenario.veto_decision_id],
                "hits": hit_list(answer.hits, k),
                "abstained": answer.abstain,
            }
            done += 1
            if progress:
                progress("veto", done, total)
        passed = sum(1 for o in outcomes.values() if o["outcome"] == "pass")
        result.add(f"veto/{condition}", {
            "veto_recall_at_k": ratio(passed, len(outcomes)),
            "mrr": ratio(reciprocal, len(outcomes)),
        }, outcomes)
    return result
