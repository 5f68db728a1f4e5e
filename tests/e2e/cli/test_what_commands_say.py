"""What check, bless and show tell a user, read as the user reads it (the console, the rendered
comment), on real git repositories through the real CLI: the results file ``check --out`` writes
with ``--results``, the items behind a zero-gated breach, where a committed baseline differs from
the run, and the two runs ``--verify-determinism`` compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import gaterepo
from tests.support.cli import run_cli, seed_repo
from tests.support.configs import JUSTIFICATION, LEAKY_ADAPTER
from tests.support.gitrepos import actions_checkout, bare_origin, clone, commit, git, write_event


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare origin whose main has a blessed baseline on the built-in fixtures."""
    seed = seed_repo(tmp_path_factory.mktemp("origin") / "seed",
                     {"membench.toml": gaterepo.config_text()})
    return bare_origin(seed)


def test_check_results_out_writes_the_results_it_checked(work: Path, tmp_path: Path) -> None:
    done = run_cli("run", "--out", str(tmp_path / "r.json"), cwd=work)
    assert done.returncode == 0, done.stderr
    stale = tmp_path / "o.json"
    stale.write_text('{"stale": true}\n')
    done = run_cli("check", "--results", str(tmp_path / "r.json"), "--out", str(stale), cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    # The results it checked, as run --out wrote them: never an earlier file left in place.
    assert stale.read_bytes() == (tmp_path / "r.json").read_bytes()


def test_a_zero_gated_breach_names_the_items_that_leaked(work: Path, tmp_path: Path) -> None:
    commit(work, "leaky adapter", {"leaky.py": LEAKY_ADAPTER,
                                   "membench.toml": gaterepo.config_text(adapter="leaky:Leaky")})
    report, results = tmp_path / "report.md", tmp_path / "r.json"
    done = run_cli("check", "--report", str(report), "--out", str(results), "--json",
                   str(tmp_path / "v.json"), cwd=work)
    assert done.returncode == 1, done.stdout + done.stderr
    items = json.loads(results.read_text())["items"]["push/know_to_ask"]
    leaked = {item: record["foreign"] for item, record in items.items() if record["foreign"]}
    item, foreign = min(leaked.items())
    said = f"push/know_to_ask#{item} injected from another source: {', '.join(foreign)}"
    assert said in done.stdout  # the console names the item and the foreign id
    comment = report.read_text()
    assert f"- {said}".replace("_", "\\_") in comment  # so does the comment, under the table
    verdict = json.loads((tmp_path / "v.json").read_text())
    zero = next(b for b in verdict["breaches"] if b["kind"] == "zero")
    assert {"cell": "push/know_to_ask", "id": item, "ids": foreign} in zero["offenders"]
    # Each push cell's breach names its own items.
    for breach in (b for b in verdict["breaches"] if b["kind"] == "zero"):
        assert {o["cell"] for o in breach["offenders"]} == {breach["key"].partition(":")[0]}
    shown = run_cli("show", f"push/know_to_ask#{item}", "--results", str(results), cwd=work)
    assert shown.returncode == 0, shown.stderr
    head = next(line for line in shown.stdout.splitlines() if line.startswith("head:"))
    assert f"injected from another source: {', '.join(foreign)}" in head, shown.stdout


def test_a_committed_baseline_that_differs_names_each_cell_and_metric(work: Path) -> None:
    path = work / "baselines/main.json"
    data = json.loads(path.read_text())
    data["cells"]["veto/files_known"]["metrics"]["mrr"] = 0.99
    data["cells"]["push/push"]["metrics"]["push_recall"] = 0.5
    commit(work, "hand-edited baseline", {"baselines/main.json": json.dumps(data)})
    done = run_cli("check", cwd=work)
    assert done.returncode == 2, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if "does not match this run" in x)
    assert "push/push:push_recall 0.5 → " in line and "veto/files_known:mrr 0.99 → " in line
    blessed = run_cli("bless", cwd=work)
    assert blessed.returncode == 0, blessed.stdout + blessed.stderr
    assert "it replaces a committed baseline that did not match this run (committed → run): " \
        "push/push:push_recall 0.5 → " in blessed.stdout, blessed.stdout


