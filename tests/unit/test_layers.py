"""The layer contract (DESIGN §3): a module imports only from its own package or from a package of a
strictly lower rank. Every import counts — at the top of a module, inside a function and under
``if TYPE_CHECKING:``, absolute or relative — because an upward import, wherever it sits, ties a
lower layer to a higher one.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import REPO

# The rank of each top-level module or package of membench_gate; the root entry points
# (``membench_gate/__init__.py``, ``__main__.py`` and the ``host`` and ``action`` shims) are above all.
RANKS = {
    "errors": 0, "defaults": 0, "process": 0,
    "files": 1, "budget": 1,
    "model": 2,
    "adapter": 3, "gate": 3,
    "suites": 4,
    "config": 5, "report": 5, "importers": 5,
    "base": 6,
    "run": 7, "ci": 7,
    "selftest": 8, "reference": 8,
    "commands": 9,
    "cli": 10,
    "__init__": 11, "__main__": 11, "host": 11, "action": 11,
}

@dataclass(frozen=True)
class Violation:
    module: str
    imported: str
    module_rank: int
    imported_rank: int

    def __str__(self) -> str:
        return (f"{self.module} (rank {self.module_rank}) imports {self.imported} "
                f"(rank {self.imported_rank}): a module may import only its own package or a lower rank")


def module_name(path: Path, root: Path) -> str:
    """``root/model/results.py`` → ``membench_gate.model.results`` (``root`` is the package folder)."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def component(name: str) -> str:
    """The top-level module or package that ``name`` (a dotted module name) is in; ``__init__`` for
    the package itself."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imported_names(tree: ast.Module, module: str, is_package: bool, root: Path) -> set[str]:
    """Every module of ``root``'s package that ``tree`` imports, wherever the import statement is.

    ``from membench_gate.model import X`` names the module ``membench_gate.model.X`` when there is one,
    else ``membench_gate.model`` (a name it defines).
    """
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                source = ".".join([*base, *filter(None, [node.module])])
            else:
                source = node.module or ""
            for alias in node.names:
                candidate = f"{source}.{alias.name}"
                path = root.parent.joinpath(*candidate.split("."))
                found.add(candidate if path.with_suffix(".py").is_file() or path.is_dir() else source)
    # The package itself (``from membench_gate import __version__``) is not counted: Python runs its
    # ``__init__`` before any of its modules, so naming it adds no dependency.
    return {name for name in found if name.startswith(root.name + ".")}


def violations(root: Path) -> list[Violation]:
    """The upward imports of every module under ``root`` (a package folder), by :data:`RANKS`."""
    found: list[Violation] = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        own = component(module)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for imported in sorted(imported_names(tree, module, path.name == "__init__.py", root)):
            other = component(imported)
            if other == own:
                continue
            for name in (own, other):
                if name not in RANKS:
                    raise AssertionError(f"{root.name}.{name} has no rank: add it to RANKS "
                                         "(and to DESIGN §3)")
            if RANKS[other] >= RANKS[own]:
                found.append(Violation(module, imported, RANKS[own], RANKS[other]))
    return found


def test_no_import_points_up() -> None:
    found = [str(v) for v in violations(REPO / "membench_gate")]
    assert not found, "upward imports:\n" + "\n".join(found)


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "membench_gate" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "membench_gate"


@pytest.mark.parametrize("statement", [
    "from membench_gate.cli.main import main\n",
    "import membench_gate.cli.main\n",
    "from ..cli import main\n",
    "from membench_gate import cli\n",
    "import membench_gate.cli\n",
    "def later():\n    from membench_gate.cli import main\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..cli.main import main\n",
])
def test_an_upward_import_is_reported_wherever_it_is(tmp_path: Path, statement: str) -> None:
    root = write_tree(tmp_path, {"__init__.py": "", "errors.py": "", "model/__init__.py": "",
                                 "model/results.py": statement, "cli/__init__.py": "",
                                 "cli/main.py": "def main(): ...\n"})
    found = violations(root)
    assert [str(v) for v in found] == [
        f"membench_gate.model.results (rank 2) imports {found[0].imported} (rank 10): "
        "a module may import only its own package or a lower rank"]
    assert found[0].imported.startswith("membench_gate.cli")


def test_imports_of_the_own_package_or_downward_are_allowed(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {
        "__init__.py": "from membench_gate.cli.main import main\n",  # the entry points are on top
        "errors.py": "", "model/__init__.py": "from . import results\n",
        "model/results.py": "from membench_gate.errors import GateError\nfrom .canonical import x\n",
        "model/canonical.py": "import json\n", "cli/__init__.py": "",
        "cli/main.py": "from ..model import results\nimport membench_gate.model.canonical\n"})
    assert violations(root) == []


def test_a_package_of_the_same_rank_is_not_a_lower_one(tmp_path: Path) -> None:
    # config and report share a rank: neither may import the other (no cycle can form in a rank).
    root = write_tree(tmp_path, {"__init__.py": "", "config.py": "from membench_gate.report import render\n",
                                 "report/__init__.py": "", "report/render.py": "",
                                 "files.py": "from membench_gate.errors import GateError\n",
                                 "errors.py": ""})
    assert [str(v) for v in violations(root)] == [
        "membench_gate.config (rank 5) imports membench_gate.report.render (rank 5): "
        "a module may import only its own package or a lower rank"]


def test_a_package_without_a_rank_is_named(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {"__init__.py": "", "plugins/__init__.py": "import membench_gate.errors\n",
                                 "errors.py": ""})
    with pytest.raises(AssertionError, match=r"membench_gate\.plugins has no rank"):
        violations(root)
