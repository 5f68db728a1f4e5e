"""``membench.toml`` → a validated :class:`Config`.

Each table of the file is a pydantic model declared once — below, or for a suite's table in the
suite's own package, found through the suite registry (docs/config.md is the reference they
implement): a typo in a gate config must never silently turn a check off, so unknown keys are
errors with a did-you-mean suggestion, values are never converted (``k = "5"`` is refused, not
read as 5), and every number must be finite and in range. Whatever is wrong, the error is one line
naming the file and the key.
"""

from __future__ import annotations

import os
import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    JsonValue,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic.fields import FieldInfo

from membench_gate.budget import MAX_MINUTES, MINUTES_RANGE
from membench_gate.defaults import DEFAULT_ALPHA, DEFAULT_BASELINE, MAX_WORKERS, REFERENCE_ADAPTER
from membench_gate.errors import GateError
from membench_gate.files import check_numbers, read_text
from membench_gate.model import cells, metrics
from membench_gate.suites import NAMES, registry
from membench_gate.suites.common.options import SuiteOptions, Table, problem

if TYPE_CHECKING:
    from membench_gate.adapter.rpc import AdapterProcess, Handshake

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_TIMEOUT = 60.0
# The range of every number a config holds: TOML has nan and inf literals, and a number that is
# absurd for its key (k = 1e9, timeout = inf) is a mistake to name, not to run (a suite's own
# options say their ranges).
MAX_TIMEOUT = 86400.0
MAX_FLOOR = 1e6


def _no_nul(text: str) -> str:
    if "\x00" in text:  # no process can be started with one in its arguments
        raise problem("must not contain a NUL character")
    return text


Arg = Annotated[str, Field(min_length=1), AfterValidator(_no_nul)]

# One optional table per registered suite, validated by the suite's own options model.
Suites: type[Table] = create_model(
    "Suites",
    __base__=Table,
    __doc__="``[suites]``: a suite runs when its table is present.",
    __module__=__name__,
    **{name: (suite.options | None, None) for name, suite in registry().items()},
)


class AdapterTable(Table):
    """``[adapter]``: the system under test (docs/adapters.md)."""

    python: Annotated[str, Field(pattern=r"^[^:]*:[^:]*$"), AfterValidator(_no_nul)] | None = \
        Field(None, description="a string 'module:attr'")
    command: Annotated[list[Arg], Field(min_length=1)] | None = Field(
        None, description='a non-empty list of strings (an argv, e.g. ["node", "bench/adapter.js"])')
    options: dict[str, JsonValue] = Field(
        {},
        description="a table of values JSON can carry (strings, numbers, booleans, arrays, tables; "
                    "not TOML dates or times: write those as strings)")
    timeout: Annotated[float, Field(
        gt=0, le=MAX_TIMEOUT, allow_inf_nan=False,
        description=f"a number of seconds, more than 0 and at most {MAX_TIMEOUT:g}",
    )] = DEFAULT_TIMEOUT
    # Variables handed to the adapter on purpose (one that calls an LLM itself); the live key and
    # anything else the gate keeps for itself stays withheld unless named here.
    pass_env: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(
        [], description="a list of environment variable names")
    # Adapter processes at once (docs/adapters.md, "Workers"): how fast, never what is measured,
    # so neither recorded nor hashed.
    workers: Annotated[int, Field(
        ge=1, le=MAX_WORKERS, strict=True,
        description=f"a whole number of adapter processes, from 1 to {MAX_WORKERS}")] = 1

    @model_validator(mode="after")
    def _one_target(self) -> AdapterTable:
        if self.python is not None and self.command is not None:
            raise problem("takes exactly one of command and python")
        from membench_gate.adapter.seal import withheld

        refused = [name for name in self.pass_env if withheld(name)]
        if refused:
            raise problem(f"pass_env: {refused[0]} is a runner credential or path, never handed "
                          "to the adapter")
        return self


LIVE_MODES = ("replay", "record", "auto")
MAX_LIVE_CALLS = 1_000_000
MAX_LIVE_TOKENS = 10_000_000_000


