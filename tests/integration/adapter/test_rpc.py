"""The adapter boundary: a child process speaking JSON-RPC 2.0 over stdio (docs/adapters.md).

Every way an adapter can misbehave — crash, hang, half a line, non-JSON, a wrong id, an error
response, an answer that breaks the contract, a missing or non-executable command — is exit 4
with one line naming the call and the item, the adapter's last stderr lines under it, and no
results or verdict file left from an earlier run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from membench_gate import Query, Record
from membench_gate.adapter.rpc import RULES, adapter_environment
from membench_gate.adapter.types import query_to_wire
from membench_gate.errors import GateError
from tests.support.cli import assert_error_verdict, cli_env, run_cli, without_progress
from tests.support.paths import REPO

# A tiny memory speaking the protocol by hand, like a third-party adapter would. argv[1] names a
# misbehaviour, triggered by the first call of argv[2] (default: search).
SCRIPTED = r'''
import json, math, os, sys, time

mode = sys.argv[1]
trigger = sys.argv[2] if len(sys.argv) > 2 else "search"
ids = []
with open("starts.log", "a") as log:
    log.write(f"{os.getpid()}\n")
if mode == "exit-at-start":
    print("cannot open the vector index", file=sys.stderr)
    sys.exit(1)

def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    req = json.loads(line)
    method, rid = req["method"], req["id"]
    result = None
    if method == "initialize":
        result = {"protocol": 1, "name": "scripted", "capabilities": {"push": True, "write": False}}
    elif method == "reset":
        ids = []
    elif method == "ingest":
        ids += [r["id"] for r in req["params"]["records"]]
    elif method in ("search", "push"):
        k = req["params"]["query"]["k"]
        top = sorted(ids)[:k]
        result = ({"hits": [{"id": i, "score": 1.0 / (n + 1)} for n, i in enumerate(top)],
                   "abstain": False} if method == "search" else {"ids": top[:1]})
    if method == trigger:
        print(f"scripted adapter: misbehaving on purpose ({mode})", file=sys.stderr)
        if mode == "crash":
            sys.exit(3)
        if mode == "hang":
            time.sleep(120)
        if mode == "half-line":
            sys.stdout.write('{"jsonrpc": "2.0", "id": ')
            sys.stdout.flush()
            sys.exit(0)
        if mode == "not-json":
            send_text = "loading model weights... done"
            sys.stdout.write(send_text + "\n")
            sys.stdout.flush()
            continue
        if mode == "wrong-id":
            rid += 1
        if mode == "float-id":  # the same number, but not the integer id it was sent
            rid = float(rid)
        if mode == "result-and-error":
            send({"jsonrpc": "2.0", "id": rid, "result": {"hits": [], "abstain": True},
                  "error": {"code": 7, "message": "and yet"}})
            continue
        if mode == "notification":
            send({"jsonrpc": "2.0", "method": "log", "params": {"text": "warming up"}})
            continue
        if mode == "latin-1":
            sys.stdout.buffer.write(b'{"note": "caf\xe9"}\n')
            sys.stdout.flush()
            continue
        if mode == "long-stderr":
            print("x" * 100_000, file=sys.stderr)
            sys.exit(3)
        if mode == "huge-stderr":  # 200 MB on one line that never ends, then a crash
            for _ in range(200):
                sys.stderr.write("\u00e9" * 500_000)
            sys.stderr.flush()
            sys.exit(3)
        if mode == "error":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000,
                                                         "message": "index shard 3 is corrupt"}})
            continue
        if mode == "null-id-error":  # as for a line it could not parse (JSON-RPC's rule)
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700,
                                                          "message": "unexpected end of string"}})
            continue
        if mode == "perl-inf":  # what Perl's JSON::PP writes for an infinity
            sys.stdout.write('{"jsonrpc": "2.0", "id": %d, "result": {"hits": [{"id": "%s", '
                             '"score": -Inf}], "abstain": false}}\n' % (rid, ids[0]))
            sys.stdout.flush()
            continue
        if mode == "inf-in-text":  # not JSON (cut short), with "Inf" only inside a string
            sys.stdout.write('{"jsonrpc": "2.0", "id": %d, "result": {"hits": [{"id": "%s", '
                             '"text": "range [0, Inf], done"}\n' % (rid, ids[0]))
            sys.stdout.flush()
            continue
        if mode == "buffered":  # answers, but never flushes (a pipe buffered as Perl's is)
            held = open(sys.stdout.fileno(), "w", buffering=1 << 16, closefd=False)
            held.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
            time.sleep(120)
        if mode == "too-many":
            result["hits"] = [{"id": i, "score": 1.0} for i in ids[:k + 1]]
        if mode == "duplicate":
            result["hits"] = [{"id": ids[0], "score": 1.0}, {"id": ids[0], "score": 0.5}]
        if mode == "unknown-id":
            result["hits"] = [{"id": "never-ingested", "score": 1.0}]
        if mode == "increasing":
            result["hits"] = [{"id": ids[0], "score": 0.1}, {"id": ids[1], "score": 0.9}]
        if mode == "nan":
            sys.stdout.write('{"jsonrpc": "2.0", "id": %d, "result": {"hits": [{"id": "%s", '
                             '"score": NaN}], "abstain": false}}\n' % (rid, ids[0]))
            sys.stdout.flush()
            continue
        if mode == "abstain-string":
            result["abstain"] = "no"
        if mode == "push-unknown":
            result = {"ids": ["somebody-else"]}
        if mode == "push-over-budget":
            result = {"ids": sorted(ids)[:k + 1]}
        if mode == "wrong-protocol":
            result["protocol"] = 2
        if mode == "no-name":
            del result["name"]
        if mode == "no-capabilities":
            del result["capabilities"]
        if mode == "null-name":
            result["name"] = None
        if mode == "no-protocol":
            del result["protocol"]
        if mode == "no-abstain":
            del result["abstain"]
        if mode == "no-score":
            result["hits"] = [{"id": ids[0]}]
    send({"jsonrpc": "2.0", "id": rid, "result": result})
    if method == trigger and mode == "twice":
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    if method == "shutdown":
        break
if mode == "linger":  # outlives the end of its input: only a kill stops it
    time.sleep(60)
'''

ABSTENTION = '[suites.abstention]\nfixtures = ["builtin"]\n'
PUSH = '[suites.push]\nfixtures = ["builtin"]\n'


def scripted(tmp_path: Path, mode: str, trigger: str = "search", suites: str = ABSTENTION,
             timeout: int = 20) -> Path:
    (tmp_path / "scripted.py").write_text(SCRIPTED)
    command = json.dumps([sys.executable, "scripted.py", mode, trigger])
    (tmp_path / "membench.toml").write_text(
        f"[adapter]\ncommand = {command}\ntimeout = {timeout}\n{suites}")
    return tmp_path


def assert_error(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert done.returncode == 4, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    first = without_progress(done.stderr)[0]
    assert first.startswith("membench-gate: error: "), done.stderr
    for needle in needles:
        assert needle in first, (needle, first)
    return first


@pytest.mark.slow
def test_an_adapter_that_never_flushes_its_answer_is_told_so(tmp_path: Path) -> None:
    """An answer left in a pipe's buffer (Perl's stdout, C's stdio) never arrives: the timeout
    of ``initialize`` says nothing came, and what to look at."""
    done = run_cli("run", cwd=scripted(tmp_path, "buffered", "initialize", timeout=2))
    assert_error(done, "adapter initialize() failed: no answer within 2s ([adapter] timeout); "
                       "nothing came on its stdout: a slow start needs a larger timeout, and an "
                       "adapter flushes each answer (docs/adapters.md, \"Debugging\")")
    # A call after initialize that times out is only the timeout.
    later = run_cli("run", cwd=scripted(tmp_path, "hang", "search", timeout=2))
    assert "nothing came" not in assert_error(later, "no answer within 2s ([adapter] timeout)")


@pytest.mark.slow
def test_a_well_behaved_scripted_adapter_runs(tmp_path: Path) -> None:
    # The control for every misbehaviour below: the same script, behaving.
    done = run_cli("run", "--out", "r.json", cwd=scripted(tmp_path, "none"))
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["receipt"]["adapter"] == "scripted"
    assert results["config"]["adapter"]["command"][1:] == ["scripted.py", "none", "search"]


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "why", "rule"), [
    ("crash", "ended without answering (exit code 3)", None),
    ("half-line", "an incomplete line on stdout", "line"),
    ("not-json", "not JSON: 'loading model weights... done' (log to stderr)", "stdout"),
    ("wrong-id", "a response to id", "response"),
    ("float-id", ".0, expected ", "response"),
    ("result-and-error", "a response with both result and error (one or the other)", "response"),
    ("twice", "(an earlier request's id: was that request answered twice?)", "response"),
    ("notification", "a message without an id (a notification?), expected the response to id",
     "response"),
    ("latin-1", "a line on stdout that is not UTF-8 (invalid continuation byte at byte 13)", "utf8"),
    ("long-stderr", "ended without answering (exit code 3)", None),
    ("error", ": index shard 3 is corrupt", None),
    ("null-id-error", ": the adapter could not parse the request: unexpected end of string", None),
    ("perl-inf", "-Inf is not JSON in a response (send finite numbers)", "finite"),
    ("inf-in-text", "not JSON: '{\"jsonrpc\": \"2.0\", \"id\": ", "stdout"),
    ("too-many", ": 6 hits for k=5", "k"),
    ("duplicate", "returned twice", "unique"),
    ("unknown-id", "'never-ingested' was never ingested since the last reset", "known"),
    ("increasing", "not best first", "order"),
    ("nan", "NaN is not JSON in a response (send finite numbers)", "finite"),
    ("abstain-string", "abstain must be a boolean", "abstain"),
])
def test_a_misbehaving_search_is_an_error_naming_call_and_item(tmp_path: Path, mode: str,
                                                               why: str, rule: str | None) -> None:
    out = tmp_path / "r.json"
    out.write_text("stale results of an earlier run")
    done = run_cli("run", "--out", str(out), cwd=scripted(tmp_path, mode))
    # A broken rule is named in the words of docs/adapters.md; a crash or an error response is a
    # failure; neither shows a JSON-RPC code.
    verb = "failed" if rule is None else "broke the protocol"
    first = assert_error(done, f"adapter search() {verb} in suite abstention, item probe-", why)
    assert re.search(r"item probe-\d+ in abstention/default: ", first), first  # and its cell
    if rule is not None:
        assert first.endswith(f"(docs/adapters.md: {RULES[rule]})"), first
    assert "-32000" not in first
    assert len(first) < 400
    assert_error_verdict(out)
    if mode in ("crash", "half-line", "error"):
        # The adapter's stderr, under the line, prefixed (never a workflow command).
        assert f"  | scripted adapter: misbehaving on purpose ({mode})" in done.stderr
    if mode == "long-stderr":  # a line of megabytes is cut, with its length
        assert f"  | {'x' * 2000} … (100000 characters)" in done.stderr.splitlines()


MAX_RSS = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stdout.write(done.stderr)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


@pytest.mark.slow
def test_a_stderr_line_that_never_ends_is_counted_not_held(tmp_path: Path) -> None:
    """200 MB of stderr with no newline: the gate keeps the line's head and its length, and
    its memory stays bounded (it held the whole line before: about three times its size)."""
    out = tmp_path / "r.json"
    done = run_cli("run", "--out", str(out), cwd=scripted(tmp_path, "huge-stderr"))
    assert_error(done, "adapter search() failed", "ended without answering (exit code 3)")
    assert f"  | {'é' * 2000} … (100000000 characters)" in done.stderr.splitlines()
    assert_error_verdict(out)
    measured = subprocess.run([sys.executable, "-c", MAX_RSS, sys.executable, "-m",
                               "membench_gate", "run"], cwd=tmp_path, env=cli_env(),
                              capture_output=True, text=True, check=True, timeout=300)
    code, peak_kib = measured.stdout.splitlines()[-1].split()
    assert code == "4"
    assert int(peak_kib) < 150 * 1024, peak_kib  # the line alone is 200 MB


@pytest.mark.slow
def test_a_hanging_adapter_is_killed_after_the_timeout(tmp_path: Path) -> None:
    done = run_cli("run", cwd=scripted(tmp_path, "hang", timeout=1))
    assert_error(done, "adapter search() failed in suite abstention, item probe-",
                 "no answer within 1s")


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "why"), [
    ("push-unknown", "'somebody-else' was never ingested"),
    ("push-over-budget", "4 ids for k=3"),
])
def test_push_answers_are_checked(tmp_path: Path, mode: str, why: str) -> None:
    done = run_cli("run", cwd=scripted(tmp_path, mode, "push", PUSH))
    assert_error(done, "adapter push() broke the protocol in suite push, item conv-", why)


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "trigger", "why"), [
    ("exit-at-start", "initialize", "adapter initialize() failed: the adapter process ended"),
    ("wrong-protocol", "initialize", "speaks protocol 2"),
    # A key left out is said to be missing, not to be null (it was not sent as null).
    ("no-name", "initialize",
     'initialize must answer a non-empty string "name", got no "name" at all'),
    ("null-name", "initialize", 'initialize must answer a non-empty string "name", got null'),
    ("no-protocol", "initialize", 'initialize must answer "protocol": 1, got no "protocol"'),
    ("no-capabilities", "initialize", 'capabilities must be an object of booleans, each '
     'optional ({"push": bool, "write": bool, "workers": bool}; one left out is false, '
     '"workers" true), got no "capabilities" at all'),
    ("no-abstain", "search", 'abstain must be a boolean, got no "abstain" at all'),
    ("no-score", "search", 'has a score that is missing (no "score" at all)'),
    ("crash", "ingest", "adapter ingest() failed in suite abstention"),
    ("crash", "reset", "adapter reset() failed in suite abstention"),
])
def test_failures_outside_search(tmp_path: Path, mode: str, trigger: str, why: str) -> None:
    done = run_cli("run", cwd=scripted(tmp_path, mode, trigger))
    assert_error(done, why)
    if mode == "exit-at-start":
        assert "  | cannot open the vector index" in done.stderr


def test_a_missing_executable_is_named(tmp_path: Path) -> None:
    (tmp_path / "membench.toml").write_text(
        '[adapter]\ncommand = ["no-such-memory-binary", "--serve"]\n' + ABSTENTION)
    assert_error(run_cli("run", cwd=tmp_path), "cannot start 'no-such-memory-binary'",
                 "no such executable")


@pytest.mark.slow
def test_a_command_that_is_not_executable_is_named(tmp_path: Path) -> None:
    (tmp_path / "adapter.sh").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "membench.toml").write_text('[adapter]\ncommand = ["./adapter.sh"]\n' + ABSTENTION)
    assert_error(run_cli("run", cwd=tmp_path), "cannot start './adapter.sh'", "permission denied")


@pytest.mark.slow
def test_check_replaces_its_outputs_with_the_error_verdict(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    scripted(tmp_path, "crash")
    (tmp_path / "verdict.json").write_text('{"verdict": "pass"}')
    (tmp_path / "report.md").write_text("PASS (stale)")
    done = run_cli("check", "--json", "verdict.json", "--report", "report.md", cwd=tmp_path)
    assert_error(done, "adapter search() failed")
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert (verdict["verdict"], verdict["exit_code"]) == ("error", 4)
    assert "PASS (stale)" not in (tmp_path / "report.md").read_text()


# --- Python adapters through the host: their code cannot touch the gate's process ---

ESCAPING = '''
import argparse, os, sys
from membench_gate.reference import ReferenceMemory


class Exits(ReferenceMemory):
    def search(self, query):
        sys.exit(0)


class ParsesArgs(ReferenceMemory):
    def __init__(self, **options):
        super().__init__(**options)
        argparse.ArgumentParser().parse_args(["--no-such-flag"])  # exits 2


class Raises(ReferenceMemory):
    def search(self, query):
        class Doom(BaseException):
            pass
        raise Doom("the end")


class Wanders(ReferenceMemory):
    def ingest(self, records):
        os.chdir("/")
        print("::set-output name=verdict::pass")
        super().ingest(records)


class Prints(ReferenceMemory):
    def search(self, query):
        print("debug: searching", query.text)
        return super().search(query)
'''


def python_adapter(tmp_path: Path, attr: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "escaping.py").write_text(ESCAPING)
    (tmp_path / "membench.toml").write_text(
        f'[adapter]\npython = "escaping:{attr}"\ntimeout = 30\n' + ABSTENTION)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize(("attr", "why"), [
    ("Exits", "adapter search() raised SystemExit: 0 in suite abstention, item probe-"),
    ("ParsesArgs", "adapter ParsesArgs() raised SystemExit: 2 (during initialize)"),
    ("Raises", "adapter search() raised Doom: the end in suite abstention, item probe-"),
])
def test_adapter_code_cannot_choose_the_exit_code(tmp_path: Path, attr: str, why: str) -> None:
    repo = python_adapter(tmp_path, attr)
    (repo / "verdict.json").write_text('{"verdict": "pass"}')
    done = run_cli("check", "--json", "verdict.json", cwd=repo)
    assert_error(done, why)
    assert json.loads((repo / "verdict.json").read_text())["verdict"] == "error"


@pytest.mark.slow
def test_chdir_and_prints_in_the_adapter_change_nothing(tmp_path: Path) -> None:
    repo = python_adapter(tmp_path, "Wanders")
    done = run_cli("run", "--out", "r.json", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert (repo / "r.json").exists()  # written where the gate was asked to, not under /
    assert "::set-output" not in done.stdout + done.stderr
    printing = python_adapter(tmp_path / "printing", "Prints")
    done = run_cli("run", "--out", "r.json", cwd=printing)
    assert done.returncode == 0, done.stderr
    assert "debug: searching" not in done.stdout  # stdout is the protocol; prints go to stderr


@pytest.mark.slow
def test_the_same_results_in_and_out_of_a_subfolder(tmp_path: Path) -> None:
    # The host serves the same object as before; results are byte-identical across two runs.
    first = run_cli("run", "--out", str(tmp_path / "a.json"), cwd=REPO)
    second = run_cli("run", "--out", str(tmp_path / "b.json"), cwd=REPO)
    assert first.returncode == second.returncode == 0
    strip = [json.loads(p.read_text()) for p in (tmp_path / "a.json", tmp_path / "b.json")]
    for data in strip:
        data.pop("receipt")
    assert strip[0] == strip[1]


@pytest.mark.slow
def test_a_mistyped_adapter_class_gets_a_suggestion(tmp_path: Path) -> None:
    (tmp_path / "membench.toml").write_text(
        '[adapter]\npython = "membench_gate.reference:ReferenceMemroy"\n' + ABSTENTION)
    assert_error(run_cli("run", cwd=tmp_path), "has no attribute 'ReferenceMemroy'",
                 "did you mean 'ReferenceMemory'?")


def test_the_adapter_environment_withholds_credentials_and_file_commands() -> None:
    env = {"PATH": "/bin", "GITHUB_TOKEN": "t", "GH_TOKEN": "t", "ACTIONS_RUNTIME_TOKEN": "t",
           "ACTIONS_ID_TOKEN_REQUEST_URL": "u", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "t",
           "GITHUB_OUTPUT": "/o", "GITHUB_ENV": "/e", "GITHUB_PATH": "/p", "GITHUB_STATE": "/s",
           "GITHUB_STEP_SUMMARY": "/m", "GITHUB_SHA": "abc", "ACTIONS_CACHE_URL": "c"}
    assert adapter_environment(env) == {"PATH": "/bin", "GITHUB_SHA": "abc",
                                        "ACTIONS_CACHE_URL": "c"}


@pytest.mark.slow
def test_the_adapter_process_really_gets_that_environment(tmp_path: Path) -> None:
    (tmp_path / "envdump.py").write_text(
        "import json, os\nfrom membench_gate.reference import ReferenceMemory\n"
        "class Dump(ReferenceMemory):\n"
        "    def __init__(self, **o):\n"
        "        super().__init__(**o)\n"
        "        open('env.json', 'w').write(json.dumps(dict(os.environ)))\n")
    (tmp_path / "membench.toml").write_text('[adapter]\npython = "envdump:Dump"\n' + ABSTENTION)
    env = {**os.environ, "GITHUB_TOKEN": "ghs_secret", "GITHUB_OUTPUT": str(tmp_path / "out")}
    for name in ("CI", "GITHUB_ACTIONS", "PYDANTIC_DISABLE_PLUGINS", "MEMBENCH_GATE_ONLY"):
        env.pop(name, None)

    def seen_by_the_adapter(env: dict[str, str]) -> dict[str, str]:
        done = subprocess.run([sys.executable, "-m", "membench_gate", "run"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        seen: dict[str, str] = json.loads((tmp_path / "env.json").read_text())
        return seen

    seen = seen_by_the_adapter(env)
    assert "GITHUB_TOKEN" not in seen and "GITHUB_OUTPUT" not in seen
    assert seen["PATH"] == env["PATH"]
    # The gate switches pydantic's plugins off for itself alone: the system under test keeps its
    # own; a switch the user set reaches the adapter as the user set it.
    assert "PYDANTIC_DISABLE_PLUGINS" not in seen and "MEMBENCH_GATE_ONLY" not in seen
    seen = seen_by_the_adapter({**env, "PYDANTIC_DISABLE_PLUGINS": "1"})
    assert seen["PYDANTIC_DISABLE_PLUGINS"] == "1" and "MEMBENCH_GATE_ONLY" not in seen


@pytest.mark.slow
def test_a_foreign_runners_results_are_checked_against_the_shipped_schema(tmp_path: Path) -> None:
    """A runner in another language hands over a results file: valid per the shipped JSON
    Schema, it is gated like a run of ours; broken, it is an ERROR naming the field."""
    import jsonschema

    from membench_gate.model.schemas import SCHEMA_DIR

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "membench.toml").write_text(ABSTENTION)
    assert run_cli("bless", cwd=tmp_path).returncode == 0
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm",
                    "gate", "--allow-empty"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm",
                    "baseline"], cwd=tmp_path, check=True)
    assert run_cli("run", "--out", "foreign.json", cwd=tmp_path).returncode == 0
    results = json.loads((tmp_path / "foreign.json").read_text())
    schema = json.loads((SCHEMA_DIR / "results.schema.json").read_text())
    jsonschema.validate(results, schema)
    results["receipt"]["adapter"] = "my-go-memory 1.4.0"  # the runner names itself
    (tmp_path / "foreign.json").write_text(json.dumps(results))
    done = run_cli("check", "--results", "foreign.json", "--base-ref", "HEAD", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr

    del results["cells"]["abstention/default"]["gold_total"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(results, schema)
    (tmp_path / "foreign.json").write_text(json.dumps(results))
    done = run_cli("check", "--results", "foreign.json", "--json", "v.json", cwd=tmp_path)
    assert_error(done, "foreign.json", "gold_total")
    assert json.loads((tmp_path / "v.json").read_text())["verdict"] == "error"



BATCH_RECORDER = """
from membench_gate import Answer, Hit


