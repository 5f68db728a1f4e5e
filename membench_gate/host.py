"""``python -m membench_gate.host module:attr``: serve a Python memory object over the protocol.

Where configs and the docs reach the host; the host itself is :mod:`membench_gate.adapter.host`,
run here as ``__main__`` so that it fixes ``sys.path`` before it imports anything (``runpy`` is
already loaded: ``-m`` itself uses it).
"""

import runpy

if __name__ == "__main__":
    runpy.run_module("membench_gate.adapter.host", run_name="__main__", alter_sys=True)
