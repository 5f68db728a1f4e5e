"""The README's metric glossary is the registry's: every metric listed, with the registry's
direction and gate kind, as ``membench-gate explain`` prints them."""

from __future__ import annotations

import re

from membench_gate.model import metrics
from tests.support.paths import REPO

_ARROWS = {"higher": "↑", "lower": "↓"}


def _glossary_rows() -> dict[str, tuple[str, str]]:
    """metric → (the "better" column, the "gate" column) of the README's glossary table."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    table = text.split("| suite · cells | metric | better | gate | meaning |")[1].split("\n\n")[0]
    rows: dict[str, tuple[str, str]] = {}
    for line in table.strip().splitlines()[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name in re.findall(r"`([a-z_<λ>]+)`", cells[1]):
            rows[name] = (cells[2], cells[3])
    return rows


def test_the_readme_glossary_matches_the_registry() -> None:
    rows = _glossary_rows()
    assert set(rows) == set(metrics.REGISTRY)
    for name, (better, gate) in rows.items():
        metric = metrics.REGISTRY[name]
        assert better == _ARROWS[metric.direction], name
        assert gate.split()[0] == metric.kind, name
        # explain says the same arrow
        assert f"{_ARROWS[metric.direction]} better" in metrics.explain(name), name
