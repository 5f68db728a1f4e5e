"""The time budget of one command: how long, in all, it may take before the adapter is stopped.

``[adapter] timeout`` bounds one call; it says nothing of the whole run, and a config may allow a
call a day. The budget bounds the command: every wait for the adapter ends at the earlier of the
call's timeout and the budget's end, and a wait cut short by the budget kills the adapter and is
an ERROR naming the budget — never a job held until the runner's own limit.

Where it comes from, first found: ``--budget-minutes`` (the action passes its ``budget-minutes``
input so), ``[gate] budget_minutes`` of the working tree's config, and in CI (``CI`` or
``GITHUB_ACTIONS`` set) :data:`CI_DEFAULT_MINUTES`; locally there is none unless one is set.
The clock starts when the command does. The budget is not part of the measurement: it is neither
recorded nor hashed, so changing it never asks for a bless.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

from membench_gate.errors import GateError

MAX_MINUTES = 360.0  # GitHub's limit for a job: a budget beyond it could never run out first
CI_DEFAULT_MINUTES = 60.0
MINUTES_RANGE = f"a number of minutes, more than 0 and at most {MAX_MINUTES:g}"
FLAG = "--budget-minutes / the action's budget-minutes input"
CONFIG_KEY = "[gate] budget_minutes"
# As :class:`membench_gate.ci.settings.Context` reads CI and GITHUB_ACTIONS (that module is not
# imported here: a command starts its clock before it imports the gate's models).
_FALSE = frozenset({"", "false", "0", "no", "off"})


def parse_minutes(text: str) -> float:
    """A budget as written on the command line or in an input; ``ValueError`` if it is not one."""
    try:
        minutes = float(text)
    except ValueError:
        raise ValueError(f"expected {MINUTES_RANGE}, got {text!r}") from None
    if not math.isfinite(minutes) or not 0 < minutes <= MAX_MINUTES:
        raise ValueError(f"expected {MINUTES_RANGE}, got {text!r}")
    return minutes


class OutOfTime(GateError):
    """The budget ran out: the command is an ERROR, whatever it was doing (a doctor's check or
    a selftest's mutant that fails for lack of time says nothing of the adapter)."""


@dataclass(frozen=True)
class Budget:
    """A budget in force: its size, where it was set (as the user would write it) and its end on
    the :func:`time.monotonic` clock."""

    minutes: float
    source: str
    deadline: float
    command: str = "command"

    def left(self) -> float:
        """Seconds until the budget runs out (negative once it has)."""
        return self.deadline - time.monotonic()

    def ran_out(self, method: str, suite: str | None, item: str | None) -> OutOfTime:
        """The ERROR of a wait for ``method`` that the budget cut short."""
        unit = "minute" if self.minutes == 1 else "minutes"
        seconds = f" ({self.minutes * 60:.3g} s)" if self.minutes < 1 else ""
        return OutOfTime(f"the {self.command}'s time budget of "
                         f"{self.minutes:g} {unit}{seconds} ran out{place(suite, item)}"
                         f", waiting for adapter {method}() ({self.source})")


# Calls made outside a suite — doctor's probes of the protocol — name the checks they are of.
NOT_SUITES = {"doctor": "doctor's checks"}


def place(suite: str | None, item: str | None) -> str:
    """Where an adapter call was, for an error line: `` in suite veto, item scn-01`` (or
    `` in doctor's checks, query 5``); empty when neither is known."""
    outside = suite in NOT_SUITES
    parts = [NOT_SUITES[suite] if outside else f"suite {suite}"] if suite else []
    if item:
        parts.append(item if outside else f"item {item}")
    return f" in {', '.join(parts)}" if parts else ""


@dataclass
class _Clock:
    command: str
    started: float
    flag: float | None
    ci: bool
    budget: Budget | None = None


_clock: _Clock | None = None


def start(command: str, flag: float | None, env: Mapping[str, str]) -> None:
    """Start the clock of ``command`` (its ``--budget-minutes`` is ``flag``); ``env`` says
    whether this is CI. Called once per command, before anything else of it runs."""
    global _clock
    ci = any(env.get(name, "").strip().lower() not in _FALSE for name in ("CI", "GITHUB_ACTIONS"))
    _clock = _Clock(command, time.monotonic(), flag, ci)
    if flag is not None:
        _clock.budget = Budget(flag, FLAG, _clock.started + flag * 60, command)
    elif ci:
        _clock.budget = Budget(CI_DEFAULT_MINUTES, "the default in CI; set "
                               f"{CONFIG_KEY} or --budget-minutes", _clock.started
                               + CI_DEFAULT_MINUTES * 60, command)


def adopt(config_minutes: float | None) -> None:
    """The working tree's ``[gate] budget_minutes``, once the config is validated: it stands
    unless ``--budget-minutes`` was given. The clock still runs from the command's start."""
    if _clock is None or _clock.flag is not None or config_minutes is None:
        return
    _clock.budget = Budget(config_minutes, CONFIG_KEY, _clock.started + config_minutes * 60,
                           _clock.command)


def current() -> Budget | None:
    """The budget in force, or ``None`` (no command started one, or none applies locally)."""
    return _clock.budget if _clock is not None else None


def stop() -> None:
    """Forget the clock: a command run in this process after this one starts its own."""
    global _clock
    _clock = None