class LiveTable(Table):
    """``[live]``: the LLM a live suite puts in the loop (docs/live.md). ``model``,
    ``temperature`` and ``alpha`` are part of the measurement (recorded and hashed); where the
    endpoint is, the key's variable, the cache, the mode and the budget are not."""

    base_url: Annotated[str, Field(min_length=1, pattern=r"^https?://",
                                   description="an http:// or https:// URL")]
    model: Annotated[str, Field(min_length=1, description="a model name")]
    api_key_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                                      description="an environment variable name")] = \
        "OPENAI_API_KEY"
    temperature: Annotated[float, Field(ge=0, le=2, allow_inf_nan=False,
                                        description="a number from 0 to 2")] = 0.0
    cache: Annotated[str, Field(min_length=1, description="a relative path")] | None = None
    mode: Annotated[str, Field(pattern="^(replay|record|auto)$",
                               description="one of 'replay', 'record', 'auto'")] = "auto"
    max_calls: Annotated[int, Field(ge=1, le=MAX_LIVE_CALLS, description=(
        f"an integer from 1 to {MAX_LIVE_CALLS}"))] = 1000
    max_tokens: Annotated[int, Field(ge=1, le=MAX_LIVE_TOKENS, description=(
        f"an integer from 1 to {MAX_LIVE_TOKENS}"))] = 2_000_000
    alpha: Annotated[float, Field(gt=0, lt=0.5, allow_inf_nan=False,
                                  description="a number more than 0 and less than 0.5")] = 0.05

    def measurement(self) -> dict[str, Any]:
        """What of ``[live]`` a result depends on: recorded in results and folded into
        ``fixtures_hash`` (a new model or temperature is a new measurement, like a new corpus)."""
        return {"alpha": self.alpha, "model": self.model, "temperature": self.temperature}


class GateTable(Table):
    """``[gate]``: where the committed baseline is, whether holdout items count, and the time
    budget of a command (not part of the measurement: neither recorded nor hashed)."""

    baseline: Annotated[str, Field(min_length=1, description="a relative path")] = \
        DEFAULT_BASELINE
    include_holdout: Annotated[bool, Field(description="true or false")] = False
    budget_minutes: Annotated[float, Field(gt=0, le=MAX_MINUTES, allow_inf_nan=False)] | None = \
        Field(None, description=MINUTES_RANGE)


def _floor_key(key: str) -> str:
    """``suite/condition:metric`` (``seam/suite/condition:metric`` for a seam's cell), naming a
    cell and a metric this version knows."""
    cell, sep, metric = key.partition(":")
    seam, suite, condition = cells.parse(cell)
    if not sep or cell.count("/") not in (1, 2) or not suite or not condition or not metric \
            or (cell.count("/") == 2 and not cells.SEAM_NAME.match(seam)):
        raise problem("key must be 'suite/condition:metric' or 'seam/suite/condition:metric'")
    if not metrics.known_cell(cell):
        known = [cells.join(seam, known) for known in metrics.CELLS]
        raise problem(f"unknown cell {cell!r}{_suggest(cell, known)}")
    owner = metrics.spec(metric).suite
    if owner == "?":
        known = [m for m in metrics.REGISTRY if not m.startswith("net_at_")]
        raise problem(f"unknown metric {metric!r}{_suggest(metric, known)}")
    # A metric of another suite is a floor no run can ever meet (docs/gate.md, "Floors"): said
    # now, where the key is, not as a failing check. Whether this run measures it is the check's.
    if owner != suite and metric not in metrics.SHARED_INVARIANTS.get(suite, ()):
        raise problem(f"{metric} is a metric of the {owner} suite: no {suite} cell reports it")
    return key


def _floor_values(floors: dict[str, float]) -> dict[str, float]:
    """Each floor within what its metric can be: a share from 0 to 1, NET(λ) at most 1, a count
    at least 0. One outside is a floor no run meets, or one every run meets: a typo either way."""
    for key, value in floors.items():
        name = key.rpartition(":")[2]
        metric = metrics.spec(name)
        if metric.unit == "count":
            low, high, what = 0.0, MAX_FLOOR, "a count, at least 0"
        elif metric.name == "net_at_<λ>":
            low, high, what = -MAX_FLOOR, 1.0, "NET(λ), at most 1"
        else:
            low, high, what = 0.0, 1.0, "a share, from 0 to 1"
        if not low <= value <= high:
            raise problem(f"{key!r} = {value:g} is outside what {name} can be ({what})")
    return floors


