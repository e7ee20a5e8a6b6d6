"""The rss module's REST API (`/api/v1/...`): a thin typed edge over store, subscriptions and search."""
