"""The Discord module (CordFeeder): rss feeds posted to Discord channels, managed with /feed commands.

Data flow: /feed add → rss subscribe (validate, store) → rss polls → feedeater.rss.messageCreated →
`post.on_message_created` queues it per subscribed channel → the bot service posts it as an embed.
"""

from __future__ import annotations

from host import validate
from host.migrate import builtin
from host.module import Job, Manifest, ModuleSpec, Service, Setting, Subscription, lazy

MANIFEST = Manifest(
    name="discord",
    version="0.1.0",
    description="posts rss entries to Discord channels; /feed slash commands manage the subscriptions",
    jobs=(
        Job(
            "prune",
            lazy("modules.discord.post:prune"),
            "41 3 * * *",
            "forget posted items older than retention_days",
        ),
    ),
    services=(
        Service(
            "bot",
            lazy("modules.discord.bot:run"),
            description="the Discord gateway connection and the poster",
        ),
    ),
    subscriptions=(
        Subscription(
            "entries",
            "feedeater.rss.messageCreated",
            lazy("modules.discord.post:on_message_created"),
            description="queue each new rss entry for the channels subscribed to its feed",
        ),
    ),
    settings=(
        # The bot logs in with these when its service starts: a change restarts the service.
        Setting(
            "bot_token",
            "str",
            "",
            "the bot's token (Developer Portal → Bot); empty = offline",
            secret=True,
            applies="services",
        ),
        Setting("manager_role", "str", "Feed Manager", "role allowed to /feed add, remove and config"),
        Setting(
            "api_base",
            "str",
            "https://discord.com/api/v10",
            "Discord REST API base URL",
            check=validate.url(),
            applies="services",
            receives="bot_token",
        ),
        Setting(
            "gateway_url",
            "str",
            "wss://gateway.discord.gg/",
            "Discord gateway WebSocket URL",
            check=validate.url("wss", "ws"),
            applies="services",
            receives="bot_token",
        ),
        Setting(
            "post_interval_seconds",
            "float",
            30.0,
            "how often the poster looks at the queue (it also wakes when an entry is queued)",
            min=0.1,
            max=3600,
        ),
        Setting(
            "items_per_feed",
            "int",
            5,
            "items a feed posts to a channel per post interval (the rest later)",
            min=1,
            max=50,
        ),
        Setting("retention_days", "int", 90, "posted items are remembered this long", min=1, max=3650),
    ),
    migrations=builtin("discord"),
    enabled_by_default=True,
    requires=("rss",),  # subscribes through rss's public API, posts its messageCreated events
)

MODULE = ModuleSpec(manifest=MANIFEST)
