-- The daily run's strategy: `notified-refunds` checks only the purchases the app's refund feed names since
-- the last daily run that succeeded (docs/operations.md, "The daily run"), so that a refund is clawed back
-- within a day instead of at the next monthly run.
ALTER TABLE clawback.runs DROP CONSTRAINT runs_strategy_check;
ALTER TABLE clawback.runs ADD CONSTRAINT runs_strategy_check
    CHECK (strategy IN ('transaction-info', 'notifications', 'customer-history', 'refund-history', 'receipt', 'notified-refunds'));

-- The daily run reads the feed from where the last successful one of its scope family started.
CREATE INDEX runs_strategy_started_at ON clawback.runs (strategy, started_at) WHERE status = 'succeeded';
