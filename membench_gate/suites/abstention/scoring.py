"""How the abstention suite asks the adapter and scores what came back (the package says what it
measures)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from membench_gate.adapter.types import Answer, Query, Record
from membench_gate.model.metrics import net_metric
from membench_gate.suites.abstention import ANSWERS
from membench_gate.suites.abstention.fixtures import Fixtures, Probe
from membench_gate.suites.abstention.options import AbstentionOptions
from membench_gate.suites.common.scoring import hit_list, outcome, ratio
from membench_gate.suites.common.seeded import permutation
from membench_gate.suites.common.suite import Progress, Records, SuiteRun

if TYPE_CHECKING:  # only for annotations: checking a results file never imports the client
    from membench_gate.adapter.rpc import SuiteSession



def derangement(ids: list[str], seed: int) -> list[str]:
    """A seeded permutation of ``ids`` that moves every one of them (no fixed point), so the
    shuffled control never keeps a fact under its own id, however small the corpus."""
    order = permutation(len(ids), seed)  # numpy's default_rng(seed).permutation, bit for bit
    shuffled = list(ids)
    for position, index in enumerate(order):
        # Each fact takes the id of the next one in a random cycle through all of them.
        shuffled[index] = ids[order[(position + 1) % len(order)]]
    return shuffled


def _judge(probe: Probe, answer: Answer, k: int, honour_abstain: bool) -> str:
    """correct / wrong / abstain for one probe: only an answer can be correct or wrong.

    With the floor off (``honour_abstain`` false) the answer is the top hit alone.
    """
    ids = [hit.id for hit in answer.hits[:k]] if honour_abstain else \
        [hit.id for hit in answer.hits[:1]]
    abstains = answer.abstain if honour_abstain else not ids
    if abstains:
        return "abstain"
    if probe.gold_fact_id is not None and probe.gold_fact_id in ids:
        return "correct"
    return "wrong"


def _passes(answerable: bool, judged: str) -> bool:
    """A probe passes when answered correctly, or abstained on when nothing answers it."""
    return judged == "correct" or (judged == "abstain" and not answerable)


def _tally(outcomes: list[str], lambdas: list[float]) -> dict[str, float]:
    n = len(outcomes)
    correct, wrong, abstain = (outcomes.count(o) for o in ("correct", "wrong", "abstain"))
    metrics = {net_metric(lam): ratio(correct - lam * wrong, n) for lam in lambdas}
    metrics.update(correct=correct, wrong=wrong, abstain=abstain, coverage=ratio(n - abstain, n))
    return metrics


def _ingest(session: SuiteSession, fx: Fixtures, ids: list[str]) -> None:
    session.reset()
    session.ingest([Record(id=ident, text=fact.text) for ident, fact in zip(ids, fx.facts, strict=True)])


def run(fx: Fixtures, session: SuiteSession, options: AbstentionOptions,
        progress: Progress | None = None) -> SuiteRun:
    k = options.k
    probes = [p for p in fx.probes if p.id in fx.digests]
    real_ids = [f.id for f in fx.facts]
    total = 2 * len(probes)

    _ingest(session, fx, real_ids)
    answers: dict[str, Answer] = {}
    for done, probe in enumerate(probes, 1):
        answers[probe.id] = session.search(Query(text=probe.question, k=k),
                                           f"{probe.id} in abstention/default")
        if progress:
            progress("abstention", done, total)

    shuffled_ids = derangement(real_ids, options.shuffle_seed)
    _ingest(session, fx, shuffled_ids)
    shuffled: dict[str, Answer] = {}
    for done, probe in enumerate(probes, len(probes) + 1):
        shuffled[probe.id] = session.search(Query(text=probe.question, k=k),
                                            f"{probe.id} in abstention/control_shuffled")
        if progress:
            progress("abstention", done, total)

    records: dict[str, dict[str, Any]] = {}
    for probe in probes:
        answer = answers[probe.id]
        top = answer.hits[0] if answer.hits else None
        ids = [hit.id for hit in answer.hits[:k]]
        records[probe.id] = {
            "judged": _judge(probe, answer, k, True),
            "answerable": probe.gold_fact_id is not None,
            "abstained": answer.abstain,
            "rank": ids.index(probe.gold_fact_id) + 1 if probe.gold_fact_id in ids else None,
            "top": top.id if top else None,
            "score": top.score if top else None,
            "asked": probe.question,
            "gold": [probe.gold_fact_id] if probe.gold_fact_id is not None else [],
            "hits": hit_list(answer.hits, k),
            # What the two controls made of this probe, so a merge of shards recomputes them.
            "judged_floor_off": _judge(probe, answer, k, False),
            "judged_shuffled": _judge(probe, shuffled[probe.id], k, True),
            ANSWERS["abstention/control_shuffled"]: {"hits": hit_list(shuffled[probe.id].hits, k),
                                                     "abstained": shuffled[probe.id].abstain},
        }
    return score({"abstention/default": records} if records else {}, options)


def score(records: Records, options: AbstentionOptions) -> SuiteRun:
    """NET(λ) and counts of the probes, and the two controls judged from every probe's record."""
    probes = records.get("abstention/default", {})
    result = SuiteRun()
    if not probes:
        return result
    lambdas = [float(x) for x in options.lambdas]
    lam1 = net_metric(1.0)
    control_lambdas = sorted({*lambdas, 1.0})
    floor_metrics = _tally([p["judged_floor_off"] for p in probes.values()], control_lambdas)
    shuffle_metrics = _tally([p["judged_shuffled"] for p in probes.values()], control_lambdas)
    control_failed = {
        "control_floor_off": floor_metrics["wrong"] > 0,
        "control_shuffled": shuffle_metrics[lam1] < 0,
    }
    metrics = _tally([p["judged"] for p in probes.values()], lambdas)
    if metrics["wrong"]:
        metrics["crossover_lambda"] = metrics["correct"] / metrics["wrong"]
    metrics["controls_passing"] = sum(1 for failed in control_failed.values() if not failed)

    result.add("abstention/default", metrics, {
        ident: {**probe, "outcome": outcome(_passes(probe["answerable"], probe["judged"]))}
        for ident, probe in probes.items()
    })
    for name, cell_metrics in (("control_floor_off", floor_metrics),
                               ("control_shuffled", shuffle_metrics)):
        result.add(f"abstention/{name}", cell_metrics, {
            name: {"outcome": outcome(control_failed[name]),
                   "expected": "the control fails",
                   "control_failed": control_failed[name]},
        })
    return result
