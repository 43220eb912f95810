-- Google Play grants beside Apple's, in the same monthly partitions (the same tail window, prune, shards and
-- at-most-once rule): every grant knows its store. A Google grant's identity is its purchase token, the
-- thing a replayed purchase would present again: it is the row's transaction_id (and original_transaction_id,
-- as Google has no original purchase), and no id may be granted twice, whatever the store. Its order id, which
-- the Orders API is asked by, has a column of its own (absent for purchases that charged nothing). See
-- docs/google-play.md, "Identity".
CREATE TYPE clawback.store AS ENUM ('app_store', 'google_play');

-- A constant default and no check to validate: PostgreSQL records the columns without rewriting or
-- scanning the grants. The change still needs the table's exclusive lock, and while it waits for one, the
-- game's record_grant calls queue behind it: it waits two seconds at most (clawback migrate tries again a
-- few times, then exits 69 with nothing changed), never as long as some long transaction holds the table.
SET LOCAL lock_timeout = '2s';
ALTER TABLE clawback.grants
    ADD COLUMN store clawback.store NOT NULL DEFAULT 'app_store',
    ADD COLUMN order_id text,
    ADD COLUMN obfuscated_account_id text;

COMMENT ON COLUMN clawback.grants.store IS
    'app_store: transaction_id is Apple''s transaction id. google_play: transaction_id is Google''s purchase token.';
COMMENT ON COLUMN clawback.grants.order_id IS
    'Google Play''s order id (GPA.…), by which the Orders API is asked; absent where nothing was charged (promo codes).';
COMMENT ON COLUMN clawback.grants.obfuscated_account_id IS
    'The account id the game gave Google Play at purchase (obfuscatedExternalAccountId), when it gave one.';

-- What every grant path call checks before it records anything: the isolation level (CB003), the tail
-- window (CB001, CB002), the import lock, and that the id was never granted (false then). The caller
-- inserts only when it returns true, in the same transaction, still holding the id's lock.
CREATE FUNCTION clawback.admit_grant(p_door text, p_id text, p_purchased_at timestamptz) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    window_settings clawback.settings;
BEGIN
    IF current_setting('transaction_isolation') = 'repeatable read' THEN
        RAISE EXCEPTION '% cannot run under REPEATABLE READ', p_door
            USING ERRCODE = 'CB003',
                  HINT = 'Call it in a READ COMMITTED (the default) or SERIALIZABLE transaction: a REPEATABLE READ '
                      || 'snapshot cannot see a grant of the same transaction id committed by a concurrent caller.';
    END IF;
    SELECT * INTO STRICT window_settings FROM clawback.settings;
    IF p_purchased_at IS NULL OR p_purchased_at < now() - window_settings.acceptance_window THEN
        RAISE EXCEPTION 'purchase % dated % is older than the acceptance window of %',
                p_id, p_purchased_at, window_settings.acceptance_window
            USING ERRCODE = 'CB001',
                  HINT = 'The grant path only accepts recent purchases; older ones are refused so that pruned '
                      || 'grants can never be replayed.';
    END IF;
    IF p_purchased_at > now() + window_settings.future_skew THEN
        RAISE EXCEPTION 'purchase % is dated % , in the future beyond the allowed skew of %',
                p_id, p_purchased_at, window_settings.future_skew
            USING ERRCODE = 'CB002',
                  HINT = CASE p_door WHEN 'record_grant' THEN 'Check the clocks, and that purchased_at is Apple''s signed purchaseDate.'
                                     ELSE 'Check the clocks, and that purchased_at is Google''s purchaseTime.' END;
    END IF;
    LOCK TABLE clawback.grants IN ROW EXCLUSIVE MODE;
    -- Concurrent calls for one id queue on this lock until the first commits or rolls back.
    PERFORM pg_advisory_xact_lock(1129070935, hashtext(p_id));  -- 1129070935 = 'CLAW'
    RETURN NOT EXISTS (SELECT 1 FROM clawback.grants WHERE transaction_id = p_id);
END;
$$;

-- Apple's door, as before, through the shared checks.
CREATE OR REPLACE FUNCTION clawback.record_grant(
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
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT clawback.admit_grant('record_grant', p_transaction_id, p_purchased_at) THEN
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

-- Google Play's door: call it inside the transaction that credits the player, with the purchase the game
-- verified (its token, order id, product, quantity and purchase time as Google states them). Returns true
-- when recorded, false when the token was granted before (grant nothing then); refuses what the tail
-- window refuses, as record_grant does. A license tester's test purchase is recorded in the Sandbox.
CREATE FUNCTION clawback.record_google_grant(
    p_package_name          text,
    p_purchase_token        text,
    p_order_id              text,
    p_product_id            text,
    p_player_id             text,
    p_units_granted         bigint,
    p_purchased_at          timestamptz,
    p_quantity              integer DEFAULT 1,
    p_test_purchase         boolean DEFAULT false,
    p_price_milli           bigint  DEFAULT NULL,
    p_currency              text    DEFAULT NULL,
    p_obfuscated_account_id text    DEFAULT NULL
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_order_id = '' THEN
        RAISE EXCEPTION 'order id of purchase % is empty: pass NULL when Google gave none', p_purchase_token
            USING ERRCODE = 'CB004';
    END IF;
    IF NOT clawback.admit_grant('record_google_grant', p_purchase_token, p_purchased_at) THEN
        RETURN false;
    END IF;
    INSERT INTO clawback.grants (
        store, transaction_id, original_transaction_id, order_id, bundle_id, product_id, environment, player_id,
        quantity, units_granted, price_milli, currency, purchased_at, obfuscated_account_id)
    VALUES (
        'google_play', p_purchase_token, p_purchase_token, p_order_id, p_package_name, p_product_id,
        CASE WHEN p_test_purchase THEN 'Sandbox' ELSE 'Production' END, p_player_id, p_quantity, p_units_granted,
        p_price_milli, p_currency, p_purchased_at, p_obfuscated_account_id);
    RETURN true;
END;
$$;

REVOKE ALL ON FUNCTION clawback.admit_grant(text, text, timestamptz) FROM PUBLIC;
-- The doors run as record_grant's owner, which need not be the migrating role (a member of it may migrate):
-- the checks they call belong to that owner too.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION clawback.admit_grant(text, text, timestamptz) OWNER TO %I',
        (SELECT pg_get_userbyid(proowner) FROM pg_proc
         WHERE oid = 'clawback.record_grant(text, text, text, text, text, text, bigint, timestamptz, integer, uuid, bigint, text, text, text)'::regprocedure));
    EXECUTE format('ALTER FUNCTION clawback.record_google_grant(text, text, text, text, text, bigint, timestamptz, integer, boolean, bigint, text, text) OWNER TO %I',
        (SELECT pg_get_userbyid(proowner) FROM pg_proc
         WHERE oid = 'clawback.record_grant(text, text, text, text, text, text, bigint, timestamptz, integer, uuid, bigint, text, text, text)'::regprocedure));
END;
$$;
REVOKE ALL ON FUNCTION
    clawback.record_google_grant(text, text, text, text, text, bigint, timestamptz, integer, boolean, bigint, text, text) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'clawback_game') THEN
        GRANT EXECUTE ON FUNCTION
            clawback.record_google_grant(text, text, text, text, text, bigint, timestamptz, integer, boolean, bigint, text, text)
            TO clawback_game;
    END IF;
END;
$$;
