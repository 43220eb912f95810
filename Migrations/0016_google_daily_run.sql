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

-- Since when each app's kept voids are continuous (Google's recorded time): the first sweep's reach, and
-- after a gap the reach of the sweep that found it. A run whose window starts before it, or whose app's
-- cursor is stale, says so (the voids add a chargeback's or fraud's reason and a quantity refund's units).
-- Cursors from before this column: at least the 30 days the last sweep read (less its margin), and never
-- before a recorded gap.
ALTER TABLE clawback.google_void_cursors ADD COLUMN covered_from timestamptz;
UPDATE clawback.google_void_cursors
   SET covered_from = greatest(read_until - interval '30 days' + interval '10 minutes', coalesce(gap_until, '-infinity'));
ALTER TABLE clawback.google_void_cursors ALTER COLUMN covered_from SET NOT NULL;

-- The unverified checks of a run, without reading its other checks: what the Google runs look up to find an
-- order undecided for the same reason over several windows. Small (a run's unverified grants); building it
-- reads the checks table once, holding off writes to it (runs), never the grant path.
CREATE INDEX checks_unverified ON clawback.checks (run_id) WHERE verdict = 'unverified';
