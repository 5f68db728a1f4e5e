"""Every command-line option and argument, declared once (the commands name the ones they take
in :data:`membench_gate.cli.parser.COMMANDS`).

A flag two commands spell alike but mean differently (``--out``: the results file of ``run``,
the fixture folder of ``import``) is one declaration and its variants, each made with
:meth:`Option.but` right under it: the flag's type is written once, each command's help (and
metavar, where it names another kind of file) says what the file is there.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from membench_gate import __version__


class Option(NamedTuple):
    """One option (``--results``) or positional argument (``target``): its names and what
    argparse is told about it (help, type, default, metavar …)."""

    names: tuple[str, ...]
    settings: Mapping[str, Any]

    def but(self, **settings: Any) -> Option:
        """This option with some settings of its own (another help, required)."""
        return Option(self.names, {**self.settings, **settings})

    def hidden(self) -> Option:
        """This option, left out of the help."""
        return self.but(help=argparse.SUPPRESS)

    def add_to(self, parser: Any) -> None:  # a parser, or a group of its options
        parser.add_argument(*self.names, **self.settings)


class OneOf(NamedTuple):
    """Options of which a command takes at most one (``init --python | --command``)."""

    options: tuple[Option, ...]

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        group = parser.add_mutually_exclusive_group()
        for option in self.options:
            option.add_to(group)


def option(*names: str, **settings: Any) -> Option:
    return Option(names, settings)


def _minutes(text: str) -> float:
    from membench_gate.budget import parse_minutes

    try:
        return parse_minutes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _jobs(text: str) -> int:
    from membench_gate.defaults import MAX_WORKERS

    if text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_WORKERS:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {MAX_WORKERS}, got "
                                     f"{text!r}")


# -- what most commands take ----------------------------------------------------------------------

CONFIG = option("--config", type=Path, default=Path("membench.toml"),
                help="gate config (default: membench.toml)")
VERSION = option("--version", action="version", version=f"membench-gate {__version__}")
DEBUG = option("--debug", action="store_true", help="show tracebacks")
# The time budget of a command that runs the adapter (:mod:`membench_gate.budget`).
BUDGET_MINUTES = option("--budget-minutes", type=_minutes, metavar="N",
                        help="stop the adapter and fail (ERROR) when the command has run N "
                             "minutes (default: [gate] budget_minutes; in CI 60)")
# Adapter processes at once (docs/adapters.md, "Workers"): never part of what is measured.
JOBS = option("--jobs", type=_jobs, metavar="N",
              help="run N adapter processes side by side, the items split between them "
                   "(default: [adapter] workers, else 1; results are the same)")
SEAL = option("--seal", action="store_true",
              help="run the adapter sealed (another user, a copy of the checkout without the "
                   "gold) or fail: an unsealed run is an ERROR")
BASE_REF = option("--base-ref", metavar="REV", help="base commit (default: auto-detected)")
INCLUDE_HOLDOUT = option("--include-holdout", action="store_true",
                         help="score holdout items too (changes the measurement)")

# -- files read -----------------------------------------------------------------------------------

RESULTS = option("--results", type=Path, metavar="FILE",
                 help="gate a results file from an earlier run instead of running")
BLESS_RESULTS = RESULTS.but(help="bless an earlier run's results file (check --out, run --out) "
                                 "instead of running the suites again")
SHOW_RESULTS = RESULTS.but(help="read the item from a results file instead of running its suite")
COMMENT_RESULTS = RESULTS.but(help="results JSON of the run the verdict is about")

# -- files written --------------------------------------------------------------------------------

OUT = option("--out", type=Path, help="write the results file (JSON); without it, run writes no "
                                      "file and only prints a summary")
CHECK_OUT = OUT.but(metavar="FILE", help="also write this run's results file (as run --out does)")
MERGE_OUT = OUT.but(metavar="FILE", required=True, help="merged results file to write (JSON)")
IMPORT_OUT = OUT.but(metavar="DIR", required=True, help="fixture folder to write (with SOURCE.json)")
BASE_OUT = option("--base-out", type=Path, metavar="FILE",
                  help="also write the base commit's baseline (for re-rendering the report)")
HISTORY_OUT = option("--history-out", type=Path, metavar="FILE",
                     help="also write the base branch's last blessed baselines, as the report's "
                          "history block charts them (for re-rendering the report)")
REPORT = option("--report", type=Path, metavar="FILE", help="write the Markdown report")
COMMENT_REPORT = REPORT.but(help="Markdown to post as it is (cut to the comment limit)")
JSON = option("--json", type=Path, metavar="FILE", help="write the verdict as JSON")
SELFTEST_JSON = JSON.but(help="also write the selftest's data as JSON (the action reads it)")

# -- run ------------------------------------------------------------------------------------------

SUITE = option("--suite", action="append", default=[], metavar="NAME",
               help="run only this suite (repeatable)")
SHARD = option("--shard", metavar="I/N",
               help="score only shard I of N (items split by sha256 of suite/id); put the parts "
                    "together with merge")

# -- merge ----------------------------------------------------------------------------------------

PARTS = option("parts", nargs="+", type=Path, metavar="PART.json",
               help="results files of run --shard I/N, one per shard")

# -- check ----------------------------------------------------------------------------------------

ALLOW_REGRESSION = option("--allow-regression", metavar="REASON",
                          help="local only: accept a regression, with the reason recorded")
VERIFY_DETERMINISM = option("--verify-determinism", action="store_true",
                            help="run twice; differing results are INCONCLUSIVE")

# -- bless ----------------------------------------------------------------------------------------

JUSTIFICATION = option("--justification", metavar="TEXT",
                       help="why the breaches against the base baseline are accepted")

# -- comment --------------------------------------------------------------------------------------

VERDICT = option("--verdict", type=Path, metavar="FILE",
                 help="verdict JSON (check --json): the comment is rendered from data")
BASE = option("--base", type=Path, metavar="FILE",
              help="base baseline the verdict compared with (check --base-out)")
FROM_ARTIFACT = option("--from-artifact", type=Path, metavar="DIR",
                       help="workflow_run mode: validate results.json, verdict.json and base.json "
                            "in DIR, find the PR by its head sha, re-render")
KEY = option("--key", default=None,
             help="comment key, for several gates in one repo (default: $MEMBENCH_COMMENT_KEY, "
                  "else default)")
MODE = option("--mode", choices=("update", "recreate", "off"), default=None,
              help="update, recreate, or off (default: $MEMBENCH_COMMENT, else update)")

# -- init -----------------------------------------------------------------------------------------

ADAPTER_KIND = OneOf((
    option("--python", dest="rpc", action="store_false",
           help="a Python adapter class, served by the gate (default)"),
    option("--command", dest="rpc", action="store_true",
           help="an adapter process speaking JSON-RPC over stdio (any language)"),
))

# -- show -----------------------------------------------------------------------------------------

TARGET = option("target", metavar="CELL#ID", help="e.g. veto/files_known#scn-003")

# -- import ---------------------------------------------------------------------------------------

FORMAT = option("format", choices=("vetobench", "veribench", "longmemeval", "locomo",
                                   "brainbench"))
SOURCES = option("sources", nargs="+", type=Path, metavar="SRC")

# -- selftest -------------------------------------------------------------------------------------

MUTANT = option("--mutant", action="append", default=[], metavar="NAME",
                help="run only this mutant (repeatable; default: all)")

# -- explain --------------------------------------------------------------------------------------

METRIC = option("metric", nargs="?", help="one metric (default: all)")

# -- history --------------------------------------------------------------------------------------

METRICS = option("--metric", dest="metrics", action="append", default=[], metavar="CELL:METRIC",
                 help="only this metric, e.g. veto/files_known:veto_recall_at_k (repeatable; "
                      "default: every gated metric)")
SINCE = option("--since", metavar="REV",
               help="only the baselines blessed after commit REV (REV..base, as git log reads it)")
HTML = option("--html", type=Path, metavar="FILE",
              help="also write a self-contained HTML page with a chart per metric")

# What every command that runs the adapter takes, in this order.
ADAPTER_RUN = (CONFIG, DEBUG, BUDGET_MINUTES, SEAL)
