"""The digest module's REST API v1 (mounted under /api/v1): dedup decisions as `digest article|cluster|explain`
show them, read through the same store functions (modules/digest/store/inspect.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel

from host.errors import UserError
from host.module import ModuleContext
from host.web.errors import not_found
from modules.digest.store import inspect

BIGINT = 2**63 - 1
Ref = Annotated[
    str, Path(description="an article id (a digest item's `article_id`) or the source's message id")
]


class Check(BaseModel):
    """One layer's comparison of two articles: the measure, the rule, whether it passes."""

    layer: str
    value: str
    rule: str
    passed: bool


class ArticleRef(BaseModel):
    id: int
    message_id: str
    title: str
    source_name: str
    url: str | None
    guid: str | None
    published_at: datetime
    disposition: str
    layer: str
    match_score: float | None
    matched_id: int | None
    cluster_id: int
    event_id: int
    word_count: int
    revision: int
    domain: str


class DecisionRecord(BaseModel):
    decided_at: datetime
    revision: int
    disposition: str
    layer: str
    score: float | None
    matched_id: int | None
    cluster_id: int
    event_id: int
    candidates: int | None
    details: list[Check]


class ArticleDetail(ArticleRef):
    """An article's current dedup decision with the checks behind it, its match, story and event, and
    every decision taken about it (oldest first)."""

    canonical_url: str | None
    content_hash: str
    text_hash: str | None
    markers: list[str]
    entities: list[str]
    title_words: int
    received_at: datetime
    updated_at: datetime
    cluster_size: int
    event_stories: int
    candidates: int | None
    details: list[Check]
    matched: ArticleRef | None
    event_links: list[ArticleRef]
    history: list[DecisionRecord]


class EventStory(ArticleRef):
    size: int


class Cluster(BaseModel):
    """A story cluster: its articles (how each joined), the one a digest shows, the event's other stories."""

    cluster_id: int
    event_id: int
    representative: int
    articles: list[ArticleRef]
    event_stories: list[EventStory]


class Side(BaseModel):
    id: int
    title: str
    source: str


class Explanation(BaseModel):
    a: Side
    b: Side
    same_story: bool
    same_event: bool
    checks: list[Check]


async def _resolve(conn: Any, ref: str) -> int:
    try:
        return await inspect.resolve(conn, ref)
    except UserError as exc:
        raise not_found(f"article {ref!r}", inspect.FIX) from exc


async def build(ctx: ModuleContext) -> APIRouter:
    router = APIRouter(prefix="/digest", tags=["digest"])

    @router.get(
        "/articles/{ref}", summary="An article's dedup decision and its history (as `digest article`)"
    )
    async def article(ref: Ref) -> ArticleDetail:
        async with ctx.pool.acquire() as conn:
            return ArticleDetail.model_validate(await inspect.article(conn, await _resolve(conn, ref)))

    @router.get(
        "/clusters/{cluster_id}", summary="A story cluster and why each article joined (as `digest cluster`)"
    )
    async def cluster(cluster_id: Annotated[int, Path(ge=1, le=BIGINT)]) -> Cluster:
        async with ctx.pool.acquire() as conn:
            try:
                return Cluster.model_validate(await inspect.cluster(conn, cluster_id))
            except UserError as exc:
                raise not_found(f"story cluster {cluster_id}", "an article's cluster_id names one") from exc

    @router.get("/explain", summary="How every dedup layer compares two articles (as `digest explain`)")
    async def explain(
        a: Annotated[str, Query(description="article id or message id")],
        b: Annotated[str, Query(description="article id or message id")],
    ) -> Explanation:
        async with ctx.pool.acquire() as conn:
            first, second = await _resolve(conn, a), await _resolve(conn, b)
            return Explanation.model_validate(await inspect.explain(conn, first, second))

    return router
