"""The test kit for feedeater modules, installed with the host: real PostgreSQL+pgvector and NATS JetStream
fixtures (host.testing.plugin, loaded by pytest through the `pytest11` entry point), hosts in this process
(`running`) or as `feedeater run` processes (`HostProcess`: start, `wait_ready`, `stop`, `kill`), a local
feed server (`FeedServer`, `rss`, `ago`), what reached the bus (`BusReader`), `publish_event` to hand a
module an event and `until` to wait for its effect. docs/modules.md "Testing a module" shows them in use.
"""

from host.testing.feedserver import BackgroundHTTPServer, FeedServer, Item, Route, ago, rss, self_signed_tls
from host.testing.services import (
    FEEDEATER,
    BusReader,
    HostProcess,
    admin_url,
    feedeater,
    feedeater_env,
    fresh_database,
    health,
    make_host,
    module_installed,
    pending_events,
    publish_event,
    reset_stream,
    running,
    until,
)

__all__ = [
    "FEEDEATER",
    "BackgroundHTTPServer",
    "BusReader",
    "FeedServer",
    "HostProcess",
    "Item",
    "Route",
    "admin_url",
    "ago",
    "feedeater",
    "feedeater_env",
    "fresh_database",
    "health",
    "make_host",
    "module_installed",
    "pending_events",
    "publish_event",
    "reset_stream",
    "rss",
    "running",
    "self_signed_tls",
    "until",
]
