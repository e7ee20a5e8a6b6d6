-- WebSub subscriptions (push) and RFC 5005 archive walks (backfill).

-- One subscription per feed. A removed feed keeps its row (feed_id NULL, state 'unsubscribing') until
-- the hub confirms the unsubscribe at the callback or the confirmation window passes.
CREATE TABLE mod_rss.websub (
    id              bigserial PRIMARY KEY,
    feed_id         bigint UNIQUE REFERENCES mod_rss.feeds (id) ON DELETE SET NULL,
    token           text NOT NULL UNIQUE,           -- the callback path segment (random, unguessable)
    hub             text NOT NULL,
    topic           text NOT NULL,
    callback        text NOT NULL,                  -- <websub_callback_base>/websub/<token> as sent to the hub
    secret          text NOT NULL,                  -- hub.secret: pushes are HMAC-signed with it
    state           text NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'active', 'failed', 'unsubscribing')),
    requested_at    timestamptz NOT NULL DEFAULT now(),  -- last (re)subscribe or unsubscribe request
    verified_at     timestamptz,
    lease_seconds   integer,
    expires_at      timestamptz,                    -- verified_at + lease: polling resumes after it
    renew_at        timestamptz,                    -- when the renew job asks the hub again
    last_push_at    timestamptz,
    pushes          bigint NOT NULL DEFAULT 0,
    rejected_pushes bigint NOT NULL DEFAULT 0,      -- unsigned or wrongly signed
    last_error      text,
    lease_until     timestamptz,                    -- work-queue lease of the renew job
    leased_by       text,
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX websub_renew_due ON mod_rss.websub (renew_at) WHERE state = 'active';

-- One archive walk per feed: `next_url` is the page still to fetch, so a walk interrupted by a crash
-- or an error resumes where it stopped.
CREATE TABLE mod_rss.backfill (
    feed_id         bigint PRIMARY KEY REFERENCES mod_rss.feeds (id) ON DELETE CASCADE,
    rel             text NOT NULL,                  -- the relation followed: prev-archive, next or previous
    next_url        text,                           -- NULL once finished
    state           text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'done', 'failed')),
    pages_done      integer NOT NULL DEFAULT 0,
    max_pages       integer NOT NULL,
    entries_new     integer NOT NULL DEFAULT 0,
    visited         text[] NOT NULL DEFAULT '{}',   -- page URLs already walked (loops end the walk)
    due_at          timestamptz NOT NULL DEFAULT now(),
    attempts        integer NOT NULL DEFAULT 0,     -- consecutive failures of the current page
    last_error      text,
    lease_until     timestamptz,
    leased_by       text,
    requested_at    timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz
);
CREATE INDEX backfill_due ON mod_rss.backfill (due_at) WHERE state = 'queued';
