"""The push suite through real adapter processes: a Node.js adapter speaking the wire protocol
(it logs every request it gets, answers push with a rendered ``text``) and a Python one through
the host. What the adapter sees — held-out conversations never, assistant turns only as context —
and how twins, text and leaks are scored."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from membench_gate.config import load_config
from membench_gate.errors import GateError
from membench_gate.run.runner import run
from tests.support.cli import run_cli
from tests.support.configs import write_json

pytestmark = pytest.mark.slow

# Pushes every record of the query's source whose entity (or alias) the turn names, at most k,
# unless an earlier turn named it; MODE=leak adds the other copy of a twin, MODE=badtext answers a
# number as text. Every request is appended to LOG, one JSON line each.
NODE_ADAPTER = r'''
const fs = require("fs");
const readline = require("readline");
const [mode, log] = [process.argv[2], process.argv[3]];
let records = [];
const named = (r, text) => [r.entity, ...r.aliases].some(
  (n) => text.toLowerCase().includes(n.toLowerCase()));
const methods = {
  initialize: () => ({protocol: 1, name: "node-push", capabilities: {push: true, write: false}}),
  reset: () => { records = []; return null; },
  ingest: (p) => { records.push(...p.records); return null; },
  search: () => ({hits: [], abstain: true}),
  push: ({query}) => {
    const mine = records.filter((r) => r.source === query.source && named(r, query.text)
      && !query.context.some((t) => named(r, t)));
    let ids = mine.map((r) => r.id).slice(0, query.k);
    if (mode === "leak") {
      const twin = records.find((r) => r.source !== query.source && mine.some((m) => m.entity === r.entity));
      if (twin) ids = [...ids.slice(0, query.k - 1), twin.id];
    }
    if (mode === "badtext") return {ids, text: 42};
    return ids.length ? {ids, text: "card:" + ids.join(",")} : {ids};
  },
  shutdown: () => null,
};
readline.createInterface({input: process.stdin}).on("line", (line) => {
  const req = JSON.parse(line);
  fs.appendFileSync(log, JSON.stringify(req) + "\n");
  const result = methods[req.method](req.params);
  process.stdout.write(JSON.stringify({jsonrpc: "2.0", id: req.id, result}) + "\n");
  if (req.method === "shutdown") process.exit(0);
});
'''


def page(slug: str, source: str, text: str, aliases: list[str]) -> dict[str, Any]:
    return {"slug": slug, "text": text, "aliases": aliases, "source": source}


WORK = {
    "id": "work", "source": "work", "category": "multi-source",
    "pages": [page("nadia", "work", "Nadia owns the pricing page.", ["Nadia"]),
              page("nadia", "personal", "Nadia lends the pressure washer.", ["Nadia"]),
              page("tomas", "work", "Tomás needs two weeks' notice 😀.", ["Tomas"])],
    "turns": [
        {"id": "1", "at": "2026-03-09T09:00:00Z", "text": "Nadia wants the note.",
         "expect": "retrieve", "gold": ["nadia"]},
        {"id": "2", "role": "assistant", "at": "2026-03-09T09:00:20Z",
         "text": "Tomas will want notice too."},
        {"id": "3", "text": "Right, ask Tomas.", "expect": "silent"},  # the assistant said it
        {"id": "4", "text": "And ping Tomas again.", "expect": "retrieve", "gold": ["tomas"]},
    ],
}
SECRET = {
    "id": "secret", "source": "work", "holdout": True,
    "pages": [page("zelda", "work", "Zelda is the held-out page.", ["Zelda"])],
    "turns": [{"id": "1", "text": "Ask Zelda.", "expect": "retrieve", "gold": ["zelda"]}],
}


def node_config(folder: Path, mode: str = "plain", include_holdout: bool = False) -> Path:
    (folder / "adapter.js").write_text(NODE_ADAPTER, encoding="utf-8")
    for conv in (WORK, SECRET):
        write_json(folder / "push" / "conversations" / f"{conv['id']}.json", conv)
    path = folder / "membench.toml"
    path.write_text(
        f'[adapter]\ncommand = ["node", "adapter.js", "{mode}", "log.jsonl"]\n'
        f'[suites.push]\nfixtures = ["push"]\nbudget = 2\n'
        f'[gate]\ninclude_holdout = {"true" if include_holdout else "false"}\n', encoding="utf-8")
    return path


def requests(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]


def test_a_held_out_conversation_is_never_sent_to_the_adapter(tmp_path: Path) -> None:
    results = run(load_config(node_config(tmp_path)))
    sent = (tmp_path / "log.jsonl").read_text()
    assert "Zelda" not in sent and "secret" not in sent
    assert [r["method"] for r in requests(tmp_path)].count("reset") == 1
    assert not any(i.startswith("secret") for cell in results.items.values() for i in cell)
    # With holdout included it is sent and scored: the check above can fail.
    folder = tmp_path / "with-holdout"
    folder.mkdir()
    results = run(load_config(node_config(folder, include_holdout=True)))
    assert "Zelda" in (folder / "log.jsonl").read_text()
    assert results.items["push/know_to_ask"]["secret.1"]["outcome"] == "pass"


def test_selftest_scores_held_out_items_only_when_asked(tmp_path: Path) -> None:
    # selftest takes --include-holdout as run, check and bless do: the same measurement.
    for flag, sent in (((), False), (("--include-holdout",), True)):
        folder = tmp_path / str(sent)
        folder.mkdir()
        node_config(folder)
        done = run_cli("selftest", "--mutant", "inject-nothing", *flag, cwd=folder)
        assert done.returncode in (0, 1), done.stdout + done.stderr
        assert ("Zelda" in (folder / "log.jsonl").read_text()) is sent


def test_only_user_turns_are_pushed_with_every_earlier_turn_as_context(tmp_path: Path) -> None:
    results = run(load_config(node_config(tmp_path)))
    pushes = [r["params"]["query"] for r in requests(tmp_path) if r["method"] == "push"]
    assert [q["text"] for q in pushes] == ["Nadia wants the note.", "Right, ask Tomas.",
                                           "And ping Tomas again."]
    assert pushes[1]["context"] == ["Nadia wants the note.", "Tomas will want notice too."]
    assert pushes[1]["context_turns"] == [
        {"role": "user", "text": "Nadia wants the note.", "at": "2026-03-09T09:00:00Z"},
        {"role": "assistant", "text": "Tomas will want notice too.", "at": "2026-03-09T09:00:20Z"}]
    ingested = [r["params"]["records"] for r in requests(tmp_path) if r["method"] == "ingest"]
    assert [(r["id"], r["entity"], r["source"]) for r in ingested[0]] == [
        ("nadia@work", "nadia", "work"), ("nadia@personal", "nadia", "personal"),
        ("tomas", "tomas", "work")]
    # The assistant named Tomas, so the adapter suppressed him on turns 3 and 4: 3 passes
    # (silent), 4's gold slug fails.
    know = results.cells["push/know_to_ask"]
    assert know.failed == ["work.4"] and know.gold_total == 3
    assert results.cells["push/push"].failed == ["work.4#tomas"]


def test_the_adapter_s_push_text_is_what_the_tokens_count(tmp_path: Path) -> None:
    results = run(load_config(node_config(tmp_path)))
    record = results.items["push/know_to_ask"]["work.1"]
    assert record["text"] == "card:nadia@work" and record["tokens"] == math.ceil(15 / 4)
    # Mean over the scored turns (1, 3, 4): only turn 1 injected.
    assert results.cells["push/know_to_ask"].metrics["avg_injected_tokens"] == 4 / 3
    assert results.cells["push/push"].metrics["avg_injected_tokens"] == 4 / 3


def test_a_leaked_twin_copy_is_a_violation_failing_the_turn(tmp_path: Path) -> None:
    results = run(load_config(node_config(tmp_path, "leak")))
    for cell, item in (("push/know_to_ask", "work.1"), ("push/push", "work.1#nadia")):
        assert results.items[cell][item]["foreign"] == ["nadia@personal"]
        assert results.items[cell][item]["outcome"] == "fail"
        assert results.cells[cell].metrics["source_isolation_violations"] == 1
    # Gold is the conversation's own copy, by record id (what `show` reads injections against).
    assert results.items["push/push"]["work.1#nadia"]["gold"] == ["nadia@work"]
    # The gold copy was injected too: recall keeps it, precision does not count the leak.
    assert results.cells["push/push"].metrics["push_recall"] == 1 / 2
    assert results.cells["push/push"].metrics["push_precision"] == 1 / 2


def test_push_text_that_is_not_a_string_is_a_protocol_error(tmp_path: Path) -> None:
    with pytest.raises(GateError) as caught:
        run(load_config(node_config(tmp_path, "badtext")))
    message = str(caught.value)
    assert "push" in message and "suite push" in message and "item work.1" in message
    assert "push text is a string or null" in message


PYTHON_ADAPTER = '''\
from membench_gate.reference import ReferenceMemory


class Rendering(ReferenceMemory):
    """The reference memory's push, answered as a mapping with the text it injects."""

    def push(self, query):
        ids = super().push(query)
        return {"ids": ids, "text": "x" * 10} if ids else ids
'''


def test_a_python_adapter_may_answer_push_with_ids_and_text(tmp_path: Path) -> None:
    node_config(tmp_path)
    (tmp_path / "rendering.py").write_text(PYTHON_ADAPTER, encoding="utf-8")
    path = tmp_path / "membench.toml"
    path.write_text('[adapter]\npython = "rendering:Rendering"\n[suites.push]\n'
                    'fixtures = ["push"]\nbudget = 2\n', encoding="utf-8")
    results = run(load_config(path))
    record = results.items["push/push"]["work.1#nadia"]
    assert record["injected"] == ["nadia@work"] and record["text"] == "x" * 10
    assert record["tokens"] == 3
