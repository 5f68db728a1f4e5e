"""The one error type users see: a single line, turned into exit code 4 by the CLI."""

from __future__ import annotations

from collections.abc import Sequence


class GateError(Exception):
    """A user-facing failure: bad input, a failing adapter, git or GitHub trouble.

    The message is one line naming the file, field or call at fault. The CLI prints it
    (no traceback unless ``--debug``) and exits with ``exit_code`` (4, ERROR, by default).
    ``detail`` holds supporting lines shown under it — an adapter's last stderr lines.
    """

    def __init__(self, message: str, exit_code: int = 4, detail: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.detail = list(detail)
