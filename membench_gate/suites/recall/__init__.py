"""recall: evidence retrieval over long conversation histories (LongMemEval's and LoCoMo's shape).

Corpus items (turns or chunks, grouped by ``session``) are ingested as ``Record(id, text, source,
created_at, meta={"session": session})``. A query with a ``haystack`` (a list of session ids) is
asked against just those sessions: the store is reset and the haystack ingested for it, and queries
with the same haystack share that ingest (in fixture order). Queries without a haystack are asked
against the whole corpus, ingested once. Each query asks ``search(Query(text=question, k, as_of))``.

A hit *matches* a gold id when it is that item or belongs to that session (session-level gold).
An answerable query passes when a gold id is matched within the top k; an unanswerable one
(``gold: []``) when the system abstains. Recall and nDCG read the hits whatever ``abstain`` says
(they measure retrieval); ``false_answer_rate`` reads ``abstain`` alone.

Cells: ``recall/<category>``, or ``recall/default`` for queries without one. A cell has
``recall_any_at_k``, ``recall_all_at_k`` and ``ndcg_at_k`` when it has answerable queries and
``false_answer_rate`` when it has unanswerable ones.
"""

from __future__ import annotations

from membench_gate.suites.common.suite import Suite
from membench_gate.suites.recall.options import RecallOptions

SUITE = Suite(
    name="recall",
    package=__name__,
    options=RecallOptions,
    scorer_version=1,
    files=("corpus.json", "queries.json"),
)
