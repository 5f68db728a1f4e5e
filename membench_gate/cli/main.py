"""Command line: argument parsing and dispatch only; one function per command.

Exit codes are the verdict: 0 PASS · 1 REGRESSION · 2 BLESS REQUIRED · 3 INCONCLUSIVE · 4 ERROR.
Bad usage and every user-facing error exit 4 with one line on stderr (a traceback only with
``--debug``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from membench_gate import __version__
from membench_gate.errors import GateError, Terminated, describe, exit_code_of, visible

EXIT_ERROR = 4
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


class _Width:
    """argparse's help layout, told the terminal's width rather than asking ``shutil``.

    argparse builds a formatter for every argument it adds (to check its metavar), and a
    formatter not given a width imports shutil — and with it zlib, bz2 and lzma — to ask
    ``shutil.get_terminal_size``: a few milliseconds of every command. The width is worked out
    the same way here: ``COLUMNS``, else the terminal of stdout, else 80; less 2, as argparse
    does.
    """

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None, **more: Any) -> None:
        super().__init__(prog, indent_increment, max_help_position,  # type: ignore[call-arg]
                         width if width is not None else _columns() - 2, **more)


class _Formatter(_Width, argparse.HelpFormatter):
    pass


class _RawFormatter(_Width, argparse.RawDescriptionHelpFormatter):
    pass


def _columns() -> int:
    try:
        columns = int(os.environ["COLUMNS"])
        if columns > 0:
            return columns
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _Parser(argparse.ArgumentParser):
    """argparse that exits 4 (ERROR) on bad usage instead of 2, which means BLESS REQUIRED here,
    and lays out help with :class:`_Formatter` unless told otherwise."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise GateError(f"{message} (usage: {self.prog} --help)")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, default=Path("membench.toml"),
                        help="gate config (default: membench.toml)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def _minutes(text: str) -> float:
    from membench_gate.budget import parse_minutes

    try:
        return parse_minutes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _budget(parser: argparse.ArgumentParser) -> None:
    """The time budget of a command that runs the adapter (:mod:`membench_gate.budget`)."""
    parser.add_argument("--budget-minutes", type=_minutes, metavar="N",
                        help="stop the adapter and fail (ERROR) when the command has run N "
                             "minutes (default: [gate] budget_minutes; in CI 60)")
def _seal_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seal", action="store_true",
                        help="run the adapter sealed (another user, a copy of the checkout "
                             "without the gold) or fail: an unsealed run is an ERROR")


