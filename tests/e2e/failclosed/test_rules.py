"""Rules 7 and 8 fail closed, through the CLI on real git repositories.

Rule 7: a measurement made easier is a breach even when every metric improves — a changed suite
option, a gold item rewritten (gated as removed and re-added), distractors removed. Rule 8: a
justification must be a reason, not names and repeats, not a placeholder in look-alike letters,
not the base's reason again with text appended; and one with nothing to bless is only noted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from membench_gate.model.results import dumps_baseline, parse_results
from tests.support.cli import bless
from tests.support.gitrepos import bare_origin, commit, git, pr_clone
from tests.support.memrepo import (
    FACTS,
    PROBES,
    TAU_REASON,
    check,
    config_text,
    fixture_files,
    gate,
    memory_origin,
    memory_repo,
)


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return memory_origin(tmp_path_factory.mktemp("origin"))


def commit_run_as_baseline(repo: Path) -> None:
    """What a PR author can always do by hand: commit this run's own numbers as the baseline
    (what `bless` writes, minus any justification)."""
    done = gate(repo, "run", "--out", str(repo.parent / "r.json"))
    assert done.returncode == 0, done.stderr
    results = parse_results((repo.parent / "r.json").read_bytes(), "r.json")
    commit(repo, "baseline by hand", {"baselines/main.json": dumps_baseline(
        results.to_baseline())})


# -- rule 7: easing is a breach ------------------------------------------------------------------

def test_a_changed_suite_option_needs_a_justification(work: Path) -> None:
    """Issue seen: k 5 -> 6 plus a re-bless passed with no justification."""
    commit(work, "k = 2", {"membench.toml": config_text(k=2)})
    done = gate(work, "bless")
    assert done.returncode == 1 and "abstention:option:k" in done.stderr
    commit_run_as_baseline(work)
    result = check(work, ci=True)
    assert result.code == 1, result.stderr
    assert result.verdict["mode"] == "corpus-bless"
    option = next(b for b in result.verdict["breaches"] if b["key"] == "abstention:option:k")
    assert (option["kind"], option["base"], option["head"]) == ("option", "1", "2")

    why = ("Raising abstention option k from 1 to 2 because the new store returns two candidate "
           "facts per probe and the support team reviews both of them")
    done = gate(work, "bless", "--justification", why)
    assert done.returncode == 0, done.stderr
    commit(work, "bless", {})
    result = check(work, ci=True)
    assert (result.code, result.verdict["blessed"]) == (0, True), result.stderr


def test_including_holdout_items_is_an_option_change(work: Path) -> None:
    commit(work, "holdout", {"membench.toml": config_text(
        extra="[gate]\ninclude_holdout = true\n")})
    commit_run_as_baseline(work)
    result = check(work, ci=True)
    assert result.code == 1
    assert "abstention:option:include_holdout" in result.breach_keys()


def test_a_failing_item_rewritten_until_it_passes_is_a_changed_item(work: Path) -> None:
    """Issue seen: editing the text of failing gold items made them pass as 'changed'."""
    probes = [dict(p) for p in PROBES]
    probes[3]["question"] = "When do staging deploys run every weekday?"
    commit(work, "reword p4", fixture_files(probes=probes))
    commit_run_as_baseline(work)
    result = check(work, ci=True)
    assert result.code == 1, result.stderr
    changed = next(b for b in result.verdict["breaches"] if b["kind"] == "item-changed")
    assert (changed["key"], changed["base"], changed["head"]) == ("abstention/default#p4",
                                                                  "fail", "pass")
    assert result.verdict["fixture_diff"]["changed"]["abstention/default"] == ["p4"]
    # Every metric improved: it is the easing alone that blocks.
    assert [b["kind"] for b in result.verdict["breaches"]] == ["item-changed"]


def test_removed_distractors_are_a_breach_and_every_corpus_change_is_diffed(
        work: Path) -> None:
    """Issue seen: removing distractor records did not even appear in the fixture diff."""
    facts = [dict(f) for f in FACTS if f["id"] != "f5"]
    facts[3]["text"] = "The on-call rotation hands over on Tuesdays at 09:00."
    facts.append({"id": "f6", "text": "Backups are restored monthly in a drill."})
    commit(work, "trim the corpus", fixture_files(facts=facts))
    commit_run_as_baseline(work)
    result = check(work, ci=True)
    assert result.code == 1, result.stderr
    removed = next(b for b in result.verdict["breaches"] if b["kind"] == "corpus-removed")
    assert (removed["key"], removed["base"], removed["head"]) == ("abstention:corpus-removed",
                                                                  5, 5)
    assert "1 removed and 1 changed" in removed["detail"] and "f4, f5" in removed["detail"]
    diff = result.verdict["fixture_diff"]
    assert diff["removed"]["abstention:corpus"] == ["f5"]
    assert diff["added"]["abstention:corpus"] == ["f6"]
    assert diff["changed"]["abstention:corpus"] == ["f4"]
    assert "corpus-removed" in result.files["report.md"]


def test_adding_a_distractor_is_not_a_breach(work: Path) -> None:
    """No false alarm: a harder corpus needs a re-bless, not a justification."""
    facts = [*FACTS, {"id": "f6", "text": "Backups are restored monthly in a drill."}]
    commit(work, "more distractors", fixture_files(facts=facts))
    assert gate(work, "bless").returncode == 0
    commit(work, "bless", {})
    result = check(work, ci=True)
    assert result.code == 0, (result.stderr, result.verdict["breaches"])
    assert result.verdict["fixture_diff"]["added"] == {"abstention:corpus": ["f6"]}


# -- rule 8: justifications that are not reasons -------------------------------------------------

# From the blessed tau 0.2: a coarser embedding answers p4 wrongly; every NET(λ) drops.
FURTHER = config_text(tau=0.2).replace("tau = 0.2", "tau = 0.2\ndims = 16")


@pytest.fixture(scope="module")
def blessed_origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main carries a blessed regression (tau 0.2) with TAU_REASON as its justification."""
    seed = memory_repo(tmp_path_factory.mktemp("blessed") / "seed")
    commit(seed, "raise tau", {"membench.toml": config_text(tau=0.2)})
    bless(seed, "--justification", TAU_REASON)
    return bare_origin(seed)


