"""``membench_gate/cli/options.py``: every option and argument of every command declared once —
a flag two commands spell alike is one declaration and its ``.but()`` variants."""

from __future__ import annotations

import argparse
import ast
from collections import Counter

import pytest

from membench_gate.cli import options
from membench_gate.cli.options import OneOf, Option
from membench_gate.cli.parser import COMMANDS, build_parser
from tests.support.paths import REPO

SOURCE = REPO / "membench_gate" / "cli" / "options.py"


def declared() -> Counter[str]:
    """How many ``option(...)`` calls of options.py name each flag or argument."""
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    return Counter(arg.value for node in ast.walk(tree)
                   if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                   and node.func.id == "option"
                   for arg in node.args
                   if isinstance(arg, ast.Constant) and isinstance(arg.value, str))


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def spellings() -> set[str]:
    """Every flag and argument the full command line has (argparse's own --help aside)."""
    found = set()
    for sub in subparsers(build_parser()).values():
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            found.update(action.option_strings or [action.dest])
    return found


def taken(command: str) -> list[Option]:
    return [o for entry in COMMANDS[command].options
            for o in (entry.options if isinstance(entry, OneOf) else (entry,))]


def test_the_parser_has_options_to_check() -> None:
    assert {"--config", "--out", "--results", "parts", "target", "--python"} <= spellings()


@pytest.mark.parametrize("spelling", sorted(spellings()))
def test_every_flag_and_argument_is_declared_once_in_options_py(spelling: str) -> None:
    assert declared()[spelling] == 1


def test_no_flag_is_declared_twice() -> None:
    assert [name for name, count in declared().items() if count > 1] == []


def module_options() -> list[Option]:
    found: list[Option] = []
    for value in vars(options).values():
        if isinstance(value, Option):
            found.append(value)
        elif isinstance(value, OneOf):
            found.extend(value.options)
    return found


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_a_command_takes_is_one_of_options_py(command: str) -> None:
    # By name or as a variant of one (``.but()``, ``.hidden()``): never written in the registry.
    names = {o.names for o in module_options()}
    assert [o.names for o in taken(command) if o.names not in names] == []


def test_variants_of_a_flag_keep_its_type_and_action() -> None:
    by_names: dict[tuple[str, ...], set[tuple[object, object]]] = {}
    for option in module_options():
        kind = (option.settings.get("type"), option.settings.get("action"))
        by_names.setdefault(option.names, set()).add(kind)
    assert {names: kinds for names, kinds in by_names.items() if len(kinds) > 1} == {}
    assert len([o for o in module_options() if o.names == ("--out",)]) > 1  # variants exist


def test_but_changes_only_what_it_is_given() -> None:
    variant = options.OUT.but(required=True, help="x")
    assert variant.names == options.OUT.names
    assert variant.settings == {**options.OUT.settings, "required": True, "help": "x"}
    assert options.OUT.settings.get("required") is None  # the declaration is left as it was
    assert options.DEBUG.hidden().settings["help"] == argparse.SUPPRESS