def _establish(args: argparse.Namespace) -> None:
    """Decide, before any adapter starts, whether it runs sealed (docs/gate.md, "Sealed")."""
    from membench_gate.adapter import seal

    seal.establish(required=args.seal)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``only``, just that command's subparser (a command builds only the
    parser it runs under: argparse's help formatting costs milliseconds per command)."""

    def want(name: str) -> bool:
        return only is None or name == only

    parser = _Parser(prog="membench-gate", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=_RawFormatter)
    parser.add_argument("--version", action="version", version=f"membench-gate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    if want("run"):
        run = commands.add_parser("run", help="run the suites and write a results file")
        _common(run)
        _budget(run)
        _seal_flag(run)
        run.add_argument("--out", type=Path, help="results file to write (JSON)")
        run.add_argument("--suite", action="append", default=[], metavar="NAME",
                         help="run only this suite (repeatable)")
        run.add_argument("--include-holdout", action="store_true",
                         help="score holdout items too (changes the measurement)")
        run.add_argument("--shard", metavar="I/N",
                         help="score only shard I of N (items split by sha256 of suite/id); "
                              "put the parts together with merge")

    if want("merge"):
        merge = commands.add_parser("merge", help="merge the shards of a run into one results file")
        merge.add_argument("parts", nargs="+", type=Path, metavar="PART.json",
                           help="results files of run --shard I/N, one per shard")
        merge.add_argument("--out", type=Path, required=True, metavar="FILE",
                           help="merged results file to write (JSON)")
        _common(merge)  # --config: the fixtures every part's items are checked against

    if want("check"):
        check = commands.add_parser("check", help="run and gate against the base commit's baseline")
        _common(check)
        _budget(check)
        _seal_flag(check)
        check.add_argument("--base-ref", metavar="REV", help="base commit (default: auto-detected)")
        check.add_argument("--results", type=Path, metavar="FILE",
                           help="gate a results file from an earlier run instead of running")
        check.add_argument("--allow-regression", metavar="REASON",
                           help="local only: accept a regression, with the reason recorded")
        check.add_argument("--report", type=Path, metavar="FILE", help="write the Markdown report")
        check.add_argument("--json", type=Path, metavar="FILE", help="write the verdict as JSON")
        check.add_argument("--verify-determinism", action="store_true",
                           help="run twice; differing results are INCONCLUSIVE")
        check.add_argument("--out", type=Path, metavar="FILE",
                           help="also write this run's results file (as run --out does)")
        check.add_argument("--base-out", type=Path, metavar="FILE",
                           help="also write the base commit's baseline (for re-rendering the report)")
        check.add_argument("--include-holdout", action="store_true",
                           help="score holdout items too (changes the measurement)")

    if want("bless"):
        bless = commands.add_parser("bless", help="write the baseline (atomically), justified where "
                                                 "the gate requires it")
        _common(bless)
        _budget(bless)
        _seal_flag(bless)
        bless.add_argument("--justification", metavar="TEXT",
                           help="why the breaches against the base baseline are accepted")
        bless.add_argument("--base-ref", metavar="REV", help="base commit (default: auto-detected)")
        bless.add_argument("--results", type=Path, metavar="FILE",
                           help="bless an earlier run's results file (check --out, run --out) "
                                "instead of running the suites again")

    if want("comment"):
        comment = commands.add_parser("comment", help="post or update the sticky PR comment")
        comment.add_argument("--report", type=Path, metavar="FILE",
                             help="Markdown to post as it is (cut to the comment limit)")
        comment.add_argument("--verdict", type=Path, metavar="FILE",
                             help="verdict JSON (check --json): the comment is rendered from data")
        comment.add_argument("--results", type=Path, metavar="FILE",
                             help="results JSON of the run the verdict is about")
        comment.add_argument("--base", type=Path, metavar="FILE",
                             help="base baseline the verdict compared with (check --base-out)")
        comment.add_argument("--from-artifact", type=Path, metavar="DIR",
                             help="workflow_run mode: validate results.json, verdict.json and "
                                  "base.json in DIR, find the PR by its head sha, re-render")
        comment.add_argument("--key", default=None,
                             help="comment key, for several gates in one repo "
                                  "(default: $MEMBENCH_COMMENT_KEY, else default)")
        comment.add_argument("--mode", choices=("update", "recreate", "off"), default=None,
                             help="update, recreate, or off (default: $MEMBENCH_COMMENT, else update)")
        comment.add_argument("--debug", action="store_true", help="show tracebacks")

    if want("init"):
        init = commands.add_parser("init", help="scaffold membench.toml, an adapter stub and the "
                                                "workflow in this repository")
        _common(init)
        kind = init.add_mutually_exclusive_group()
        kind.add_argument("--python", dest="rpc", action="store_false",
                          help="a Python adapter class, served by the gate (default)")
        kind.add_argument("--command", dest="rpc", action="store_true",
                          help="an adapter process speaking JSON-RPC over stdio (any language)")
        init.set_defaults(rpc=False)

    if want("show"):
        show = commands.add_parser("show", help="one item: what was asked, the gold, what came back, "
                                               "base vs head")
        _common(show)
        _budget(show)
        _seal_flag(show)
        show.add_argument("target", metavar="CELL#ID", help="e.g. veto/files_known#scn-003")
        show.add_argument("--results", type=Path, metavar="FILE",
                          help="read the item from a results file instead of running its suite")
        show.add_argument("--base-ref", metavar="REV", help="base commit (default: auto-detected)")

    if want("doctor"):
        doctor = commands.add_parser("doctor", help="check the adapter against the protocol")
        _common(doctor)
        _budget(doctor)
        _seal_flag(doctor)

    if want("import"):
        imp = commands.add_parser(
            "import", help="fixture folders from the data sets memory teams already have",
            description="Convert your own copy of a published data set into a fixture folder "
                        "(never bundled). vetobench CORPUS SCENARIOS · veribench ANSWERABLE.jsonl "
                        "UNANSWERABLE.jsonl · longmemeval FILE · locomo FILE")
        imp.add_argument("format", choices=("vetobench", "veribench", "longmemeval", "locomo"))
        imp.add_argument("sources", nargs="+", type=Path, metavar="SRC")
        imp.add_argument("--out", type=Path, required=True, metavar="DIR",
                         help="fixture folder to write (with SOURCE.json)")
        imp.add_argument("--debug", action="store_true", help="show tracebacks")

    if want("selftest"):
        selftest = commands.add_parser("selftest",
                                       help="prove every gated metric can fail: run mutants of the adapter")
        _common(selftest)
        _budget(selftest)
        _seal_flag(selftest)
        selftest.add_argument("--json", type=Path, metavar="FILE",
                              help="also write the selftest's data as JSON (the action reads it)")
        selftest.add_argument("--mutant", action="append", default=[], metavar="NAME",
                              help="run only this mutant (repeatable; default: all)")

    if want("explain"):
        explain = commands.add_parser("explain", help="the metric glossary")
        explain.add_argument("metric", nargs="?", help="one metric (default: all)")
        explain.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    return parser


def cmd_run(args: argparse.Namespace) -> int:
    from membench_gate.config import load_config
    from membench_gate.files import write_atomic
    from membench_gate.model.results import dumps_results
    from membench_gate.report.summary import run_summary
    from membench_gate.run.runner import progress_reporter, run
    from membench_gate.run.shard import parse_shard

    try:
        _establish(args)
        shard = parse_shard(args.shard) if args.shard is not None else None
        config = load_config(args.config).with_holdout(args.include_holdout)
        if args.suite:
            config = config.with_suites(args.suite)
        results = run(config, progress_reporter(), shard=shard)
        if args.out:
            write_atomic(args.out, dumps_results(results))
        summary = run_summary(results, args.out)
    except BaseException as exc:
        _replace_out(exc, args.out, str(args.config))
        raise
    print(summary)
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from membench_gate.config import load_config
    from membench_gate.files import write_atomic
    from membench_gate.model.results import dumps_results
    from membench_gate.report.summary import run_summary
    from membench_gate.run.merge import check_parts, load_parts, merge

    if any(part.resolve() == args.out.resolve() for part in args.parts):
        raise GateError(f"--out {args.out} is one of the parts to merge: write the merged "
                        "results to another file")  # (and a failed merge must not replace a part)
    try:
        parts = load_parts(args.parts)
        results = merge(parts)
        check_parts(parts, load_config(args.config))
        write_atomic(args.out, dumps_results(results))
    except BaseException as exc:
        _replace_out(exc, args.out, None)
        raise
    print(run_summary(results, args.out))
    return 0


def _replace_out(exc: BaseException, out: Path | None, config: str | None) -> None:
    """A failed ``run``/``merge`` has no results to write: its ``--out`` gets the error verdict, so
    an earlier run's file never stays behind to be merged or gated as this one's."""
    if out is not None:
        from membench_gate.commands.check import error_verdict, replace_outputs

        replace_outputs(error_verdict(exc, config), [out], [])


def cmd_check(args: argparse.Namespace) -> int:
    from membench_gate.cli import early

    git = None
    try:
        # The git processes of the base lookup start while the gate imports the rest. (The
        # adapter starts only once everything the verdict rests on has been read.)
        _establish(args)
        git = early.start_git(args.config)
        from membench_gate.ci.settings import Context
        from membench_gate.commands.check import Outputs, check

        outputs = Outputs(json=args.json, report=args.report, out=args.out,
                          base_out=args.base_out)
        context = Context.from_env()
    except BaseException as exc:  # check() did not take over: guard the files
        if git is not None:
            git.close()
        from membench_gate.commands.check import error_verdict, replace_outputs

        replace_outputs(error_verdict(exc, str(args.config)),
                        [args.json, args.out, args.base_out], [args.report])
        raise
    return check(args.config, context, base_ref=args.base_ref, results=args.results,
                 allow_regression=args.allow_regression, include_holdout=args.include_holdout,
                 verify_determinism=args.verify_determinism, outputs=outputs, git=git)


def cmd_bless(args: argparse.Namespace) -> int:
    from membench_gate.ci.settings import Context
    from membench_gate.commands.bless import bless

    _establish(args)
    return bless(args.config, Context.from_env(), justification=args.justification,
                 base_ref=args.base_ref, results_path=args.results)


def cmd_comment(args: argparse.Namespace) -> int:
    from membench_gate.ci.comment import comment
    from membench_gate.ci.settings import Settings

    return comment(Settings.from_env(), report=args.report, verdict=args.verdict, results=args.results,
                   base=args.base, from_artifact=args.from_artifact, key=args.key, mode=args.mode)


def cmd_init(args: argparse.Namespace) -> int:
    from membench_gate.commands.init import init

    return init(args.config, command=args.rpc)


def cmd_show(args: argparse.Namespace) -> int:
    from membench_gate.commands.show import show

    _establish(args)
    return show(args.target, config_path=args.config, results_path=args.results,
                base_ref=args.base_ref)


def cmd_selftest(args: argparse.Namespace) -> int:
    from membench_gate.config import load_config
    from membench_gate.files import write_atomic
    from membench_gate.model.canonical import canonical_dumps
    from membench_gate.report.selftest import render_table
    from membench_gate.selftest.mutants import by_name
    from membench_gate.selftest.sensitivity import selftest

    if args.json:
        args.json.unlink(missing_ok=True)  # never a stale report from an earlier run
    _establish(args)
    known = by_name()
    for name in args.mutant:
        if name not in known:
            raise GateError(f"--mutant {name}: unknown mutant (known: {', '.join(known)})")
    chosen = [known[n] for n in dict.fromkeys(args.mutant)] or list(known.values())
    report = selftest(load_config(args.config), chosen)
    if args.json:
        write_atomic(args.json, canonical_dumps(report.model_dump(mode="json")))
    print(render_table(report))
    return 0 if report.ok else 1


def cmd_doctor(args: argparse.Namespace) -> int:
    from membench_gate.commands.doctor import doctor
    from membench_gate.config import load_config

    _establish(args)
    return doctor(load_config(args.config))


def cmd_explain(args: argparse.Namespace) -> int:
    from membench_gate.model.metrics import explain

    try:
        print(explain(args.metric))
    except KeyError as exc:
        raise GateError(str(exc.args[0])) from exc
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from membench_gate.importers import import_data

    imported = import_data(args.format, args.sources, args.out)
    print(visible(f"{imported.summary()} → {args.out}"))
    for note in imported.notes[:10]:  # about the data imported: ids and text from elsewhere
        print(visible(f"  note: {note}"))
    if len(imported.notes) > 10:
        print(f"  … {len(imported.notes) - 10} more notes in {args.out / 'SOURCE.json'}")
    print(f'  enable with: [suites.{imported.suite}] fixtures = ["{args.out.as_posix()}"]')
    return 0


COMMANDS = {"run": cmd_run, "merge": cmd_merge, "check": cmd_check, "bless": cmd_bless,
            "comment": cmd_comment, "init": cmd_init, "show": cmd_show, "doctor": cmd_doctor,
            "explain": cmd_explain, "selftest": cmd_selftest, "import": cmd_import}


class _Guarded:
    """A text stream whose writes cannot fail: a closed pipe (``| head -1``) drops the rest.

    The exit code is the verdict, whatever happens to stdout and stderr: a write to a reader
    that went away must not turn a REGRESSION into a crash, or into exit 0.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                self._stream.write(text)
            except (OSError, ValueError):
                self.broken = True
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self.broken = True

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _reopen_closed_descriptors() -> None:
    """Point a closed descriptor 0, 1 or 2 at /dev/null, so no file or pipe the command opens
    later lands on it (where a child process would take it for its stdin or stderr)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def _devnull() -> TextIO:
    return open(os.devnull, "w", encoding="utf-8")


def _settle(stream: TextIO | None) -> None:
    """Flush ``stream`` once more; if its reader is gone, point its descriptor at /dev/null so
    the interpreter's own flush at exit cannot fail (which would exit 120, not the verdict)."""
    if stream is None:
        return
    try:
        stream.flush()
    except (OSError, ValueError):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass


def _say(line: str) -> None:
    """One line on stderr, its control characters shown as escapes: an id or an adapter's
    output in an error can never start a line of its own (a workflow command in a CI log)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(visible(line), file=sys.stderr)


def console() -> NoReturn:
    """Entry point of the ``membench-gate`` console script and of ``python -m membench_gate``:
    :func:`main`, then exit.

    A command's first tens of milliseconds create some hundred thousand objects that live to
    the end (modules, classes, validators), and with the default thresholds the collector walks
    them again and again as older generations fill. Collecting the middle generation ten times
    less often, and so the oldest a hundred times less often, halves that (about 7 ms of a
    ``check --results``); the youngest generation, where short-lived cycles die, is collected as
    usual.

    Everything a command made is still alive at exit, and the interpreter's last garbage
    collections walk it all (some 15 ms after a ``check --results``). Nothing the gate owns waits
    on such a collection: output files are written and closed, adapter and git processes ended.
    ``gc.freeze`` moves those objects out of the collector's sight; stdout, stderr and every exit
    handler are still flushed and run as usual.
    """
    without_pydantic_plugins()
    young, _, _ = gc.get_threshold()
    gc.set_threshold(young, 100, 100)
    _stop_on_signals()
    try:
        code = main()
    except KeyboardInterrupt as exc:  # between the command's own guards (stream set-up, exit)
        _say(f"membench-gate: error: {describe(exc)}")
        code = EXIT_ERROR
    gc.freeze()
    raise SystemExit(code)


def without_pydantic_plugins() -> None:
    """Validate with the gate's own schemas alone in this process: no pydantic plugin runs.

    pydantic loads a plugin from every installed distribution that registers one (an entry
    point in its ``pydantic`` group) and calls it around each validation. What the gate's
    verdict rests on is validated by its schemas only, whatever else the job installed. pydantic
    asks its loader module for its plugins; the gate's processes (the console script, ``python -m
    membench_gate`` and the action's step) put a loader with none in its place before the first
    model is built, which also spares every command the import of ``importlib.metadata`` and a
    scan of every installed distribution's metadata (about 20 ms). Code that imports the
    gate's modules in a process of its own (an adapter) keeps its plugins.
    """
    name = "pydantic.plugin._loader"
    if name in sys.modules:  # loaded already: this process's models were built with it
        return
    loader = types.ModuleType(name, "pydantic's plugin loader, with no plugin (membench-gate)")
    loader.get_plugins = tuple  # type: ignore[attr-defined]  # () plugins
    sys.modules[name] = loader


def _stop_on_signals() -> None:
    """SIGTERM (``timeout``, ``docker stop``, a cancelled job) and SIGHUP end a command the way
    Ctrl-C does: the adapter is stopped and every output file asked for is replaced by the error
    verdict, exit 4 — never a process killed mid-write with an earlier run's files in place."""
    import signal

    def stop(signum: int, frame: object) -> None:
        for name in names:  # once is enough: a second signal must not cut the clean-up short
            signal.signal(getattr(signal, name), signal.SIG_IGN)
        raise Terminated(signal.Signals(signum).name)

    # A signal the caller ignores (``nohup``) stays ignored.
    names = [name for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
             and signal.getsignal(getattr(signal, name)) is signal.SIG_DFL]
    for name in names:
        signal.signal(getattr(signal, name), stop)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default: ``sys.argv``) and return its exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    real = sys.stdout, sys.stderr
    # A descriptor closed by the caller (``2>&-``) leaves its stream None: the command writes to
    # /dev/null instead, so a progress line cannot turn the verdict into an error.
    _reopen_closed_descriptors()
    sys.stdout = _Guarded(sys.stdout or _devnull())  # type: ignore[assignment]
    sys.stderr = _Guarded(sys.stderr or _devnull())  # type: ignore[assignment]
    try:
        return _dispatch(argv, debug)
    finally:
        sys.stdout, sys.stderr = real
        for stream in real:
            _settle(stream)


