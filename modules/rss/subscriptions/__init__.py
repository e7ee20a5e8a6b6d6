"""Subscriptions: adding feeds (validation, discovery) and OPML import/export."""
