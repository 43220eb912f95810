-- The shared checks' hint for a purchase dated in the future names each door's own time (owner and privileges
-- are kept by CREATE OR REPLACE).
CREATE OR REPLACE FUNCTION clawback.admit_grant(p_door text, p_id text, p_purchased_at timestamptz) RETURNS boolean
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
                                     WHEN 'record_google_grant' THEN 'Check the clocks, and that purchased_at is Google''s purchaseTime.'
                                     ELSE 'Check the clocks, and that purchased_at is when the store created the payment.' END;
    END IF;
    LOCK TABLE clawback.grants IN ROW EXCLUSIVE MODE;
    -- Concurrent calls for one id queue on this lock until the first commits or rolls back.
    PERFORM pg_advisory_xact_lock(1129070935, hashtext(p_id));  -- 1129070935 = 'CLAW'
    RETURN NOT EXISTS (SELECT 1 FROM clawback.grants WHERE transaction_id = p_id);
END;
$$;

-- The web shop's door: call it inside the transaction that credits the player for a Stripe payment the shop
-- saw succeed (its PaymentIntent, pi_…). Returns true when recorded, false when the PaymentIntent was granted
-- before (grant nothing then); refuses what the tail window refuses, as record_grant does. A test-mode
-- payment (livemode false) is recorded in the Sandbox, as the Stripe runs read it. The shop's name is the
-- grant's bundle_id, as `stripe.shops[].name` names it.
CREATE FUNCTION clawback.record_stripe_grant(
    p_shop           text,
    p_payment_intent text,
    p_product_id     text,
    p_player_id      text,
    p_units_granted  bigint,
    p_purchased_at   timestamptz,
    p_quantity       integer DEFAULT 1,
    p_livemode       boolean DEFAULT true,
    p_price_milli    bigint  DEFAULT NULL,
    p_currency       text    DEFAULT NULL
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- A charge (ch_…) or a Checkout Session (cs_…) is not what the runs ask Stripe about: refused here, where
    -- the game can still fix it, rather than found months later as a purchase Stripe does not know.
    IF p_payment_intent IS NULL OR p_payment_intent !~ '^pi_[A-Za-z0-9_]+$' THEN
        RAISE EXCEPTION 'payment % is not a PaymentIntent id (pi_…)', coalesce(p_payment_intent, 'NULL')
            USING ERRCODE = 'CB005';
    END IF;
    IF NOT clawback.admit_grant('record_stripe_grant', p_payment_intent, p_purchased_at) THEN
        RETURN false;
    END IF;
    INSERT INTO clawback.grants (
        store, transaction_id, original_transaction_id, bundle_id, product_id, environment, player_id,
        quantity, units_granted, price_milli, currency, purchased_at)
    VALUES (
        'stripe', p_payment_intent, p_payment_intent, p_shop, p_product_id,
        CASE WHEN coalesce(p_livemode, true) THEN 'Production' ELSE 'Sandbox' END, p_player_id, p_quantity, p_units_granted,
        p_price_milli, upper(p_currency), p_purchased_at);
    RETURN true;
END;
$$;

-- It runs as record_grant's owner, which need not be the migrating role, as the other doors do.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION clawback.record_stripe_grant(text, text, text, text, bigint, timestamptz, integer, boolean, bigint, text) OWNER TO %I',
        (SELECT pg_get_userbyid(proowner) FROM pg_proc
         WHERE oid = 'clawback.record_grant(text, text, text, text, text, text, bigint, timestamptz, integer, uuid, bigint, text, text, text)'::regprocedure));
END;
$$;
REVOKE ALL ON FUNCTION
    clawback.record_stripe_grant(text, text, text, text, bigint, timestamptz, integer, boolean, bigint, text) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'clawback_game') THEN
        GRANT EXECUTE ON FUNCTION
            clawback.record_stripe_grant(text, text, text, text, bigint, timestamptz, integer, boolean, bigint, text)
            TO clawback_game;
    END IF;
END;
$$;
