-- Fail closed: a verdict weaker than ok, and the customer-history strategy.

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
