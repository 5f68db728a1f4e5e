"""``membench_gate/errors.py``: the exit codes, the exit code and the one line of any failure, and
the one escaping of untrusted text for a terminal or a log."""

from __future__ import annotations

import unicodedata

import pytest

from membench_gate.errors import ExitCode, GateError, Terminated, describe, exit_code_of, visible

# -- ExitCode ------------------------------------------------------------------------------------


def test_exit_codes_are_the_verdicts_of_the_design() -> None:
    # DESIGN §6/§8 and docs/gate.md: 0 PASS · 1 REGRESSION · 2 BLESS REQUIRED · 3 INCONCLUSIVE ·
    # 4 ERROR — and nothing else (bad usage is ERROR, never argparse's 2).
    assert {code.name: code.value for code in ExitCode} == {
        "PASS": 0, "REGRESSION": 1, "BLESS_REQUIRED": 2, "INCONCLUSIVE": 3, "ERROR": 4}


def test_a_gate_error_is_an_error_unless_it_says_otherwise() -> None:
    assert GateError("x").exit_code == ExitCode.ERROR
    assert GateError("x", ExitCode.REGRESSION).exit_code == ExitCode.REGRESSION


# -- exit_code_of --------------------------------------------------------------------------------


def test_a_gate_errors_exit_code_is_its_own() -> None:
    assert exit_code_of(GateError("x", exit_code=ExitCode.BLESS_REQUIRED)) == 2


@pytest.mark.parametrize("exc", [ValueError("x"), SystemExit(0), SystemExit(None), SystemExit(1),
                                 KeyboardInterrupt(), Terminated("SIGTERM"), RecursionError()])
def test_any_other_failure_is_an_error_never_a_pass(exc: BaseException) -> None:
    assert exit_code_of(exc) == ExitCode.ERROR


# -- describe ------------------------------------------------------------------------------------


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:  # what describe is given: with its traceback
        return caught


def test_a_gate_error_is_described_by_its_message() -> None:
    assert describe(GateError("membench.toml: suites.veto.k: must be >= 1")) == \
        "membench.toml: suites.veto.k: must be >= 1"


def test_a_bug_is_one_line_naming_where_it_was_raised() -> None:
    line = describe(_raised(ValueError("first line\nsecond line\n")))
    assert line.startswith("internal error: ValueError: first line …")
    assert " at test_errors.py:" in line and " in _raised() (rerun with --debug)" in line
    assert "\n" not in line


@pytest.mark.parametrize(("exc", "line"), [
    (SystemExit(0), "unexpected exit (SystemExit(0))"),
    (Terminated("SIGTERM"), "terminated (SIGTERM)"),
    (KeyboardInterrupt(), "interrupted"),
    (RecursionError("maximum recursion depth exceeded"), "input nested too deeply (RecursionError)"),
])
def test_what_is_not_an_exception_of_ours_is_said_in_words(exc: BaseException, line: str) -> None:
    described = describe(_raised(exc))
    assert described.startswith(line) and "\n" not in described


def test_a_system_exit_is_said_not_to_be_a_verdict() -> None:
    assert describe(_raised(SystemExit(0))).endswith(": not a verdict")


def test_what_an_adapter_said_in_a_failure_is_shown_escaped() -> None:
    assert describe(GateError("adapter search(): \x1b]0;pwned\x07\nnext")) == \
        r"adapter search(): \x1b]0;pwned\x07\x0anext"


# -- visible -------------------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["\x1b", "\x9b", "\u202e", "\u2066", "\u200b", "\u2028",
                                  "\ufeff", "\U000e0041", "\ud800", "\x00", "\t"])
def test_each_character_that_acts_or_hides_is_written_as_its_escape(char: str) -> None:
    shown = visible(f"a{char}b")
    code = ord(char)
    escape = f"\\x{code:02x}" if code < 0x100 else \
        f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
    assert shown == f"a{escape}b"
    assert visible(shown) == shown  # once escaped, nothing left to escape


# Every code point, through unicodedata: seconds.
@pytest.mark.slow
def test_every_control_format_and_separator_character_is_escaped_and_nothing_else() -> None:
    every = "".join(map(chr, range(0x110000)))
    hidden = {"Cc", "Cf", "Cs", "Zl", "Zp"}
    kept = "".join(c for c in every if unicodedata.category(c) not in hidden)
    assert visible(kept) == kept  # letters, marks, symbols, emoji, spaces, private use
    assert not any(unicodedata.category(c) in hidden for c in visible(every))


def test_text_people_write_is_shown_as_it_is() -> None:
    for text in ("veto recall@5 −24 pts · NET(1) −3 pts", "Größe ≤ 4 KiB, 東京, ✅ ⚠️ 👍🏽",
                 "non\u00a0breaking\u202fthin", "path/to/file.py:12: note"):
        assert visible(text) == text


def _raised_while_handling(signal: BaseException) -> BaseException:
    """What a library raises when a signal lands inside it (a lazy schema build)."""
    try:
        try:
            raise signal
        except BaseException:
            raise RuntimeError("Error building 'function-wrap' serializer") from None
    except RuntimeError as exc:
        return exc


@pytest.mark.parametrize(("signal", "line"), [(Terminated("SIGTERM"), "terminated (SIGTERM)"),
                                              (KeyboardInterrupt(), "interrupted")])
def test_an_error_raised_while_a_signal_was_handled_is_that_signal(
        signal: BaseException, line: str) -> None:
    error = _raised_while_handling(signal)
    assert error.__context__ is signal  # (from None hides it from the traceback, not the chain)
    assert describe(error) == line
    # The control: the same error without a signal behind it is an internal error, named.
    assert "RuntimeError" in describe(RuntimeError("Error building 'function-wrap' serializer"))
