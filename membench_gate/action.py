"""``python -m membench_gate.action``: the action's gate step (:mod:`membench_gate.ci.action`)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("membench_gate.ci.action", run_name="__main__", alter_sys=True)
