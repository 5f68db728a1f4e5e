"""The isolation of a verdict on a results file from an earlier run (``check --results``): sealed
only when that run's receipt says so and this process is sealed too; with ``--seal`` a file
measured unsealed is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from membench_gate.adapter import seal
from membench_gate.errors import GateError
from membench_gate.model.results import Receipt, Results


@pytest.fixture(autouse=True)
def _forget_the_seal() -> Iterator[None]:
    seal.reset()
    yield
    seal.reset()


def results(isolation: str | None) -> Results:
    return Results(schema_version=1, fixtures_hash="a" * 64, config={}, cells={},
                   receipt=Receipt(isolation=isolation), items={})


def here(isolation: str, required: bool = False) -> None:
    """This process decided ``isolation`` (as :func:`seal.establish` would have)."""
    sandbox = seal.Sandbox(Path("/nonexistent"), isolation == "sealed", "", Path("/nonexistent"), None)
    seal._state = seal._State(sandbox, isolation, "", required=required)  # type: ignore[arg-type]


@pytest.mark.parametrize(("process", "said", "verdict"), [
    ("sealed", "sealed", "sealed"),
    ("sealed", "unsealed", "unsealed"),
    ("sealed", None, "unsealed"),  # a file from before receipts said: not known to be sealed
    ("unsealed", "sealed", "unsealed"),  # this process ran the base's suites unsealed
    ("unsealed", "unsealed", "unsealed"),
])
def test_sealed_only_when_the_file_and_this_process_are(process: str, said: str | None,
                                                        verdict: str) -> None:
    here(process)
    assert seal.measured_isolation(results(said), "r.json") == verdict


def test_before_the_decision_nothing_is_said() -> None:
    assert seal.measured_isolation(results("sealed"), "r.json") is None


@pytest.mark.parametrize("said", ["unsealed", None])
def test_required_refuses_a_file_not_measured_sealed(said: str | None) -> None:
    here("sealed", required=True)
    with pytest.raises(GateError, match=r"^cannot seal: r\.json was not measured sealed "
                                        r"\(receipt\.isolation (unsealed|not recorded)\)"):
        seal.measured_isolation(results(said), "r.json")
    assert seal.measured_isolation(results("sealed"), "r.json") == "sealed"
