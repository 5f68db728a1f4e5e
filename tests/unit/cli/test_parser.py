"""``membench_gate/cli/parser.py``: the command registry names existing code, every command's
parser builds, bad usage is an ERROR (never argparse's 2), and parsing imports no command."""

from __future__ import annotations

import argparse
import sys

import pytest

from membench_gate.cli.parser import COMMANDS, EPILOG, build_parser
from membench_gate.errors import ExitCode, GateError


def subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_commands_code_is_a_function_of_its_commands_module(name: str) -> None:
    module, _, function = COMMANDS[name].code.partition(":")
    code = COMMANDS[name].load()
    assert callable(code)
    assert (code.__module__, code.__name__) == (f"membench_gate.commands.{module}", function)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_commands_parser_builds_and_formats_its_help(name: str) -> None:
    parser = build_parser(name)
    help_text = subparser(parser, name).format_help()
    assert help_text.startswith(f"usage: membench-gate {name}")
    assert list(subparser(build_parser(), name)._option_string_actions) == \
        list(subparser(parser, name)._option_string_actions)  # alone as in the full parser


def test_the_bare_parser_lists_every_command_and_none_of_their_options() -> None:
    parser = build_parser(bare=True)
    assert list(subparser(parser, "run")._option_string_actions) == ["-h", "--help"]
    help_text = parser.format_help()
    assert all(f"    {name}" in help_text for name in COMMANDS)


def test_building_any_parser_imports_no_command_module(monkeypatch: pytest.MonkeyPatch) -> None:
    # Commands are imported only when one runs (Command.load): forget those loaded so far.
    for name in [m for m in sys.modules if m.startswith("membench_gate.commands")]:
        monkeypatch.delitem(sys.modules, name)
    build_parser(bare=True)
    build_parser()
    build_parser("check")
    assert [m for m in sys.modules if m.startswith("membench_gate.commands")] == []


def test_bad_usage_is_one_line_error_never_argparses_exit_2() -> None:
    with pytest.raises(GateError) as info:
        build_parser("run").parse_args(["run", "--shard"])
    assert info.value.exit_code == ExitCode.ERROR
    assert str(info.value) == ("argument --shard: expected one argument "
                               "(usage: membench-gate run --help)")
    with pytest.raises(GateError, match=r"^unrecognized arguments: --no-such-flag \(usage: "):
        build_parser("run").parse_args(["run", "--no-such-flag"])


def test_a_misspelt_command_is_an_error_too() -> None:
    with pytest.raises(GateError, match=r"invalid choice: 'chek'.*\(usage: membench-gate --help\)"):
        build_parser(bare=True).parse_args(["chek"])


def test_defaults_of_a_command_are_set() -> None:
    assert build_parser("init").parse_args(["init"]).rpc is False
    assert build_parser("init").parse_args(["init", "--command"]).rpc is True


def test_the_help_says_the_exit_codes_as_they_are() -> None:
    said = " · ".join(f"{code.value} {code.name.replace('_', ' ')}" for code in ExitCode)
    assert f"exit codes: {said}\n" in EPILOG
