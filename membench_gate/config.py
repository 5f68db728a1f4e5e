"""``membench.toml`` → a validated :class:`Config`.

Unknown keys are errors with a did-you-mean suggestion: a typo in a gate config must never silently
turn a check off.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rapidfuzz import process

from membench_gate import metrics
from membench_gate.errors import GateError
from membench_gate.results import check_numbers

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_CONFIG = "membench.toml"
REFERENCE_ADAPTER = "membench_gate.reference:ReferenceMemory"

# Every suite's options and their defaults. The defaults are written into the recorded config, so a
# run is fully described by its results file.
SUITE_OPTIONS: dict[str, dict[str, Any]] = {
    "veto": {"fixtures": ["builtin"], "k": 5},
    "abstention": {"fixtures": ["builtin"], "k": 5, "lambdas": [1, 2, 5, 10], "shuffle_seed": 7},
    "push": {"fixtures": ["builtin"], "budget": 3},
    "writeback": {"fixtures": ["builtin"], "k": 5},
    "recall": {"fixtures": ["builtin"], "k": 10},
}
SUITE_NAMES = tuple(sorted(SUITE_OPTIONS))
_TOP_KEYS = ("adapter", "suites", "gate", "floors")
_ADAPTER_KEYS = ("python", "command", "options", "timeout")
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 86400.0
_GATE_KEYS = ("baseline", "include_holdout")


@dataclass(frozen=True)
class Config:
    """A validated gate configuration."""

    path: Path
    adapter: str
    adapter_options: dict[str, Any]
    adapter_command: tuple[str, ...] | None
    suites: dict[str, dict[str, Any]]
    baseline: str
    include_holdout: bool
    floors: dict[str, float] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def baseline_path(self) -> Path:
        return self.base_dir / self.baseline

    def with_suites(self, names: list[str]) -> Config:
        """This config restricted to the named suites (``run --suite``)."""
        unknown = [n for n in names if n not in self.suites]
        if unknown:
            raise GateError(
                f"--suite {unknown[0]}: not enabled in {self.path.name} "
                f"(enabled: {', '.join(self.suites) or 'none'})"
            )
        return replace(self, suites={n: self.suites[n] for n in sorted(set(names))})

    def with_holdout(self, include: bool) -> Config:
        return replace(self, include_holdout=self.include_holdout or include)

    def record(self) -> dict[str, Any]:
        """What results and baselines record: the measurement plus the adapter, for information."""
        return {
            "suites": self.suites,
            "include_holdout": self.include_holdout,
            "adapter": self.adapter_record(),
        }

    def adapter_record(self) -> dict[str, Any]:
        """The system under test, for information: its target and options."""
        if self.adapter_command is not None:
            return {"command": list(self.adapter_command), "options": self.adapter_options}
        return {"python": self.adapter, "options": self.adapter_options}

    def adapter_argv(self) -> list[str]:
        """What starts the adapter: its command, or the built-in host serving ``python``."""
        from membench_gate.rpc import adapter_argv

        return adapter_argv(self.adapter_command, self.adapter, [Path.cwd()])


def _suggest(key: str, choices: tuple[str, ...] | list[str]) -> str:
    match = process.extractOne(key, list(choices), score_cutoff=60)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _check_keys(table: dict[str, Any], allowed: tuple[str, ...] | list[str], where: str,
                label: str) -> None:
    for key in table:
        if key not in allowed:
            raise GateError(f"{label}: unknown key {where}{key!r}{_suggest(key, allowed)}")


def _table(value: Any, where: str, label: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise GateError(f"{label}: {where} must be a table")
    return value


def parse_toml(text: str, label: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GateError(f"{label}: invalid TOML: {exc}") from exc
    except RecursionError as exc:
        raise GateError(f"{label}: invalid TOML: nested too deeply") from exc
    except ValueError as exc:  # an integer too long to read
        raise GateError(f"{label}: invalid TOML: {str(exc).splitlines()[0]}") from exc


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# The range of every number a config holds: TOML has nan and inf literals, and a number that is
# absurd for its key (k = 1e9, a λ of 1e30, timeout = inf) is a mistake to name, not to run.
INT_RANGES = {"k": (1, 1000), "budget": (1, 1000), "shuffle_seed": (0, 2**32 - 1)}
MAX_LAMBDA = 1000
MAX_FLOOR = 1e6


def _in_range(value: Any, low: float, high: float) -> bool:
    """A finite number within [low, high] (bools are not numbers here)."""
    return (_number(value) and (isinstance(value, int) or math.isfinite(value))
            and low <= value <= high)


def _suite_options(name: str, table: dict[str, Any], label: str) -> dict[str, Any]:
    defaults = SUITE_OPTIONS[name]
    _check_keys(table, list(defaults), f"suites.{name}.", label)
    options = {**defaults, **table}
    where = f"suites.{name}"
    fixtures = options["fixtures"]
    if (not isinstance(fixtures, list) or not fixtures
            or not all(isinstance(f, str) and f for f in fixtures)):
        raise GateError(f"{label}: {where}.fixtures must be a non-empty list of folder names")
    for key, (low, high) in INT_RANGES.items():
        if key in options and (not isinstance(options[key], int) or isinstance(options[key], bool)
                               or not low <= options[key] <= high):
            raise GateError(f"{label}: {where}.{key} must be an integer from {low} to {high}, "
                            f"got {options[key]!r}")
    if "lambdas" in options:
        lams = options["lambdas"]
        if (not isinstance(lams, list) or not lams
                or not all(_in_range(x, 0, MAX_LAMBDA) for x in lams)):
            raise GateError(f"{label}: {where}.lambdas must be a non-empty list of finite numbers "
                            f"from 0 to {MAX_LAMBDA}")
        if len({float(x) for x in lams}) != len(lams):
            raise GateError(f"{label}: {where}.lambdas has a repeated value")
    return options


def parse_floors(raw: Any, label: str) -> dict[str, float]:
    """Validate a ``[floors]`` table: ``"suite/condition:metric" = number``."""
    floors: dict[str, float] = {}
    for key, value in _table(raw, "[floors]", label).items():
        cell, sep, metric = key.partition(":")
        suite, slash, condition = cell.partition("/")
        if not sep or not slash or not suite or not condition or not metric:
            raise GateError(f"{label}: floors.{key!r}: key must be 'suite/condition:metric'")
        if not metrics.known_cell(cell):
            raise GateError(f"{label}: floors.{key!r}: unknown cell {cell!r}"
                            f"{_suggest(cell, list(metrics.CELLS))}")
        if metrics.spec(metric).suite == "?":
            known = [m for m in metrics.REGISTRY if not m.startswith("net_at_")]
            raise GateError(
                f"{label}: floors.{key!r}: unknown metric {metric!r}{_suggest(metric, known)}"
            )
        if not _in_range(value, -MAX_FLOOR, MAX_FLOOR):
            raise GateError(f"{label}: floors.{key!r} must be a finite number (|x| <= 1e6), "
                            f"got {value!r}")
        floors[key] = float(value)
    return floors


def parse_config(text: str, path: Path, label: str | None = None) -> Config:
    """Parse and validate the text of a ``membench.toml`` located at ``path``."""
    label = label or str(path)
    data = parse_toml(text, label)
    _check_keys(data, _TOP_KEYS, "", label)

    adapter = _table(data.get("adapter", {}), "[adapter]", label)
    _check_keys(adapter, _ADAPTER_KEYS, "adapter.", label)
    if "command" in adapter and "python" in adapter:
        raise GateError(f"{label}: [adapter] takes exactly one of command and python")
    command = adapter.get("command")
    if command is not None and (not isinstance(command, list) or not command
                                or not all(isinstance(a, str) and a for a in command)):
        raise GateError(f"{label}: adapter.command must be a non-empty list of strings "
                        '(an argv, e.g. ["node", "bench/adapter.js"])')
    target = adapter.get("python", REFERENCE_ADAPTER if command is None else "")
    if not isinstance(target, str) or (command is None and target.count(":") != 1):
        raise GateError(f"{label}: adapter.python must be a string 'module:attr'")
    options = dict(_table(adapter.get("options", {}), "[adapter.options]", label))
    # Recorded in every results file: a number there must be writable (not nan, not 1e300).
    check_numbers(options, label, "adapter.options")
    timeout = adapter.get("timeout", DEFAULT_TIMEOUT)
    if not _number(timeout) or not 0 < timeout <= MAX_TIMEOUT:
        raise GateError(f"{label}: adapter.timeout must be a number of seconds, more than 0 and "
                        f"at most {MAX_TIMEOUT:g}, got {timeout!r}")

    suites_raw = _table(data.get("suites", {}), "[suites]", label)
    _check_keys(suites_raw, SUITE_NAMES, "suites.", label)
    suites = {
        name: _suite_options(name, _table(suites_raw[name], f"[suites.{name}]", label), label)
        for name in sorted(suites_raw)
    }
    if not suites:
        raise GateError(f"{label}: no suite enabled (add a "
                        f"{', '.join(f'[suites.{n}]' for n in SUITE_NAMES)} table)")

    gate = _table(data.get("gate", {}), "[gate]", label)
    _check_keys(gate, _GATE_KEYS, "gate.", label)
    baseline = gate.get("baseline", "baselines/main.json")
    if not isinstance(baseline, str) or not baseline:
        raise GateError(f"{label}: gate.baseline must be a relative path")
    include_holdout = gate.get("include_holdout", False)
    if not isinstance(include_holdout, bool):
        raise GateError(f"{label}: gate.include_holdout must be true or false")

    return Config(
        path=path,
        adapter=target,
        adapter_options=options,
        adapter_command=tuple(command) if command is not None else None,
        suites=suites,
        baseline=baseline,
        include_holdout=include_holdout,
        floors=parse_floors(data.get("floors", {}), label),
        timeout=float(timeout),
    )


def load_config(path: Path) -> Config:
    """Read ``membench.toml`` from disk."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise GateError(f"{path}: config file not found (pass --config)") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise GateError(f"{path}: cannot read config: {exc}") from exc
    return parse_config(text, path.resolve(), label=str(path))


def floors_from_text(text: str, label: str) -> dict[str, float]:
    """Only the ``[floors]`` of a config (the base commit's): other tables may be from any version."""
    return parse_floors(parse_toml(text, label).get("floors", {}), label)
