"""What the console's own process may do to itself and a library call must not.

A command of the console is the only code in its process, and everything it loads to measure
with (the fixtures: a LongMemEval corpus is millions of objects) lives to its end. The
collector walks such objects again and again as the heap grows and finds nothing to free: a
116,000-turn run spent 0.45 s of the gate's 3 s of CPU in collections, 0.34 s of it in full
ones. The console says it owns the process (:func:`own`); what the command then loads is moved
out of the collector's sight (:func:`keep`). Called as a library (tests, benchmarks, a user's
script), nothing changes.
"""

from __future__ import annotations

import gc

_owned = False


def own() -> None:
    """The console's: this process is one command's, start to end."""
    global _owned
    _owned = True


def keep() -> None:
    """Everything alive now lives to the end of the command: ``gc.freeze`` it when the console
    owns the process (objects are still freed by their reference counts; only the collector no
    longer walks them)."""
    if _owned:
        gc.freeze()
