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


# The failures of a service or of the machine rather than of our code, by class name along the exception's
# MRO (asyncpg and nats-py are not imported here: the CLI's --help must stay cheap).
_UNAVAILABLE = frozenset(
    {
        "TimeoutError",  # asyncio's and the builtin (3.11+: one class); also nats.errors.TimeoutError
        "ConnectionError",  # refused, reset, broken pipe
        "PostgresConnectionError",
        "ConnectionDoesNotExistError",
        "CannotConnectNowError",
        "TooManyConnectionsError",
        "ConnectionClosedError",
        "ConnectionReconnectingError",
        "NoServersError",
        "StaleConnectionError",
    }
)


def unavailable(exc: BaseException) -> bool:
    """Did PostgreSQL, NATS or the machine fail to answer (a timeout, a dropped or refused connection)?

    Such a failure is logged as one line and retried by the next run: seen on a machine at load 27, where
    a pool's connect timed out, its traceback pointed at code that had done nothing wrong."""
    return any(cls.__name__ in _UNAVAILABLE for cls in type(exc).__mro__)
