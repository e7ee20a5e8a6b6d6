"""The host's typed HTTP shapes (pydantic): errors, contexts, API tokens. Modules reuse `ApiError`.

The same models give `feedeater ... --json` its output where the CLI shows the same things, so the API and
the command line never drift apart.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# PostgreSQL text cannot hold NUL: strings that reach it say so in the schema (a NUL was a 500).
NO_NUL = r"^[^\x00]*$"


class ApiError(BaseModel):
    """Every error the API answers: what went wrong and how to fix it (the CLI's one line, split)."""

    error: str = Field(description="what went wrong")
    fix: str | None = Field(default=None, description="how to fix it")


class Context(BaseModel):
    """A module's current summary of one source (host.contexts), as in `feedeater contexts list`."""

    owner_module: str
    source_key: str
    summary_short: str
    summary_long: str
    key_points: list[str]
    meta: dict[str, Any]
    version: int
    message_id: uuid.UUID | None
    updated_at: datetime


class ContextDetail(Context):
    """One context with its linked messages, as in `feedeater contexts show`."""

    message_count: int
    messages: list[uuid.UUID] = Field(description="ids of the newest linked messages, newest first")


class ApiToken(BaseModel):
    """An API token as listed: never the token itself (only its hash is stored)."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    scope: Literal["read", "write"] = Field(description="read: GET only; write: every request")
    prefix: str = Field(description="the token's first characters, to tell tokens apart")
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class ApiTokenCreated(ApiToken):
    token: str = Field(description="the bearer token; shown once, store it now")
