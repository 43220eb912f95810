-- The store's own order id on each check (Google Play's GPA.… order id, from the grant), so that finance's
-- detail report can join every row to the store's console however long after the run it is written, the
-- grant's month pruned or not. Nullable with no default: nothing is rewritten. Checks written before this
-- read it from their grant while the grant is kept.
ALTER TABLE clawback.checks ADD COLUMN order_id text;

COMMENT ON COLUMN clawback.checks.order_id IS
    'The store''s order id of the grant (Google Play: the order, GPA.…), as the grant recorded it; null for App Store grants.';
