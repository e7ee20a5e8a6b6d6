"""Hybrid search over entries: the query, the NATS responder and the `feedeater search` command."""
