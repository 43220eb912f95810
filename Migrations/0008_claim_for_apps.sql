-- claim_clawbacks takes the apps a consumer serves (p_bundle_ids; NULL, the default, is every app, as before),
-- so one game's servers are never handed another game's entries: they would find no such player, and might
-- acknowledge `partial 0` and settle the clawback for good. It also refuses the consumer names that
-- acknowledge_clawback refuses (staff:…, clawback, before-0005), which it accepted, so that an entry claimed
-- as staff:alice could then be waived by staff although a game server might have applied it.
-- A new argument is a new signature: the old function is dropped and the new one granted to clawback_game.
-- Calls with the first three arguments, positional or named, work as before.
DROP FUNCTION clawback.claim_clawbacks(text, integer, interval);

CREATE FUNCTION clawback.claim_clawbacks(
    p_consumer text, p_limit integer DEFAULT 100, p_lease interval DEFAULT interval '5 minutes', p_bundle_ids text[] DEFAULT NULL)
RETURNS SETOF clawback.claimed_entry
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    handed      integer := 0;
    handed_ids  bigint[] := '{}';
    locked      bigint[];
    settle_ids  bigint[];
    hand_ids    bigint[];
BEGIN
    IF coalesce(p_consumer, '') = '' THEN
        RAISE EXCEPTION 'claim_clawbacks needs the consumer''s name' USING ERRCODE = 'CB023';
    END IF;
    -- The names acknowledge_clawback refuses are refused here too: an entry claimed as staff:alice could
    -- never be acknowledged by its consumer, and staff could then waive one a game server may have applied.
    IF p_consumer LIKE 'staff:%' OR p_consumer IN ('clawback', 'before-0005') THEN
        RAISE EXCEPTION 'the consumer name % is reserved (staff: names are for clawback ledger waive)', p_consumer USING ERRCODE = 'CB023';
    END IF;
    IF p_bundle_ids IS NOT NULL AND (cardinality(p_bundle_ids) = 0 OR array_position(p_bundle_ids, NULL) IS NOT NULL) THEN
        RAISE EXCEPTION 'p_bundle_ids names the apps this consumer serves (NULL: all of them), not %', p_bundle_ids USING ERRCODE = 'CB023';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 10000 THEN
        RAISE EXCEPTION 'claim_clawbacks takes 1 to 10000 entries at a time, not %', p_limit USING ERRCODE = 'CB023';
    END IF;
    IF p_lease IS NULL OR p_lease <= interval '0' OR p_lease > interval '1 day' THEN
        RAISE EXCEPTION 'a lease lasts more than nothing and at most a day, not %', p_lease USING ERRCODE = 'CB023';
    END IF;
    LOOP
        SELECT coalesce(array_agg(entry_id), '{}') INTO locked FROM (
            SELECT q.entry_id FROM clawback.ledger_queue q
            WHERE (q.leased_until IS NULL OR q.leased_until <= clock_timestamp())
              -- Only the apps this consumer serves: another game's server would find no such player.
              AND (p_bundle_ids IS NULL
                   OR (SELECT l.bundle_id FROM clawback.ledger l WHERE l.entry_id = q.entry_id) = ANY (p_bundle_ids))
              AND NOT (q.entry_id = ANY (handed_ids))  -- a short lease may end within this call
              AND NOT EXISTS (SELECT 1 FROM clawback.ledger_queue e WHERE e.transaction_id = q.transaction_id AND e.entry_id < q.entry_id)
            ORDER BY q.entry_id
            LIMIT p_limit - handed
            FOR NO KEY UPDATE OF q SKIP LOCKED) candidates;
        EXIT WHEN cardinality(locked) = 0;
        -- Settled here only what no consumer was ever handed: one that was may have been applied.
        SELECT coalesce(array_agg(f.entry_id) FILTER (WHERE f.settle), '{}'), coalesce(array_agg(f.entry_id) FILTER (WHERE NOT f.settle), '{}')
        INTO settle_ids, hand_ids
        FROM (
            SELECT l.entry_id,
                   q.consumer IS NULL
                   AND ((l.units > 0 AND EXISTS (SELECT 1 FROM clawback.ledger r WHERE r.transaction_id = l.transaction_id
                                                  AND r.entry_id > l.entry_id AND r.kind = 'reversal'))
                        OR (l.units < 0 AND clawback.units_to_apply(l) = 0)) AS settle
            -- Lateral, and LIMIT 1 keeps it so (a plain subquery would be flattened into a join the planner may
            -- hash): an index probe per id, never a scan of the queue or of the ledger, which only grows.
            FROM unnest(locked) AS u(id)
            CROSS JOIN LATERAL (SELECT * FROM clawback.ledger_queue WHERE entry_id = u.id LIMIT 1) q
            CROSS JOIN LATERAL (SELECT * FROM clawback.ledger WHERE entry_id = u.id LIMIT 1) l
        ) f;
        IF cardinality(settle_ids) > 0 THEN
            INSERT INTO clawback.ledger_acknowledgements (entry_id, outcome, units_applied, note, acknowledged_by)
            SELECT l.entry_id, 'superseded', 0,
                   CASE WHEN l.units > 0 THEN 'Apple reversed the refund before this was applied'
                        ELSE 'nothing was taken back, so nothing is given back' END,
                   'clawback'
            FROM unnest(settle_ids) AS u(id) CROSS JOIN LATERAL (SELECT * FROM clawback.ledger WHERE entry_id = u.id LIMIT 1) l;
            DELETE FROM clawback.ledger_queue WHERE entry_id = ANY (settle_ids);
        END IF;
        IF cardinality(hand_ids) > 0 THEN
            UPDATE clawback.ledger_queue SET consumer = p_consumer, leased_until = clock_timestamp() + p_lease
            WHERE entry_id = ANY (hand_ids);
            RETURN QUERY
                SELECT l.entry_id, l.kind, CASE WHEN l.units >= 0 THEN l.units ELSE clawback.units_to_apply(l) END, l.transaction_id,
                       l.player_id, l.bundle_id, l.product_id, l.reverses_entry_id, l.created_at,
                       l.units > 0 AND EXISTS (SELECT 1 FROM clawback.ledger r WHERE r.transaction_id = l.transaction_id
                                               AND r.entry_id > l.entry_id AND r.kind = 'reversal')
                FROM unnest(hand_ids) AS u(id) CROSS JOIN LATERAL (SELECT * FROM clawback.ledger WHERE entry_id = u.id LIMIT 1) l ORDER BY l.entry_id;
            handed := handed + cardinality(hand_ids);
            handed_ids := handed_ids || hand_ids;
        END IF;
        -- Settling an entry can make the next one of its transaction the first: look again while there is room.
        EXIT WHEN handed >= p_limit;
    END LOOP;
    RETURN;
END;
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'clawback_game') THEN
        GRANT EXECUTE ON FUNCTION clawback.claim_clawbacks(text, integer, interval, text[]) TO clawback_game;
    END IF;
END;
$$;
