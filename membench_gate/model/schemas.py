"""JSON Schemas of the files membench-gate writes, generated from the pydantic models.

``python -m membench_gate.model.schemas`` rewrites ``membench_gate/schemas/*.schema.json``; a test checks
the shipped files are up to date, so other tools can validate baselines, results, verdicts and
histories.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from membench_gate.model.history import History
from membench_gate.model.results import Baseline, Results
from membench_gate.model.verdict import Verdict

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"  # data beside the package code
MODELS: dict[str, type[BaseModel]] = {"baseline": Baseline, "results": Results, "verdict": Verdict,
                                      "history": History}


def schema_text(model: type[BaseModel]) -> str:
    schema = model.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_all(folder: Path = SCHEMA_DIR) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in MODELS.items():
        path = folder / f"{name}.schema.json"
        path.write_text(schema_text(model), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_all():
        print(path.name)
