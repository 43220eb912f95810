-- 0001_init: the clawback schema.
--
-- Contracts other programs depend on (docs/integrating.md): clawback.grants and clawback.record_grant are
-- written by the game's grant path; clawback.ledger is read (and acknowledged) by the game servers.
-- Applied by `clawback migrate` inside one transaction, recorded with its checksum in
-- clawback.schema_migrations. Never edit this file once released: add a new numbered file instead.

CREATE SCHEMA IF NOT EXISTS clawback;

-- Settings the SQL side itself needs, one row. `clawback migrate` writes the configured values here so
-- that record_grant, which runs inside the game's own transactions, sees the same tail window as the job.
CREATE TABLE clawback.settings (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    -- How old a purchase the grant path may still accept.
    acceptance_window interval NOT NULL DEFAULT interval '30 days' CHECK (acceptance_window > interval '0'),
    -- How far in the future a purchase date may lie (clock skew between Apple, the game and the database).
    future_skew interval NOT NULL DEFAULT interval '5 minutes' CHECK (future_skew >= interval '0'),
    -- How long grants are kept before their monthly partition may be dropped.
    retention interval NOT NULL DEFAULT interval '4 months',
    CHECK (retention >= acceptance_window)
);
INSERT INTO clawback.settings DEFAULT VALUES;

-- Granted transactions, one row per Apple transactionId, range-partitioned by month on purchased_at.
-- purchased_at is Apple's signed purchaseDate: immutable, so a replayed id always lands in the same
-- partition, and a whole month can be forgotten by dropping its partition.
CREATE TABLE clawback.grants (
    transaction_id          text        NOT NULL CHECK (transaction_id <> ''),
    original_transaction_id text        NOT NULL CHECK (original_transaction_id <> ''),
    bundle_id               text        NOT NULL CHECK (bundle_id <> ''),
    product_id              text        NOT NULL CHECK (product_id <> ''),
    environment             text        NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
    player_id               text        NOT NULL CHECK (player_id <> ''),
    app_account_token       uuid,
    quantity                integer     NOT NULL DEFAULT 1 CHECK (quantity > 0),
    units_granted           bigint      NOT NULL CHECK (units_granted >= 0),
    price_milli             bigint      CHECK (price_milli >= 0),
    currency                char(3)     CHECK (currency ~ '^[A-Z]{3}$'),
    storefront              char(3)     CHECK (storefront ~ '^[A-Z]{3}$'),
    purchased_at            timestamptz NOT NULL,
    granted_at              timestamptz NOT NULL DEFAULT now(),
    receipt                 text,
    PRIMARY KEY (transaction_id, purchased_at)
) PARTITION BY RANGE (purchased_at);

COMMENT ON TABLE clawback.grants IS
    'Granted Apple transactions (written by the grant path through clawback.record_grant). Partitioned by month.';
COMMENT ON COLUMN clawback.grants.price_milli IS 'Apple''s price in milliunits for the whole quantity; informational.';
COMMENT ON COLUMN clawback.grants.receipt IS 'Legacy base64 receipt, when that is all the grant path kept (StoreKit 1).';

-- The job reads a window in (purchased_at, transaction_id) order, in chunks; staff narrow to one player.
CREATE INDEX grants_purchased_at_transaction_id ON clawback.grants (purchased_at, transaction_id);
CREATE INDEX grants_player_id ON clawback.grants (player_id);

-- Catches rows outside every monthly partition (the job reports a non-empty default partition).
CREATE TABLE clawback.grants_default PARTITION OF clawback.grants DEFAULT;

-- Creates the monthly partitions covering [p_from, p_to), named grants_YYYY_MM, bounds at UTC midnight
-- of the first of each month. Returns how many it created; existing ones are left alone.
CREATE FUNCTION clawback.ensure_grant_partitions(p_from timestamptz, p_to timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    month_start timestamp := date_trunc('month', p_from AT TIME ZONE 'UTC');
    partition_name text;
    created integer := 0;
BEGIN
    WHILE (month_start AT TIME ZONE 'UTC') < p_to LOOP
        partition_name := 'grants_' || to_char(month_start, 'YYYY_MM');
        IF to_regclass(format('clawback.%I', partition_name)) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE clawback.%I PARTITION OF clawback.grants FOR VALUES FROM (%L) TO (%L)',
                partition_name, month_start AT TIME ZONE 'UTC', (month_start + interval '1 month') AT TIME ZONE 'UTC');
            created := created + 1;
        END IF;
        month_start := month_start + interval '1 month';
    END LOOP;
    RETURN created;
END;
$$;

