-- Feed health over the last 30 days (seed 002 step 4: "successful_polls / total_polls over the last 30
-- days"), for rss_public.feed_health. mod_rss kept only lifetime counters, so polls are now counted per
-- feed and day. A trigger counts them from poll_state itself (every poll, whatever path records it, sets
-- last_polled_at; a failed one also raises total_errors), so no poll code had to change. A 304 counts as
-- a successful poll here, as the seed says; the lifetime `polls_ok` keeps counting parsed 200s only.
CREATE TABLE mod_rss.poll_days (
    feed_id       bigint NOT NULL REFERENCES mod_rss.feeds (id) ON DELETE CASCADE,
    day           date NOT NULL,
    polls_ok      integer NOT NULL DEFAULT 0,
    polls_failed  integer NOT NULL DEFAULT 0,
    PRIMARY KEY (feed_id, day)
);

CREATE FUNCTION mod_rss.count_poll_day() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    failed boolean := NEW.total_errors > OLD.total_errors;
    poll_day date := (NEW.last_polled_at AT TIME ZONE 'UTC')::date;
    first_of_day boolean;
BEGIN
    INSERT INTO mod_rss.poll_days AS d (feed_id, day, polls_ok, polls_failed)
    VALUES (NEW.feed_id, poll_day, CASE WHEN failed THEN 0 ELSE 1 END, CASE WHEN failed THEN 1 ELSE 0 END)
    ON CONFLICT (feed_id, day) DO UPDATE
        SET polls_ok = d.polls_ok + EXCLUDED.polls_ok, polls_failed = d.polls_failed + EXCLUDED.polls_failed
    RETURNING (xmax = 0) INTO first_of_day;
    IF first_of_day THEN  -- once per feed and day: forget the days no view looks at any more
        DELETE FROM mod_rss.poll_days WHERE feed_id = NEW.feed_id AND poll_days.day < poll_day - 31;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER poll_state_count_poll_day
    AFTER UPDATE OF last_polled_at ON mod_rss.poll_state
    FOR EACH ROW
    WHEN (NEW.last_polled_at IS NOT NULL AND NEW.last_polled_at IS DISTINCT FROM OLD.last_polled_at)
    EXECUTE FUNCTION mod_rss.count_poll_day();

-- The public view keeps every column it had (other modules read them) and adds the 30-day ones at the end.
CREATE OR REPLACE VIEW rss_public.feed_health AS
SELECT f.id                                   AS feed_id,
       f.title                                AS title,
       f.url                                  AS url,
       f.site_url                             AS site_url,
       f.folder                               AS folder,
       COALESCE(p.successful_polls, 0)        AS polls_ok,
       COALESCE(p.total_errors, 0)            AS polls_failed,
       CASE WHEN COALESCE(p.successful_polls, 0) + COALESCE(p.total_errors, 0) = 0 THEN 1.0
            ELSE p.successful_polls::double precision / (p.successful_polls + p.total_errors)
       END                                    AS health,
       COALESCE(p.consecutive_errors, 0)      AS consecutive_errors,
       p.last_success_at                      AS last_success_at,
       p.last_error                           AS last_error,
       f.dead                                 AS dead,
       f.stale                                AS stale,
       f.enabled                              AS enabled,
       COALESCE(m.ok, 0)::integer             AS polls_ok_30d,
       COALESCE(m.failed, 0)::integer         AS polls_failed_30d,
       CASE WHEN COALESCE(m.ok, 0) + COALESCE(m.failed, 0) = 0 THEN 1.0
            ELSE m.ok::double precision / (m.ok + m.failed)
       END                                    AS health_30d
FROM mod_rss.feeds f
LEFT JOIN mod_rss.poll_state p ON p.feed_id = f.id
LEFT JOIN LATERAL (
    SELECT sum(d.polls_ok) AS ok, sum(d.polls_failed) AS failed
    FROM mod_rss.poll_days d
    WHERE d.feed_id = f.id AND d.day > (now() AT TIME ZONE 'UTC')::date - 30
) m ON true;
COMMENT ON VIEW rss_public.feed_health IS
    'Public interface of the rss module: per-feed poll health (lifetime counters, and *_30d over the last '
    '30 days with 304s as successes), for other modules (read only).';
