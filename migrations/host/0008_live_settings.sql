-- Live settings (host/livesettings.py): every change to host.settings, by whatever writes it (the CLI, the
-- console, SQL), notifies the running hosts on channel `feedeater_settings` with the module's name; each
-- host re-reads that module's settings and applies them.
CREATE FUNCTION host.settings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('feedeater_settings', COALESCE(NEW.module, OLD.module));
    RETURN NULL;
END
$$;
CREATE TRIGGER settings_changed AFTER INSERT OR UPDATE OR DELETE ON host.settings
    FOR EACH ROW EXECUTE FUNCTION host.settings_changed();

-- One row per running host (`feedeater run`), refreshed every few seconds while it listens for setting
-- changes and deleted when it stops: what `settings set`, `status`, /healthz and the console report.
CREATE TABLE host.hosts (
    host_id         text PRIMARY KEY,
    started_at      timestamptz NOT NULL,
    seen_at         timestamptz NOT NULL DEFAULT now(),   -- a row older than a minute is a dead host
    settings_at     timestamptz,                          -- when it last re-read the stored settings
    restart_needed  text[] NOT NULL DEFAULT '{}',         -- "module.key" changed since it started that
                                                          -- apply only in a new process
    env_overrides   text[] NOT NULL DEFAULT '{}',         -- "module.key" its environment sets (wins)
    settings_error  text                                  -- a stored value it refused (kept the old one)
);
