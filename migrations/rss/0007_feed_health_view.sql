-- Public interface of the rss module for other modules (documented in docs/bus.md, "Public views"):
-- one row per feed with its poll health. Other modules read this view, never mod_rss's tables.
-- `health` = successful polls / (successful + failed polls), 1.0 before the first poll. The counters are
-- lifetime counters (mod_rss keeps no per-poll history); 304s are not counted as polls.
CREATE VIEW mod_rss.feed_health AS
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
       f.enabled                              AS enabled
FROM mod_rss.feeds f
LEFT JOIN mod_rss.poll_state p ON p.feed_id = f.id;
