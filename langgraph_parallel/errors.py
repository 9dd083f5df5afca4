"""User-facing errors.

A :class:`UserError` is a problem the user can fix (bad input, a missing file or package). The CLI
prints its message on one line, without a traceback, and exits with status 2.
"""

from __future__ import annotations


class UserError(Exception):
    """An error caused by input or set-up that the user can fix; the message says how."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))