class Recorder:
    \"\"\"Remembers the size of every ingest call; search returns them, then the ids in order.\"\"\"

    def __init__(self, fail_on_batch=0):
        self.fail_on_batch, self.batches, self.ids = fail_on_batch, [], []

    def reset(self):
        self.batches, self.ids = [], []

    def ingest(self, records):
        self.batches.append(len(records))
        if len(self.batches) == self.fail_on_batch:
            raise RuntimeError(f"batch {self.fail_on_batch} refused")
        self.ids += [r.id for r in records]

    def search(self, query):
        sizes = [Hit(f"batch:{n}:{i}", 1.0) for i, n in enumerate(self.batches)]
        return Answer(sizes + [Hit(i, 0.5) for i in self.ids], abstain=False)
"""


def _recorder(tmp_path: Path, options: dict) -> Any:
    from membench_gate.adapter import rpc

    (tmp_path / "batchrec.py").write_text(BATCH_RECORDER)
    return rpc.start(rpc.adapter_argv(None, "batchrec:Recorder"), tmp_path, options, 30.0)


def test_ingest_is_sent_in_ordered_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from membench_gate.adapter import rpc

    monkeypatch.setattr(rpc, "INGEST_BATCH", 3)
    with _recorder(tmp_path, {}) as client:
        client.session("veto").ingest([Record(id=f"r{n}", text=f"note {n}") for n in range(10)])
        answer = client.process.call("search", {"query": query_to_wire(Query("x", k=20))})
        assert len(client.latencies["ingest"]) == 4
    # 10 records in calls of 3, 3, 3 and 1, in their order.
    assert [h["id"] for h in answer["hits"]] == [
        "batch:3:0", "batch:3:1", "batch:3:2", "batch:1:3", *(f"r{n}" for n in range(10))]


def test_a_failing_batch_stops_the_ingest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from membench_gate.adapter import rpc

    monkeypatch.setattr(rpc, "INGEST_BATCH", 3)
    with pytest.raises(GateError) as failed, _recorder(tmp_path, {"fail_on_batch": 2}) as client:
        client.session("veto").ingest([Record(id=f"r{n}", text="t") for n in range(10)], "item-7")
    message = str(failed.value)
    assert "ingest" in message and "item-7" in message and "batch 2 refused" in message


# --- the boundary at in-process speed: what makes a large ingest cheap ---

GC_PROBE = """
import gc
from membench_gate import Answer, Hit


