-- Google Play's grants checked by the monthly run (`clawback run --strategy google-orders`): every check
-- and ledger entry says which store its purchase was made in, so one ledger holds both stores and finance
-- reads them apart. The default keeps every row written before this migration an App Store one, as it was.
-- Adding a column with a constant default rewrites nothing (PostgreSQL 11 and later); the short lock
-- timeout keeps a busy ledger from holding the game's claims up (clawback migrate tries again).
SET LOCAL lock_timeout = '2s';

ALTER TABLE clawback.checks ADD COLUMN store clawback.store NOT NULL DEFAULT 'app_store';
ALTER TABLE clawback.ledger ADD COLUMN store clawback.store NOT NULL DEFAULT 'app_store';

-- The units a quantity-based partial refund voided (Google's voidedQuantity), beside the share shown as a
-- percentage: finance sees "2 of 5" where it is exactly that.
ALTER TABLE clawback.checks ADD COLUMN revoked_quantity integer CHECK (revoked_quantity > 0);
ALTER TABLE clawback.ledger ADD COLUMN revoked_quantity integer CHECK (revoked_quantity > 0);

ALTER TABLE clawback.runs DROP CONSTRAINT runs_strategy_check;
ALTER TABLE clawback.runs ADD CONSTRAINT runs_strategy_check
    CHECK (strategy IN ('transaction-info', 'notifications', 'refund-history', 'customer-history', 'receipt', 'notified-refunds',
                        'google-orders'));
