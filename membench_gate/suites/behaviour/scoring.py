"""How the behaviour suite asks the LLM, and the deterministic judge of its answers (the package
says what it measures).

The session of a live suite answers ``complete(messages, item, repeat)`` with the LLM's reply
text (the runner's record/replay client; re-derivation answers with the reply an item recorded),
besides the adapter's ``search``. An item records what was asked (the task, the ids of the
decisions its context showed), the reply as it came and the judgement, so one item is debugged
from the results file alone and re-derived from its reply.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from membench_gate.adapter.types import Query
from membench_gate.suites.behaviour.options import BehaviourOptions
from membench_gate.suites.common.scoring import hit_list, outcome, ratio
from membench_gate.suites.common.suite import Progress, Records, SuiteRun
from membench_gate.suites.veto.fixtures import Decision, Fixtures, Scenario
from membench_gate.suites.veto.scoring import decision_record

if TYPE_CHECKING:
    from datetime import datetime

# The ceiling of one reply, sent with every call and counted in the token estimate.
COMPLETION_TOKENS = 400
# A token is about four characters of English: the budget's estimate of a prompt before sending.
CHARS_PER_TOKEN = 4

SYSTEM = (
    "You are a senior engineer on this team. Propose how to do the task you are given. Answer "
    "with one JSON object and nothing else: {\"proposal\": <string, a few sentences>, "
    "\"key_technologies\": [<string>, ...], \"acknowledged_rejections\": [<string>, ...]}. "
    "List in acknowledged_rejections every option you deliberately do not use because the team "
    "rejected it."
)


def _line(d: Decision) -> str:
    return f"- {d.decision} {d.rationale}".rstrip()


def _vetoes(d: Decision, warn: bool) -> list[str]:
    prefix = "  WARNING: the team rejected" if warn else "  Rejected:"
    return [f"{prefix} {r.option} ({r.reason})" for r in d.rejected]


def context(condition: str, decisions: list[Decision], shown: list[Decision]) -> str:
    """The context a condition puts before the task (``shown``: the memory's top k)."""
    if condition == "none":
        return ""
    if condition == "conventions":
        return "Team decisions:\n" + "\n".join(_line(d) for d in decisions)
    if condition == "flatfile":
        return "Team decisions, with the options each rejected:\n" + "\n".join(
            line for d in decisions for line in (_line(d), *_vetoes(d, warn=False)))
    if not shown:
        return "Memory found nothing relevant to this task."
    return "From the team's memory, most relevant first:\n" + "\n".join(
        line for d in shown for line in (_line(d), *_vetoes(d, warn=True)))


def messages(task: str, ctx: str) -> list[dict[str, str]]:
    user = f"Task: {task}" if not ctx else f"{ctx}\n\nTask: {task}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _scored(fx: Fixtures) -> list[tuple[Scenario, datetime]]:
    return [(s, as_of) for s, as_of in fx.scenarios if s.id in fx.digests]


def plan(fx: Fixtures, options: BehaviourOptions) -> tuple[int, int]:
    """Calls of one pass and an upper estimate of their tokens, known before any call: the
    ``memory`` prompt is bounded by ``flatfile``'s (its top k are some of those decisions)."""
    calls = tokens = 0
    everything = len(context("flatfile", fx.decisions, []))
    for scenario, _ in _scored(fx):
        for condition in options.conditions:
            size = everything if condition == "memory" else len(
                context(condition, fx.decisions, []))
            chars = len(SYSTEM) + len(scenario.task) + size + 16
            calls += 1
            tokens += chars // CHARS_PER_TOKEN + 1 + COMPLETION_TOKENS
    return calls, tokens


def run(fx: Fixtures, session: Any, options: BehaviourOptions,
        progress: Progress | None = None) -> SuiteRun:
    scored = _scored(fx)
    conditions = [c for c in ("none", "conventions", "flatfile", "memory")
                  if c in options.conditions]
    decisions = {d.id: d for d in fx.decisions}
    if "memory" in conditions:
        session.reset()
        session.ingest([decision_record(d) for d in fx.decisions])
    repeat = getattr(session, "repeat", 0)
    records: Records = {}
    done, total = 0, len(scored) * len(conditions)
    for condition in conditions:
        cell: dict[str, dict[str, Any]] = {}
        for scenario, as_of in scored:
            item = f"{scenario.id} in behaviour/{condition}"
            detail: dict[str, Any] = {"asked": scenario.task, "trap": scenario.trap,
                                      "rejected_option": scenario.rejected_option}
            shown: list[Decision] = []
            if condition == "memory":
                answer = session.search(Query(text=scenario.task, k=options.k,
                                              files=tuple(scenario.files), as_of=as_of), item)
                if not answer.abstain:
                    shown = [decisions[h.id] for h in answer.hits[:options.k]
                             if h.id in decisions]
                detail.update(hits=hit_list(answer.hits, options.k), abstained=answer.abstain,
                              files=list(scenario.files))
            elif condition != "none":
                shown = fx.decisions
            detail["context"] = [d.id for d in shown]
            reply = session.complete(
                messages(scenario.task, context(condition, fx.decisions, shown)), item, repeat)
            detail["reply"] = reply
            detail.update(judge(reply, scenario))
            cell[scenario.id] = detail
            done += 1
            if progress:
                progress("behaviour", done, total)
        records[f"behaviour/{condition}"] = cell
    return score(records, options)


def parse_answer(reply: str) -> tuple[dict[str, Any] | None, str | None]:
    """The structured answer in ``reply``, or why there is none. A reply wrapped in a Markdown
    code fence is read inside it (local models often add one); nothing else is forgiven."""
    text = reply.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        answer = json.loads(text)
    except ValueError:
        return None, "the reply is not JSON"
    if not isinstance(answer, dict):
        return None, "the reply is not a JSON object"
    if not isinstance(answer.get("proposal"), str):
        return None, "proposal is not a string"
    for key in ("key_technologies", "acknowledged_rejections"):
        value = answer.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None, f"{key} is not a list of strings"
    return answer, None


def _names(text: str, names: list[str]) -> bool:
    """Whether ``text`` names one of ``names`` (case-insensitive, as a whole word or phrase:
    "Redis" is not found in "Redistribute")."""
    lowered = text.lower()
    return any(re.search(rf"(?<![a-z0-9]){re.escape(n.lower())}(?![a-z0-9])", lowered)
               for n in names)


def judge(reply: str, scenario: Scenario) -> dict[str, Any]:
    """The deterministic judgement of one reply (no LLM): the rejected option is proposed again
    when it is named in ``key_technologies`` or the proposal and not in
    ``acknowledged_rejections``. A malformed reply respects nothing: it fails, with its reason."""
    answer, malformed = parse_answer(reply)
    if answer is None:
        return {"malformed": malformed, "proposed_again": None, "respected": False}
    names = [scenario.rejected_option, *scenario.rejected_aliases]
    proposed = (any(_names(t, names) for t in answer["key_technologies"])
                or _names(answer["proposal"], names))
    acknowledged = any(_names(t, names) for t in answer["acknowledged_rejections"])
    return {"malformed": None, "proposed_again": proposed and not acknowledged,
            "respected": not (proposed and not acknowledged)}


def score(records: Records, options: BehaviourOptions) -> SuiteRun:
    """Each cell's ``veto_respected_rate``: the share of its scenarios whose reply did not propose
    the rejected option again."""
    result = SuiteRun()
    for cell, items in records.items():
        respected = sum(1 for item in items.values() if item["respected"] is True)
        result.add(cell, {"veto_respected_rate": ratio(respected, len(items))}, {
            ident: {**item, "outcome": outcome(item["respected"] is True)}
            for ident, item in items.items()})
    return result
