"""When to subscribe, renew and give up on a hub (pure)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from modules.rss.store.websub import Current

if TYPE_CHECKING:  # `rss show` reads subscriptions without loading the parser that discovery uses
    from modules.rss.websub.discover import Push

RENEW_MARGIN = 0.2  # renew once 80 % of the lease has passed …
RENEW_MARGIN_CAP_S = 86400.0  # … but never more than a day early


def should_subscribe(current: Current | None, push: Push, *, now: datetime, retry_after_s: float) -> bool:
    """Subscribe when nothing is stored, when the feed moved to another hub or topic, or when the last
    attempt failed long enough ago; a pending or active subscription at the same hub is left alone."""
    if current is None:
        return True
    if current.topic != push.topic or current.hub not in push.hubs:
        return current.state != "failed" or _waited(current, now, retry_after_s)
    return current.state == "failed" and _waited(current, now, retry_after_s)


def renew_at(verified_at: datetime, lease_s: float) -> datetime:
    """Ask again well before the lease ends, so a slow or briefly failing hub still has time."""
    return verified_at + timedelta(seconds=lease_s - min(lease_s * RENEW_MARGIN, RENEW_MARGIN_CAP_S))


def _waited(current: Current, now: datetime, retry_after_s: float) -> bool:
    return now - current.updated_at >= timedelta(seconds=retry_after_s)
