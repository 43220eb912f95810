-- Google Play's daily run (`clawback run --daily --strategy google-orders`, stored as `google-voided-orders`):
-- the orders of the purchases whose voids the sweep kept since the last such run succeeded, each decided from
-- Google's own statement of the order, as the monthly run decides it. Nothing is rewritten or scanned: the
-- constraint is NOT VALID (every stored strategy is already allowed), and the index serves the daily run's
-- "voids kept since" per app.
ALTER TABLE clawback.runs DROP CONSTRAINT runs_strategy_check;
ALTER TABLE clawback.runs ADD CONSTRAINT runs_strategy_check
    CHECK (strategy IN ('transaction-info', 'notifications', 'refund-history', 'customer-history', 'receipt', 'notified-refunds',
                        'google-orders', 'google-voided-orders')) NOT VALID;

CREATE INDEX google_voided_purchases_read_at ON clawback.google_voided_purchases (package_name, read_at);
