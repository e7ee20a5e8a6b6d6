"""The digest module: bus articles → layered dedup → importance → topic clusters → scheduled digests.

Data flow (seed 002 steps 3–6): intake (subscription) → dedup → store; on schedule or `digest build`:
score → cluster → assemble → store + publish. See CLAUDE.md and README "Digests".
"""

from __future__ import annotations

import argparse
from typing import Any

from host.migrate import builtin
from host.module import Job, Manifest, ModuleContext, ModuleSpec, Routes, Subscription, lazy
from modules.digest.settings import SETTINGS

# Handlers load on first use: the pipeline imports scikit-learn (seconds), and every command discovers modules.
_handle = lazy("modules.digest.intake.handler:handle")


def _cli(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from modules.digest import cli

    cli.register(sub)


async def _console(ctx: ModuleContext) -> Any:
    from modules.digest.console import pages

    return await pages.build(ctx)


MANIFEST = Manifest(
    name="digest",
    version="0.1.0",
    description="Cross-source dedup, importance, topic clusters and scheduled digests from bus messages",
    jobs=(
        Job(
            "scheduled",
            lazy("modules.digest.deliver.job:run_scheduled"),
            "5m",
            "build the scheduled digests that are due",
        ),
    ),
    subscriptions=(
        Subscription(
            "created",
            "feedeater.*.messageCreated",
            _handle,
            max_deliver=3,
            description="every module's new messages → articles with their dedup disposition",
            batch=True,
        ),
        Subscription(
            "updated",
            "feedeater.*.messageUpdated",
            _handle,
            max_deliver=3,
            description="revisions (layer 1: same id, new content hash)",
            batch=True,
        ),
    ),
    routes=(
        Routes("api", lazy("modules.digest.api:build"), description="REST API v1: dedup decisions, clusters"),
        Routes("console", _console, prefix="/digest", pages=(("Digests", "/digests"),)),
    ),
    settings=SETTINGS,
    events=("messageCreated", "contextUpdated"),
    migrations=builtin("digest"),
)

MODULE = ModuleSpec(manifest=MANIFEST, cli=_cli)
