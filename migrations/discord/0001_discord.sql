-- The Discord module: which rss feed goes to which channel, what is waiting to be posted, what was posted.
CREATE SCHEMA IF NOT EXISTS mod_discord;

-- One rss feed posted to one channel. `id` is the number users see in /feed list and /feed remove.
CREATE TABLE mod_discord.subscriptions (
    id            bigserial PRIMARY KEY,
    guild_id      bigint NOT NULL,
    channel_id    bigint NOT NULL,
    feed_id       bigint NOT NULL,           -- mod_rss.public_feeds.id (no FK: another module's schema)
    feed_url      text NOT NULL,
    name          text NOT NULL,
    icon_url      text,
    added_by      bigint,
    created_at    timestamptz NOT NULL DEFAULT now(),
    paused_at     timestamptz,               -- channel gone or permission revoked: nothing is posted
    paused_reason text,
    gone_notified boolean NOT NULL DEFAULT false,  -- the channel was told once that the feed is 410 Gone
    UNIQUE (guild_id, channel_id, feed_id)
);
CREATE INDEX subscriptions_by_feed ON mod_discord.subscriptions (feed_id);

-- Items waiting to be posted, filled by the bus subscription, drained oldest first by the poster.
CREATE TABLE mod_discord.outgoing (
    subscription_id bigint NOT NULL REFERENCES mod_discord.subscriptions (id) ON DELETE CASCADE,
    guid            text NOT NULL,
    item            jsonb NOT NULL,
    sort_at         timestamptz NOT NULL,    -- published, else when it was queued
    queued_at       timestamptz NOT NULL DEFAULT now(),
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text,
    PRIMARY KEY (subscription_id, guid)
);
CREATE INDEX outgoing_oldest ON mod_discord.outgoing (subscription_id, sort_at, guid);

-- What reached a channel (message_id) or was already there when the feed was added (message_id NULL).
CREATE TABLE mod_discord.posted_items (
    feed_id    bigint NOT NULL,
    channel_id bigint NOT NULL,
    guid       text NOT NULL,
    message_id bigint,
    posted_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (feed_id, channel_id, guid)
);
CREATE INDEX posted_items_age ON mod_discord.posted_items (posted_at);
