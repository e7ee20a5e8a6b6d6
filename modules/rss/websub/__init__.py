"""WebSub (W3C) subscriber: hubs push new feed content to our callback instead of us polling for it.

discover.py finds hub and topic (feed links, HTTP Link headers); lease.py decides when to (re)subscribe
and renew (pure); client.py talks to hubs; subscribe.py ties discovery to storage and the hub; routes.py
is the callback (intent verification, signed content); signature.py checks X-Hub-Signature; push.py turns
pushed bodies into entries through the one body path (ingest/document.py); renew.py is the job; hook.py
is WebSub's part in every poll (subscribe after a fetch, polls as safety checks while pushes come).
"""
