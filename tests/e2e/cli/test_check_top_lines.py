"""``membench-gate check`` on a real repository with a regression, read as a reviewer reads it:
the first three lines of the console and of the report say the verdict, what changed and what
to do — and the command printed does it, from the results the check saved."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.support import gaterepo
from tests.support.cli import run_cli, seed_repo
from tests.support.gitrepos import bare_origin, commit


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare origin whose main has a blessed baseline (tau 0.35)."""
    seed = seed_repo(tmp_path_factory.mktemp("origin") / "seed",
                     {"membench.toml": gaterepo.config_text(tau=0.35)})
    return bare_origin(seed)


def test_the_first_three_lines_say_verdict_headline_and_next_step(work: Path) -> None:
    commit(work, "raise tau", {"membench.toml": gaterepo.config_text(tau=0.4)})
    done = run_cli("check", "--out", "results.json", "--report", "report.md", cwd=work)
    assert done.returncode == 1, done.stdout + done.stderr
    console = done.stdout.splitlines()
    report = [line for line in (work / "report.md").read_text().splitlines() if line]
    assert console[0] == "membench-gate: REGRESSION (exit 1)"
    assert report[0] == "## membench-gate: ❌ REGRESSION"
    # The headline, the same words in both, ranked as the breach table below it.
    headline = console[1].strip()
    assert report[1] == f"**{headline}**"
    first_breach = next(line for line in report if line.startswith("| ❌ |"))
    first_metric = first_breach.split("|")[2].strip().split(" on ")[0]
    assert headline.startswith(first_metric), (headline, first_breach)
    # The next step, then the command that carries it out: bless what this check measured.
    assert console[2].startswith("  next step: fix the regression, or accept it on purpose")
    assert report[2].startswith("**Next step:** fix the regression, or accept it on purpose")
    bless = shlex.split(console[3])
    assert bless[:4] == ["membench-gate", "bless", "--results", "results.json"]
    assert bless[4] == "--justification"
    # The breaches come next, with base → head values.
    assert report.index("| | breach | base | head | Δ | detail |") < report.index("### Commands")

    # Run as printed, with the reason written in: no suite runs again, and the check then passes.
    reason = ("Raising tau to 0.4 trades the newly failing probes for fewer wrong answers, which "
              "our users asked for in the support review")
    justification = bless[5].replace("<write the reason here>", reason)
    blessed = run_cli(*bless[1:4], "--justification", justification, cwd=work)
    assert blessed.returncode == 0, blessed.stdout + blessed.stderr
    assert "adapter calls" not in blessed.stderr  # read from results.json, not run again
    again = run_cli("check", cwd=work)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines()[0] == "membench-gate: PASS (exit 0)"


def _printed_bless(stdout: str) -> list[str]:
    """The bless command of the check's next step, as printed, split as a shell splits it."""
    return shlex.split(next(line for line in stdout.splitlines()
                            if line.strip().startswith("membench-gate bless")))


REASON = ("Raising tau trades the newly failing probes for fewer wrong answers, which our users "
          "asked for in the support review")


def test_a_check_that_saved_no_results_prints_a_bless_that_runs_the_suites(work: Path) -> None:
    # No --out: there is no results file, so the command must not name one (it once named
    # results.json, which no check had written: "file not found", exit 4).
    commit(work, "raise tau", {"membench.toml": gaterepo.config_text(tau=0.6)})
    done = run_cli("check", cwd=work)
    assert done.returncode == 1, done.stdout + done.stderr
    bless = _printed_bless(done.stdout)
    assert "--results" not in bless and bless[:3] == ["membench-gate", "bless", "--justification"]
    assert not (work / "results.json").exists()
    # Run exactly as printed, with the reason written in: the bless runs the suites itself.
    blessed = run_cli(*bless[1:3], bless[3].replace("<write the reason here>", REASON), cwd=work)
    assert blessed.returncode == 0, blessed.stdout + blessed.stderr
    assert "adapter calls" in blessed.stderr
    again = run_cli("check", cwd=work)
    assert again.returncode == 0, again.stdout + again.stderr


def test_bless_required_without_saved_results_prints_a_bless_that_works(work: Path) -> None:
    commit(work, "widen k", {"membench.toml": gaterepo.config_text(tau=0.35, k=6)})
    done = run_cli("check", "--report", "report.md", cwd=work)
    assert done.returncode == 2, done.stdout + done.stderr
    bless = _printed_bless(done.stdout)
    assert "--results" not in bless
    # The report says the same command, and no results file it did not write.
    report = (work / "report.md").read_text()
    [command] = report.split("```sh\n")[1].split("```")[0].splitlines()
    assert shlex.split(command) == bless
    if "--justification" in bless:
        at = bless.index("--justification") + 1
        bless[at] = bless[at].replace("<write the reason here>", "Widening k to six scores "
                                      "every suite on one more hit, as the ranking review asked")
    blessed = run_cli(*bless[1:], cwd=work)
    assert blessed.returncode == 0, blessed.stdout + blessed.stderr
    again = run_cli("check", cwd=work)
    assert again.returncode == 0, again.stdout + again.stderr