-- The grant path's door. Call it inside the transaction that credits the player:
--   SELECT clawback.record_grant('2000000123', '2000000123', 'com.studio.game', 'gems_600', 'Production',
--                                'player-42', 600, '2026-11-20T10:00:00Z');
-- Returns true when recorded, false when this transaction id was granted before (do not credit again).
-- Refuses a purchase older than the acceptance window (SQLSTATE CB001) or dated in the future beyond the
-- allowed skew (CB002): the tail window that lets old partitions be dropped without opening a replay hole.
CREATE FUNCTION clawback.record_grant(
    p_transaction_id          text,
    p_original_transaction_id text,
    p_bundle_id               text,
    p_product_id              text,
    p_environment             text,
    p_player_id               text,
    p_units_granted           bigint,
    p_purchased_at            timestamptz,
    p_quantity                integer DEFAULT 1,
    p_app_account_token       uuid    DEFAULT NULL,
    p_price_milli             bigint  DEFAULT NULL,
    p_currency                text    DEFAULT NULL,
    p_storefront              text    DEFAULT NULL,
    p_receipt                 text    DEFAULT NULL
) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    window_settings clawback.settings;
BEGIN
    SELECT * INTO STRICT window_settings FROM clawback.settings;
    IF p_purchased_at IS NULL OR p_purchased_at < now() - window_settings.acceptance_window THEN
        RAISE EXCEPTION 'purchase % dated % is older than the acceptance window of %',
                p_transaction_id, p_purchased_at, window_settings.acceptance_window
            USING ERRCODE = 'CB001',
                  HINT = 'The grant path only accepts recent purchases; older ones are refused so that pruned '
                      || 'grants can never be replayed.';
    END IF;
    IF p_purchased_at > now() + window_settings.future_skew THEN
        RAISE EXCEPTION 'purchase % is dated % , in the future beyond the allowed skew of %',
                p_transaction_id, p_purchased_at, window_settings.future_skew
            USING ERRCODE = 'CB002', HINT = 'Check the clocks, and that purchased_at is Apple''s signed purchaseDate.';
    END IF;
    -- At most once per transaction id, whatever purchase date a caller passes and however many callers race:
    -- concurrent calls for one id queue on this lock until the first commits or rolls back.
    PERFORM pg_advisory_xact_lock(1129070935, hashtext(p_transaction_id));  -- 1129070935 = 'CLAW'
    IF EXISTS (SELECT 1 FROM clawback.grants WHERE transaction_id = p_transaction_id) THEN
        RETURN false;
    END IF;
    INSERT INTO clawback.grants (
        transaction_id, original_transaction_id, bundle_id, product_id, environment, player_id, app_account_token,
        quantity, units_granted, price_milli, currency, storefront, purchased_at, receipt)
    VALUES (
        p_transaction_id, p_original_transaction_id, p_bundle_id, p_product_id, p_environment, p_player_id,
        p_app_account_token, p_quantity, p_units_granted, p_price_milli, p_currency, p_storefront, p_purchased_at,
        p_receipt);
    RETURN true;
END;
$$;

-- One row per invocation of `clawback run` (a resumed run continues its row and counts an attempt).
CREATE TABLE clawback.runs (
    run_id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Canonical text of (bundles, window, shard, narrowing): what the advisory lock and resume key on.
    scope_key      text        NOT NULL,
    window_start   timestamptz NOT NULL,
    window_end     timestamptz NOT NULL,
    bundle_ids     text[]      NOT NULL DEFAULT '{}',  -- empty: every configured bundle
    player_id      text,
    transaction_id text,
    shard_index    integer     NOT NULL DEFAULT 0,
    shard_count    integer     NOT NULL DEFAULT 1,
    strategy       text        NOT NULL,
    dry_run        boolean     NOT NULL DEFAULT false,
    triggered_by   text        NOT NULL,
    host           text        NOT NULL,
    arguments      text[]      NOT NULL DEFAULT '{}',
    status         text        NOT NULL DEFAULT 'running',
    started_at     timestamptz NOT NULL DEFAULT now(),
    heartbeat_at   timestamptz NOT NULL DEFAULT now(),
    finished_at    timestamptz,
    attempts       integer     NOT NULL DEFAULT 1,
    counters       jsonb       NOT NULL DEFAULT '{}',
    error          text,
    CHECK (window_end > window_start),
    CHECK (shard_count >= 1 AND shard_index >= 0 AND shard_index < shard_count),
    CHECK (status IN ('running', 'succeeded', 'incomplete', 'interrupted', 'failed')),
    CHECK (strategy IN ('transaction-info', 'notifications', 'refund-history', 'receipt'))
);
CREATE INDEX runs_scope_key_started_at ON clawback.runs (scope_key, started_at DESC);

