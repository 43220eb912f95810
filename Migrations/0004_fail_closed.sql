-- Fail closed: a verdict weaker than ok, the customer-history strategy, a grant door that holds under
-- every isolation level and beside an import, and no TRUNCATE of the ledger.

-- no_refund_reported: a verified refund feed covering the grant lists no refund of it. Apple reported no
-- refund; it did not confirm the purchase, so this is not 'ok'.
ALTER TABLE clawback.checks DROP CONSTRAINT checks_verdict_check;
ALTER TABLE clawback.checks ADD CONSTRAINT checks_verdict_check CHECK (verdict IN (
    'ok', 'refunded', 'revoked', 'refund_reversed', 'unknown_to_apple', 'mismatch', 'no_refund_reported', 'unverified'));

-- customer-history reads each Apple account's transaction history. It replaces refund-history, whose
-- conclusions assumed one Apple account per player and whose stored revisions could move past refunds a
-- narrowed or dry run never acted on; runs recorded under the old name keep it.
ALTER TABLE clawback.runs DROP CONSTRAINT runs_strategy_check;
ALTER TABLE clawback.runs ADD CONSTRAINT runs_strategy_check
    CHECK (strategy IN ('transaction-info', 'notifications', 'customer-history', 'refund-history', 'receipt'));
DROP TABLE clawback.refund_history_revisions;

-- The grant path's door, again: at most once per transaction id under every isolation level and beside a
-- running `grants import`.
-- - The table lock in ROW EXCLUSIVE mode does not hold back other grant calls, but waits for an import
--   (SHARE ROW EXCLUSIVE), so the existence check below always sees the import's grants.
-- - Under REPEATABLE READ the caller's snapshot predates a concurrent caller's commit, so after waiting on
--   the id's lock the check could not see that grant, and a second purchase date would land a second row:
--   refused with CB003. READ COMMITTED (the default) and SERIALIZABLE are safe.
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
LANGUAGE plpgsql AS $$
DECLARE
    window_settings clawback.settings;
BEGIN
    IF current_setting('transaction_isolation') = 'repeatable read' THEN
        RAISE EXCEPTION 'record_grant cannot run under REPEATABLE READ'
            USING ERRCODE = 'CB003',
                  HINT = 'Call it in a READ COMMITTED (the default) or SERIALIZABLE transaction: a REPEATABLE READ '
                      || 'snapshot cannot see a grant of the same transaction id committed by a concurrent caller.';
    END IF;
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
    LOCK TABLE clawback.grants IN ROW EXCLUSIVE MODE;
    -- Concurrent calls for one id queue on this lock until the first commits or rolls back.
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

-- The ledger's guard, closed: TRUNCATE, which row triggers never see, is refused outright (deleting rows
-- needs the ledger's owner as well as the pruning flag: the guard itself is replaced in 0005).
CREATE FUNCTION clawback.ledger_refuse_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'clawback.ledger is append-only: it cannot be truncated' USING ERRCODE = 'CB010';
END;
$$;
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON clawback.ledger
    FOR EACH STATEMENT EXECUTE FUNCTION clawback.ledger_refuse_truncate();