Floors = Annotated[
    dict[Annotated[str, AfterValidator(_floor_key)],
         Annotated[float, Field(ge=-MAX_FLOOR, le=MAX_FLOOR, allow_inf_nan=False)]],
    Field(description="a finite number (|x| <= 1e6)"),
    AfterValidator(_floor_values),
]


class ConfigFile(Table):
    """The whole ``membench.toml``."""

    # A table left out is its model's defaults, made without validating them (they are the
    # model's own): a table's validator is built only when a file gives the table.
    adapter: AdapterTable = Field(default_factory=AdapterTable.model_construct)
    # Seams: several adapters measured side by side, each a whole [adapter] table (the names are
    # checked, and [adapter] refused beside them, before this model sees the file).
    adapters: dict[str, AdapterTable] = Field(default_factory=dict)
    suites: Suites = Field(default_factory=Suites.model_construct)
    gate: GateTable = Field(default_factory=GateTable.model_construct)
    live: LiveTable | None = None
    # ">=" for a higher-is-better metric, "<=" for a lower one; not recorded (rule 2 reads both
    # the base commit's and the working tree's).
    floors: Floors = Field(default_factory=dict)


def _table_model(annotation: Any) -> type[BaseModel] | None:
    """The model of a table field (``X`` or ``X | None``), or None for a value (a table of
    tables too: see ``_tables_model``)."""
    if typing.get_origin(annotation) is dict:
        return None
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


SUITE_NAMES = NAMES


class Seam(NamedTuple):
    """One ``[adapters.<seam>]`` table: the adapter fields a :class:`Config` carries for it."""

    adapter: str
    adapter_options: dict[str, Any]
    adapter_command: tuple[str, ...] | None
    timeout: float
    pass_env: tuple[str, ...] = ()
    workers: int = 1


