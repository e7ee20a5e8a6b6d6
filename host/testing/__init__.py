"""The test kit for feedeater modules, installed with the host: real PostgreSQL+pgvector and NATS JetStream
fixtures (host.testing.plugin, loaded by pytest through the `pytest11` entry point), hosts in this process
(`running`) or as `feedeater run` processes (`HostProcess`: start, `wait_ready`, `stop`, `kill`), a local
feed server (`FeedServer`, `rss`, `ago`), what reached the bus (`BusReader`), `publish_event` to hand a
module an event and `until` to wait for its effect. docs/modules.md "Testing a module" shows them in use.
"""

from host.testing import feedserver, services
from host.testing.feedserver import *  # noqa: F403
from host.testing.services import *  # noqa: F403

__all__ = [*feedserver.__all__, *services.__all__]
