-- Stores as drivers: a store's strategies are what its driver registers, so the runs table no longer lists
-- them (a binary refuses a strategy it does not know when it reads a run: RunStore.strategy); it keeps
-- their form. A store without a verdict of its own for a purchase it does not know concludes
-- unknown_to_store (a review, never units); the App Store's and Google Play's keep theirs, which finance reads.
-- A new store adds its value to clawback.store in its own migration (docs/architecture.md, "Adding a store").
ALTER TABLE clawback.runs DROP CONSTRAINT runs_strategy_check;
ALTER TABLE clawback.runs ADD CONSTRAINT runs_strategy_check CHECK (strategy ~ '^[a-z][a-z0-9-]{0,62}$') NOT VALID;

ALTER TABLE clawback.checks DROP CONSTRAINT checks_verdict_check;
ALTER TABLE clawback.checks ADD CONSTRAINT checks_verdict_check CHECK (verdict IN (
    'ok', 'refunded', 'revoked', 'refund_reversed', 'unknown_to_apple', 'unknown_to_google', 'unknown_to_store', 'mismatch',
    'no_refund_reported', 'unverified')) NOT VALID;