class Probe:
    \"\"\"Says, in its hits' texts, whether the collector ran during each ingest and search.\"\"\"

    def reset(self):
        self.seen = []

    def ingest(self, records):
        self.seen.append(f"ingest:{gc.isenabled()}")

    def search(self, query):
        return Answer([Hit(f"h{n}", 1.0, text) for n, text in
                       enumerate(self.seen + [f"search:{gc.isenabled()}"])], abstain=False)
"""


def test_the_host_answers_each_request_with_the_collector_paused(tmp_path: Path) -> None:
    from membench_gate.adapter import rpc

    (tmp_path / "gcprobe.py").write_text(GC_PROBE)
    with rpc.start(rpc.adapter_argv(None, "gcprobe:Probe"), tmp_path, {}, 30.0) as client:
        client.process.call("reset", {})
        client.process.call("ingest", {"records": []})
        answer = client.process.call("search", {"query": query_to_wire(Query("x", k=5))})
    assert [h["text"] for h in answer["hits"]] == ["ingest:False", "search:False"]


FREEZE_PROBE = """
import gc
import weakref

from membench_gate import Answer, Hit


class Node:
    def __init__(self, records):
        self.records, self.me = list(records), self  # a cycle: only a collection frees it


class Probe:
    def __init__(self):
        self.store, self.old = None, None

    def reset(self):
        if self.store is not None:
            self.old = weakref.ref(self.store)
        self.store = None

    def ingest(self, records):
        self.store = Node(records)

    def search(self, query):
        gc.collect()  # what a collection may free now
        gone = self.old is not None and self.old() is None
        return Answer([Hit("h", 1.0, f"frozen:{gc.get_freeze_count() > 0} old store freed:{gone}")],
                      abstain=False)
