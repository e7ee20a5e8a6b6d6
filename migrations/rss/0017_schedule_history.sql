-- The scheduler's recent decisions per feed, for the console's feed page: when each poll happened, what it
-- answered and what the schedule decided from it (interval, EWMA, reason, next poll). poll_state keeps only
-- the latest decision. A ring of the last 20 polls per feed, written by a trigger from poll_state itself
-- (every poll, whatever path records it, sets last_polled_at), so no poll code changed and storage stays
-- bounded: 20 rows a feed, overwritten in place (slot = polls % 20), no deletes and nothing to clean up.
ALTER TABLE mod_rss.poll_state ADD COLUMN polls bigint NOT NULL DEFAULT 0;

CREATE TABLE mod_rss.schedule_log (
    feed_id       bigint NOT NULL REFERENCES mod_rss.feeds (id) ON DELETE CASCADE,
    slot          smallint NOT NULL,
    seq           bigint NOT NULL,            -- the feed's poll number (poll_state.polls)
    polled_at     timestamptz NOT NULL,
    status        integer,                    -- HTTP status; NULL when no response came (network error)
    error         text,                       -- set when this poll failed
    interval_s    double precision,
    ewma_s        double precision,
    reason        text,
    next_poll_at  timestamptz NOT NULL,
    PRIMARY KEY (feed_id, slot)
);

CREATE FUNCTION mod_rss.log_schedule_decision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.polls := OLD.polls + 1;
    INSERT INTO mod_rss.schedule_log AS s
        (feed_id, slot, seq, polled_at, status, error, interval_s, ewma_s, reason, next_poll_at)
    VALUES (NEW.feed_id, NEW.polls % 20, NEW.polls, NEW.last_polled_at, NEW.last_status,
            CASE WHEN NEW.total_errors > OLD.total_errors THEN NEW.last_error END,
            NEW.interval_s, NEW.ewma_s, NEW.interval_reason, NEW.next_poll_at)
    ON CONFLICT (feed_id, slot) DO UPDATE
        SET seq = EXCLUDED.seq, polled_at = EXCLUDED.polled_at, status = EXCLUDED.status,
            error = EXCLUDED.error, interval_s = EXCLUDED.interval_s, ewma_s = EXCLUDED.ewma_s,
            reason = EXCLUDED.reason, next_poll_at = EXCLUDED.next_poll_at;
    RETURN NEW;
END $$;

CREATE TRIGGER poll_state_log_schedule_decision
    BEFORE UPDATE OF last_polled_at ON mod_rss.poll_state
    FOR EACH ROW
    WHEN (NEW.last_polled_at IS NOT NULL AND NEW.last_polled_at IS DISTINCT FROM OLD.last_polled_at)
    EXECUTE FUNCTION mod_rss.log_schedule_decision();