class Config(NamedTuple):
    """A validated gate configuration."""

    path: Path
    adapter: str
    adapter_options: dict[str, Any]
    adapter_command: tuple[str, ...] | None
    suites: dict[str, SuiteOptions]
    baseline: str
    include_holdout: bool
    floors: dict[str, float]
    timeout: float = DEFAULT_TIMEOUT
    budget_minutes: float | None = None  # [gate] budget_minutes: not recorded, not hashed
    live: LiveTable | None = None  # [live]: only its measurement() is recorded and hashed
    pass_env: tuple[str, ...] = ()  # [adapter] pass_env
    # [adapters.<seam>] by name, in name order; empty for one [adapter] table. With seams, the
    # adapter fields above are the first seam's (see ``by_seam``, which every run goes through).
    seams: Mapping[str, Seam] = MappingProxyType({})
    workers: int = 1  # [adapter] workers (or --jobs): not recorded, not hashed

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def baseline_path(self) -> Path:
        """``[gate] baseline`` beside the config, ``..`` resolved by name as git resolves it at
        the base commit: ``x/../baselines/main.json`` is ``baselines/main.json`` even when ``x``
        is a symlink to elsewhere, so the file compared and written is the one the base's
        baseline is read at."""
        return Path(os.path.normpath(self.base_dir / self.baseline))

    def with_suites(self, names: list[str]) -> Config:
        """This config restricted to the named suites (``run --suite``)."""
        unknown = [n for n in names if n not in self.suites]
        if unknown:
            raise GateError(
                f"--suite {unknown[0]}: not enabled in {self.path.name} "
                f"(enabled: {', '.join(self.suites) or 'none'})"
            )
        return self._replace(suites={n: self.suites[n] for n in sorted(set(names))})

    def seam(self, name: str) -> Config:
        """This config with seam ``name``'s adapter as its only adapter."""
        seam = self.seams[name]
        return self._replace(adapter=seam.adapter, adapter_options=seam.adapter_options,
                             adapter_command=seam.adapter_command, timeout=seam.timeout,
                             pass_env=seam.pass_env, workers=seam.workers, seams={})

    def by_seam(self) -> list[tuple[str, Config]]:
        """Each adapter to measure, as ``(seam, config with that adapter only)``: the seams in
        name order, or ``("", self)`` for one ``[adapter]`` table (cells keep two-part names)."""
        if not self.seams:
            return [("", self)]
        return [(name, self.seam(name)) for name in self.seams]

    def with_seams(self, names: list[str]) -> Config:
        """This config restricted to the named seams (which it has)."""
        return self._replace(seams={n: self.seams[n] for n in sorted(set(names))})

    def with_workers(self, jobs: int | None) -> Config:
        """This config with ``jobs`` adapter processes for every adapter (``--jobs``, which
        overrides ``[adapter] workers`` and each seam's); unchanged for ``None``."""
        if jobs is None:
            return self
        return self._replace(workers=jobs, seams={name: seam._replace(workers=jobs)
                                                  for name, seam in self.seams.items()})

    def with_holdout(self, include: bool) -> Config:
        return self._replace(include_holdout=self.include_holdout or include)

    def suite_record(self, name: str) -> dict[str, Any]:
        """A suite's options as recorded and hashed: every option, defaults included.

        What ``model_dump()`` gives, without building a serializer for each suite's model: an
        option is a number, a string or a list of them (the tests hold this for every suite)."""
        return {key: list(value) if isinstance(value, list) else value
                for key, value in self.suites[name]
                if not (key == "repeats" and value is None)}  # unset: as before it existed

    def record(self) -> dict[str, Any]:
        """What results and baselines record: the measurement plus the adapter (or, with seams,
        each seam's adapter under ``adapters``), for information."""
        recorded: dict[str, Any] = {
            "suites": {name: self.suite_record(name) for name in self.suites},
            "include_holdout": self.include_holdout,
        }
        if self.live is not None:
            recorded["live"] = self.live.measurement()
        if self.seams:
            recorded["adapters"] = {name: seam.adapter_record() for name, seam in self.by_seam()}
        else:
            recorded["adapter"] = self.adapter_record()
        return recorded

    def adapter_record(self) -> dict[str, Any]:
        """The system under test, for information: its target and options."""
        if self.adapter_command is not None:
            return {"command": list(self.adapter_command), "options": self.adapter_options}
        return {"python": self.adapter, "options": self.adapter_options}

    def _checked_floors(self, label: str) -> Config:
        """A floor names a cell this config can produce: a seam's cell when there are seams, a
        two-part one when there are none."""
        for key in self.floors:
            seam = cells.seam_of(key.partition(":")[0])
            if self.seams and seam not in self.seams:
                raise GateError(f"{label}: floors.{key!r}: with [adapters.*] a floor names a "
                                f"seam's cell (seams: {', '.join(self.seams)})")
            if not self.seams and seam:
                raise GateError(f"{label}: floors.{key!r}: no [adapters.{seam}] table (a seam's "
                                "cell needs one)")
        return self

    def adapter_argv(self) -> list[str]:
        """What starts the adapter: its command, or the built-in host serving ``python``."""
        from membench_gate.adapter.rpc import adapter_argv

        return adapter_argv(self.adapter_command, self.adapter, [Path.cwd()])

    def launch(self, env: Mapping[str, str] | None = None) -> Handshake:
        """Start the adapter in the config's folder and send ``initialize`` (not waiting);
        ``env`` is added to its environment (a worker's number and temp folder)."""
        from membench_gate import budget
        from membench_gate.adapter.rpc import launch

        budget.adopt(self.budget_minutes)
        return launch(self.adapter_argv(), self.base_dir, self.timeout, self.adapter_options,
                      {**self.adapter_env(), **(env or {})})

    def start(self, env: Mapping[str, str] | None = None) -> AdapterProcess:
        """Start the adapter's process in the config's folder, sending nothing yet (what
        :meth:`launch` does before ``initialize``)."""
        from membench_gate import budget
        from membench_gate.adapter.rpc import AdapterProcess

        budget.adopt(self.budget_minutes)
        return AdapterProcess(self.adapter_argv(), self.base_dir, self.timeout,
                              {**self.adapter_env(), **(env or {})})

    def adapter_env(self) -> dict[str, str]:
        """The environment the adapter starts from: the live key's variable kept by the gate
        unless ``[adapter] pass_env`` names it (the runner's credentials are withheld later,
        whatever this says)."""
        from membench_gate.adapter.seal import withhold

        keep = (self.live.api_key_env,) if self.live is not None else ()
        return withhold(os.environ, drop=keep, passed=self.pass_env)


