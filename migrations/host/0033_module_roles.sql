-- Least privilege (issue 23 item 7): module connections run as `feedeater_mod_<name>` (host/roles.py),
-- which has no rights on host tables. What a module legitimately writes there from inside its own
-- transaction goes through these functions, which run as the host (SECURITY DEFINER) and check that the
-- caller writes only for its own module: events under `feedeater.<module>.`, its contexts, its
-- subscriptions' processed ids, its job runs. Granted to the module roles at migrate (host/roles.py);
-- the host's own connections (no module role) may write for any module.

-- The module whose role is calling (NULL for the host): a role logged in directly, or set with SET ROLE
-- (inside a SECURITY DEFINER function current_user is the owner, but session_user and the `role`
-- setting still name the caller).
CREATE FUNCTION host.calling_module() RETURNS text LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp AS $$
    SELECT substr(r, 15) FROM (VALUES (session_user::text), (current_setting('role'))) AS caller(r)
    WHERE r LIKE 'feedeater\_mod\_%' LIMIT 1
$$;

CREATE FUNCTION host.require_module(owner text, what text) RETURNS void LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    caller text := host.calling_module();
BEGIN
    IF caller IS NOT NULL AND caller IS DISTINCT FROM owner THEN
        RAISE EXCEPTION 'module % may not write %', caller, what USING ERRCODE = 'insufficient_privilege';
    END IF;
END $$;

-- ctx.emit: events (and MessageCreated's context links) in the caller's transaction; the new ids.
CREATE FUNCTION host.enqueue_events(
    ids uuid[], subjects text[], payloads bytea[],
    link_ids uuid[], link_owners text[], link_keys text[], link_times timestamptz[]
) RETURNS uuid[] LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    caller text := host.calling_module();
    bad text;
    fresh uuid[];
BEGIN
    IF caller IS NOT NULL THEN
        SELECT s INTO bad FROM unnest(subjects) AS s
        WHERE left(s, length(caller) + 11) IS DISTINCT FROM 'feedeater.' || caller || '.' LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'module % may not emit %', caller, bad USING ERRCODE = 'insufficient_privilege';
        END IF;
        SELECT o INTO bad FROM unnest(link_owners) AS o WHERE o IS DISTINCT FROM caller LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'module % may not link messages to contexts of %', caller, bad
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    END IF;
    WITH added AS (
        INSERT INTO host.outbox (event_id, subject, payload)
        SELECT * FROM unnest(ids, subjects, payloads)
        ON CONFLICT (event_id) DO NOTHING RETURNING event_id
    ) SELECT coalesce(array_agg(event_id), '{}') INTO fresh FROM added;
    INSERT INTO host.context_messages (message_id, owner_module, source_key, created_at)
    SELECT m, o, k, t FROM unnest(link_ids, link_owners, link_keys, link_times) AS x(m, o, k, t)
    WHERE m = ANY (fresh)
    ON CONFLICT (message_id) DO NOTHING;
    IF cardinality(fresh) > 0 THEN
        PERFORM pg_notify('feedeater_outbox', '');
    END IF;
    RETURN fresh;
END $$;

-- A subscription's processed ids, in its handler's transaction; the ids not processed before.
CREATE FUNCTION host.mark_processed(consumer text, ids text[]) RETURNS text[] LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    fresh text[];
BEGIN
    PERFORM host.require_module(split_part(consumer, '.', 1), 'processed events of ' || consumer);
    WITH added AS (
        INSERT INTO host.processed_events (consumer, event_id) SELECT consumer, unnest(ids)
        ON CONFLICT DO NOTHING RETURNING event_id
    ) SELECT coalesce(array_agg(event_id), '{}') INTO fresh FROM added;
    RETURN fresh;
END $$;

-- host/contexts.update: the new version of a module's context.
CREATE FUNCTION host.put_context(
    owner text, key text, short text, long text, points jsonb, emb vector, extra jsonb, message uuid,
    at timestamptz
) RETURNS integer LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v integer;
BEGIN
    PERFORM host.require_module(owner, 'contexts of ' || owner);
    INSERT INTO host.contexts (owner_module, source_key, summary_short, summary_long, key_points,
                               embedding, meta, version, message_id, updated_at)
    VALUES (owner, key, short, long, points, emb, extra, 1, message, at)
    ON CONFLICT (owner_module, source_key) DO UPDATE SET
        summary_short = EXCLUDED.summary_short, summary_long = EXCLUDED.summary_long,
        key_points = EXCLUDED.key_points, embedding = EXCLUDED.embedding, meta = EXCLUDED.meta,
        version = host.contexts.version + 1, message_id = EXCLUDED.message_id, updated_at = EXCLUDED.updated_at
    RETURNING version INTO v;
    RETURN v;
END $$;

-- host/jobs.run_job: a run starts, shows its progress, ends.
CREATE FUNCTION host.job_run_start(owner text, job_name text, host text, how text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    run bigint;
BEGIN
    PERFORM host.require_module(owner, 'job runs of ' || owner);
    INSERT INTO host.job_runs (module, job, host_id, trigger, status) VALUES (owner, job_name, host, how, 'running')
    RETURNING id INTO run;
    RETURN run;
END $$;

-- `outcome` NULL: progress of a running run (metrics only); else its end.
CREATE FUNCTION host.job_run_record(run bigint, outcome text, failure text, figures jsonb) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM host.require_module((SELECT module FROM host.job_runs WHERE id = run), 'job run ' || run);
    IF outcome IS NULL THEN
        UPDATE host.job_runs SET metrics = figures WHERE id = run AND status = 'running';
    ELSE
        UPDATE host.job_runs SET finished_at = now(), status = outcome, error = failure, metrics = figures
        WHERE id = run;
    END IF;
END $$;

REVOKE EXECUTE ON FUNCTION host.enqueue_events, host.mark_processed, host.put_context, host.job_run_start,
    host.job_run_record FROM PUBLIC;
