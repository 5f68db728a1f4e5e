"""``python -m membench_gate.action``: the action's gate step (:mod:`membench_gate.ci.action`),
run as the console runs a command: with no pydantic plugin
(:func:`membench_gate.cli.runtime.without_pydantic_plugins`).

It takes no arguments: its inputs are the ``MEMBENCH_*`` variables action.yml sets
(docs/action.md). ``--help`` says so, and any other argument is refused, rather than running the
whole step for a user who only asked what it is.
"""

import runpy
import sys

USAGE = ("usage: python -m membench_gate.action\n"
         "The GitHub Action's gate step: it takes no arguments; its inputs are the MEMBENCH_* "
         "environment variables action.yml sets from the action's inputs (docs/action.md). "
         "Locally, run membench-gate check.")

if __name__ == "__main__":
    if sys.argv[1:]:
        asked = sys.argv[1] in ("-h", "--help")
        print(USAGE, file=sys.stdout if asked else sys.stderr)
        if not asked:
            print(f"membench-gate: error: python -m membench_gate.action takes no arguments, "
                  f"got {sys.argv[1]!r}", file=sys.stderr)
        raise SystemExit(0 if asked else 4)
    from membench_gate.cli.runtime import without_pydantic_plugins

    without_pydantic_plugins()
    runpy.run_module("membench_gate.ci.action", run_name="__main__", alter_sys=True)
