"""The rss module's use cases, in one place for every front door (the CLI, the REST API, the console, the
reader-app APIs, the NATS search service): feeds.py (subscribe, remove, change, fetch now, OPML, a feed's
state), entries.py (pages, marks, why), search.py; models.py and cursor.py are the shapes they share.

A front door parses its input, calls these and shapes the answer; it never imports another front door.
"""
