"""A results file re-derived, never trusted wholesale (docs/gate.md, "Fail closed").

``check --results``, ``bless --results`` and ``merge`` gate files that any step of a workflow could
have edited. What such a file states on its own is what came back for each item — the ranked hits
and whether the memory abstained, or the ids pushed — and the run that wrote it answers for that
(in CI it must come from the checked-out commit). Everything derived from it is recomputed:

- every cell from the item records, by the suites' own ``score`` (as ``merge`` does), so a cell's
  ``metrics``, ``gold_total`` and ``failed`` follow from the file's items;
- every item record from its recorded answer and the working tree's fixtures: each suite's
  ``run`` is replayed with a session that answers every question with the answer the item
  recorded, so the record — rank, gold, judgement, outcome — is the one the run writes for that
  answer, every gold item of the fixtures is there and no other, and the digests are the
  fixtures'.

A disagreement is an ERROR naming the file and the cell, item or digest.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from membench_gate.config import parse_suite_options
from membench_gate.errors import GateError
from membench_gate.model import cells as cell_names
from membench_gate.model.canonical import normalize, round4
from membench_gate.model.results import Cell, Results
from membench_gate.suites import NAMES, get
from membench_gate.suites.common.repeats import pool, split
from membench_gate.suites.common.suite import CellResult, Records, SuiteRun

if TYPE_CHECKING:
    from membench_gate.adapter.types import Answer, Hit, Pushed
    from membench_gate.config import Config
    from membench_gate.run.shard import Shard
    from membench_gate.suites.common.fixtures import SuiteFixtures
    from membench_gate.suites.common.options import SuiteOptions

_EDITED = "an edited file, or one from another scorer"


def suite_of(label: str, cell: str, config: dict[str, Any]) -> str:
    """The suite of ``cell``, which the file's recorded ``config`` must enable, in a seam its
    ``adapters`` name (a two-part name when it records one ``adapter``)."""
    seam, suite, _ = cell_names.parse(cell)
    seams = config.get("adapters")
    if seam and not (isinstance(seams, dict) and seam in seams):
        raise GateError(f"{label}: cells.{cell}: seam {seam!r} is not one of the file's config's "
                        "adapters")
    if not seam and seams is not None:
        raise GateError(f"{label}: cells.{cell}: the file's config has seams (adapters), so a "
                        "cell's name starts with its seam")
    if suite not in config.get("suites", {}) or suite not in NAMES:
        raise GateError(f"{label}: cells.{cell}: suite {suite!r} is not enabled in the file's "
                        "config")
    return suite


def score(suite: str, records: Records, recorded: Any, label: str) -> SuiteRun:
    """The suite's cells from ``records``, under the options the file's config ``recorded``."""
    options = parse_suite_options(suite, recorded, f"{label}: config")
    try:
        if options.repeats is None:
            return get(suite).score(records, options)
        # One pass at a time, pooled as the run pooled them.
        return pool([get(suite).score(one, options) for one in split(records, options.repeats)])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise GateError(f"{label}: suite {suite}: the item records lack what the suite scores "
                        f"from ({type(exc).__name__}: {exc})") from exc


def records_by_suite(label: str, results: Results) -> dict[str, Records]:
    """The file's item records by scope (``suite``, or ``seam/suite`` with seams), each under
    its cell's name within the seam (``suite/condition``, what the suite's ``score`` reads); the
    cells a suite derives from others' records (the abstention controls) are left out, as
    ``score`` recomputes them."""
    by_scope: dict[str, Records] = {}
    for cell in results.cells:
        suite_of(label, cell, results.config)
    for cell, items in results.items.items():
        suite = suite_of(label, cell, results.config)
        name = cell_names.parse(cell)
        if name.local not in get(suite).derived:
            by_scope.setdefault(name.scope, {})[name.local] = items
    return by_scope


def score_scope(scope: str, records: Records, config: dict[str, Any], label: str
                ) -> SuiteRun:
    """A scope's cells and item records from ``records``, named as the file names them (within
    the scope's seam)."""
    seam, suite = cell_names.scope_parts(scope)
    run = score(suite, records, config["suites"][suite], label)
    if not seam:
        return run
    return SuiteRun(
        cells={cell_names.join(seam, cell): result for cell, result in run.cells.items()},
        items={cell_names.join(seam, cell): items for cell, items in run.items.items()})


