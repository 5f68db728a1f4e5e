"""Work started before the gate has imported and validated everything.

``check`` starts the git processes of its base lookup (:class:`membench_gate.base.git.Started`)
at once, so they run while the gate imports the rest; the lookup adopts them when it asks from
the same folder. They only read the repository: git says the same whether asked early or late.

The adapter is never started early: it is the pull request's code, and it starts only once
everything the verdict rests on (the base commit, its config, floors and baseline, the committed
baseline and the fixtures) has been read (docs/gate.md, "Inputs before the pull request's code").
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from membench_gate.base.git import Started


def start_git(config_path: Path) -> Started | None:
    """The git processes of the base lookup, started for the config's folder (where the check
    asks git from), or ``None`` when they cannot start — the check then starts them itself and
    reports what is wrong."""
    import os

    from membench_gate.base.git import Started

    try:
        return Started(Path(os.path.abspath(config_path)).parent)
    except Exception:
        return None
