"""``python -m membench_gate.action``: the action's gate step (:mod:`membench_gate.ci.action`),
run as the console runs a command: with no pydantic plugin
(:func:`membench_gate.cli.runtime.without_pydantic_plugins`)."""

import runpy

if __name__ == "__main__":
    from membench_gate.cli.runtime import without_pydantic_plugins

    without_pydantic_plugins()
    runpy.run_module("membench_gate.ci.action", run_name="__main__", alter_sys=True)