def check_cells(label: str, results: Results, records: dict[str, Records] | None = None) -> None:
    """Every cell of ``results`` as its suite's ``score`` computes it from the item records
    (``records``, by scope; the file's own by default)."""
    if records is None:
        records = records_by_suite(label, results)
    recomputed: dict[str, CellResult] = {}
    for scope, scope_records in records.items():
        recomputed.update(score_scope(scope, scope_records, results.config, label).cells)
    for name in sorted({*results.cells, *recomputed}):
        what = _cell_difference(results.cells.get(name), recomputed.get(name))
        if what:
            raise GateError(f"{label}: cells.{name}: does not follow from its items ({what}): "
                            f"{_EDITED}")


def _cell_difference(stated: Cell | None, computed: CellResult | None) -> str | None:
    """The first field in which a recorded cell differs from the recomputed one, in words."""
    if stated is None:
        return "the file has no such cell"
    if computed is None:
        return "no item record gives it"
    if stated.gold_total != computed.gold_total:
        return f"gold_total is {stated.gold_total}, they give {computed.gold_total}"
    failing = set(computed.failed)
    if set(stated.failed) != failing:
        unlisted = sorted(failing - set(stated.failed))
        if unlisted:
            return f"failed leaves out {unlisted[0]!r}, which fails"
        return f"failed lists {sorted(set(stated.failed) - failing)[0]!r}, which passes"
    if (stated.repeats, stated.passes) != (computed.repeats, computed.passes):
        return f"repeats {stated.repeats} and its passes, they give {computed.repeats} and theirs"
    for metric in sorted({*stated.metrics, *computed.metrics}):
        mine, theirs = stated.metrics.get(metric), computed.metrics.get(metric)
        if mine is None or theirs is None or round4(mine) != round4(theirs):
            return f"metrics.{metric} is {_shown(mine)}, they give {_shown(theirs)}"
    return None


def rederive(label: str, results: Results, config: Config | None,
             shard: Shard | None = None) -> None:
    """Refuse ``results`` unless every cell follows from its items and — with ``config``, whose
    measurement the file was found to be (its config and ``fixtures_hash``) — every item follows
    from its recorded answer and the fixtures of ``config`` (only ``shard``'s items, for a part
    of a sharded run)."""
    if config is None:
        check_cells(label, results)
        return
    seams = [seam for seam, _ in config.by_seam()]
    for field in ("cells", "items", "digests"):
        for cell in getattr(results, field):
            if cell_names.seam_of(cell) not in seams:
                raise GateError(f"{label}: {field}.{cell}: not a cell of {config.path.name}'s "
                                f"{'seams' if config.seams else 'adapter'}")
    if not config.seams:
        _rederive_one(label, results, config, shard)
        return
    check_cells(label, results)  # (here, where a cell is named as the file names it)
    for seam in seams:
        _rederive_one(f"{label}: seam {seam}", _seam_view(results, seam), config, shard,
                      cells_checked=True)


def _seam_view(results: Results, seam: str) -> Results:
    """The file's cells, items and digests of ``seam``, named within it, as if one adapter had
    been run: what the one-adapter checks read."""
    def within(table: dict[str, Any]) -> dict[str, Any]:
        return {cell_names.local(cell): value for cell, value in table.items()
                if cell_names.seam_of(cell) == seam}

    return results.model_copy(update={
        "config": {key: value for key, value in results.config.items() if key != "adapters"},
        "cells": within(results.cells), "items": within(results.items),
        "digests": within(results.digests)})


