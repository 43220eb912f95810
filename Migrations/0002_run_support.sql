-- 0002_run_support: what `clawback run` needs beyond the tables of 0001.

-- The shard of a transaction: md5-based, so it is the same on every PostgreSQL version and every machine
-- (hashtext is not guaranteed stable across major versions). Shards 0..n-1 of one window partition it.
CREATE FUNCTION clawback.shard_of(p_transaction_id text, p_shard_count integer) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ((('x' || substr(md5(p_transaction_id), 1, 8))::bit(32)::bigint) % p_shard_count)::integer
$$;

-- The refund-history strategy asks Apple per customer; the revision Apple returns lets the next run ask
-- only for refunds since. Keyed by app, environment and the customer's anchor transaction.
CREATE TABLE clawback.refund_history_revisions (
    bundle_id      text        NOT NULL,
    environment    text        NOT NULL,
    customer_key   text        NOT NULL,
    revision       text        NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bundle_id, environment, customer_key)
);

CREATE INDEX runs_status_started_at ON clawback.runs (status, started_at DESC);