"""


def test_what_an_ingest_stores_is_frozen_until_the_next_reset(tmp_path: Path) -> None:
    from membench_gate.adapter import rpc

    (tmp_path / "freezeprobe.py").write_text(FREEZE_PROBE)
    from membench_gate.adapter.host import FAST_DECODE_BYTES

    def records(count: int) -> list[dict[str, object]]:
        return [{"id": f"r{n}", "text": "a memory of some length " * 20, "source": "default",
                 "files": [], "created_at": None, "reviewed_at": None, "relevance": None,
                 "entity": None, "aliases": [], "meta": {}} for n in range(count)]

    large, small = records(200), records(1)  # a batch past the fast-decode size, and one record
    assert len(json.dumps(large)) > FAST_DECODE_BYTES > len(json.dumps(small))
    texts = []
    with rpc.start(rpc.adapter_argv(None, "freezeprobe:Probe"), tmp_path, {}, 30.0) as client:
        for batch in (large, large, small):
            client.process.call("reset", {})
            texts.append(client.process.call("search", {"query": query_to_wire(Query("x", k=5))}))
            client.process.call("ingest", {"records": batch})
            texts.append(client.process.call("search", {"query": query_to_wire(Query("x", k=5))}))
    assert [t["hits"][0]["text"] for t in texts] == [
        "frozen:False old store freed:False",  # nothing ingested yet
        "frozen:True old store freed:False",   # the store, out of the collector's sight
        "frozen:False old store freed:True",   # handed back at the reset: its cycle collected
        "frozen:True old store freed:True",
        "frozen:False old store freed:True",
        "frozen:False old store freed:True",   # a small batch is left to the collector
    ]


UNCLOSED = """
import os
from pathlib import Path