def _rederive_one(label: str, results: Results, config: Config, shard: Shard | None,
                  cells_checked: bool = False) -> None:
    """:func:`rederive` of one adapter's cells (two-part names)."""
    replayed: dict[str, tuple[SuiteFixtures, SuiteRun]] = {}
    # A live suite the run skipped (no key, no cached answer) has no items to replay: its cells
    # are absent, which the gate compares as absent.
    skipped = (getattr(results.receipt, "live", None) or {}).get("skipped", {})
    for name, options in config.suites.items():
        if name in skipped and get(name).live:
            from membench_gate.suites.common.fixtures import load_suite

            if any(cell.split("/", 1)[0] == name for cell in {*results.cells, *results.items}):
                raise GateError(f"{label}: receipt.live.skipped names suite {name}, whose cells "
                                f"the file holds: {_EDITED}")
            replayed[name] = (load_suite(name, options.fixtures, config.base_dir,
                                         config.include_holdout), SuiteRun())
            continue
        replayed[name] = _replay_suite(label, name, options, config, results, shard)
    for name, (_, run) in replayed.items():
        _same_ids(label, name, run, results)
    if not cells_checked:
        check_cells(label, results)
    for name, (fixtures, run) in replayed.items():
        _same_items(label, run, results)
        _same_digests(label, name, fixtures, run, results)
    _same_corpus(label, {name: fixtures for name, (fixtures, _) in replayed.items()}, results)


def _replay_suite(label: str, name: str, options: SuiteOptions, config: Config,
                  results: Results, shard: Shard | None) -> tuple[SuiteFixtures, SuiteRun]:
    """The suite's run over the working tree's fixtures, answered from the file's records."""
    from membench_gate.suites.common.fixtures import load_suite

    fixtures = load_suite(name, options.fixtures, config.base_dir, config.include_holdout)
    scored = shard.restrict(name, fixtures) if shard else fixtures
    try:
        if options.repeats is None:
            session = _Replay(label, name, results.items, set(scored.digests))
            return fixtures, get(name).run(scored, session, options, None)
        passes = []
        for number, items in enumerate(_passes_of(label, name, results, options.repeats)):
            session = _Replay(label, name, items, set(scored.digests))
            session.repeat = number
            passes.append(get(name).run(scored, session, options, None))
        return fixtures, pool(passes)
    except _Unreadable:
        raise
    except GateError as exc:  # (a suite's own check of an answer, such as a hit without text)
        raise GateError(f"{label}: the recorded answers of suite {name}: {exc}") from exc


def _passes_of(label: str, suite: str, results: Results, repeats: int) -> list[Records]:
    """The suite's pooled item records of ``results`` as the records of each pass."""
    try:
        return split({cell: records for cell, records in results.items.items()
                      if cell.split("/", 1)[0] == suite}, repeats)
    except ValueError as exc:
        raise _Unreadable(f"{label}: {exc}") from exc


_CAPABLE = SimpleNamespace(push=True, write=True)


class _Unreadable(GateError):
    """A recorded answer that is not an answer (named by its place in the file)."""


