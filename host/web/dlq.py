"""/api/v1/dlq: the dead letters of `feedeater bus dlq` over HTTP (host/dlq.py does the work)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Path, Query

from host import dlq
from host.web.errors import ERROR_RESPONSES, HttpError, not_found

if TYPE_CHECKING:
    from nats.js import JetStreamContext

    from host.module import ModuleContext, ModuleSpec

NAME = r"^[a-z][a-z0-9_]*$"
SEQ = Path(ge=1, le=2**53, description="the dead letter's `seq` (from the list)")


def build(
    js: Callable[[], JetStreamContext | None],
    specs: Mapping[str, ModuleSpec],
    context: Callable[[str], Awaitable[ModuleContext]],
) -> APIRouter:
    """`js()`: the host's JetStream once attached; `specs` and `context` as host.dlq.replay takes them."""
    router = APIRouter(responses=ERROR_RESPONSES)

    def bus() -> JetStreamContext:
        attached = js()
        if attached is None:
            raise HttpError(503, "the bus is not attached yet", "retry in a moment; /healthz says why")
        return attached

    @router.get("/dlq", summary="Dead letters, oldest first (per module and subscription, with the reason)")
    async def list_dead_letters(
        module: str | None = Query(default=None, pattern=NAME, max_length=100),
        subscription: str | None = Query(default=None, pattern=NAME, max_length=100),
        limit: int = Query(default=100, ge=1, le=10000),
    ) -> dict[str, Any]:
        js = bus()
        subject = dlq.filter_subject(module, subscription)
        letters = await dlq.listing(js, subject, limit=limit)
        return {"total": await dlq.count(js, subject), "items": [d.as_dict() for d in letters]}

    @router.get("/dlq/{seq}", summary="One dead letter with its payload")
    async def get_dead_letter(seq: int = SEQ) -> dict[str, Any]:
        return (await _get(bus(), seq)).as_dict(payload=True)

    @router.post(
        "/dlq/{seq}/replay", summary="Hand it to its subscription again (exactly once), then delete it"
    )
    async def replay_dead_letter(seq: int = SEQ) -> dict[str, Any]:
        js = bus()
        await _get(js, seq)
        letter, handled = await dlq.replay(js, seq, specs, context)
        return {"seq": seq, "event_id": letter.event_id, "handled": handled}

    @router.delete("/dlq/{seq}", summary="Delete one dead letter for good")
    async def delete_dead_letter(seq: int = SEQ) -> dict[str, Any]:
        js = bus()
        await _get(js, seq)
        await dlq.delete(js, seq)
        return {"deleted": 1}

    @router.delete("/dlq", summary="Delete every dead letter (of a module, of a subscription) for good")
    async def purge_dead_letters(
        module: str | None = Query(default=None, pattern=NAME, max_length=100),
        subscription: str | None = Query(default=None, pattern=NAME, max_length=100),
    ) -> dict[str, Any]:
        return {"deleted": await dlq.purge(bus(), dlq.filter_subject(module, subscription))}

    return router


async def _get(js: JetStreamContext, seq: int) -> dlq.DeadLetter:
    from host.errors import UserError

    try:
        return await dlq.get(js, seq)
    except UserError as exc:
        raise not_found(f"dead letter {seq}", exc.hint or "") from None
