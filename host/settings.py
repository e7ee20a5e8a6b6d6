"""Settings: manifest default < stored value < environment (`FEEDEATER_<MODULE>_<KEY>`), validated."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import asyncpg

from host.errors import UserError
from host.module import Manifest, Setting

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_key(module: str, key: str) -> str:
    return f"FEEDEATER_{module.upper()}_{key.upper()}"


def coerce(module: str, setting: Setting, raw: Any, *, source: str = "") -> Any:
    """Turn a raw value (string from CLI/env, or JSON from storage) into the setting's type, or refuse it.
    `source` names where a value that was not just typed comes from (stored, an environment variable)."""

    def bad(reason: str) -> UserError:
        where = f" ({source})" if source else ""
        fix = setting.description
        if source == "stored":
            fix = f"`feedeater settings reset {module}.{setting.key}` restores the default, or set it again"
        elif source:
            fix = f"correct or unset {source}"
        return UserError(f"bad value for {module}.{setting.key}{where}: {reason}", fix)

    value: Any
    if setting.type == "bool":
        if isinstance(raw, bool):
            value = raw
        elif str(raw).strip().lower() in _TRUE:
            value = True
        elif str(raw).strip().lower() in _FALSE:
            value = False
        else:
            raise bad(f"{raw!r} is not true/false")
    elif setting.type in ("int", "float"):
        try:
            value = int(raw) if setting.type == "int" else float(raw)
        except (TypeError, ValueError):
            raise bad(f"{raw!r} is not a{'n integer' if setting.type == 'int' else ' number'}") from None
        if isinstance(raw, float) and setting.type == "int" and raw != int(raw):
            raise bad(f"{raw!r} is not an integer")
        if setting.min is not None and value < setting.min:
            raise bad(f"{value} is below the minimum {setting.min:g}")
        if setting.max is not None and value > setting.max:
            raise bad(f"{value} is above the maximum {setting.max:g}")
    elif setting.type == "choice":
        value = str(raw)
        if value not in setting.choices:
            raise bad(f"{value!r} is not one of {', '.join(setting.choices)}")
    else:
        value = str(raw)
    if setting.check is not None and (reason := setting.check(value)) is not None:
        raise bad(reason)
    return value


def resolve(manifest: Manifest, stored: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The effective settings of one module; any invalid value is refused with module, key and reason."""
    out: dict[str, Any] = {}
    for s in manifest.settings:
        value = s.default
        if s.key in stored:
            value = coerce(manifest.name, s, stored[s.key], source="stored")
        if (name := env_key(manifest.name, s.key)) in env:
            value = coerce(manifest.name, s, env[name], source=name)
        out[s.key] = value
    return out


def explicit(manifest: Manifest, stored: Mapping[str, Any], env: Mapping[str, str]) -> frozenset[str]:
    """The keys the user set (stored or in the environment) rather than left at their default (pure)."""
    return frozenset(
        s.key for s in manifest.settings if s.key in stored or env_key(manifest.name, s.key) in env
    )


def display(setting: Setting, value: Any) -> str:
    """A value as shown to users: secrets are never printed."""
    if setting.secret:
        return "********" if value else ""
    return json.dumps(value)


async def load_stored(conn: asyncpg.Connection, module: str) -> dict[str, Any]:
    rows = await conn.fetch("SELECT key, value FROM host.settings WHERE module = $1", module)
    return {r["key"]: r["value"] for r in rows}


async def store(conn: asyncpg.Connection, manifest: Manifest, key: str, raw: str) -> Any:
    """Validate, then persist; an invalid value stores nothing. Running hosts hear of it (a trigger
    notifies `host.live.CHANNEL`) and apply it."""
    value = coerce(manifest.name, manifest.setting(key), raw)
    await conn.execute(
        """INSERT INTO host.settings (module, key, value) VALUES ($1, $2, $3)
           ON CONFLICT (module, key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()""",
        manifest.name,
        key,
        value,
    )
    return value


async def reset(conn: asyncpg.Connection, manifest: Manifest, key: str) -> bool:
    """Forget the stored value (the default applies again); False when none was stored."""
    manifest.setting(key)
    return bool(
        await conn.fetchval(
            "DELETE FROM host.settings WHERE module = $1 AND key = $2 RETURNING true", manifest.name, key
        )
    )