class Unclosed:
    \"\"\"A memory that writes its log through a file it never closes, relying on the exit.\"\"\"

    def __init__(self):
        self.log = open(Path(os.environ["UNCLOSED_LOG"]), "w")

    def reset(self):
        self.log.write("reset\\n")

    def ingest(self, records):
        self.log.write(f"{len(records)} records\\n")

    def search(self, query):
        return {"hits": [], "abstain": True}

    def close(self):
        Path(os.environ["UNCLOSED_LOG"] + ".closed").write_text("closed")
"""


def test_a_host_that_answered_shutdown_exits_as_python_exits(tmp_path: Path) -> None:
    """The host exits after ``shutdown`` as Python exits: ``close()`` ran before, and a file
    the memory never closed is flushed (an ``os._exit`` to save the interpreter's teardown
    would lose it)."""
    from membench_gate.adapter import rpc

    (tmp_path / "unclosed.py").write_text(UNCLOSED)
    log = tmp_path / "memory.log"
    env = {**os.environ, "UNCLOSED_LOG": str(log)}
    with rpc.start(rpc.adapter_argv(None, "unclosed:Unclosed"), tmp_path, {}, 30.0,
                   env=env) as client:
        client.process.call("reset", {})
        client.process.call("ingest", {"records": [{"id": "r1", "text": "t"}]})
        process = client.process.proc
    assert process.wait(timeout=10) == 0
    assert log.read_text() == "reset\n1 records\n"
    assert (tmp_path / "memory.log.closed").read_text() == "closed"


def test_ingest_batches_are_built_and_encoded_with_the_collector_paused(tmp_path: Path) -> None:
    import gc

    seen = []

    def batches() -> Any:
        for n in range(3):
            seen.append(gc.isenabled())
            yield {"records": [{"id": f"r{n}", "text": "t"}]}

    with _recorder(tmp_path, {}) as client:
        client.call_each("ingest", batches(), "veto", None)
        assert gc.isenabled() and len(client.latencies["ingest"]) == 3
    assert seen == [False, False, False]


@pytest.mark.skipif(sys.platform != "linux", reason="pipe sizes are Linux's")
def test_the_pipes_to_the_adapter_hold_a_whole_ingest_batch(tmp_path: Path) -> None:
    import fcntl

    from membench_gate.adapter import rpc

    allowed = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    with _recorder(tmp_path, {}) as client:
        sizes = [fcntl.fcntl(stream.fileno(), 1032)  # F_GETPIPE_SZ
                 for stream in (client.process.proc.stdin, client.process.proc.stdout)]
    assert sizes == [min(rpc.PIPE_BYTES, allowed)] * 2 and sizes[0] > 64 * 1024


DEAF = """
import json, sys, time

