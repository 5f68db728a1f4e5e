"""A run: config → fixtures → adapter → suites → :class:`Results`."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import datetime, timezone
from typing import Any

from membench_gate import __version__
from membench_gate.adapter import AdapterSession, load_adapter
from membench_gate.config import Config
from membench_gate.fixtures import SuiteFixtures, digest, fixtures_hash, load_suite
from membench_gate.results import SCHEMA_VERSION, Cell, Results
from membench_gate.suites import Progress, registry


def _git_sha(config: Config) -> str | None:
    """Best-effort commit of the working tree, for the receipt only (never gated)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=config.base_dir, text=True,
                             capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and len(sha) == 40 else None


def tty_progress() -> Progress | None:
    """Per-item progress on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    def report(suite: str, done: int, total: int) -> None:
        end = "\n" if done == total else ""
        sys.stderr.write(f"\r{suite}: {done}/{total}{end}")
        sys.stderr.flush()

    return report


def measure(config: Config) -> tuple[str, dict[str, Any]]:
    """The fixtures hash and loaded fixtures of ``config`` (validates everything, runs nothing)."""
    suites = registry()
    loaded = {
        name: load_suite(name, options["fixtures"], config.base_dir, config.include_holdout)
        for name, options in config.suites.items()
    }
    digest = fixtures_hash(config.include_holdout, [
        (name, suites[name].SCORER_VERSION, config.suites[name], loaded[name].files)
        for name in loaded
    ])
    return digest, loaded


def cell_digests(fixtures: SuiteFixtures, items: dict[str, Any]) -> dict[str, str]:
    """Content digest of each gold item of a cell; an item that is not a fixture item (a control)
    stands for the whole suite, so its digest covers every item the suite scored."""
    whole = digest(sorted(fixtures.digests.items()))
    return {item: fixtures.digests.get(item, whole) for item in sorted(items)}


def run(config: Config, progress: Progress | None = None) -> Results:
    """Run every enabled suite of ``config`` against its adapter."""
    started = datetime.now(timezone.utc)
    clock = time.perf_counter()
    digest, loaded = measure(config)
    adapter = load_adapter(config.adapter, config.adapter_options, config.base_dir)
    suites = registry()
    cells: dict[str, Cell] = {}
    items: dict[str, dict[str, dict[str, Any]]] = {}
    digests: dict[str, dict[str, str]] = {}
    for name, fixtures in loaded.items():
        session = AdapterSession(adapter, name, config.timeout)
        outcome = suites[name].run(fixtures, session, config.suites[name], progress)
        for cell_name, cell in outcome.cells.items():
            cells[cell_name] = Cell(metrics=cell.metrics, gold_total=cell.gold_total,
                                    failed=cell.failed)
            digests[cell_name] = cell_digests(fixtures, outcome.items[cell_name])
        items.update(outcome.items)
    return Results(
        schema_version=SCHEMA_VERSION,
        fixtures_hash=digest,
        config=config.record(),
        cells=cells,
        digests=digests,
        receipt={
            "tool_version": __version__,
            "git_sha": _git_sha(config),
            "started_at": started.isoformat(timespec="seconds"),
            "duration_s": time.perf_counter() - clock,
            "adapter": config.adapter,
        },
        items=items,
    )
