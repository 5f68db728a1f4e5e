"""The gate config: mistakes are one-line errors naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from membench_gate.config import parse_config, parse_floors, parse_suite_options
from membench_gate.errors import GateError
from membench_gate.suites.abstention.options import AbstentionOptions
from tests.support.configs import error_of, parse

# -- parsing, in process ---------------------------------------------------------------------------

def test_defaults_are_recorded_with_every_option() -> None:
    config = parse("[suites.abstention]\n[suites.push]\n")
    assert config.record() == {
        "suites": {
            "abstention": {"fixtures": ["builtin"], "k": 5, "lambdas": [1, 2, 5, 10],
                           "shuffle_seed": 7},
            "push": {"budget": 3, "fixtures": ["builtin"]},
        },
        "include_holdout": False,
        "adapter": {"python": "membench_gate.reference:ReferenceMemory", "options": {}},
    }
    assert config.timeout == 60.0 and config.baseline == "baselines/main.json"


def test_suites_read_typed_options() -> None:
    options = parse("[suites.abstention]\nk = 3\nlambdas = [1, 2.5]\n").suites["abstention"]
    assert isinstance(options, AbstentionOptions)
    assert options.k == 3 and options.shuffle_seed == 7


def test_numbers_are_recorded_as_written() -> None:
    """Integers stay integers: the options are hashed as written ([1] is not [1.0])."""
    recorded = parse("[suites.abstention]\nlambdas = [1, 2.5]\n").record()["suites"]["abstention"]
    assert recorded["lambdas"] == [1, 2.5]
    assert [type(x) for x in recorded["lambdas"]] == [int, float]


@pytest.mark.parametrize(("text", "needle"), [
    ('[suites.veto]\nk = 5.0\n', "suites.veto.k must be an integer from 1 to 1000, got 5.0"),
    ('[suites.veto]\nk = "5"\n', "suites.veto.k must be an integer from 1 to 1000, got '5'"),
    ('[suites.veto]\nk = true\n', "got true"),
    ('[suites.veto]\n[gate]\ninclude_holdout = "yes"\n', "gate.include_holdout must be true or false"),
    ('[suites.abstention]\nlambdas = [2, 2.0]\n', "suites.abstention.lambdas: a value is repeated"),
    ('[suites.abstention]\nlambdas = [1, nan]\n', "suites.abstention.lambdas must be a non-empty list"),
    ('[adapter]\npython = "a:b"\ncommand = ["x"]\n[suites.veto]\n',
     "[adapter] takes exactly one of command and python"),
    ('[adapter]\npython = "nocolon"\n[suites.veto]\n', "adapter.python must be a string 'module:attr'"),
    ('[adapter]\npython = "a:b"\n[adapter.options]\nwhen = 2026-01-01\n[suites.veto]\n',
     "write those as strings), got the TOML date 2026-01-01"),
    ('[adapter]\npython = "a:b"\n[adapter.options]\nat = 07:30:00\n[suites.veto]\n',
     "got the TOML time 07:30:00"),
    ('[adapter]\ncommand = []\n[suites.veto]\n', "adapter.command must be a non-empty list of strings"),
    ('[adapter]\ncommand = ["./a\\u0000x"]\n[suites.veto]\n',
     "adapter.command: must not contain a NUL character"),
    ('[adapter]\npython = "m\\u0000:X"\n[suites.veto]\n', "adapter.python: must not contain a NUL"),
    ("suites = 3\n", "[suites] must be a table"),
    ("[suites]\nveto = 3\n", "[suites.veto] must be a table"),
    ("[gate]\n", "no suite enabled"),
    ('[suites.veto]\n[floors]\n"veto/files_known" = 0.5\n',
     "floors.'veto/files_known': key must be 'suite/condition:metric'"),
    ('[suites.veto]\n[floors]\n"veto/files_known:veto_recal_at_k" = 0.5\n',
     "unknown metric 'veto_recal_at_k' (did you mean 'veto_recall_at_k'?)"),
    ('[suites.veto]\n[floors]\n"veto/files_known:veto_recall_at_k" = "0.5"\n',
     "floors.'veto/files_known:veto_recall_at_k' must be a finite number"),
])
def test_bad_values_are_named(text: str, needle: str) -> None:
    assert needle in error_of(text)


def test_an_unknown_key_is_reported_before_other_problems() -> None:
    message = error_of('[suites.veto]\nk = 0\nfixtrues = ["builtin"]\n')
    assert message == ("membench.toml: unknown key suites.veto.'fixtrues' "
                       "(did you mean 'fixtures'?)")


def test_an_unknown_suite_suggests_a_known_one() -> None:
    assert "unknown key suites.'vto' (did you mean 'veto'?)" in error_of("[suites.vto]\n")


def test_floors_keep_their_values_as_floats() -> None:
    assert parse_floors({"recall/temporal:recall_any_at_k": 1}, "f") == {
        "recall/temporal:recall_any_at_k": 1.0}


def test_a_floor_on_a_metric_of_another_suite_is_refused_naming_the_key() -> None:
    # No push cell ever reports controls_passing: a floor no run can meet is a mistake in the
    # file, said where the key is (not a failing check with "fix the code").
    assert error_of('[suites.push]\n[floors]\n"push/push:controls_passing" = 0\n') == (
        "membench.toml: floors.'push/push:controls_passing': controls_passing is a metric of "
        "the abstention suite: no push cell reports it")
    with pytest.raises(GateError, match=r"^base: floors\.'veto/files_known:net_at_1': net_at_1 is "
                                        r"a metric of the abstention suite"):
        parse_floors({"veto/files_known:net_at_1": 0.5}, "base")  # the base's floors too


@pytest.mark.parametrize(("key", "value", "what"), [
    ("veto/files_known:veto_recall_at_k", 1.5, "a share, from 0 to 1"),
    ("push/push:false_fire_rate", -0.1, "a share, from 0 to 1"),
    ("abstention/default:net_at_2", 1.01, "NET(λ), at most 1"),
    ("push/push:avg_injected_tokens", -1, "a count, at least 0"),
])
def test_a_floor_outside_what_its_metric_can_be_is_refused(key: str, value: float,
                                                           what: str) -> None:
    text = f'[floors]\n"{key}" = {value}\n'
    assert error_of(text) == (f"membench.toml: floors: {key!r} = {value:g} is outside what "
                              f"{key.rpartition(':')[2]} "
                              f"can be ({what})")
    # The edges are what the metric can be, and load.
    edge = {"a share, from 0 to 1": 1.0 if value > 0 else 0.0, "NET(λ), at most 1": 1.0,
            "a count, at least 0": 0.0}[what]
    assert parse_floors({key: edge}, "f") == {key: edge}
    assert parse_floors({"abstention/default:net_at_2": -3.5}, "f")  # NET can be negative


def test_a_floor_of_the_cells_suite_loads_whether_or_not_it_is_enabled() -> None:
    # Enabled or not, measured or not, is the check's to say (rule 2): only the registry is read.
    assert parse_floors({"push/know_to_ask:push_precision": 0.5,
                         "abstention/default:net_at_3": 0.1,
                         "writeback/continuity:source_isolation_violations": 0}, "f")
    config = parse_config('[suites.veto]\n[floors]\n"push/push:push_recall" = 0.5\n',
                          Path("membench.toml"))
    assert config.floors == {"push/push:push_recall": 0.5}


def test_recorded_suite_options_are_validated_like_the_file() -> None:
    """A results file's config (merge re-scores under it) is held to the same rules."""
    assert parse_suite_options("recall", {"fixtures": ["builtin"], "k": 4}, "r.json").k == 4
    with pytest.raises(GateError, match=r"^r\.json: suites\.recall\.k must be an integer"):
        parse_suite_options("recall", {"fixtures": ["builtin"], "k": -1}, "r.json")