line = sys.stdin.buffer.readline()  # initialize, answered; then it never reads again
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": json.loads(line)["id"], "result": {
    "protocol": 1, "name": "deaf", "capabilities": {"push": False, "write": False}}}) + "\\n")
sys.stdout.flush()
time.sleep(600)
"""


@pytest.mark.parametrize("megabytes", [0.02, 3])  # fits the pipe; does not
def test_an_adapter_that_stops_reading_a_large_request_times_out_once(
        tmp_path: Path, megabytes: float) -> None:
    from membench_gate.adapter import rpc

    (tmp_path / "deaf.py").write_text(DEAF)
    text = "x" * 1000
    records = [Record(id=f"r{n}", text=text) for n in range(int(megabytes * 1000))]
    with rpc.start([sys.executable, "deaf.py"], tmp_path, {}, 2.0) as client:
        started = time.monotonic()
        with pytest.raises(GateError, match=r"ingest.*no answer within 2s \(\[adapter\] timeout\)"):
            client.session("veto").ingest(records)
        took = time.monotonic() - started
        assert not client.process.alive
    # The timeout counts from the request's send, its writing included: one timeout, not two.
    assert 2.0 <= took < 3.5


ENDS_READING = """
import json, os, subprocess, sys

line = sys.stdin.buffer.readline()
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": json.loads(line)["id"], "result": {
    "protocol": 1, "name": "ends", "capabilities": {"push": False, "write": False}}}) + "\\n")
