"""Bus intake: `feedeater.*.messageCreated|messageUpdated` → articles with their dedup disposition."""