class _Replay:
    """A suite session that answers every question with the answer the asked item recorded.

    A suite names the item it asks for (``"<id> in <cell>"``, or the bare id when the id alone
    tells its cell); an item asked again for a cell its suite derives from other records (the
    shuffled control asks every probe) keeps that answer in its record under the key the suite's
    ``answers`` names for that cell. An item the file does not hold gets an empty answer: the
    comparison of ids after the replay names it.
    """

    capabilities = _CAPABLE
    repeat = 0  # the pass replayed, as the runner sets it (a live suite keys its calls by it)

    def __init__(self, label: str, suite: str, items: dict[str, Records], scored: set[str]
                 ) -> None:
        self.label, self.scored = label, scored
        self.items = {cell: records for cell, records in items.items()
                      if cell.split("/", 1)[0] == suite}
        self.answers = get(suite).answers
        self.cell_of: dict[str, str] = {}
        for cell in sorted(self.items):
            for ident in self.items[cell]:
                self.cell_of.setdefault(ident, cell)

    def reset(self, item: str | None = None) -> None:
        """Nothing is stored: every answer comes from the file."""

    def ingest(self, records: Any, item: str | None = None) -> None:
        """Nothing is stored: every answer comes from the file."""

    def write(self, session: Any, item: str | None = None) -> None:
        """Nothing is stored: every answer comes from the file."""

    def search(self, query: Any, item: str) -> Answer:
        from membench_gate.adapter.types import Answer

        found = self._recorded(item)
        if found is None:
            return Answer([])
        record, where = found
        abstained = record.get("abstained")
        if not isinstance(abstained, bool):
            raise _Unreadable(f"{self.label}: {where}.abstained: expected true or false, got "
                            f"{_shown(abstained)}")
        return Answer(_hits(record.get("hits"), f"{self.label}: {where}.hits"), abstained)

    def push(self, query: Any, item: str) -> list[str]:
        return self.push_answer(query, item).ids

    def push_answer(self, query: Any, item: str) -> Pushed:
        from membench_gate.adapter.types import Pushed

        found = self._recorded(item)
        if found is None:
            return Pushed([])
        record, where = found
        injected, text = record.get("injected"), record.get("text")
        if not isinstance(injected, list) or not all(isinstance(i, str) for i in injected):
            raise _Unreadable(f"{self.label}: {where}.injected: expected a list of ids, got "
                            f"{_shown(injected)}")
        if text is not None and not isinstance(text, str):
            raise _Unreadable(f"{self.label}: {where}.text: expected a string or null, got "
                              f"{_shown(text)}")
        return Pushed(list(injected), text)

    def complete(self, messages: Any, item: str, repeat: int = 0) -> str:
        """A live suite's LLM call: the reply the item recorded (no LLM is asked)."""
        found = self._recorded(item)
        if found is None:
            return ""
        record, where = found
        reply = record.get("reply")
        if not isinstance(reply, str):
            raise _Unreadable(f"{self.label}: {where}.reply: expected a string, got "
                            f"{_shown(reply)}")
        return reply

    def _recorded(self, asked: str) -> tuple[dict[str, Any], str] | None:
        """The record holding the answer to ``asked``, and where it is in the file."""
        # An id may hold " in " itself; a cell's name never does.
        ident, cell = (asked, "") if asked in self.scored else asked.rpartition(" in ")[::2]
        if ident not in self.scored:
            return None  # asked but never scored (a holdout turn stays in a conversation)
        key = self.answers.get(cell)  # asked again for a derived cell: kept in the item's record
        holder = cell if cell and key is None else self.cell_of.get(ident)
        record = self.items.get(holder, {}).get(ident) if holder else None
        where = f"items.{holder}.{ident}"
        if key is not None and isinstance(record, dict):
            record, where = record.get(key), f"{where}.{key}"
            if record is None:
                raise _Unreadable(f"{self.label}: {where}: missing (the answer {cell} got)")
        if record is None:
            return None
        if not isinstance(record, dict):
            raise _Unreadable(f"{self.label}: {where}: expected an object, got {_shown(record)}")
        return record, where


def _hits(raw: Any, where: str) -> list[Hit]:
    """Recorded hits as the suites read them (``id``, ``score``; ``text``, ``entity`` and
    ``provenance`` when recorded)."""
    from membench_gate.adapter.types import Hit

    if not isinstance(raw, list):
        raise _Unreadable(f"{where}: expected a list of hits, got {_shown(raw)}")
    hits = []
    for index, hit in enumerate(raw):
        # Built first, checked after: this runs for every recorded hit, and the keyword call
        # refuses any key a hit cannot have. (Exact types: json.loads makes no subclasses.)
        try:
            made = Hit(**hit)
        except TypeError:
            made = None
        if made is None or type(made.id) is not str or type(made.score) not in (int, float) \
                or not (made.text is None or type(made.text) is str) \
                or not (made.entity is None or type(made.entity) is str) \
                or not (made.provenance is None or type(made.provenance) is dict):
            raise _Unreadable(f"{where}[{index}]: expected {{\"id\": str, \"score\": number}} with "
                            f"text and entity strings and provenance an object, or null; got "
                            f"{_shown(hit)}")
        hits.append(made)
    return hits