sys.stdout.flush()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # holds stdin open
sys.stdin.buffer.read(100)  # starts reading the next request, then ends
os._exit(3)
"""


def test_an_adapter_that_ends_while_its_child_holds_the_request_pipe_is_seen_to_end(
        tmp_path: Path) -> None:
    from membench_gate.adapter import rpc

    (tmp_path / "ends.py").write_text(ENDS_READING)
    records = [Record(id=f"r{n}", text="x" * 1000) for n in range(3000)]  # 3 MB: past the pipe
    with rpc.start([sys.executable, "ends.py"], tmp_path, {}, 20.0) as client:
        started = time.monotonic()
        with pytest.raises(GateError, match=r"ended without answering \(exit code 3\)"):
            client.session("veto").ingest(records)
        assert time.monotonic() - started < 10  # not the 20 s timeout


# --- the adapter starts only once every input is read and the config is valid ---


def _running(folder: Path) -> list[int]:
    """Other processes (zombies aside) whose working directory is ``folder``: an adapter's."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and int(proc.name) != os.getpid() \
                    and os.readlink(proc / "cwd") == str(folder) \
                    and (proc / "stat").read_text().split(") ")[-1][:1] != "Z":
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _gone(folder: Path, within: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + within
    while _running(folder):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.slow
@pytest.mark.parametrize("argv", [("run",), ("check",)])
def test_the_adapter_is_started_once(tmp_path: Path, argv: tuple[str]) -> None:
    folder = scripted(tmp_path, "none")
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    done = run_cli(*argv, cwd=folder)
    assert "abstention: 470/470 adapter calls done" in done.stderr, done.stderr
    assert len((folder / "starts.log").read_text().split()) == 1


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "suites", "why"), [
    (("run",), '[suites.abstention]\nfixtures = ["builtin"]\nk = 0\n', "suites.abstention.k"),
    (("run", "--suite", "veto"), ABSTENTION, "--suite veto"),
    (("check",), '[suites.abstention]\nfixtures = ["builtin"]\nkk = 5\n', "did you mean 'k'"),
    (("check",), '[suites.abstention]\nfixtures = ["nowhere"]\n', "folder 'nowhere' not found"),
])
def test_an_invalid_config_or_missing_input_never_starts_the_adapter(
        tmp_path: Path, argv: tuple[str], suites: str, why: str) -> None:
    folder = scripted(tmp_path, "linger", suites=suites)
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    done = run_cli(*argv, cwd=folder)
    assert_error(done, why)
    assert not (folder / "starts.log").exists(), "the adapter ran before its inputs were read"


def test_an_adapter_that_answers_shutdown_but_stays_is_killed_and_said(tmp_path: Path) -> None:
    """The run stands (every answer was measured), but a process that outlives its shutdown
    by the grace period is killed with a warning, never silently; one that exits is not."""
    folder = scripted(tmp_path, "linger")
    started = time.monotonic()
    done = run_cli("run", "--out", folder / "r.json", cwd=folder)
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "warning" in line]
    assert warned == ["membench-gate: warning: the adapter answered shutdown but had not exited "
                      "5 s later, so it was killed (a thread or child still running?); the "
                      "run's results stand"], done.stderr
    assert time.monotonic() - started < 30 and (folder / "r.json").exists()
    (tmp_path / "clean").mkdir()
    clean = run_cli("run", cwd=scripted(tmp_path / "clean", "none"))
    assert clean.returncode == 0 and "warning" not in clean.stderr, clean.stderr


@pytest.mark.parametrize(("mode", "said"), [
    ("hang", "no answer within 2s (the shutdown grace)"),
    ("crash", "the adapter process ended without answering (exit code 3)"),
])
def test_a_shutdown_not_answered_is_said_and_the_run_stands(tmp_path: Path, mode: str,
                                                            said: str) -> None:
    folder = scripted(tmp_path, mode, "shutdown", timeout=2)
    done = run_cli("run", "--out", folder / "r.json", cwd=folder)
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warned) == 1 and warned[0].startswith("membench-gate: warning: adapter shutdown() "
                                                     "failed"), done.stderr
    assert warned[0].endswith(f"{said}; the run's results stand"), warned
    assert json.loads((folder / "r.json").read_text())["cells"]


def test_workers_that_do_not_answer_shutdown_wait_out_one_grace_together(
        tmp_path: Path) -> None:
    """Each of two hanging workers is said, and their graces (here the 4 s timeout) overlap:
    one after the other they would take 8 s."""
    folder = scripted(tmp_path, "hang", "shutdown", timeout=4)
    started = time.monotonic()
    done = run_cli("run", "--jobs", "2", "--out", folder / "r.json", cwd=folder)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    warned = sorted(line for line in done.stderr.splitlines() if "warning" in line)
    assert [w.split(": adapter shutdown()")[0] for w in warned] == [
        "membench-gate: warning: worker 1", "membench-gate: warning: worker 2"], done.stderr
    assert all("no answer within 4s (the shutdown grace)" in w for w in warned), warned
    assert took < 7.5, took


@pytest.mark.slow
def test_check_outside_a_repository_fails_before_the_adapter_starts(tmp_path: Path) -> None:
    """The base commit is resolved before any code of the memory runs: with no repository there
    is no base, and the memory never started (the control above shows a start is logged)."""
    folder = scripted(tmp_path, "none")
    done = run_cli("check", "--base-ref", "main", cwd=folder)
    assert done.returncode == 4
    assert not (folder / "starts.log").exists()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
@pytest.mark.parametrize(("option", "why"), [
    ("d = 1979-05-27", "adapter.options.'d'"),        # JSON has no dates: initialize can't carry it
    ("x = nan", "adapter.options.x: cannot write a non-finite number"),
])
def test_options_initialize_cannot_carry_stop_the_adapter(tmp_path: Path, option: str,
                                                          why: str) -> None:
    folder = scripted(tmp_path, "linger")
    config = folder / "membench.toml"
    config.write_text(config.read_text().replace("timeout = 20\n",
                                                 f"timeout = 20\n[adapter.options]\n{option}\n"))
    assert_error(run_cli("run", cwd=folder), why)
    assert _gone(folder), "an adapter that never got initialize still runs"