def alpha_of(config: Config) -> float:
    """The preregistered significance level of the statistical gate: ``[live] alpha`` when the
    config has a ``[live]`` table, else :data:`DEFAULT_ALPHA`."""
    live = getattr(config, "live", None)
    return float(live.alpha) if live is not None else DEFAULT_ALPHA


def python_target(python: str | None, command: object) -> str:
    """``[adapter] python`` as the gate serves it: the reference memory when neither
    ``python`` nor ``command`` is set, ``""`` for a command."""
    return python or (REFERENCE_ADAPTER if command is None else "")


def _suggest(key: str, choices: typing.Iterable[str]) -> str:
    from rapidfuzz import process  # only a mistake needs it: reading a good config never does

    match = process.extractOne(key, list(choices), score_cutoff=60)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _tables_model(annotation: Any) -> type[BaseModel] | None:
    """The model of each value of a ``dict[str, Model]`` field, or None."""
    if typing.get_origin(annotation) is dict:
        return _table_model(typing.get_args(annotation)[1])
    return None


def _toml(value: object) -> str:
    """A value as the config file spells it (``true``, not Python's ``True``; a date or time as
    TOML writes it, ``2026-01-01``, not Python's ``datetime.date(2026, 1, 1)``)."""
    import datetime

    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (datetime.date, datetime.time)):  # (a datetime is a date)
        kind = "date-time" if isinstance(value, datetime.datetime) else \
            "date" if isinstance(value, datetime.date) else "time"
        return f"the TOML {kind} {value.isoformat()}"
    return repr(value)


def _locate(loc: tuple[int | str, ...]) -> tuple[str, FieldInfo | None, type[BaseModel] | None]:
    """Where a validation error is, as the file spells it (``suites.veto.k``, ``floors.'a/b:c'``),
    with the field it falls in and, when it is a table of known keys, that table's model."""
    model: type[BaseModel] | None = ConfigFile
    info: FieldInfo | None = None
    parts: list[str] = []
    for part in loc:
        if model is not None and isinstance(part, str) and part in model.model_fields:
            info = model.model_fields[part]
            model = _table_model(info.annotation)
            parts.append(part)
        elif model is None and info is not None and isinstance(part, str) \
                and (tables := _tables_model(info.annotation)) is not None:
            model, info = tables, None  # a table of tables ([adapters.<seam>])
            parts.append(part)
        elif (model is None and info is not None and isinstance(part, str)
              and typing.get_origin(info.annotation) is dict):
            parts.append(repr(part))  # a key of a free table ([floors])
            break
        else:
            break  # a list index or a union member: the field is what the user wrote
    return ".".join(parts), info, model


def _message(label: str, exc: ValidationError) -> str:
    """One line for a validation error: an unknown key first (with its did-you-mean), else the
    first problem, said with the field's description when it has one."""
    errors = exc.errors()
    error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc, value = tuple(error["loc"]), error.get("input")
    if error["type"] == "extra_forbidden":
        where, _, model = _locate(loc[:-1])
        key = str(loc[-1])
        return (f"{label}: unknown key {where + '.' if where else ''}{key!r}"
                f"{_suggest(key, model.model_fields) if model else ''}")
    where, info, model = _locate(loc)
    if error["type"] in ("model_type", "model_attributes_type", "dict_type"):
        return f"{label}: [{where}] must be a table"
    if error["type"] == "config":
        return f"{label}: [{where}] {error['msg']}" if model else f"{label}: {where}: {error['msg']}"
    got = "" if isinstance(value, (dict, list)) else f", got {_toml(value)}"
    if info is not None and info.description:
        return f"{label}: {where} must be {info.description}{got}"
    return f"{label}: {where}: {error['msg']}{got}"


