"""The command registry and the parser built from it.

:data:`COMMANDS` names every subcommand once: where its code is (a function of a module of
:mod:`membench_gate.commands`, imported only when that command runs), its line in
``membench-gate --help`` and the options it takes (:mod:`membench_gate.cli.options`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from membench_gate.cli import options as o
from membench_gate.cli.runtime import columns
from membench_gate.errors import GateError

DESCRIPTION = ("Gate the pull requests of an AI-agent memory system on deterministic benchmark "
               "suites:\nrun the suites through an adapter, compare with the baseline committed "
               "on the base branch,\nand report a verdict.")
EPILOG = """\
typical use:
  membench-gate init                      scaffold membench.toml, an adapter stub and a workflow
  membench-gate bless                     write the first baseline (commit it)
  membench-gate check                     gate this working tree against the base commit
  membench-gate show CELL#ID              one item: what was asked, the gold, what came back

exit codes: 0 PASS · 1 REGRESSION · 2 BLESS REQUIRED · 3 INCONCLUSIVE · 4 ERROR
metrics: membench-gate explain · docs: docs/gate.md, docs/suites.md"""


class Command(NamedTuple):
    """A subcommand: ``code`` is ``module:function`` in :mod:`membench_gate.commands` (the
    function takes the parsed arguments and returns the exit code), ``help`` its line in
    ``membench-gate --help``, ``options`` what it takes, in the order its help lists them."""

    code: str
    help: str
    options: tuple[o.Option | o.OneOf, ...]
    description: str | None = None
    defaults: Mapping[str, Any] = {}

    def load(self) -> Callable[[argparse.Namespace], int]:
        """The command's function (its module imported now)."""
        import importlib

        module, _, function = self.code.partition(":")
        return getattr(importlib.import_module(f"membench_gate.commands.{module}"), function)


# In the order ``membench-gate --help`` lists them.
COMMANDS: dict[str, Command] = {
    "run": Command("run:cmd_run", "run the suites; with --out, write the results file", (
        *o.ADAPTER_RUN, o.JOBS, o.OUT, o.SUITE, o.INCLUDE_HOLDOUT, o.SHARD)),
    "merge": Command("merge:cmd_merge", "merge the shards of a run into one results file", (
        # --config: the fixtures every part's items are checked against
        o.PARTS, o.MERGE_OUT, o.CONFIG, o.DEBUG)),
    "check": Command("check:cmd_check", "run and gate against the base commit's baseline", (
        *o.ADAPTER_RUN, o.JOBS, o.BASE_REF, o.RESULTS, o.ALLOW_REGRESSION, o.REPORT, o.JSON,
        o.VERIFY_DETERMINISM, o.CHECK_OUT, o.BASE_OUT, o.HISTORY_OUT, o.INCLUDE_HOLDOUT)),
    "bless": Command("bless:cmd_bless", "write the baseline (atomically), justified where the "
                                        "gate requires it", (
        *o.ADAPTER_RUN, o.JOBS, o.JUSTIFICATION, o.BASE_REF, o.BLESS_RESULTS,
        o.INCLUDE_HOLDOUT)),
    "comment": Command("comment:cmd_comment", "post or update the sticky PR comment", (
        o.COMMENT_REPORT, o.VERDICT, o.COMMENT_RESULTS, o.BASE, o.FROM_ARTIFACT, o.KEY, o.MODE,
        o.DEBUG)),
    "init": Command("init:cmd_init", "scaffold membench.toml, an adapter stub and the workflow "
                                     "in this repository", (
        o.CONFIG, o.DEBUG, o.ADAPTER_KIND), defaults={"rpc": False}),
    "show": Command("show:cmd_show", "one item: what was asked, the gold, what came back, base "
                                     "vs head", (
        *o.ADAPTER_RUN, o.JOBS, o.TARGET, o.SHOW_RESULTS, o.BASE_REF, o.INCLUDE_HOLDOUT)),
    "doctor": Command("doctor:cmd_doctor", "check the adapter against the protocol",
                      (*o.ADAPTER_RUN, o.JOBS)),
    "import": Command("import_:cmd_import", "fixture folders from the data sets memory teams "
                                            "already have", (
        o.FORMAT, o.SOURCES, o.IMPORT_OUT, o.DEBUG),
        description="Convert your own copy of a published data set into a fixture folder "
                    "(never bundled). vetobench CORPUS SCENARIOS · veribench ANSWERABLE.jsonl "
                    "UNANSWERABLE.jsonl · longmemeval FILE · locomo FILE · brainbench DIR"),
    "selftest": Command("selftest:cmd_selftest", "prove every gated metric can fail: run mutants "
                                                 "of the adapter", (
        *o.ADAPTER_RUN, o.JOBS, o.SELFTEST_JSON, o.MUTANT, o.INCLUDE_HOLDOUT)),
    "explain": Command("explain:cmd_explain", "the metric glossary", (o.METRIC, o.DEBUG.hidden())),
    "history": Command("history:cmd_history", "gated metrics across the blessed baselines in "
                                              "git (table; HTML charts)", (
        o.CONFIG, o.DEBUG, o.METRICS, o.SINCE, o.HTML),
        description="The gated metrics of every baseline blessed on the base branch (each a "
                    "commit that changed [gate] baseline), read with git: a table per metric, "
                    "and with --html a page with a chart per metric."),
}


class _Width:
    """argparse's help layout, told the terminal's width (:func:`membench_gate.cli.runtime.columns`,
    less 2 as argparse does) rather than asking ``shutil``."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None, **more: Any) -> None:
        super().__init__(prog, indent_increment, max_help_position,  # type: ignore[call-arg]
                         width if width is not None else columns() - 2, **more)


class _Formatter(_Width, argparse.HelpFormatter):
    pass


class _RawFormatter(_Width, argparse.RawDescriptionHelpFormatter):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that exits 4 (ERROR) on bad usage instead of 2, which means BLESS REQUIRED here,
    and lays out help with :class:`_Formatter` unless told otherwise."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise GateError(f"{message} (usage: {self.prog} --help)")


def build_parser(only: str | None = None, *, bare: bool = False) -> argparse.ArgumentParser:
    """The command line.

    A command line that names its command first is parsed by a parser of just that command
    (``only``); one that names no command at all (``--help``, ``--version``, a misspelt command)
    by one listing every command without their options (``bare``): argparse's help formatting
    costs time for every option added, and none of them would be read. Otherwise, every command
    with its options.
    """
    parser = _Parser(prog="membench-gate", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=_RawFormatter)
    o.VERSION.add_to(parser)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, command in COMMANDS.items():
        if only is not None and name != only:
            continue
        sub = commands.add_parser(name, help=command.help, description=command.description)
        if bare:
            continue
        for option in command.options:
            option.add_to(sub)
        if command.defaults:
            sub.set_defaults(**command.defaults)
    return parser
