"""What a user reads when the adapter fails (docs/adapters.md, "Errors"): an exception of its code
as the adapter's (from the error response's ``data``, whichever language sent it), a broken rule
in the words of docs/adapters.md, the interpreter that could not import a Python adapter, the
stderr tail without colour codes, and the ``close()`` hook at shutdown. No JSON-RPC code in a line
a user reads; ``--debug`` keeps it."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from membench_gate.adapter import rpc
from membench_gate.adapter.host import serve
from tests.support.cli import run_cli, without_progress
from tests.support.paths import REPO

ABSTENTION = '[suites.abstention]\nfixtures = ["builtin"]\n'
FIRST_ITEM = "in suite abstention, item probe-001 in abstention/default"

MEMORIES = '''
import sys
from membench_gate.reference import ReferenceMemory


class LooksUp(ReferenceMemory):
    def search(self, query):
        print("\\x1b[1;31mERROR\\x1b[0m \\x1b]8;;https://example.com\\x1b\\\\lookup\\x1b]8;;\\x1b\\\\ "
              "failed \\u202e", file=sys.stderr, flush=True)
        return {}["e73f9a2c41"]


class Corrupt(ReferenceMemory):
    def search(self, query):
        raise RuntimeError("index shard 3 is corrupt")


class BadTau(ReferenceMemory):
    def __init__(self, **options):
        raise ValueError("tau must be in (0, 1]")


class NotAnAnswer(ReferenceMemory):
    def search(self, query):
        return None


class Closes(ReferenceMemory):
    def close(self):
        with open("closed.log", "a") as log:
            log.write("closed\\n")


class CloseFails(ReferenceMemory):
    def close(self):
        raise RuntimeError("flush failed")
'''


def python_memory(tmp_path: Path, target: str) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "memories.py").write_text(MEMORIES)
    (tmp_path / "membench.toml").write_text(
        f'[adapter]\npython = "{target}"\ntimeout = 30\n' + ABSTENTION)
    return tmp_path


def error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 4, (done.returncode, done.stdout, done.stderr)
    return [line for line in without_progress(done.stderr) if "adapter calls" not in line]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "check"])
def test_an_exception_in_search_reads_as_the_adapters(tmp_path: Path, command: str) -> None:
    # The old line: "adapter search() failed in suite …: error -32602 from the adapter: search:
    # bad params: KeyError: 'e73f9a2c41'" — the gate's request blamed, a JSON-RPC code shown.
    done = run_cli(command, cwd=python_memory(tmp_path, "memories:LooksUp"))
    lines = error_lines(done)
    assert lines[0] == ("membench-gate: error: adapter search() raised KeyError: 'e73f9a2c41' "
                        f"{FIRST_ITEM}")
    # The stderr tail without its colours and link (CSI, OSC); what else acts is still escaped.
    assert lines[1:] == ["  adapter stderr (last lines):", "  | ERROR lookup failed \\u202e"]
    assert "-326" not in done.stderr and "-32000" not in done.stderr


@pytest.mark.slow
def test_debug_keeps_the_code_the_traceback_and_the_escape_sequences(tmp_path: Path) -> None:
    done = run_cli("run", "--debug", cwd=python_memory(tmp_path, "memories:LooksUp"))
    assert done.returncode == 4
    assert '"code": -32000' in done.stderr  # the error response as it came
    assert re.search(r'File ".*memories\.py", line \d+, in search', done.stderr)
    assert "  | \\x1b[1;31mERROR\\x1b[0m \\x1b]8;;https://example.com\\x1b\\lookup" \
        in done.stderr.splitlines()[-1]
    assert done.stderr.splitlines()[-3].startswith(
        "membench-gate: error: adapter search() raised KeyError: 'e73f9a2c41' in suite")


@pytest.mark.slow
@pytest.mark.parametrize(("target", "line"), [
    ("memories:Corrupt", f"adapter search() raised RuntimeError: index shard 3 is corrupt "
                         f"{FIRST_ITEM}"),
    ("memories:BadTau", "adapter BadTau() raised ValueError: tau must be in (0, 1] "
                        "(during initialize)"),
    ("memories:NotAnAnswer", f"adapter search() failed {FIRST_ITEM}: search(): did not return "
                             "an Answer(hits=[...], abstain=bool): None (docs/adapters.md: "
                             "search(query) -> Answer)"),
])
def test_other_failures_of_python_adapters(tmp_path: Path, target: str, line: str) -> None:
    # Old lines: "… error -32000 from the adapter: search: RuntimeError: …", "adapter
    # initialize() failed: error -32000 from the adapter: adapter: memories:BadTau(**options)
    # failed: …".
    done = run_cli("run", cwd=python_memory(tmp_path, target))
    assert error_lines(done)[0] == f"membench-gate: error: {line}"


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "check"])
def test_a_missing_module_names_the_interpreter_that_looked(tmp_path: Path, command: str) -> None:
    done = run_cli(command, cwd=python_memory(tmp_path, "mymemory.bench:Memory"))
    # run_cli runs the gate with this interpreter, and the host runs on the gate's.
    assert error_lines(done)[0] == (
        "membench-gate: error: adapter initialize() failed: adapter.python: cannot import module "
        f"'mymemory.bench' with {sys.executable}: ModuleNotFoundError: No module named "
        "'mymemory' (is it installed for that interpreter?)")


@pytest.mark.slow
def test_close_is_called_once_at_shutdown(tmp_path: Path) -> None:
    folder = python_memory(tmp_path, "memories:Closes")
    done = run_cli("run", "--out", "r.json", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert (folder / "closed.log").read_text() == "closed\n"


@pytest.mark.slow
def test_an_exception_in_close_is_a_warning_and_the_results_stand(tmp_path: Path) -> None:
    folder = python_memory(tmp_path, "memories:CloseFails")
    done = run_cli("run", "--out", "r.json", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert json.loads((folder / "r.json").read_text())["cells"]  # results, not the error verdict
    assert "membench-gate: warning: adapter close() raised RuntimeError: flush failed (during " \
           "shutdown); the run's results stand" in done.stderr.splitlines()
    # With several workers, each warning says whose close() it was.
    done = run_cli("run", "--jobs", "2", "--out", "r.json", cwd=folder)
    assert done.returncode == 0, done.stderr
    warnings = sorted(line for line in done.stderr.splitlines() if "warning:" in line)
    assert warnings == [f"membench-gate: warning: worker {n}: adapter close() raised "
                        "RuntimeError: flush failed (during shutdown); the run's results stand"
                        for n in (1, 2)], done.stderr


def _requests(*methods: str) -> list[bytes]:
    params = {"initialize": {"protocol": 1, "options": {}}}
    return [json.dumps({"jsonrpc": "2.0", "id": n, "method": m, "params": params.get(m, {})})
            .encode() + b"\n" for n, m in enumerate(methods, 1)]


class _Counting:
    closed = 0

    def reset(self) -> None: ...
    def ingest(self, records: object) -> None: ...
    def search(self, query: object) -> None: ...

    def close(self) -> None:
        type(self).closed += 1
        raise OSError("disk full")


@pytest.mark.parametrize("methods", [("initialize", "reset", "shutdown"), ("initialize", "reset")])
def test_the_host_calls_close_once_on_shutdown_or_at_the_end_of_input(
        methods: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    _Counting.closed = 0
    out = io.BytesIO()
    assert serve(f"{__name__}:_Counting", _requests(*methods), out) == 0
    assert _Counting.closed == 1
    last = json.loads(out.getvalue().splitlines()[-1])
    if methods[-1] == "shutdown":  # answered with the exception, as the adapter's
        assert last["error"]["data"]["exception"] == {"type": "OSError", "message": "disk full"}
        assert last["error"]["data"]["function"] == "close"
    else:  # nobody reads an answer any more: one line on stderr
        assert last["result"] is None
        assert "membench_gate.host: adapter close() raised OSError: disk full" in \
            capsys.readouterr().err


def test_every_rule_an_error_quotes_is_worded_so_in_the_adapter_docs() -> None:
    page = " ".join((REPO / "docs" / "adapters.md").read_text().replace("*", "")
                    .replace("`", "").split())
    missing = [rule for rule in rpc.RULES.values() if rule not in page]
    assert not missing


# --- any language: a Node.js adapter saying what raised in the error's data ---

NODE_ADAPTER = r'''
const readline = require("readline");
const mode = process.argv[2];
let ids = [];
const methods = {
  initialize: () => ({ protocol: 1, name: "node-failing", capabilities: { push: false, write: false } }),
  reset: () => { ids = []; return null; },
  ingest: (p) => { for (const r of p.records) ids.push(r.id); return null; },
  search: (p) => {
    if (mode === "no-search") throw Object.assign(new Error("unknown method search"), { code: -32601 });
    if (mode === "plain") throw Object.assign(new Error("index shard 3 is corrupt"), { code: -32000 });
    const found = undefined;
    return { hits: [{ id: ids[0], score: found.score }], abstain: false };
  },
  shutdown: () => null,
};
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  let reply;
  try {
    reply = { jsonrpc: "2.0", id: request.id, result: methods[request.method](request.params) };
  } catch (err) {
    console.error(err.stack);
    const error = { code: err.code || -32000, message: String(err.message) };
    if (!err.code) {
      error.data = { exception: { type: err.name, message: err.message }, function: request.method,
                     traceback: String(err.stack).split("\n") };
    }
    reply = { jsonrpc: "2.0", id: request.id, error };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
'''


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
@pytest.mark.parametrize(("mode", "line"), [
    ("throws", f"adapter search() raised TypeError: Cannot read properties of undefined (reading "
               f"'score') {FIRST_ITEM}"),
    # An adapter that sends no data reads sensibly too: its message, a standard code in words.
    ("plain", f"adapter search() failed {FIRST_ITEM}: index shard 3 is corrupt"),
    ("no-search", f"adapter search() failed {FIRST_ITEM}: the adapter has no such method: "
                  "unknown method search"),
])
def test_a_node_adapter_error_reads_as_the_adapters(tmp_path: Path, mode: str, line: str) -> None:
    # The old lines: "… error -32000 from the adapter: Cannot read properties …", "… error
    # -32601 from the adapter: unknown method search".
    (tmp_path / "adapter.js").write_text(NODE_ADAPTER)
    (tmp_path / "membench.toml").write_text(
        f'[adapter]\ncommand = ["node", "adapter.js", "{mode}"]\n' + ABSTENTION)
    done = run_cli("run", cwd=tmp_path)
    lines = error_lines(done)
    assert lines[0] == f"membench-gate: error: {line}"
    assert "-326" not in done.stderr and "-32000" not in done.stderr
    if mode == "throws":  # the adapter's own stack, under the line
        assert any(re.fullmatch(r"  \|     at Object\.search \(.*adapter\.js:\d+:\d+\)", x)
                   for x in lines), lines
        debug = run_cli("run", "--debug", cwd=tmp_path)
        assert '"code": -32000' in debug.stderr and "the adapter's traceback:" in debug.stderr
