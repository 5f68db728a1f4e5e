"""``membench-gate import FORMAT SRC… --out DIR``: a fixture folder from the user's own copy of a
published data set (:mod:`membench_gate.importers`). (``import_``: ``import`` is a keyword.)"""

from __future__ import annotations

import argparse

from membench_gate.errors import ExitCode, visible

NOTES_SHOWN = 10


def cmd_import(args: argparse.Namespace) -> int:
    from membench_gate.importers import import_data

    imported = import_data(args.format, args.sources, args.out)
    print(visible(f"{imported.summary()} → {args.out}"))
    for note in imported.notes[:NOTES_SHOWN]:  # about the data imported: ids and text from elsewhere
        print(visible(f"  note: {note}"))
    if len(imported.notes) > NOTES_SHOWN:
        print(f"  … {len(imported.notes) - NOTES_SHOWN} more notes in {args.out / 'SOURCE.json'}")
    if imported.enable:
        print(f"  enable: {imported.enable.format(out=args.out.as_posix())}")
    else:
        print(f'  enable with: [suites.{imported.suite}] fixtures = ["{args.out.as_posix()}"]')
    return ExitCode.PASS
