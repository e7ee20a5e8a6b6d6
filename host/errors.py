"""User-facing errors: one clear line (what went wrong and how to fix it), never a traceback."""

from __future__ import annotations


class UserError(Exception):
    """An error caused by input or environment the user controls.

    The CLI prints `str(error)` and exits non-zero; `hint` says how to fix it.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message