def test_suite_record_is_the_suite_models_dump() -> None:
    # Recorded and hashed as model_dump() gives it (without building each suite's serializer):
    # every option of every suite, defaults and values as written, lists copied.
    from membench_gate.config import SUITE_NAMES

    tables = "\n".join(f"[suites.{name}]" for name in SUITE_NAMES) + \
        '\n[live]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "m"'
    defaults = parse_config(tables, Path("membench.toml"))
    given = parse_config(tables.replace("[suites.abstention]", "[suites.abstention]\nk = 3\n"
                                        "lambdas = [1, 2.5]\nshuffle_seed = 9\nfixtures = ['a']"),
                         Path("membench.toml"))
    for config in (defaults, given):
        for name in SUITE_NAMES:
            record = config.suite_record(name)
            # ``repeats`` unset is not recorded: a deterministic suite's files stay as they were.
            options = config.suites[name]
            dumped = options.model_dump(exclude={"repeats"} if options.repeats is None else None)
            assert record == dumped
            assert [type(v) for v in record.values()] == [type(v) for v in dumped.values()]
            for key, value in record.items():
                if isinstance(value, list):
                    assert value is not getattr(config.suites[name], key)
    assert given.suite_record("abstention")["lambdas"] == [1, 2.5]
    # A live suite ships its repeats: recorded (and hashed) even when its table leaves them out.
    assert defaults.suite_record("behaviour")["repeats"] == 5
    assert "repeats" not in defaults.suite_record("veto")


def test_repeats_is_checked_and_recorded_only_when_set() -> None:

    with pytest.raises(GateError, match=r"suites.veto.repeats must be an integer from 2 to 1000, "
                                        r"got 1$"):
        parse_config("[suites.veto]\nrepeats = 1\n", Path("membench.toml"))
    plain = parse_config("[suites.veto]\n", Path("membench.toml"))
    assert "repeats" not in plain.suite_record("veto")  # a deterministic suite records as before
    repeated = parse_config("[suites.veto]\nrepeats = 5\n", Path("membench.toml"))
    assert repeated.suite_record("veto")["repeats"] == 5


def test_repeats_without_scipy_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    import importlib.util

    from membench_gate.gate import stochastic

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "scipy" else real(name, *a))
    with pytest.raises(GateError, match=r'^membench.toml: \[suites.veto\] repeats: repeats need '
                                        r'scipy .*: pip install "membench-gate\[live\]"$'):
        stochastic.require("membench.toml: [suites.veto] repeats")


def test_load_config_takes_a_path_or_a_string(tmp_path: Path) -> None:
    from membench_gate.config import load_config

    path = tmp_path / "membench.toml"
    path.write_text('[suites.veto]\nfixtures = ["builtin"]\nk = 7\n', encoding="utf-8")
    assert load_config(str(path)) == load_config(path)
    assert load_config(str(path)).suites["veto"].k == 7