def test_a_pr_head_checkout_is_compared_with_where_it_forked(origin: Path, tmp_path: Path
                                                              ) -> None:
    """main moves on (tau raised and blessed) after the branch forked; the run is on the PR's
    head commit, as a workflow checking out ``pull_request.head.sha`` has it, at depth 1."""
    dev = clone(f"file://{origin}", tmp_path / "dev")
    forked = git(dev, "rev-parse", "HEAD")
    git(dev, "checkout", "-q", "-b", "feature")
    head = commit(dev, "docs", {"README.md": "memory, documented\n"})
    git(dev, "push", "-q", "origin", "feature")
    git(dev, "checkout", "-q", "main")
    commit(dev, "raise tau", {"membench.toml": gaterepo.config_text(tau=0.4)})
    done = run_cli("bless", "--justification", JUSTIFICATION, cwd=dev)
    assert done.returncode == 0, done.stdout + done.stderr
    tip = commit(dev, "bless", {})
    git(dev, "push", "-q", "origin", "main")

    ci = actions_checkout(f"file://{origin}", tmp_path / "ci", head)
    event = write_event(tmp_path / "event.json", {"pull_request": {
        "base": {"sha": tip, "ref": "main"}, "head": {"sha": head}}})
    done = run_cli("check", "--json", str(tmp_path / "v.json"), "--report",
                   str(tmp_path / "report.md"), cwd=ci, env={
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_SHA": head,
        "GITHUB_EVENT_PATH": str(event)})
    # Compared with main's tip, the docs change would be blamed for main's raised tau.
    assert done.returncode == 0, done.stdout + done.stderr
    base_line = next(x for x in done.stdout.splitlines() if x.strip().startswith("base "))
    assert base_line.strip().startswith(f"base {forked[:12]} (main, where this branch forked "
                                        f"from main, whose tip {tip[:12]} "), base_line
    assert "its newer changes are not this one's" in base_line
    assert f"Base `{forked[:12]}`: where this branch forked from main, whose tip {tip[:12]} " \
        in (tmp_path / "report.md").read_text()
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["base"] == {"how": "event-base-sha", "ref": "main", "sha": forked, "tip": tip}


def test_init_scaffolds_every_suite_and_says_why_writeback_waits(tmp_path: Path) -> None:
    from membench_gate.suites import NAMES  # the suite registry

    done = run_cli("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    config = (tmp_path / "membench.toml").read_text()
    for suite in NAMES:
        if suite == "writeback":  # needs the adapter's optional write(session)
            assert "# [suites.writeback]" in config and "`write(session)`" in config
        elif suite == "behaviour":  # live: needs a [live] table, an endpoint and the extra
            assert "# [suites.behaviour]" in config and "[live] table" in config
        else:
            assert f"\n[suites.{suite}]" in config, suite


def test_verify_determinism_says_two_runs_were_compared(work: Path) -> None:
    done = run_cli("check", "--verify-determinism", "--report", "report.md", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    said = ("--verify-determinism: the suites ran twice on the same config and fixtures, and the "
            "two runs' results are identical")
    assert f"note: {said}" in done.stdout
    assert said in (work / "report.md").read_text()


def test_the_time_left_never_jumps_back_up() -> None:
    import io

    from membench_gate.run.runner import ProgressReporter

    out, now = io.StringIO(), [0.0]
    report = ProgressReporter(out, tty=False, interval=1, clock=lambda: now[0])
    report("recall", 0, 100)
    # 10 calls in 2 s (16 s left at that pace), then a slow stretch: 10 more in 18 s.
    for done, at in ((10, 2.0), (20, 20.0), (30, 22.0)):
        now[0] = at
        report("recall", done, 100)
    lefts = [int(line.rsplit("about ", 1)[1].split("s")[0]) for line in out.getvalue().splitlines()]
    assert lefts == sorted(lefts, reverse=True) and len(lefts) == 3, out.getvalue()


def test_doctor_names_the_adapter_target_once(work: Path) -> None:
    done = run_cli("doctor", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    header = done.stdout.splitlines()[0]
    assert header == "membench-gate doctor: adapter 'membench_gate.reference:ReferenceMemory'"