def parse_toml(text: str, label: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GateError(f"{label}: invalid TOML: {exc}") from exc
    except RecursionError as exc:
        raise GateError(f"{label}: invalid TOML: nested too deeply") from exc
    except ValueError as exc:  # an integer too long to read
        raise GateError(f"{label}: invalid TOML: {str(exc).splitlines()[0]}") from exc


def _validate(data: dict[str, Any], label: str) -> ConfigFile:
    try:
        return ConfigFile.model_validate(data)
    except ValidationError as exc:
        raise GateError(_message(label, exc)) from exc


def parse_suite_options(suite: str, options: Any, label: str) -> SuiteOptions:
    """A suite's options as a results file records them (``config.suites.<suite>``), typed."""
    parsed = getattr(_validate({"suites": {suite: options}}, label).suites, suite)
    return typing.cast("SuiteOptions", parsed)


def parse_floors(raw: Any, label: str) -> dict[str, float]:
    """Validate a ``[floors]`` table: ``"suite/condition:metric" = number``."""
    return _validate({"floors": raw}, label).floors


def parse_config(text: str, path: Path, label: str | None = None) -> Config:
    """Parse and validate the text of a ``membench.toml`` located at ``path``."""
    label = label or str(path)
    raw = parse_toml(text, label)
    _check_seams(raw, label)
    data = _validate(raw, label)
    # Recorded in every results file: a number there must be writable (not nan, not 1e300).
    for where, table in [("adapter", data.adapter),
                         *((f"adapters.{n}", t) for n, t in data.adapters.items())]:
        check_numbers(table.options, label, f"{where}.options")
    seams = {name: _seam(data.adapters[name]) for name in sorted(data.adapters)}
    adapter = data.adapters[min(seams)] if seams else data.adapter
    suites = {name: options for name in SUITE_NAMES
              if (options := getattr(data.suites, name)) is not None}
    if not suites:
        raise GateError(f"{label}: no suite enabled (add a "
                        f"{', '.join(f'[suites.{n}]' for n in SUITE_NAMES)} table)")
    live = [name for name in suites if registry()[name].live]
    if live and data.live is None:
        raise GateError(f"{label}: [suites.{live[0]}] is a live suite and needs a [live] table "
                        "(the LLM it asks: base_url, model; docs/live.md)")
    return Config(
        path=path,
        adapter=python_target(adapter.python, adapter.command),
        adapter_options=dict(adapter.options),
        adapter_command=tuple(adapter.command) if adapter.command is not None else None,
        suites=suites,
        baseline=data.gate.baseline,
        include_holdout=data.gate.include_holdout,
        floors=data.floors,
        timeout=adapter.timeout,
        budget_minutes=data.gate.budget_minutes,
        live=data.live,
        pass_env=tuple(adapter.pass_env),
        seams=seams,
        workers=adapter.workers,
    )._checked_floors(label)


def _seam(table: AdapterTable) -> Seam:
    return Seam(python_target(table.python, table.command), dict(table.options),
                tuple(table.command) if table.command is not None else None, table.timeout,
                tuple(table.pass_env), table.workers)


def _check_seams(raw: dict[str, Any], label: str) -> None:
    """``[adapters.<seam>]``: named as cells can carry, and never beside ``[adapter]`` (which
    adapter a two-part cell would belong to is not for the gate to guess)."""
    if "adapters" not in raw:
        return
    if "adapter" in raw:
        raise GateError(f"{label}: [adapter] and [adapters.*] both given: use [adapter] for one "
                        "adapter or one [adapters.<seam>] table per adapter, not both")
    tables = raw["adapters"]
    if not isinstance(tables, dict):
        raise GateError(f"{label}: [adapters] must be a table of [adapters.<seam>] tables")
    if not tables:
        raise GateError(f"{label}: [adapters] has no [adapters.<seam>] table")
    for name in tables:
        if not cells.SEAM_NAME.match(name):
            raise GateError(f"{label}: [adapters.{name!r}]: a seam name is made of "
                            f"{cells.SEAM_CHARS} only (it becomes the first part of its cells' "
                            "names)")


def load_config(path: Path | str) -> Config:
    """Read ``membench.toml`` from disk."""
    path = Path(path)
    text = read_text(path, str(path), "config file", hint=" (pass --config)")
    return parse_config(text, path.resolve(), label=str(path))


def floors_from_text(text: str, label: str) -> dict[str, float]:
    """Only the ``[floors]`` of a config (the base commit's): other tables may be from any version."""
    return parse_floors(parse_toml(text, label).get("floors", {}), label)
