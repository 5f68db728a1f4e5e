"""Cell names: ``suite/condition``, or ``<seam>/<suite>/<condition>`` when a config runs several
adapters side by side (``[adapters.<seam>]``, docs/config.md "Seams").

Every part of the gate that reads a suite or a condition out of a cell name reads it here, so a
two-part name and a three-part one mean the same thing everywhere. A condition never holds a
``/`` (the registry's conditions and recall's categories are ``[A-Za-z0-9_.-]``) and neither does
a seam name, so the number of parts tells the two forms apart.
"""

from __future__ import annotations

import re
from typing import NamedTuple

SEAM_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
SEAM_CHARS = "letters, digits, '_' and '-'"


class CellName(NamedTuple):
    """A cell name taken apart; ``seam`` is ``""`` for a config with one ``[adapter]``."""

    seam: str
    suite: str
    condition: str

    @property
    def local(self) -> str:
        """The name within its seam: ``suite/condition``, as the suites and the registry say it."""
        return f"{self.suite}/{self.condition}"

    @property
    def scope(self) -> str:
        """What one suite run of one adapter produced: ``seam/suite``, or ``suite``."""
        return f"{self.seam}/{self.suite}" if self.seam else self.suite


def parse(cell: str) -> CellName:
    """``suite/condition`` or ``seam/suite/condition``; any other name has an empty condition
    (a name no suite produces, which the callers refuse in their own words)."""
    parts = cell.split("/")
    if len(parts) == 3:
        return CellName(*parts)
    if len(parts) == 2:
        return CellName("", *parts)
    return CellName("", parts[0], "")


def join(seam: str, name: str) -> str:
    """``name`` (a cell, or a suite scope) within ``seam``; unchanged without a seam."""
    return f"{seam}/{name}" if seam else name


def suite_of(cell: str) -> str:
    return parse(cell).suite


def local(cell: str) -> str:
    return parse(cell).local


def seam_of(cell: str) -> str:
    return parse(cell).seam


def scope_of(cell: str) -> str:
    return parse(cell).scope


def scope_parts(scope: str) -> tuple[str, str]:
    """``(seam, suite)`` of a scope (``seam/suite`` or ``suite``)."""
    seam, _, suite = scope.rpartition("/")
    return seam, suite
