-- 0003_run_finalization: a run is done only when its reports are written (and, when configured, the grants
-- table pruned) after its database work committed. A process killed in between leaves finalized_at NULL,
-- and the next invocation for the same scope finishes that run instead of starting a new one: otherwise
-- the reports of the month would be lost, and a second run would re-check every grant.
ALTER TABLE clawback.runs ADD COLUMN finalized_at timestamptz;

-- Runs from before this migration wrote their reports in the same invocation.
UPDATE clawback.runs SET finalized_at = finished_at WHERE status = 'succeeded';
