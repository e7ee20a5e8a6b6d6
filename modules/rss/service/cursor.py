"""Opaque keyset cursors for entry listings (pure): the (effective_at, id) of a page's last entry.

Keyset paging costs the same on page 1,000 as on page 1 (OFFSET would scan every skipped row) and
never repeats or skips an entry when new ones arrive while a client pages through.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


class BadCursor(ValueError):
    pass


def encode(effective_at: datetime, entry_id: int) -> str:
    micros = (effective_at - EPOCH) // MICROSECOND  # exact: a float timestamp loses the last microsecond
    return base64.urlsafe_b64encode(f"{micros}.{entry_id}".encode()).decode().rstrip("=")


def decode(cursor: str) -> tuple[datetime, int]:
    """The position a cursor from `encode` names; BadCursor for anything else."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        micros, entry_id = (int(part) for part in raw.split("."))
        if not (0 < entry_id < 2**63 and abs(micros) < 10**17):  # bigint ids; ±3000 years
            raise ValueError
        at = EPOCH + micros * MICROSECOND
    except (ValueError, UnicodeDecodeError, binascii.Error, OverflowError, OSError):
        raise BadCursor(cursor) from None
    return at, entry_id
