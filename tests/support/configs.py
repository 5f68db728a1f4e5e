"""The files a test writes: JSON, a gate config next to the test adapters, a results file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from membench_gate.config import Config, parse_config
from membench_gate.errors import GateError
from membench_gate.model.results import Cell, Results
from tests.support.paths import SUPPORT


def parse(text: str) -> Config:
    """A ``membench.toml`` text as the gate reads it, labelled ``membench.toml``."""
    return parse_config(text, Path("/repo/membench.toml"), label="membench.toml")


def error_of(text: str) -> str:
    """The one-line error a config text gets (it must be one line naming the file)."""
    with pytest.raises(GateError) as caught:
        parse(text)
    message = str(caught.value)
    assert message.startswith("membench.toml: ") and "\n" not in message
    return message


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def copy_test_adapters(folder: Path) -> None:
    """The test adapters module (adapters_for_tests) into ``folder``, where a config finds it."""
    shutil.copy(SUPPORT / "adapters_for_tests.py", folder / "adapters_for_tests.py")


def write_config(folder: Path, suites: str, adapter: str | None = None,
                 options: str = "") -> Path:
    """A membench.toml in ``folder`` with the test adapters module next to it (the loader puts the
    config's folder on sys.path)."""
    folder.mkdir(parents=True, exist_ok=True)
    copy_test_adapters(folder)
    head = f'[adapter]\npython = "{adapter}"\n' if adapter else ""
    if options:
        head += f"[adapter.options]\n{options}\n"
    path = folder / "membench.toml"
    path.write_text(head + suites, encoding="utf-8")
    return path


def write_adapter_config(folder: Path, target: str, options: dict[str, Any] | None = None) -> Path:
    """A membench.toml running every built-in suite on ``target``, with the test adapters module
    next to it."""
    suites = "\n".join(['[suites.veto]', 'fixtures = ["builtin"]', 'k = 5',
                        '[suites.abstention]', 'fixtures = ["builtin"]', 'k = 5',
                        'lambdas = [1, 2, 5, 10]', '[suites.push]', 'fixtures = ["builtin"]',
                        'budget = 3']) + "\n"
    lines = [f"{key} = {json.dumps(value)}" for key, value in (options or {}).items()]
    return write_config(folder, "[adapter.options]\n" + "".join(f"{line}\n" for line in lines)
                        + suites, adapter=target)


def veto_results(failed: list[str]) -> Results:
    """A results file with one cell, ``veto/files_known`` (recall 0.9 over 10 items, ``failed``
    failing): two of them make a verdict to post as a comment."""
    return Results(
        schema_version=1, fixtures_hash="f" * 64, config={"suites": {}}, digests={},
        cells={"veto/files_known": Cell(metrics={"veto_recall_at_k": 0.9}, gold_total=10,
                                        failed=failed)},
        receipt={"tool_version": "0", "started_at": "x", "duration": 1, "adapter": "a"},
        items={})


SMALL_FACTS = [{"id": "f1", "text": "The billing API listens on port 8443."},
               {"id": "f2", "text": "Deploys are frozen on Fridays after 3pm."}]
SMALL_PROBES = [{"id": "p1", "question": "Which port does the billing API listen on?",
                 "gold_fact_id": "f1"},
                {"id": "p2", "question": "When are deploys frozen?", "gold_fact_id": "f2"},
                {"id": "p3", "question": "Who owns the search cluster?", "gold_fact_id": None}]


# A memory that pushes, on every turn, the first page of another source than the conversation's:
# a source-isolation violation (zero-gated), for the tests that must see one named.
LEAKY_ADAPTER = '''\
from membench_gate.reference import ReferenceMemory


class Leaky(ReferenceMemory):
    """Pushes a page of another source on every turn: a source-isolation violation."""

    def ingest(self, records):
        super().ingest(records)
        self.foreign = sorted(r.id for r in records if r.source != records[0].source)

    def push(self, query):
        return (self.foreign[:1] or []) + super().push(query)[:2]
'''

# A justification that names the breaches of raising tau to 0.4 (the tests' usual regression).
JUSTIFICATION = ("Raising tau to 0.4 trades abstention/default net_at_1 and the newly failed "
                 "probes for fewer wrong answers, which our users asked for in the support review")
