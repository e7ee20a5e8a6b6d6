-- Per-feed circuit breaker (seed 001 §7) and the size a 304 saves (seed 001 §4.9).
-- circuit_history: bit i set = the (i+1)-th most recent poll failed (host/breaker.py); circuit_opens:
-- openings since the last success (each doubles the cool-down). last_wire_bytes: the last 200 body as
-- received (compressed), what the next 304 saves.
ALTER TABLE mod_rss.poll_state
    ADD COLUMN circuit           text NOT NULL DEFAULT 'closed' CHECK (circuit IN ('closed', 'open')),
    ADD COLUMN circuit_history   integer NOT NULL DEFAULT 0,
    ADD COLUMN circuit_opens     integer NOT NULL DEFAULT 0,
    ADD COLUMN circuit_opened_at timestamptz,
    ADD COLUMN last_wire_bytes   integer;
