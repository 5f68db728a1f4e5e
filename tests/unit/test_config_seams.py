"""``[adapters.<seam>]``: several adapters measured side by side (docs/config.md, "Seams")."""

from __future__ import annotations

from pathlib import Path

import pytest

from membench_gate.config import parse_config
from membench_gate.errors import GateError

PATH = Path("/repo/membench.toml")
SUITES = '[suites.veto]\nfixtures = ["builtin"]\n'
TWO = ('[adapters.ref]\npython = "membench_gate.reference:ReferenceMemory"\n'
       '[adapters.ref.options]\ntau = 0.4\n'
       '[adapters.cli]\ncommand = ["node", "bench/adapter.js"]\ntimeout = 5\n') + SUITES


def error(text: str) -> str:
    with pytest.raises(GateError) as caught:
        parse_config(text, PATH, "membench.toml")
    return str(caught.value)


def test_seams_are_read_in_name_order_each_a_whole_adapter_table() -> None:
    config = parse_config(TWO, PATH)
    assert list(config.seams) == ["cli", "ref"]
    by_seam = dict(config.by_seam())
    assert by_seam["cli"].adapter_command == ("node", "bench/adapter.js")
    assert by_seam["cli"].timeout == 5 and by_seam["ref"].timeout == 60
    assert (by_seam["ref"].adapter, by_seam["ref"].adapter_options) == (
        "membench_gate.reference:ReferenceMemory", {"tau": 0.4})
    assert not by_seam["ref"].seams  # a seam's config has one adapter


def test_the_record_names_each_seams_adapter_and_keeps_one_adapter_as_it_was() -> None:
    recorded = parse_config(TWO, PATH).record()
    assert "adapter" not in recorded
    assert recorded["adapters"] == {
        "cli": {"command": ["node", "bench/adapter.js"], "options": {}},
        "ref": {"python": "membench_gate.reference:ReferenceMemory", "options": {"tau": 0.4}}}
    single = parse_config('[adapter]\npython = "m:A"\n' + SUITES, PATH)
    assert single.by_seam() == [("", single)]
    assert set(single.record()) == {"suites", "include_holdout", "adapter"}


def test_adapter_and_adapters_together_is_an_error_naming_both() -> None:
    message = error('[adapter]\npython = "m:A"\n[adapters.x]\npython = "m:B"\n' + SUITES)
    assert message.startswith("membench.toml: [adapter] and [adapters.*] both given")


@pytest.mark.parametrize("name", ["two words", "a/b", "é", "a.b"])
def test_a_seam_name_is_letters_digits_underscore_and_dash(name: str) -> None:
    message = error(f'[adapters."{name}"]\npython = "m:A"\n' + SUITES)
    assert f"[adapters.{name!r}]: a seam name is made of letters, digits, '_' and '-'" in message


@pytest.mark.parametrize(("text", "said"), [
    ("[adapters]\n", "[adapters] has no [adapters.<seam>] table"),
    ("adapters = 3\n", "[adapters] must be a table of [adapters.<seam>] tables"),
    ("[adapters.x]\ncomand = ['a']\n", "unknown key adapters.x.'comand' (did you mean 'command'?)"),
    ("[adapters.x]\ntimeout = 0\n", "adapters.x.timeout must be a number of seconds"),
    ("[adapters.x]\npython = 'm:A'\ncommand = ['a']\n",
     "[adapters.x] takes exactly one of command and python"),
    ("[adapters]\nx = 1\n", "[adapters.x] must be a table"),
    ("[adapters.x.options]\nv = nan\n", "adapters.x.options.v"),
])
def test_a_bad_seam_table_is_one_line_naming_the_seam(text: str, said: str) -> None:
    assert said in error(text + SUITES)


def test_floors_take_seam_cells_and_only_those_of_a_declared_seam() -> None:
    floors = '[floors]\n"ref/veto/files_known:veto_recall_at_k" = 0.8\n'
    assert parse_config(TWO + floors, PATH).floors == {
        "ref/veto/files_known:veto_recall_at_k": 0.8}
    assert "with [adapters.*] a floor names a seam's cell (seams: cli, ref)" in error(
        TWO + '[floors]\n"veto/files_known:veto_recall_at_k" = 0.8\n')
    assert "with [adapters.*] a floor names a seam's cell" in error(
        TWO + '[floors]\n"web/veto/files_known:veto_recall_at_k" = 0.8\n')
    assert "no [adapters.ref] table" in error(
        '[adapter]\npython = "m:A"\n' + SUITES + floors)


@pytest.mark.parametrize(("key", "said"), [
    ("ref/veto/files_knwn:veto_recall_at_k", "unknown cell 'ref/veto/files_knwn' (did you mean "
                                             "'ref/veto/files_known'?)"),
    ("r f/veto/files_known:veto_recall_at_k", "key must be 'suite/condition:metric' or "
                                              "'seam/suite/condition:metric'"),
    ("a/b/veto/files_known:veto_recall_at_k", "key must be"),
])
def test_a_three_part_floor_key_is_validated(key: str, said: str) -> None:
    assert said in error(TWO + f'[floors]\n"{key}" = 0.5\n')
