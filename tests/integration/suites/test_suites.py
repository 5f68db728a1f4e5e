"""The suites, end to end through ``membench-gate run``: the built-in fixtures with the reference
memory (this repo's ``membench.toml``), and test-only adapters plugged in through a config file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.configs import write_adapter_config
from tests.support.paths import BUILTIN, REPO

# The module's fixtures run every built-in suite through the CLI.
pytestmark = pytest.mark.slow

LAMBDAS = (1, 2, 5, 10)
CONTROLS = ("control_floor_off", "control_shuffled")


def run_results(config: Path, out: Path) -> dict[str, Any]:
    proc = run_cli("run", "--config", config, "--out", out, cwd=config.parent)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def metrics(results: dict[str, Any], cell: str) -> dict[str, float]:
    return results["cells"][cell]["metrics"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("reference") / "r.json"
    return run_results(REPO / "membench.toml", out)


def _adapter_run(tmp_path_factory: pytest.TempPathFactory, target: str,
                 options: dict[str, Any] | None = None) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp(target.partition(":")[2].lower())
    return run_results(write_adapter_config(folder, target, options), folder / "r.json")


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _adapter_run(tmp_path_factory, "adapters_for_tests:Oracle", {"fixtures": str(BUILTIN)})


@pytest.fixture(scope="module")
def id_oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _adapter_run(tmp_path_factory, "adapters_for_tests:IdOracle",
                        {"fixtures": str(BUILTIN)})


@pytest.fixture(scope="module")
def abstainer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _adapter_run(tmp_path_factory, "adapters_for_tests:Abstainer")


@pytest.fixture(scope="module")
def abstaining_reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _adapter_run(tmp_path_factory, "adapters_for_tests:AbstainingReference",
                        {"tau": 0.45})


# -- the reference memory on the built-in fixtures (this repo's membench.toml) -------------------


def test_reference_runs_every_cell(reference: dict[str, Any]) -> None:
    assert set(reference["cells"]) == {
        "veto/files_known", "veto/files_unknown", "veto/lifecycle", "abstention/default",
        "abstention/control_floor_off", "abstention/control_shuffled", "push/know_to_ask",
        "push/push",
        "writeback/fidelity", "writeback/continuity",
        "recall/knowledge-update", "recall/multi-session", "recall/single-session",
        "recall/temporal",
    }
    for name, cell in reference["cells"].items():
        assert cell["gold_total"] > 0, name
        assert cell["failed"] == sorted(cell["failed"]), name
        assert set(cell["failed"]) <= set(reference["items"][name]), name


def test_reference_veto_files_known_recall(reference: dict[str, Any]) -> None:
    assert metrics(reference, "veto/files_known")["veto_recall_at_k"] >= 0.9
    # Knowing the files helps: without them the same scenarios are harder.
    assert (metrics(reference, "veto/files_unknown")["veto_recall_at_k"]
            <= metrics(reference, "veto/files_known")["veto_recall_at_k"])


def test_reference_lifecycle_never_surfaces_a_stale_decision(reference: dict[str, Any]) -> None:
    # Superseded decisions are demoted below every active one (docs/suites.md).
    assert metrics(reference, "veto/lifecycle")["stale_surfaced"] == 0
    assert metrics(reference, "veto/lifecycle")["veto_recall_at_k"] == 1


def test_reference_recall_cells(reference: dict[str, Any]) -> None:
    for cell in ("recall/knowledge-update", "recall/temporal", "recall/single-session"):
        assert set(metrics(reference, cell)) == {"recall_any_at_k", "recall_all_at_k",
                                                 "ndcg_at_k", "false_answer_rate"}
    # Every multi-session query is answerable: no false_answer_rate there.
    assert "false_answer_rate" not in metrics(reference, "recall/multi-session")
    for cell in ("recall/knowledge-update", "recall/multi-session"):
        assert metrics(reference, cell)["recall_any_at_k"] > 0.5


def test_reference_both_controls_fail(reference: dict[str, Any]) -> None:
    assert metrics(reference, "abstention/default")["controls_passing"] == 0
    for control in CONTROLS:
        cell = reference["cells"][f"abstention/{control}"]
        assert cell["gold_total"] == 1
        assert cell["failed"] == []
    assert metrics(reference, "abstention/control_floor_off")["wrong"] > 0
    assert metrics(reference, "abstention/control_shuffled")["net_at_1"] < 0


def test_reference_net_beats_floor_off(reference: dict[str, Any]) -> None:
    default = metrics(reference, "abstention/default")
    assert default["net_at_1"] > 0
    assert default["net_at_1"] > metrics(reference, "abstention/control_floor_off")["net_at_1"]
    for lam in LAMBDAS:
        assert f"net_at_{lam}" in default


def test_reference_push_source_isolation(reference: dict[str, Any]) -> None:
    for cell in ("push/know_to_ask", "push/push"):
        assert metrics(reference, cell)["source_isolation_violations"] == 0
        assert all(not item["foreign"] for item in reference["items"][cell].values())
    # The work copy of a page seeded in two sources is injected, under its own id.
    assert reference["items"]["push/push"]["conv-12.t01#nadia-haddad"]["injected"] == \
        ["nadia-haddad@work"]


def test_abstention_n_counts_every_probe(reference: dict[str, Any]) -> None:
    default = metrics(reference, "abstention/default")
    n = reference["cells"]["abstention/default"]["gold_total"]
    assert default["net_at_1"] == pytest.approx((default["correct"] - default["wrong"]) / n,
                                                abs=1e-4)
    assert default["net_at_5"] == pytest.approx((default["correct"] - 5 * default["wrong"]) / n,
                                                abs=1e-4)


# -- adapters of a test module, through the config -----------------------------------------------


def test_oracle_is_perfect(oracle: dict[str, Any]) -> None:
    assert oracle["config"]["adapter"]["python"] == "adapters_for_tests:Oracle"
    assert metrics(oracle, "veto/lifecycle")["stale_surfaced"] == 0
    for condition in ("files_known", "files_unknown", "lifecycle"):
        veto = metrics(oracle, f"veto/{condition}")
        assert veto["veto_recall_at_k"] == 1
        assert veto["mrr"] == 1
        assert oracle["cells"][f"veto/{condition}"]["failed"] == []
    default = metrics(oracle, "abstention/default")
    assert default["wrong"] == 0
    assert oracle["cells"]["abstention/default"]["failed"] == []
    assert default["net_at_1"] > 0
    know, push = metrics(oracle, "push/know_to_ask"), metrics(oracle, "push/push")
    assert push["push_precision"] == 1
    assert push["push_recall"] == 1
    assert know["false_fire_rate"] == 0
    assert know["know_to_ask_failure_rate"] == 0
    assert know["source_isolation_violations"] == push["source_isolation_violations"] == 0
    assert oracle["cells"]["push/know_to_ask"]["failed"] == []
    assert oracle["cells"]["push/push"]["failed"] == []


def test_floor_off_control_caught_when_it_stops_failing(oracle: dict[str, Any]) -> None:
    # The oracle returns no hits for unanswerable probes, so answering with the top hit whatever
    # `abstain` says is never wrong: the floor-off control passes, and that must be counted.
    assert metrics(oracle, "abstention/control_floor_off")["wrong"] == 0
    assert oracle["cells"]["abstention/control_floor_off"]["failed"] == ["control_floor_off"]
    # It looks the gold fact up by text, so permuted ids make it wrong: that control still fails.
    assert metrics(oracle, "abstention/control_shuffled")["net_at_1"] < 0
    assert oracle["cells"]["abstention/control_shuffled"]["failed"] == []
    assert metrics(oracle, "abstention/default")["controls_passing"] == 1


def test_shuffled_control_caught_when_it_stops_failing(id_oracle: dict[str, Any]) -> None:
    # Gold ids whatever text they were ingested with: the shuffle cannot hurt it.
    assert metrics(id_oracle, "abstention/control_shuffled")["net_at_1"] >= 0
    assert id_oracle["cells"]["abstention/control_shuffled"]["failed"] == ["control_shuffled"]
    # Its decoy hits on unanswerable probes make the floor-off control wrong: that one fails.
    assert metrics(id_oracle, "abstention/control_floor_off")["wrong"] > 0
    assert id_oracle["cells"]["abstention/control_floor_off"]["failed"] == []
    assert metrics(id_oracle, "abstention/default")["controls_passing"] == 1
    assert metrics(id_oracle, "abstention/default")["wrong"] == 0


def test_always_abstaining_adapter_recall_zero(abstainer: dict[str, Any]) -> None:
    for condition in ("files_known", "files_unknown", "lifecycle"):
        assert metrics(abstainer, f"veto/{condition}")["veto_recall_at_k"] == 0
    default = metrics(abstainer, "abstention/default")
    assert default["wrong"] == 0
    assert metrics(abstainer, "push/push")["push_recall"] == 0
    assert metrics(abstainer, "push/push")["push_precision"] == 1  # nothing injected
    assert metrics(abstainer, "push/know_to_ask")["false_fire_rate"] == 0
    # Both controls stop failing for an adapter that never answers, and both are counted.
    assert default["controls_passing"] == 2
    for control in CONTROLS:
        assert abstainer["cells"][f"abstention/{control}"]["failed"] == [control]


def test_abstaining_with_hits_pushes_nothing(abstaining_reference: dict[str, Any]) -> None:
    # The contract: hits are returned even when abstaining; abstaining still answers nothing.
    assert metrics(abstaining_reference, "abstention/default")["wrong"] == 0
    assert metrics(abstaining_reference, "push/push")["push_recall"] == 0
    assert metrics(abstaining_reference, "push/know_to_ask")["false_fire_rate"] == 0
    # The floor-off control reads the hits, so it is wrong and fails as it should.
    assert metrics(abstaining_reference, "abstention/control_floor_off")["wrong"] > 0
    assert abstaining_reference["cells"]["abstention/control_floor_off"]["failed"] == []


@pytest.mark.parametrize("adapter_run", ["abstainer", "abstaining_reference"])
def test_always_abstaining_adapter_scores_net_zero(adapter_run: str,
                                                   request: pytest.FixtureRequest) -> None:
    # NET(λ) scores an abstention 0, so an always-abstaining system scores NET 0. Abstaining
    # costs nothing and earns nothing, whether the probe was answerable or not.
    default = metrics(request.getfixturevalue(adapter_run), "abstention/default")
    assert {lam: default[f"net_at_{lam}"] for lam in LAMBDAS} == {lam: 0 for lam in LAMBDAS}


def test_always_abstaining_adapter_has_zero_coverage(abstainer: dict[str, Any]) -> None:
    # coverage: "Share of probes the system answered instead of abstaining" — it answered none.
    assert metrics(abstainer, "abstention/default")["coverage"] == 0
