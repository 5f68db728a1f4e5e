"""Seams end to end: two different adapters of one memory — the reference memory served from
``python``, and a forgetful one started as a ``command`` — measured side by side in one run, and
gated with real git repositories through the CLI (docs/config.md, "Seams")."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli, seed_repo
from tests.support.gitrepos import bare_origin, commit

pytestmark = pytest.mark.slow  # real runs of two adapters, real git

# A memory that loses some of what it is given (every `every`-th record, counting from the
# first): a different adapter, with numbers of its own.
FORGETFUL = '''\
from membench_gate.reference import ReferenceMemory


class Forgetful(ReferenceMemory):
    def __init__(self, every=3, **options):
        super().__init__(**options)
        self.every = every

    def ingest(self, records):
        super().ingest([r for i, r in enumerate(records) if i % self.every])
'''
SUITES = ('[suites.veto]\nfixtures = ["builtin"]\nk = 5\n'
          '[suites.abstention]\nfixtures = ["builtin"]\nk = 5\n')
LOCAL_CELLS = {"veto/files_known", "veto/files_unknown", "veto/lifecycle", "abstention/default",
               "abstention/control_floor_off", "abstention/control_shuffled"}


def seam_table(name: str, every: int | None = None) -> str:
    """``[adapters.<name>]``: the reference memory (python), or the forgetful one (command)."""
    if every is None:
        return (f'[adapters.{name}]\npython = "membench_gate.reference:ReferenceMemory"\n'
                f'[adapters.{name}.options]\ntau = 0.35\n')
    argv = json.dumps([sys.executable, "-m", "membench_gate.host", "forgetful:Forgetful"])
    return (f"[adapters.{name}]\ncommand = {argv}\n"
            f"[adapters.{name}.options]\ntau = 0.35\nevery = {every}\n")


def config(*tables: str, extra: str = "") -> str:
    return "".join(tables) + SUITES + extra


TWO = config(seam_table("ref"), seam_table("cli", every=3))


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare origin whose main gates two seams, with their baseline blessed."""
    seed = seed_repo(tmp_path_factory.mktemp("origin") / "seed",
                     {"membench.toml": TWO, "forgetful.py": FORGETFUL})
    return bare_origin(seed)


