"""What the adapter contract accepts from a Python memory."""

from __future__ import annotations

import numpy as np
import pytest

from membench_gate.adapter.types import Answer, Hit, answer_to_wire


def test_numpy_scalars_from_an_adapter_are_accepted() -> None:
    # What the host sends for a Python adapter: numpy scores and bools become JSON numbers/bools.
    wire = answer_to_wire(Answer(hits=[Hit("f1", np.float32(0.5))], abstain=np.False_))
    assert wire == {"hits": [{"id": "f1", "score": 0.5}], "abstain": False}
    assert type(wire["hits"][0]["score"]) is float
    with pytest.raises(ValueError, match="not a number"):
        answer_to_wire(Answer(hits=[Hit("f1", "high")], abstain=False))  # type: ignore[arg-type]
