"""The sharded example workflow (docs/examples/membench-gate-sharded.yml) end to end under ``act``.

The example runs as shipped — four ``run --shard`` jobs of a matrix upload their parts, one job
merges, gates with the action (``results:``) and comments — with two values of its ``env:``
changed for this machine: the package to install is this checkout's action (a source tree pip
builds offline), and there is no memory repository to install. Each shard job prepares its
sandbox as the action does; the parts' receipts say how they ran, and the merged verdict is sealed
only if they were. The jobs run one at a time (one sandbox user, whose processes a job's sweep
kills). ``membench-gate/membench-gate@v1`` is the action vendored from this checkout;
``actions/setup-python`` is a no-op (the runner's python3 is the tests' own);
``actions/upload-artifact`` and ``download-artifact`` are stand-ins that keep artifacts in a
folder. Everything else is act's, offline, against the loopback fake GitHub.

Two pushes to one pull request: one that changes nothing measured (PASS, one comment), and one
whose config no shard can read: every shard fails, and the gate job still runs and fails rather
than being skipped (a skipped required check would count as success).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.actkit import (
    ACTION_DIR,
    TOKEN,
    FakeServer,
    run_offline,
    stand_in,
    vendor_action,
)
from tests.support.gaterepo import PROJECT, blessed_origin, push_pr
from tests.support.gitrepos import pr_clone

EXAMPLE = PROJECT / "docs" / "examples" / "membench-gate-sharded.yml"
SHIPPED_ENV = ('  GATE_PACKAGE: membench-gate @ git+https://github.com/membench-gate/membench-gate@v1\n',
               '  MEMORY_INSTALL: pip install -e .  # installs your memory repository so its '
               'adapter imports\n')
LOCAL_ENV = ('  GATE_PACKAGE: {package}\n', '  MEMORY_INSTALL: "true"\n')

UPLOAD = """\
    - shell: bash
      env:
        NAME: ${{ inputs.name }}
        SOURCE: ${{ inputs.path }}
      run: mkdir -p "$E2E_ARTIFACTS/$NAME" && cp "$SOURCE" "$E2E_ARTIFACTS/$NAME/"
