"""The suite registry: each suite one package behind one ``Suite`` declaration, read lazily."""

from __future__ import annotations

import pytest

from membench_gate.config import Suites
from membench_gate.model import metrics
from membench_gate.suites import NAMES, get, registry
from membench_gate.suites.common.options import SuiteOptions
from membench_gate.suites.common.suite import FixturesModule, ScoringModule
from tests.support.paths import REPO

SUITES = REPO / "membench_gate" / "suites"


@pytest.mark.parametrize("name", NAMES)
def test_every_registered_suite_is_one_package_with_every_part(name: str) -> None:
    suite = get(name)
    assert suite.name == name
    assert suite.package == f"membench_gate.suites.{name}"
    assert issubclass(suite.options, SuiteOptions)
    assert isinstance(suite.fixtures, FixturesModule)
    assert isinstance(suite.scoring, ScoringModule)
    assert suite.files or suite.subfolder  # it reads something from a fixture folder
    assert name in metrics.CONDITIONS  # its cells are in the one metric registry
    assert all(cell.startswith(f"{name}/") for cell in (*suite.derived, *suite.answers))


def test_the_config_builds_its_suites_table_from_the_registry() -> None:
    assert tuple(Suites.model_fields) == NAMES
    for name, suite in registry().items():
        assert suite.options in _members(Suites.model_fields[name].annotation)


def _members(annotation: object) -> tuple[object, ...]:
    return getattr(annotation, "__args__", (annotation,))
