"""The features that plug into every poll after its fetch, by module name: each has a `HOOK`
(ingest/hooks.py), imported at the first poll. Listed here, apart from ingest and the features, so that
neither imports the other and a new feature plugs in with one line."""

POLL_HOOKS = ("websub.hook", "backfill.hook")