"""
DOWNLOAD = """\
    - shell: bash
      env:
        PATTERN: ${{ inputs.pattern }}
        TARGET: ${{ inputs.path }}
      run: |
        mkdir -p "$TARGET"
        for folder in "$E2E_ARTIFACTS"/$PATTERN; do cp "$folder"/* "$TARGET/"; done
"""
NOTHING = """\
    - shell: bash
      run: echo "setup-python stand-in, the runner's python3 is used"
"""


def sharded_workflow(package: Path) -> str:
    text = EXAMPLE.read_text(encoding="utf-8")
    for shipped, local in zip(SHIPPED_ENV, LOCAL_ENV, strict=True):
        assert text.count(shipped) == 1, shipped
        text = text.replace(shipped, local.format(package=json.dumps(str(package))))
    return text


def job_results(entries: list[dict]) -> dict[str, str]:
    """Each job's result as act reports it (``jobResult`` entries, by job id and matrix)."""
    results: dict[str, str] = {}
    for entry in entries:
        if "jobResult" in entry:
            matrix = entry.get("matrix") or {}
            key = entry.get("jobID", "?") + "".join(f" {v}" for v in matrix.values())
            results[key] = entry["jobResult"]
    return results


def test_the_sharded_example_under_act(act: Path, fake_api: FakeServer, tmp_path: Path) -> None:
    action = tmp_path / "action"
    action.mkdir()
    vendor_action(action)
    origin = blessed_origin(tmp_path / "origin",
                            {".github/workflows/gate.yml": sharded_workflow(action / ACTION_DIR)})
    local = {
        "membench-gate/membench-gate@v1": action / ACTION_DIR,
        "actions/setup-python@v5": stand_in(tmp_path / "setup-python", "no-op", NOTHING,
                                            {"python-version": ""}),
        "actions/upload-artifact@v4": stand_in(
            tmp_path / "upload-artifact", "keeps artifacts in $E2E_ARTIFACTS", UPLOAD,
            {"name": "", "path": "", "if-no-files-found": "", "retention-days": ""}),
        "actions/download-artifact@v4": stand_in(
            tmp_path / "download-artifact", "reads artifacts from $E2E_ARTIFACTS", DOWNLOAD,
            {"pattern": "", "path": "", "merge-multiple": ""}),
    }
    dev = pr_clone(origin[0], tmp_path / "dev", branch="feature")

    # 1. Nothing measured changes: four parts, merged, gated PASS, one comment.
    first = push_pr(origin, dev, tmp_path, "1", {})
    artifacts = tmp_path / "artifacts-1"
    code, entries, lines = run_offline(
        act, first.path, first.event, ".github/workflows/gate.yml", fake_api, tmp_path / "act-1",
        local, {"E2E_ARTIFACTS": str(artifacts)}, {"GITHUB_TOKEN": TOKEN}, serial=True)
    assert code == 0, "\n".join(lines[-80:])
    results = job_results(entries)
    assert results == {"shard 1": "success", "shard 2": "success", "shard 3": "success",
                       "shard 4": "success", "gate": "success"}, results
    parts = sorted(p.name for p in artifacts.glob("*/*.json"))
    assert parts == [f"membench-part-{i}.json" for i in range(1, 5)]
    shards = {json.loads(p.read_text(encoding="utf-8"))["receipt"]["shard"]
              for p in artifacts.glob("*/*.json")}
    assert shards == {"1/4", "2/4", "3/4", "4/4"}
    isolations = {json.loads(p.read_text(encoding="utf-8"))["receipt"]["isolation"]
                  for p in artifacts.glob("*/*.json")}
    assert len(isolations) == 1, isolations  # every job of the matrix ran alike
    (comment,) = fake_api.comments()
    assert comment["body"].startswith("<!-- membench-gate:v1 key=default -->\n## membench-gate: ✅")
    merged_line = [line for line in lines if "results written to membench-merged.json" in line]
    assert merged_line, "\n".join(lines[-80:])
    # The verdict's isolation is the parts' (and the gate job's): never sealed over unsealed parts.
    if isolations == {"unsealed"}:
        assert "**Unsealed:**" in comment["body"], comment["body"]
    if "Sealed: the pull request's code ran as another user" in comment["body"]:
        assert isolations == {"sealed"}

    # 2. No shard can read the config: every shard fails, and the gate job fails too (it runs:
    #    a skipped required check would count as success).
    second = push_pr(origin, dev, tmp_path, "2", {"membench.toml": "[adapter\n"})
    code, entries, lines = run_offline(
        act, second.path, second.event, ".github/workflows/gate.yml", fake_api, tmp_path / "act-2",
        local, {"E2E_ARTIFACTS": str(tmp_path / "artifacts-2")}, {"GITHUB_TOKEN": TOKEN},
        serial=True)
    assert code != 0
    results = job_results(entries)
    assert results.get("gate") == "failure", results
    assert "success" not in {v for k, v in results.items() if k.startswith("shard")}, results
    # The gate job failed at its guard, before anything was merged or gated.
    guard = [e for e in entries if e.get("jobID") == "gate" and e.get("step") == "Every shard was scored"]
    assert [e["stepResult"] for e in guard if "stepResult" in e] == ["failure"], guard
    assert not [e for e in entries if e.get("jobID") == "gate" and e.get("step") == "Merge the shards"]
    # Its message, when act kept the step's output: act's host executor at times drops the output
    # of a step that ends within milliseconds (the line is missing between the step's start and its
    # result, under load), which is act's and not the workflow's.
    printed = [e.get("arg", "") for e in guard if e.get("command") == "error"]
    assert printed in ([], ["a shard job ended with 'failure': no verdict"]), printed
    (still,) = fake_api.comments()
    assert still["id"] == comment["id"]