@pytest.mark.slow
def test_a_config_read_from_a_pipe_is_read_once(tmp_path: Path) -> None:
    # A config that can be read only once is read once.
    done = subprocess.run([sys.executable, "-m", "membench_gate", "run", "--config", "/dev/stdin"],
                          input='[suites.veto]\nfixtures = ["builtin"]\n', capture_output=True,
                          text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "veto/files_known:" in done.stdout


# --- the host's reading of its input ---


@pytest.mark.parametrize("poll_s", [0.0, 300e-6])
def test_the_host_reads_request_lines_however_they_arrive(poll_s: float) -> None:
    import threading
    import time

    from membench_gate.adapter.host import requests_of
    from membench_gate.adapter.polling import Poller

    big = b'{"records": "' + b"x" * (3 << 20) + b'"}\n'
    pieces = [b'{"a": 1}\n{"b"', b": 2}\n", big[:100], big[100:], b'{"c": 3}\n{"d": 4}\n{"tail"']
    read, write = os.pipe()

    def writer() -> None:
        for piece in pieces:
            os.write(write, piece)
            time.sleep(0.01)
        os.close(write)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        lines = list(requests_of(read, Poller(read, poll_s)))
    finally:
        thread.join()
        os.close(read)
    assert lines == [b'{"a": 1}\n', b'{"b": 2}\n', big, b'{"c": 3}\n', b'{"d": 4}\n', b'{"tail"']


# --- polling before a wait (membench_gate.adapter.polling) ---


def _poller_reading(tmp_path: Path, loadavg: str, budget_s: float = 300e-6) -> Any:
    """A poller of a fresh pipe whose view of the machine is ``loadavg`` (a real file)."""
    from membench_gate.adapter.polling import Poller

    read, write = os.pipe()
    poller = Poller(read, budget_s)
    if poller._loadavg is None:
        pytest.skip("polling needs /proc/loadavg and two CPUs")
    (tmp_path / "loadavg").write_text(loadavg)
    os.close(poller._loadavg)
    poller._loadavg = os.open(tmp_path / "loadavg", os.O_RDONLY)
    return poller, read, write


def test_a_poll_catches_an_answer_that_is_already_there(tmp_path: Path) -> None:
    poller, read, write = _poller_reading(tmp_path, "0.50 0.40 0.30 2/100 4242\n")
    try:
        assert poller.cpu_free()
        assert not poller.poll()  # nothing arrived within the budget: block now
        os.write(write, b"{}\n")
        assert poller.poll()
    finally:
        poller.close()
        os.close(read), os.close(write)


def test_no_poll_while_more_tasks_are_runnable_than_cpus(tmp_path: Path) -> None:
    # The other end is ready, but the machine is busy: the poller does not even look.
    poller, read, write = _poller_reading(tmp_path, f"3.10 2.00 1.00 {os.cpu_count() + 1}/100 1\n")
    try:
        os.write(write, b"{}\n")
        assert not poller.cpu_free() and not poller.poll()
    finally:
        poller.close()
        os.close(read), os.close(write)


def test_a_poller_closed_while_another_thread_reads_the_load_closes_it_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread that kills an adapter closes its poller while the thread that drives it may
    be reading the machine's load: here that read happens inside the close (the worst
    instant). It finds the poller closed, and nothing is closed twice — a second close would
    fail, or close a file that reused the number."""
    from membench_gate.adapter import polling

    poller, read, write = _poller_reading(tmp_path, "0.50 0.40 0.30 1/100 4242\n")
    closes: list[int] = []
    close = os.close

    def close_then_read(fd: int) -> None:
        closes.append(fd)
        close(fd)
        if len(closes) == 1:
            assert not poller.cpu_free()  # (the driving thread, in between)

    monkeypatch.setattr(polling.os, "close", close_then_read)
    try:
        poller.close()
        poller.close()
    finally:
        monkeypatch.undo()
        os.close(read), os.close(write)
    assert len(closes) == 1
    assert not poller.poll()


def test_no_poll_with_a_single_cpu() -> None:
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs sched_setaffinity")
    code = ("import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
            "from membench_gate.adapter.polling import Poller; r, w = os.pipe(); os.write(w, b'x'); "
            "p = Poller(r); print(p.budget_s, p.poll())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          check=True)
    assert done.stdout.split() == ["0.0", "False"]


@pytest.mark.slow
def test_an_adapter_without_write_is_refused_before_any_suite_runs(tmp_path: Path) -> None:
    # The writeback suite needs the memory's write path: say so at once, not after the others ran.
    folder = scripted(tmp_path, "none", suites=ABSTENTION + '[suites.writeback]\nfixtures = ["builtin"]\n')
    done = run_cli("run", cwd=folder)
    assert_error(done, "suite writeback: the adapter does not implement write(session)")
    assert "adapter calls done" not in done.stderr  # no suite ran first


def test_an_ended_adapter_is_reaped_only_after_its_process_group_is_stopped(
        tmp_path: Path) -> None:
    # Reaping frees the adapter's pid, which is also its process group's id: the group is
    # signalled first, while the id is still the adapter's (a zombie holds it), then reaped.
    from membench_gate.adapter.rpc import AdapterProcess

    process = AdapterProcess([sys.executable, "-c", "import sys; sys.exit(7)"], tmp_path, 10)
    pid = process.proc.pid
    assert process._ended(10) == 7
    assert Path(f"/proc/{pid}").exists()  # ended, not reaped
    assert process._exit_code() == 7
    process.kill()
    assert process.proc.returncode == 7 and not Path(f"/proc/{pid}").exists()