@pytest.mark.parametrize(("text", "why"), [
    # Names and repeats are not words: the issue's own example, on this memory's names.
    ("abstention/default net_at_1 net_at_2 p2 update baseline update baseline",
     "placeholder"),
    ("abstention/default net_at_1 net_at_2 net_at_5 net_at_10 dropped after the dims change "
     "dropped dropped", "5 distinct words"),
    # Short of words, not a stock phrase: the check that failed is the one named.
    ("tau 0.6 net_at_1 net_at_2 abstention/default",
     "(too short: 1 distinct word besides metric, cell and item names, need 6)"),
    # A placeholder in Cyrillic look-alikes, fullwidth letters and a zero-width space.
    ("uрdate bаseline for abstention/default net_at_1 ｕｐｄａｔｅ ｂａｓｅｌｉｎｅ wi\u200bp",
     "placeholder"),
])
def test_justifications_that_are_not_reasons_are_refused(blessed_origin: Path, tmp_path: Path,
                                                         text: str, why: str) -> None:
    work = pr_clone(blessed_origin, tmp_path / "work")
    commit(work, "raise tau more", {"membench.toml": FURTHER})
    before = (work / "baselines/main.json").read_bytes()
    done = gate(work, "bless", "--justification", text)
    assert done.returncode == 1 and why in done.stderr, done.stderr
    assert (work / "baselines/main.json").read_bytes() == before


def test_the_base_reason_with_text_appended_is_a_near_copy(blessed_origin: Path,
                                                           tmp_path: Path) -> None:
    work = pr_clone(blessed_origin, tmp_path / "work")
    commit(work, "raise tau a little more", {"membench.toml": FURTHER})
    before = (work / "baselines/main.json").read_bytes()
    appended = TAU_REASON + " — and again for this change, which the team reviewed on Monday"
    done = gate(work, "bless", "--justification", appended)
    assert done.returncode == 1 and "near-copy" in done.stderr, done.stderr
    assert (work / "baselines/main.json").read_bytes() == before


def test_an_unrelated_pr_after_a_blessed_regression_passes(blessed_origin: Path,
                                                           tmp_path: Path) -> None:
    work = pr_clone(blessed_origin, tmp_path / "work")
    commit(work, "docs", {"README.md": "memory, documented\n"})
    result = check(work, ci=True)
    assert result.code == 0, (result.stderr, result.verdict)
    assert result.verdict["breaches"] == []
    # Re-blessing with a reason when there is nothing to bless: recorded, noted, never an error.
    done = gate(work, "bless", "--justification", "Re-ran the gate after the docs change to "
                                                   "confirm the numbers are the same as before")
    assert done.returncode == 0, done.stderr
    commit(work, "re-bless", {})
    result = check(work, ci=True)
    assert result.code == 0, result.verdict
    assert any("nothing to bless" in n for n in result.verdict["notes"])


def test_a_justification_without_its_breaches_is_an_error(blessed_origin: Path,
                                                         tmp_path: Path) -> None:
    # {text} alone is not the {text, breaches} the gate writes: refused like any missing field.
    work = pr_clone(blessed_origin, tmp_path / "work")
    data = json.loads((work / "baselines/main.json").read_text())
    del data["justification"]["breaches"]
    commit(work, "justification by hand", {"baselines/main.json": json.dumps(data)})
    check(work, ci=True).assert_error("baselines/main.json: justification.breaches: Field required")


def test_a_breach_moving_the_gate_needs_its_own_reason(blessed_origin: Path,
                                                       tmp_path: Path) -> None:
    """The justification must list exactly this comparison's breaches: the base's list does
    not carry over to a new breach."""
    work = pr_clone(blessed_origin, tmp_path / "work")
    git(work, "mv", "baselines", "gate-baselines")
    commit(work, "move", {"membench.toml": config_text(
        tau=0.2, extra='[gate]\nbaseline = "gate-baselines/main.json"\n')})
    result = check(work, ci=True)
    assert result.code == 1
    assert result.breach_keys() == ["gate:baseline-moved"]
    assert "does not match" in result.verdict["justification_check"]["failed_check"]
