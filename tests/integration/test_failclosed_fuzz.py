"""Property: malformed input never gets past ``check``, and never leaves a stale file.

Hypothesis breaks a valid config, committed baseline, results file or event payload in one of
many ways — bad numbers (nan, inf, 1e300, out of range), wrong types, unknown or missing keys,
truncation, undecodable bytes, nesting thousands deep — and ``membench-gate check`` must answer
exit 4 (3 for a baseline of a well-formed, unknown schema version) with one line on stderr, every
output it was asked for replaced by that verdict. The CLI's ``main`` runs in this process (a
subprocess per example would make the search too slow to be worth it), in a real git repository.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membench_gate.cli.main import main
from tests.support.gitrepos import clean_env
from tests.support.memrepo import CI_ENV, config_text, memory_repo_with_results

# Hypothesis runs check on a real git repository many times.
pytestmark = pytest.mark.slow

OUTPUTS = ("v.json", "r.md", "o.json", "b.json")
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return memory_repo_with_results(tmp_path_factory.mktemp("fuzz") / "repo")


@contextlib.contextmanager
def environment(cwd: Path, env: Mapping[str, str]) -> Iterator[None]:
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def run_check(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> tuple[int, str]:
    out = repo.parent / "out"
    out.mkdir(exist_ok=True)
    for name in OUTPUTS:
        (out / name).write_text("STALE\n")
    stderr = io.StringIO()
    with environment(repo, clean_env(env)), contextlib.redirect_stderr(stderr), \
            contextlib.redirect_stdout(io.StringIO()):
        code = main(["check", "--json", str(out / "v.json"), "--report", str(out / "r.md"),
                     "--out", str(out / "o.json"), "--base-out", str(out / "b.json"), *args])
    return code, stderr.getvalue()


def assert_failed_closed(repo: Path, code: int, stderr: str, allowed: tuple[int, ...] = (4,)
                         ) -> None:
    assert code in allowed, (code, stderr)
    lines = stderr.strip().splitlines()
    said = "inconclusive" if code == 3 else "error"  # (an input of another version: exit 3)
    assert len(lines) == 1 and lines[0].startswith(f"membench-gate: {said}: "), stderr
    out = repo.parent / "out"
    for name in OUTPUTS:
        text = (out / name).read_text()
        assert "STALE" not in text, name
        if name.endswith(".json"):
            verdict = json.loads(text)
            assert verdict["exit_code"] == code
            assert verdict["verdict"] == ("inconclusive" if code == 3 else "error")


# -- configs -------------------------------------------------------------------------------------

BAD_VALUES = {
    "k": ["0", "-1", "1001", "nan", "inf", "1.5", '"5"', "true", "[]", "99999999999999999999"],
    "lambdas": ["[1, nan]", "[inf]", "[1, 1e30]", "[-1]", "[]", '["1"]', "[1, 1]", "1",
                "[true]"],
    "shuffle_seed": ["-1", "nan", "4294967296", '"7"', "1.0"],
    "timeout": ["nan", "inf", "-inf", "-1", "0", "1e30", '"60"', "true", "86401"],
    "floor": ["nan", "inf", "-inf", "1e30", "-1e7", '"0.5"', "true", "[0.5]"],
    "tau": ["nan", "inf", "1e300", "-inf"],
}


def _with_value(key: str, value: str) -> str:
    base = config_text()
    if key == "timeout":
        return f"[adapter]\ntimeout = {value}\n" + base
    if key == "floor":
        return base + f'[floors]\n"abstention/default:net_at_1" = {value}\n'
    if key == "tau":
        return base.replace("tau = 0.3", f"tau = {value}")
    if key == "k":
        return base.replace("k = 1", f"k = {value}")
    return base.replace("k = 1", f"k = 1\n{key} = {value}")


KNOWN = {"adapter", "suites", "gate", "floors", "python", "command", "options", "timeout",
         "fixtures", "k", "lambdas", "shuffle_seed", "budget", "baseline", "include_holdout"}

configs = st.one_of(
    st.sampled_from(sorted(BAD_VALUES)).flatmap(
        lambda key: st.sampled_from(BAD_VALUES[key]).map(lambda v: _with_value(key, v))),
    st.tuples(st.sampled_from(["[adapter]", "[suites.abstention]", "[gate]", ""]),
              st.from_regex(r"[a-z_]{2,12}", fullmatch=True).filter(lambda k: k not in KNOWN)
              ).map(lambda t: config_text() + f"{t[0]}\n{t[1]} = 1\n"),
    st.integers(200, 20_000).map(lambda n: config_text() + "deep = " + "[" * n + "]" * n),
    st.text(min_size=1, max_size=40).map(lambda junk: config_text() + "\n[[[" + junk),
    st.binary(min_size=1, max_size=20).map(lambda b: b"\xff\xfe" + b),
)


@SETTINGS
@given(text=configs)
def test_malformed_configs_fail_closed(repo: Path, text: str | bytes) -> None:
    path = repo / "bad.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    code, stderr = run_check(repo, "--config", "bad.toml",
                             "--results", str(repo.parent / "results.json"))
    assert_failed_closed(repo, code, stderr)


# -- baselines and results -----------------------------------------------------------------------

def _set(data: Any, path: list[str], value: Any) -> Any:
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


BAD_NUMBERS = [1e300, -1e300, 1e15, "0.5", None, True, [0.5], {"x": 1}]


def _mutations(doc: dict[str, Any], numbers: list[list[str]],
               free: list[list[str]] | None = None) -> st.SearchStrategy[str]:
    """One break of ``doc``: a typed number (``numbers``) made wrong, or any number (those and
    the free-form ``free`` ones, such as an item's score) made one no file can hold."""
    text = json.dumps(doc, indent=2)
    required = [k for k in ("fixtures_hash", "config", "cells") if k in doc]
    anywhere = numbers + (free or [])
    return st.one_of(
        st.tuples(st.sampled_from(numbers), st.sampled_from(BAD_NUMBERS)).map(
            lambda t: json.dumps(_set(json.loads(text), t[0], t[1]))),
        st.tuples(st.sampled_from(anywhere), st.sampled_from([1e300, -1e16, 1e15])).map(
            lambda t: json.dumps(_set(json.loads(text), t[0], t[1]))),
        st.sampled_from(anywhere).map(
            lambda p: json.dumps(_set(json.loads(text), p, "__NAN__")).replace('"__NAN__"',
                                                                               "NaN")),
        st.sampled_from(required).map(
            lambda k: json.dumps({n: v for n, v in json.loads(text).items() if n != k})),
        st.from_regex(r"[a-z]{3,10}", fullmatch=True).filter(lambda k: k not in doc).map(
            lambda k: json.dumps({**json.loads(text), k: 1})),
        st.integers(65, 50_000).map(
            lambda n: json.dumps({**json.loads(text), "config": "__DEEP__"}).replace(
                '"__DEEP__"', "[" * n + "]" * n)),
        st.integers(0, max(0, len(text) - 2)).map(lambda cut: text[:cut]),
        st.sampled_from(["[]", "1", '"baseline"', "null", "\ufeff{}", "{}"]),
    )


def _number_paths(doc: dict[str, Any]) -> list[list[str]]:
    return [["cells", cell, "metrics", name] for cell, c in doc["cells"].items()
            for name in c["metrics"]] + [["cells", cell, "gold_total"] for cell in doc["cells"]]


@pytest.fixture(scope="module")
def baseline_doc(repo: Path) -> dict[str, Any]:
    return json.loads((repo / "baselines/main.json").read_text())


@SETTINGS
@given(data=st.data())
def test_malformed_committed_baselines_fail_closed(repo: Path, baseline_doc: dict[str, Any],
                                                   data: st.DataObject) -> None:
    text = data.draw(_mutations(baseline_doc, _number_paths(baseline_doc)))
    path = repo / "baselines/main.json"
    original = path.read_bytes()
    path.write_text(text)
    try:
        code, stderr = run_check(repo, "--results", str(repo.parent / "results.json"))
    finally:
        path.write_bytes(original)
    assert_failed_closed(repo, code, stderr)


@SETTINGS
@given(version=st.one_of(
    # The working tree's baseline is the pull request's own file: of a version this one does
    # not know, it is an ERROR that bless repairs (rule 3's INCONCLUSIVE is the base's, tested
    # in tests/e2e/cli/test_check.py) ...
    st.integers().filter(lambda v: v != 1).map(lambda v: (v, 4)),
    # ... and not a version at all (a field of the wrong type) is an ERROR like any other.
    st.one_of(st.text(max_size=5), st.floats(allow_nan=False), st.none(), st.booleans(),
              st.lists(st.integers(), max_size=2)).map(lambda v: (v, 4))))
def test_a_working_tree_baseline_of_an_unknown_or_malformed_version_is_an_error(
        repo: Path, baseline_doc: dict[str, Any], version: tuple[Any, int]) -> None:
    path = repo / "baselines/main.json"
    original = path.read_bytes()
    path.write_text(json.dumps({**baseline_doc, "schema_version": version[0]}))
    try:
        code, stderr = run_check(repo, "--results", str(repo.parent / "results.json"))
    finally:
        path.write_bytes(original)
    assert_failed_closed(repo, code, stderr, allowed=(version[1],))


@pytest.fixture(scope="module")
def results_doc(repo: Path) -> dict[str, Any]:
    return json.loads((repo.parent / "results.json").read_text())


@SETTINGS
@given(data=st.data())
def test_malformed_results_fail_closed(repo: Path, results_doc: dict[str, Any],
                                       data: st.DataObject) -> None:
    scores = [["items", cell, item, "score"] for cell, items in results_doc["items"].items()
              for item, detail in items.items() if isinstance(detail.get("score"), float)]
    mutations = _mutations(results_doc, _number_paths(results_doc), scores)
    text = data.draw(mutations.filter(lambda t: '"schema_version"' in t or not t.startswith("{")))
    bad = repo.parent / "bad-results.json"
    bad.write_text(text)
    code, stderr = run_check(repo, "--results", str(bad))
    assert_failed_closed(repo, code, stderr)


# -- event payloads ------------------------------------------------------------------------------

payloads = st.one_of(
    st.sampled_from(["", "[]", "1", '"x"', "null", "{", '{"pull_request": NaN}']),
    st.one_of(st.none(), st.integers(), st.text(max_size=50),
              st.from_regex(r"[0-9a-f]{40}", fullmatch=True)).map(
        lambda sha: json.dumps({"pull_request": {"base": {"sha": sha}}})),
    st.integers(65, 50_000).map(lambda n: '{"pull_request": ' + "[" * n + "]" * n + "}"),
    st.dictionaries(st.text(max_size=8), st.integers(), max_size=3).filter(
        lambda d: "pull_request" not in d).map(json.dumps),
    st.binary(min_size=1, max_size=10).map(lambda b: (b"\xff" + b).decode("latin-1")),
)


@SETTINGS
@given(payload=payloads)
def test_malformed_event_payloads_fail_closed(repo: Path, payload: str) -> None:
    event = repo.parent / "event.json"
    event.write_text(payload, encoding="latin-1" if "\xff" in payload else "utf-8")
    code, stderr = run_check(repo, "--results", str(repo.parent / "results.json"), env={
        **CI_ENV, "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)})
    assert_failed_closed(repo, code, stderr)
