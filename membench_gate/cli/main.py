"""The console entry: parse the command line, run the command it names, exit with its code.

Exit codes are the verdict (:class:`membench_gate.errors.ExitCode`): 0 PASS · 1 REGRESSION ·
2 BLESS REQUIRED · 3 INCONCLUSIVE · 4 ERROR. Bad usage and every user-facing error exit 4 with
one line on stderr (a traceback only with ``--debug``); an input of a version this one does not
know exits 3 with one ``inconclusive:`` line. The commands are in
:mod:`membench_gate.commands`, listed in :data:`membench_gate.cli.parser.COMMANDS`; what the
console does to its own process is :mod:`membench_gate.cli.runtime`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from membench_gate.cli import runtime
from membench_gate.cli.parser import COMMANDS, build_parser
from membench_gate.errors import ExitCode, GateError, describe, exit_code_of, without_ansi

__all__ = ["console", "main"]


def console() -> NoReturn:
    """Entry point of the ``membench-gate`` console script and of ``python -m membench_gate``:
    :func:`main`, then exit."""
    runtime.start()
    try:
        code = main()
    except KeyboardInterrupt as exc:  # between the command's own guards (stream set-up, exit)
        runtime.say(f"membench-gate: error: {describe(exc)}")
        code = ExitCode.ERROR
    runtime.freeze_gc()
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default: ``sys.argv``) and return its exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    real = sys.stdout, sys.stderr
    # A descriptor closed by the caller (``2>&-``) leaves its stream None: the command writes to
    # /dev/null instead, so a progress line cannot turn the verdict into an error.
    runtime.reopen_closed_descriptors()
    sys.stdout = runtime.Guarded(sys.stdout or runtime.devnull())  # type: ignore[assignment]
    sys.stderr = runtime.Guarded(sys.stderr or runtime.devnull())  # type: ignore[assignment]
    try:
        return _dispatch(argv, debug)
    finally:
        sys.stdout, sys.stderr = real
        for stream in real:
            runtime.settle(stream)


def _parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The parser of the command ``argv`` names first; with no command named at all, one that
    lists them (for ``--help``, ``--version`` or the error); else the full parser, which reports
    what is wrong."""
    if argv and argv[0] in COMMANDS:
        return build_parser(argv[0])
    return build_parser(bare=not any(arg in COMMANDS for arg in argv))


def _dispatch(argv: list[str], debug: bool) -> int:
    try:
        args = _parser_for(argv).parse_args(argv)
    except GateError as exc:
        runtime.say(f"membench-gate: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt as exc:  # stopped before the command began: nothing written yet
        runtime.say(f"membench-gate: error: {describe(exc)}")
        return ExitCode.ERROR
    from membench_gate import budget

    budget.start(args.command, getattr(args, "budget_minutes", None), os.environ)
    # Everything a command raises, SystemExit and KeyboardInterrupt included, is an ERROR (or a
    # GateError's own code): only a finished command's return value is a verdict.
    try:
        try:
            return COMMANDS[args.command].load()(args)
        finally:
            runtime.seal_finish()
    except BaseException as exc:
        if debug:
            import traceback

            for line in traceback.format_exc().splitlines():  # its messages may quote an id
                runtime.say(line)
        code = exit_code_of(exc)
        # An input of another version (exit 3) is not a failure of this one: said as what it is.
        kind = "inconclusive" if code == ExitCode.INCONCLUSIVE else "error"
        runtime.say(f"membench-gate: {kind}: {describe(exc)}")
        if isinstance(exc, GateError) and exc.detail:
            # Prefixed, so a line of the adapter's stderr can never be read as a workflow command;
            # its colours taken out (shown as escapes with --debug), what else acts shown escaped.
            runtime.say("  adapter stderr (last lines):")
            for line in exc.detail:
                runtime.say(f"  | {line if debug else without_ansi(line)}")
        return code
    finally:
        budget.stop()