def _same_ids(label: str, suite: str, run: SuiteRun, results: Results) -> None:
    """Every gold item of the fixtures in the records of its cell, and no other item."""
    recorded = {cell for cell in results.items if cell.split("/", 1)[0] == suite}
    for cell in sorted({*run.items, *recorded}):
        mine, theirs = results.items.get(cell, {}), run.items.get(cell, {})
        missing = sorted(theirs.keys() - mine.keys())
        if missing:
            raise GateError(f"{label}: items.{cell}: item {missing[0]!r} of the fixtures is "
                            f"missing{_more(missing)}")
        extra = sorted(mine.keys() - theirs.keys())
        if extra:
            raise GateError(f"{label}: items.{cell}: item {extra[0]!r} is not a gold item of "
                            f"this cell in the fixtures{_more(extra)}")


def _same_items(label: str, run: SuiteRun, results: Results) -> None:
    """Each item's record as the run writes it for the answer the item recorded."""
    for cell, items in run.items.items():
        recorded = results.items[cell]
        for ident, record in items.items():
            what = _record_difference(recorded[ident], record)
            if what:
                raise GateError(f"{label}: items.{cell}.{ident}: does not follow from its "
                                f"recorded answer and the fixtures ({what}): {_EDITED}")


def _record_difference(mine: Any, theirs: dict[str, Any]) -> str | None:
    """The first field in which a recorded item differs from the replayed one, compared as the
    file writes them (a field that is equal as it stands is not rounded: most are)."""
    if not isinstance(mine, dict):
        return f"the record is {_shown(mine)}"
    if mine.keys() != theirs.keys():
        key = min(mine.keys() ^ theirs.keys())
        return f"{key} is {_shown(mine.get(key, _ABSENT))}, they give " \
               f"{_shown(theirs.get(key, _ABSENT))}"
    for key, value in theirs.items():
        if mine[key] != value and normalize(mine[key]) != normalize(value):
            return f"{key} is {_shown(mine[key])}, they give {_shown(value)}"
    return None


def _same_digests(label: str, suite: str, fixtures: SuiteFixtures, run: SuiteRun,
                  results: Results) -> None:
    """Each item's content digest as the fixtures give it."""
    from membench_gate.run.runner import cell_digests

    recorded = {cell for cell in results.digests if cell.split("/", 1)[0] == suite}
    for cell in sorted({*run.items, *recorded}):
        if cell not in run.items:
            raise GateError(f"{label}: digests.{cell}: not a cell of the fixtures")
        mine, theirs = results.digests.get(cell), cell_digests(fixtures, run.items[cell])
        if mine is None:
            raise GateError(f"{label}: digests.{cell}: missing")
        _same_map(f"{label}: digests.{cell}", mine, theirs)


def _same_corpus(label: str, fixtures: dict[str, SuiteFixtures], results: Results) -> None:
    """Each suite's corpus digests (distractors too) as the fixtures give them."""
    for suite in sorted({*fixtures, *results.corpus}):
        if suite not in fixtures:
            raise GateError(f"{label}: corpus.{suite}: not a suite of the config")
        if suite not in results.corpus:
            raise GateError(f"{label}: corpus.{suite}: missing")
        _same_map(f"{label}: corpus.{suite}", results.corpus[suite], fixtures[suite].corpus)


def _same_map(where: str, mine: dict[str, str], theirs: dict[str, str]) -> None:
    if mine == theirs:
        return
    for ident in sorted({*mine, *theirs}):
        if ident not in mine:
            raise GateError(f"{where}: item {ident!r} of the fixtures is missing")
        if ident not in theirs:
            raise GateError(f"{where}: item {ident!r} is not an item of the fixtures")
        if mine[ident] != theirs[ident]:
            raise GateError(f"{where}.{ident}: {mine[ident]!r} is not the fixtures' digest of the "
                            f"item ({theirs[ident]!r})")


_ABSENT = object()


def _shown(value: Any) -> str:
    """A recorded value in a message: JSON, cut short."""
    if value is _ABSENT:
        return "absent"
    if isinstance(value, float) and math.isfinite(value):
        value = round4(value)
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


def _more(ids: list[str]) -> str:
    return f" (and {len(ids) - 1} more)" if len(ids) > 1 else ""
