-- Google Play's grants checked by the monthly run (`clawback run --strategy google-orders`): every check
-- and ledger entry says which store its purchase was made in, so one ledger holds both stores and finance
-- reads them apart. The default keeps every row written before this migration an App Store one, as it was.
-- Nothing here rewrites or scans a table: a column with a constant default is a catalog change (PostgreSQL
-- 11 and later), and the constraints are added NOT VALID, checked for every row written from now on (the
-- rows before hold NULL in the new columns, or verdicts of the narrower list). The short lock timeout keeps
-- a busy ledger from holding the game's claims up (clawback migrate tries again).
SET LOCAL lock_timeout = '2s';

ALTER TABLE clawback.checks ADD COLUMN store clawback.store NOT NULL DEFAULT 'app_store';
ALTER TABLE clawback.ledger ADD COLUMN store clawback.store NOT NULL DEFAULT 'app_store';

-- The units a quantity-based partial refund voided (Google's voidedQuantity), and the amount the store says
-- it refunded (Google states it; Apple's reports compute it from the price and the percentage).
ALTER TABLE clawback.checks ADD COLUMN revoked_quantity integer, ADD COLUMN refunded_amount_milli bigint;
ALTER TABLE clawback.ledger ADD COLUMN revoked_quantity integer, ADD COLUMN refunded_amount_milli bigint;
ALTER TABLE clawback.checks ADD CONSTRAINT checks_revoked_quantity_check CHECK (revoked_quantity > 0) NOT VALID;
ALTER TABLE clawback.ledger ADD CONSTRAINT ledger_revoked_quantity_check CHECK (revoked_quantity > 0) NOT VALID;

-- unknown_to_google: Google's Orders API answered 404 notFound for the grant's order (a review, never units).
ALTER TABLE clawback.checks DROP CONSTRAINT checks_verdict_check;
ALTER TABLE clawback.checks ADD CONSTRAINT checks_verdict_check CHECK (verdict IN (
    'ok', 'refunded', 'revoked', 'refund_reversed', 'unknown_to_apple', 'unknown_to_google', 'mismatch', 'no_refund_reported',
    'unverified')) NOT VALID;

ALTER TABLE clawback.runs DROP CONSTRAINT runs_strategy_check;
ALTER TABLE clawback.runs ADD CONSTRAINT runs_strategy_check
    CHECK (strategy IN ('transaction-info', 'notifications', 'refund-history', 'customer-history', 'receipt', 'notified-refunds',
                        'google-orders')) NOT VALID;
