"""``fixtures_hash`` of a config over its fixture files: the hash a run records and
``check --results`` compares, read from the files alone (no item is validated)."""

from __future__ import annotations

from collections.abc import Mapping

from membench_gate.config import Config
from membench_gate.files import load_json, read_text
from membench_gate.model.measurement import file_digest, fixtures_hash
from membench_gate.suites import get
from membench_gate.suites.common.folders import FixtureFile, suite_paths


def hash_of(config: Config, files: Mapping[str, list[FixtureFile]]) -> str:
    """``fixtures_hash`` of ``config`` over the files of each enabled suite."""
    return _hash(config, {name: [(file.label, file_digest(file.data)) for file in files[name]]
                          for name in files})


def _hash(config: Config, digests: Mapping[str, list[tuple[str, str]]]) -> str:
    """``fixtures_hash`` of ``config`` over each suite's files as ``(label, digest)``."""
    return fixtures_hash(config.include_holdout, [
        (name, get(name).scorer_version, _measured(config, name), digests[name])
        for name in digests
    ])


def _measured(config: Config, name: str) -> dict[str, object]:
    """A suite's options as hashed: a live suite's with the measurement of ``[live]`` (model,
    temperature, alpha), so changing the LLM behaves like a corpus change."""
    record = config.suite_record(name)
    if get(name).live and config.live is not None:
        return {**record, "live": config.live.measurement()}
    return record


def measurement_hash(config: Config) -> str:
    """``fixtures_hash`` of ``config`` read from the files alone (no item is validated): what
    ``check --results`` compares a results file's hash with."""
    return _hash(config, {
        name: [(label, file_digest(load_json(read_text(path, label, "fixture file"), label)))
               for folder in suite_paths(name, options.fixtures, config.base_dir)
               for path, label in folder]
        for name, options in config.suites.items()
    })
