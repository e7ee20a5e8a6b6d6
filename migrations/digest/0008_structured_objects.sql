-- Digests stored before this migration hold `structured` as a JSON string (the object was encoded twice:
-- once by the caller, once by the connection's jsonb codec). Unwrap them into objects, so the next digest
-- of a type can read the previous one's topics (trends) and `digest show --format json` prints an object.
UPDATE mod_digest.digests
SET structured = (structured #>> '{}')::jsonb
WHERE jsonb_typeof(structured) = 'string';