def _command_of(argv: list[str]) -> str | None:
    """The command ``argv`` names, when it names a known one first (else the full parser reports
    what is wrong, with the list of commands)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def _seal_finish() -> None:
    """Nothing of the sandbox user outlives the command (when it started a sealed adapter)."""
    seal = sys.modules.get("membench_gate.adapter.seal")
    if seal is not None:
        seal.finish()


def _dispatch(argv: list[str], debug: bool) -> int:
    try:
        args = build_parser(_command_of(argv)).parse_args(argv)
    except GateError as exc:
        _say(f"membench-gate: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt as exc:  # stopped before the command began: nothing written yet
        _say(f"membench-gate: error: {describe(exc)}")
        return EXIT_ERROR
    from membench_gate import budget

    budget.start(args.command, getattr(args, "budget_minutes", None), os.environ)
    # Everything a command raises, SystemExit and KeyboardInterrupt included, is an ERROR (or a
    # GateError's own code): only a finished command's return value is a verdict.
    try:
        try:
            return COMMANDS[args.command](args)
        finally:
            _seal_finish()
    except BaseException as exc:
        if debug:
            import traceback

            for line in traceback.format_exc().splitlines():  # its messages may quote an id
                _say(line)
        _say(f"membench-gate: error: {describe(exc)}")
        if isinstance(exc, GateError) and exc.detail:
            # Prefixed, so a line of the adapter's stderr can never be read as a workflow command.
            _say("  adapter stderr (last lines):")
            for line in exc.detail:
                _say(f"  | {line}")
        return exit_code_of(exc)
    finally:
        budget.stop()