-- One row per (run, transaction): the verdict and Apple's facts. The grant's fields are copied because
-- grants are pruned while checks are kept with the financial records.
CREATE TABLE clawback.checks (
    run_id                  bigint      NOT NULL REFERENCES clawback.runs ON DELETE CASCADE,
    transaction_id          text        NOT NULL,
    original_transaction_id text        NOT NULL,
    bundle_id               text        NOT NULL,
    environment             text        NOT NULL,
    player_id               text        NOT NULL,
    product_id              text        NOT NULL,
    quantity                integer     NOT NULL,
    units_granted           bigint      NOT NULL,
    purchased_at            timestamptz NOT NULL,
    verdict                 text        NOT NULL CHECK (verdict IN (
        'ok', 'refunded', 'revoked', 'refund_reversed', 'unknown_to_apple', 'mismatch', 'unverified')),
    action                  text        NOT NULL CHECK (action IN (
        'none', 'clawback_created', 'adjustment_created', 'already_recorded', 'reversal_created',
        'flagged_for_review', 'retry_next_run', 'dry_run')),
    units_clawed_back       bigint      NOT NULL DEFAULT 0,
    apple_environment       text,
    revocation_date         timestamptz,
    revocation_type         text,
    revocation_reason       integer,
    revocation_percentage   integer,
    apple_price_milli       bigint,
    apple_currency          text,
    apple_storefront        text,
    detail                  text,
    checked_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, transaction_id)
);
CREATE INDEX checks_transaction_id ON clawback.checks (transaction_id);

-- The clawback ledger: append-only financial records, kept long after grants are pruned.
--   clawback   units to take back (a refund or revocation was found)
--   adjustment a change of an earlier clawback (a prorated refund became full): the difference
--   reversal   Apple reversed the refund: units to give back (negative), closing the entry it reverses
--   review     flagged for a human (unknown to Apple, mismatch); units 0 unless configured otherwise
-- Exactly once: (transaction_id, idempotency_key) is unique, and the key is derived from Apple's facts
-- (for a clawback, Apple's revocation date), so reruns, resumed runs and overlapping shards cannot write
-- an entry twice; and an entry is reversed at most once.
CREATE TABLE clawback.ledger (
    entry_id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    transaction_id          text        NOT NULL,
    kind                    text        NOT NULL CHECK (kind IN ('clawback', 'adjustment', 'reversal', 'review')),
    idempotency_key         text        NOT NULL,
    reverses_entry_id       bigint      REFERENCES clawback.ledger,
    units                   bigint      NOT NULL,  -- > 0: take back from the player; < 0: give back
    run_id                  bigint      NOT NULL REFERENCES clawback.runs,
    original_transaction_id text        NOT NULL,
    bundle_id               text        NOT NULL,
    environment             text        NOT NULL,
    player_id               text        NOT NULL,
    product_id              text        NOT NULL,
    quantity                integer     NOT NULL,
    units_granted           bigint      NOT NULL,
    price_milli             bigint,
    currency                text,
    purchased_at            timestamptz NOT NULL,
    revocation_date         timestamptz,
    revocation_type         text,
    revocation_reason       integer,
    revocation_percentage   integer,
    reason                  text,
    created_at              timestamptz NOT NULL DEFAULT now(),
    -- The game's acknowledgement: the only columns that may change after insert.
    applied_at              timestamptz,
    applied_by              text,
    UNIQUE (transaction_id, idempotency_key),
    CHECK ((kind = 'reversal') = (reverses_entry_id IS NOT NULL))
);
CREATE UNIQUE INDEX ledger_one_reversal_per_entry ON clawback.ledger (reverses_entry_id)
    WHERE reverses_entry_id IS NOT NULL;
CREATE INDEX ledger_unapplied ON clawback.ledger (entry_id) WHERE applied_at IS NULL;
CREATE INDEX ledger_run_id ON clawback.ledger (run_id);

-- Append-only, enforced by the database: an UPDATE may only set the acknowledgement columns, and rows are
-- deleted only by clawback's own retention pruning (which sets clawback.ledger_retention_prune = 'on').
CREATE FUNCTION clawback.ledger_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF coalesce(current_setting('clawback.ledger_retention_prune', true), '') <> 'on' THEN
            RAISE EXCEPTION 'clawback.ledger is append-only: entry % cannot be deleted', OLD.entry_id
                USING ERRCODE = 'CB010';
        END IF;
        RETURN OLD;
    END IF;
    IF (to_jsonb(NEW) - 'applied_at' - 'applied_by') IS DISTINCT FROM (to_jsonb(OLD) - 'applied_at' - 'applied_by') THEN
        RAISE EXCEPTION 'clawback.ledger is append-only: only applied_at and applied_by of entry % may change',
                OLD.entry_id
            USING ERRCODE = 'CB010';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON clawback.ledger
    FOR EACH ROW EXECUTE FUNCTION clawback.ledger_guard();