@pytest.fixture(scope="module")
def results(origin: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An unsharded run of the two seams: (the repository, its results file)."""
    from tests.support.gitrepos import pr_clone

    repo = pr_clone(origin, tmp_path_factory.mktemp("run") / "work")
    done = run_cli("run", "--out", "results.json", cwd=repo)
    assert done.returncode == 0, done.stderr
    return repo, repo / "results.json"


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def verdict_of(repo: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    out = repo / "verdict.json"
    out.unlink(missing_ok=True)
    done = run_cli("check", "--json", str(out), *args, cwd=repo)
    return done.returncode, load(out) if out.exists() else {}, done.stdout + done.stderr


def test_two_seams_run_side_by_side_with_numbers_of_their_own(results: tuple[Path, Path]
                                                             ) -> None:
    data = load(results[1])
    assert set(data["cells"]) == {f"{seam}/{cell}" for seam in ("cli", "ref")
                                  for cell in LOCAL_CELLS}
    assert set(data["items"]) == set(data["digests"]) == set(data["cells"])
    assert set(data["corpus"]) == {"veto", "abstention"}  # one corpus per suite, as today
    assert sorted(data["config"]["adapters"]) == ["cli", "ref"] and "adapter" not in data["config"]
    assert data["config"]["adapters"]["cli"]["command"][-1] == "forgetful:Forgetful"
    ref, cli = (data["cells"][f"{s}/veto/files_known"] for s in ("ref", "cli"))
    assert cli["metrics"]["veto_recall_at_k"] < ref["metrics"]["veto_recall_at_k"]
    assert set(ref["failed"]) < set(cli["failed"])
    # Same items, same digests: the seams differ in what came back, not in what was asked.
    assert data["digests"]["cli/veto/files_known"] == data["digests"]["ref/veto/files_known"]


def test_progress_and_the_summary_name_the_seam(origin: Path, tmp_path: Path) -> None:
    from tests.support.gitrepos import pr_clone

    repo = pr_clone(origin, tmp_path / "work")
    done = run_cli("run", "--suite", "veto", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "cli/veto: 64/64 adapter calls done" in done.stderr
    assert "ref/veto: 64/64 adapter calls done" in done.stderr
    assert "  cli/veto/files_known: " in done.stdout and "  ref/veto/lifecycle: " in done.stdout


def test_shards_merge_to_the_bytes_of_an_unsharded_run(results: tuple[Path, Path]) -> None:
    repo, whole = results
    parts = []
    for index in (1, 2, 3):
        part = repo / f"part{index}.json"
        done = run_cli("run", "--shard", f"{index}/3", "--out", str(part), cwd=repo)
        assert done.returncode == 0, done.stderr
        parts.append(str(part))
        assert set(load(part)["cells"]) == set(load(whole)["cells"])
    done = run_cli("merge", *parts, "--out", "merged.json", cwd=repo)
    assert done.returncode == 0, done.stderr
    merged, unsharded = load(repo / "merged.json"), load(whole)
    merged.pop("receipt")
    unsharded.pop("receipt")
    assert json.dumps(merged, sort_keys=True) == json.dumps(unsharded, sort_keys=True)
    # Re-derived against the fixtures: the merged file checks like the run it stands for.
    code, verdict, out = verdict_of(repo, "--results", "merged.json")
    assert (code, verdict["verdict"]) == (0, "pass"), out


def test_an_edited_seam_cell_of_a_results_file_is_an_error_naming_it(
        results: tuple[Path, Path]) -> None:
    repo, whole = results
    data = load(whole)
    data["cells"]["cli/veto/files_known"]["metrics"]["veto_recall_at_k"] = 1.0
    (repo / "edited.json").write_text(json.dumps(data), encoding="utf-8")
    code, _, out = verdict_of(repo, "--results", "edited.json")
    assert code == 4
    assert "cells.cli/veto/files_known: does not follow from its items" in out
    data = load(whole)
    data["cells"]["web/veto/files_known"] = data["cells"]["cli/veto/files_known"]
    (repo / "edited.json").write_text(json.dumps(data), encoding="utf-8")
    code, _, out = verdict_of(repo, "--results", "edited.json")
    assert code == 4
    assert "edited.json: cells.web/veto/files_known: not a cell of membench.toml's seams" in out


def test_show_takes_a_seams_cell(results: tuple[Path, Path]) -> None:
    repo, whole = results
    data = load(whole)
    failing = data["cells"]["cli/veto/files_known"]["failed"][0]
    done = run_cli("show", f"cli/veto/files_known#{failing}", "--results", str(whole), cwd=repo)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"cli/veto/files_known#{failing}")
    assert lines[-2].startswith("head:       FAIL")
    # Without --results, only that seam's adapter runs, and its own answer is shown.
    done = run_cli("show", f"cli/veto/files_known#{failing}", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "cli/veto: 64/64" in done.stderr and "ref/veto" not in done.stderr
    assert "head:       FAIL" in done.stdout
    done = run_cli("show", f"web/veto/files_known#{failing}", cwd=repo)
    assert done.returncode == 4 and "no seam 'web' in membench.toml (seams: cli, ref)" in \
        done.stderr


def test_an_adapter_error_names_its_seam(tmp_path: Path) -> None:
    (tmp_path / "membench.toml").write_text(config(
        seam_table("ref"), '[adapters.broken]\ncommand = ["no-such-memory-binary"]\n'))
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 4
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "seam broken: " in errors[0], done.stderr
    assert "no-such-memory-binary" in errors[0]


def test_one_seam_regressing_is_a_regression_naming_its_cells(work: Path) -> None:
    commit(work, "forget more", {"membench.toml": config(seam_table("ref"),
                                                         seam_table("cli", every=2))})
    code, verdict, out = verdict_of(work)
    assert (code, verdict["verdict"], verdict["mode"]) == (1, "regression", "same-hash"), out
    keys = {b["key"] for b in verdict["breaches"]}
    assert "cli/veto/files_known:veto_recall_at_k" in keys
    assert all(key.startswith("cli/") for key in keys)
    assert set(verdict["newly_failed"]) <= {f"cli/{cell}" for cell in LOCAL_CELLS}


def test_a_seam_added_is_new_cells_reported_not_a_breach(work: Path) -> None:
    commit(work, "measure a third seam", {"membench.toml": config(
        seam_table("ref"), seam_table("cli", every=3), seam_table("sparse", every=2))})
    code, verdict, out = verdict_of(work)
    assert (code, verdict["verdict"]) == (0, "pass"), out
    assert verdict["breaches"] == []
    assert "new cell: sparse/veto/files_known (reported, not gated)" in verdict["notes"]


def test_a_seam_removed_is_a_breach(work: Path) -> None:
    commit(work, "stop measuring the command seam",
           {"membench.toml": config(seam_table("ref"))})
    code, verdict, out = verdict_of(work)
    assert (code, verdict["verdict"]) == (1, "regression"), out
    missing = sorted(b["key"] for b in verdict["breaches"] if b["kind"] == "cell-missing")
    assert missing == sorted(f"cli/{cell}" for cell in LOCAL_CELLS)


def test_a_floor_on_a_seams_cell(work: Path, results: tuple[Path, Path]) -> None:
    measured = load(results[1])["cells"]["cli/veto/files_known"]["metrics"]["veto_recall_at_k"]
    floor = f'[floors]\n"cli/veto/files_known:veto_recall_at_k" = {measured + 0.01:.4f}\n'
    commit(work, "a floor above the command seam", {"membench.toml": TWO + floor})
    code, verdict, out = verdict_of(work)
    assert (code, verdict["verdict"]) == (1, "regression"), out
    assert [(b["key"], b["kind"]) for b in verdict["breaches"]] == [
        ("cli/veto/files_known:veto_recall_at_k", "floor")]
    commit(work, "a floor the command seam meets",
           {"membench.toml": TWO + floor.replace(f"{measured + 0.01:.4f}", f"{measured:.4f}")})
    code, verdict, out = verdict_of(work)
    assert (code, verdict["verdict"]) == (0, "pass"), out


def test_a_dropped_suites_invariants_are_still_measured_in_every_seam(work: Path) -> None:
    # The pull request drops the abstention suite and makes the command seam forget everything
    # (so its controls stop failing): the base's invariant is measured on that seam all the same.
    commit(work, "drop abstention", {"membench.toml": seam_table("ref")
                                     + seam_table("cli", every=1)
                                     + '[suites.veto]\nfixtures = ["builtin"]\nk = 5\n'})
    code, verdict, out = verdict_of(work)
    assert (code, verdict["verdict"]) == (1, "regression"), out
    zero = [b["key"] for b in verdict["breaches"] if b["kind"] == "zero"]
    assert zero == ["cli/abstention/default:controls_passing"]


def test_selftest_covers_every_gated_metric_of_every_seam(results: tuple[Path, Path]) -> None:
    from membench_gate.config import load_config
    from membench_gate.selftest.mutants import MUTANTS
    from membench_gate.selftest.sensitivity import selftest

    repo, _ = results
    drop = [m for m in MUTANTS if m.name in ("drop-best-hit", "resurrect-superseded")]
    report = selftest(load_config(repo / "membench.toml").with_suites(["veto"]), drop, log=False)
    assert {key.partition("/")[0] for key in report.kinds} == {"cli", "ref"}
    assert report.blind == [] and report.covered == report.total == 8
