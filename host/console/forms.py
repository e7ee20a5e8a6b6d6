"""Settings forms generated from a manifest (pure): one typed field per Setting, and validating what a
browser sent back with the same rules as `feedeater settings set` (host.settings.coerce)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from host.errors import UserError
from host.module import Manifest, Setting
from host.settings import coerce, env_key


@dataclass(frozen=True, slots=True)
class Field:
    setting: Setting
    widget: str  # checkbox, number, select, text, password
    value: str  # what the input shows (never a secret)
    env: str | None  # the environment variable that overrides it (then read-only here)
    error: str | None = None

    @property
    def step(self) -> str:
        return "1" if self.setting.type == "int" else "any"


def _widget(s: Setting) -> str:
    if s.secret:
        return "password"
    return {"bool": "checkbox", "int": "number", "float": "number", "choice": "select"}.get(s.type, "text")


def _shown(s: Setting, value: Any) -> str:
    if s.secret:
        return ""
    if s.type == "bool":
        return "true" if value else "false"
    return "" if value is None else str(value)


def fields(
    manifest: Manifest,
    current: Mapping[str, Any],
    env: Mapping[str, str],
    *,
    submitted: Mapping[str, str] | None = None,
    errors: Mapping[str, str] | None = None,
) -> list[Field]:
    """The form: current values, or what was submitted when it is shown again with errors."""
    out = []
    for s in manifest.settings:
        key = env_key(manifest.name, s.key)
        value = _shown(s, current.get(s.key, s.default))
        if submitted is not None and not s.secret and s.key in submitted:
            value = submitted[s.key]
        out.append(Field(s, _widget(s), value, key if key in env else None, (errors or {}).get(s.key)))
    return out


def read(manifest: Manifest, form: Mapping[str, str]) -> dict[str, str]:
    """The raw values a browser sent: an unchecked checkbox sends nothing, which means false."""
    raw = {}
    for s in manifest.settings:
        if s.type == "bool" and not s.secret:
            raw[s.key] = "true" if form.get(s.key) in ("true", "on") else "false"
        elif s.key in form:
            raw[s.key] = form[s.key]
    return raw


def validate(
    manifest: Manifest, current: Mapping[str, Any], env: Mapping[str, str], raw: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """(changes to store as raw strings, errors by key). Settings set in the environment are skipped; an
    empty secret keeps the stored one (secrets are write-only: the form never shows them)."""
    changes: dict[str, str] = {}
    errors: dict[str, str] = {}
    for s in manifest.settings:
        if s.key not in raw or env_key(manifest.name, s.key) in env:
            continue
        text = raw[s.key] if s.secret else raw[s.key].strip()
        if s.secret and text == "":
            continue
        try:
            value = coerce(manifest.name, s, text)
        except UserError as exc:
            errors[s.key] = exc.message.split(": ", 1)[-1]
            continue
        if value != current.get(s.key, s.default):
            changes[s.key] = text
    for key in list(changes):
        problem = _redirects_secret(manifest, manifest.setting(key), current, env, raw)
        if problem:
            errors[key] = problem
            del changes[key]
    return changes, errors


def _redirects_secret(
    manifest: Manifest, s: Setting, current: Mapping[str, Any], env: Mapping[str, str], raw: Mapping[str, str]
) -> str | None:
    """Why this change of an address would send a stored secret somewhere new (None: it would not)."""
    if not s.receives:
        return None
    secret_env = env_key(manifest.name, s.receives)
    if secret_env in env:
        return (
            f"{s.receives} comes from {secret_env}, and this address receives it: "
            f"set {env_key(manifest.name, s.key)} in the environment too"
        )
    if current.get(s.receives) and not raw.get(s.receives):
        return f"this address receives {s.receives}: enter {s.receives} again to change it"
    return None
