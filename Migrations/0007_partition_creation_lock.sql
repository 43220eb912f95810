-- Creating a month's partition is serialized. Two callers creating the same month at once (the pods of a
-- sharded Indexed Job starting together, two runs started at the same moment, a run beside an import) both
-- saw no partition, and the second failed with 42P07 ("relation already exists"). Each caller now takes a
-- transaction-scoped advisory lock first, and looks again once it has it; the lock is released at commit.
-- Callers that bound their lock waits (lock_timeout) bound this wait too.
CREATE OR REPLACE FUNCTION clawback.ensure_grant_partitions(p_from timestamptz, p_to timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    month_start timestamp := date_trunc('month', p_from AT TIME ZONE 'UTC');
    partition_name text;
    created integer := 0;
BEGIN
    -- The key: the first 8 bytes of md5('clawback.ensure_grant_partitions'), as a bigint.
    PERFORM pg_advisory_xact_lock(('x' || substr(md5('clawback.ensure_grant_partitions'), 1, 16))::bit(64)::bigint);
    WHILE (month_start AT TIME ZONE 'UTC') < p_to LOOP
        partition_name := 'grants_' || to_char(month_start, 'YYYY_MM');
        IF to_regclass(format('clawback.%I', partition_name)) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE clawback.%I PARTITION OF clawback.grants FOR VALUES FROM (%L) TO (%L)',
                partition_name, month_start AT TIME ZONE 'UTC', (month_start + interval '1 month') AT TIME ZONE 'UTC');
            created := created + 1;
        END IF;
        month_start := month_start + interval '1 month';
    END LOOP;
    RETURN created;
END;
$$;
