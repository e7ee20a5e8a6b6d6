"""mod_rss storage: only writes and reads rows; decisions are made before it is called.

`store.X` is the module's storage API; the submodules group it by table family.
"""

from modules.rss.store.entries import delete_entry, expire_entries, known_raw_hashes, load_known, write
from modules.rss.store.feeds import (
    EDITABLE,
    EDITABLE_BOUNDS,
    EDITABLE_FLAGS,
    FEED_COLUMNS,
    Claim,
    FeedRow,
    add_feed,
    claim_due,
    claim_feeds,
    feed_counts,
    finish_poll,
    finish_polls,
    get_feed,
    list_feeds,
    poll_soon,
    remove_feed,
    renew_leases,
    retry_blocked,
    update_feed,
    update_feed_meta,
)
from modules.rss.store.raw import RawSaved, delete_orphan_blobs, get_raw, mark_parse_error, save_raw
from modules.rss.store.reading import get_entry, list_entries, mark_entries

__all__ = [
    "EDITABLE",
    "EDITABLE_BOUNDS",
    "EDITABLE_FLAGS",
    "FEED_COLUMNS",
    "Claim",
    "FeedRow",
    "RawSaved",
    "add_feed",
    "claim_due",
    "claim_feeds",
    "delete_entry",
    "delete_orphan_blobs",
    "expire_entries",
    "feed_counts",
    "finish_poll",
    "finish_polls",
    "get_entry",
    "get_feed",
    "get_raw",
    "known_raw_hashes",
    "list_entries",
    "list_feeds",
    "load_known",
    "mark_entries",
    "mark_parse_error",
    "poll_soon",
    "remove_feed",
    "renew_leases",
    "retry_blocked",
    "save_raw",
    "update_feed",
    "update_feed_meta",
    "write",
]
