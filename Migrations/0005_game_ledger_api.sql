-- 0005_game_ledger_api: the game's side of the ledger. Game servers claim the entries to apply (leased, so
-- several servers share the work and a dead one's entries come back), apply them to the players, and
-- acknowledge each once with what actually happened. Callable with nothing but EXECUTE on these functions
-- (the role clawback_game): they run as the schema's owner, on a fixed search_path.
--
-- The order that keeps a player whole: a transaction's entries are handed out one at a time, in ledger order,
-- each only once every earlier one is acknowledged. So a reversal is applied only after the take-backs it
-- reverses, and gives back no more than they actually took (a partial or waived clawback gives back less);
-- and take-backs Apple reversed before anyone applied them are acknowledged `superseded` by the claim itself,
-- with the reversal, so the player neither loses nor gains anything for them.
--
-- From here on the ledger is never updated: what the game did is in ledger_acknowledgements, and what it
-- has yet to do is in ledger_queue, a small work queue beside it. (applied_at and applied_by keep what game
-- servers wrote before this API.)

-- One acknowledgement per entry, never changed afterwards (the guard below).
CREATE TABLE clawback.ledger_acknowledgements (
    entry_id        bigint      PRIMARY KEY REFERENCES clawback.ledger ON DELETE CASCADE,
    outcome         text        NOT NULL CHECK (outcome IN ('applied', 'partial', 'waived', 'superseded')),
    -- What happened to the player: > 0 units taken, < 0 given back, 0 nothing.
    units_applied   bigint      NOT NULL,
    note            text,
    acknowledged_by text        NOT NULL CHECK (acknowledged_by <> ''),
    acknowledged_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK (outcome <> 'waived' OR coalesce(note, '') <> '')
);

-- Entries game servers acknowledged before this API, by setting applied_at themselves: applied, in full.
INSERT INTO clawback.ledger_acknowledgements (entry_id, outcome, units_applied, note, acknowledged_by, acknowledged_at)
SELECT entry_id, 'applied', units, 'acknowledged by setting applied_at, before acknowledge_clawback existed',
       coalesce(nullif(applied_by, ''), 'unknown'), applied_at
FROM clawback.ledger WHERE applied_at IS NOT NULL AND kind <> 'review';
-- Reviews marked done that way: a person let them be (waived), so their records can age out as before.
INSERT INTO clawback.ledger_acknowledgements (entry_id, outcome, units_applied, note, acknowledged_by, acknowledged_at)
SELECT entry_id, 'waived', 0, 'marked done by setting applied_at, before acknowledge_clawback existed',
       coalesce(nullif(applied_by, ''), 'unknown'), applied_at
FROM clawback.ledger WHERE applied_at IS NOT NULL AND kind = 'review';

-- The entries the game has yet to apply: every entry but reviews joins when written (the trigger below) and
-- leaves with its acknowledgement, so claims scan only what is left to do. A claim leases an entry to a
-- consumer until `leased_until`; the consumer's name stays after the lease ends, because an entry that was
-- ever handed out may have been applied: it is never settled behind its consumer's back.
CREATE TABLE clawback.ledger_queue (
    entry_id       bigint      PRIMARY KEY REFERENCES clawback.ledger ON DELETE CASCADE,
    transaction_id text        NOT NULL,
    consumer       text,
    leased_until   timestamptz
);
-- A transaction's queued entries in order: is an entry the first one left of its transaction?
CREATE INDEX ledger_queue_by_transaction ON clawback.ledger_queue (transaction_id, entry_id);

-- Entries written before this API: a game server on the old advice may have applied one already, so each
-- counts as handed out (to 'before-0005'): never settled by a claim behind its back, and handed out with
-- `reversed` when Apple reversed it meanwhile.
INSERT INTO clawback.ledger_queue (entry_id, transaction_id, consumer)
SELECT l.entry_id, l.transaction_id, 'before-0005' FROM clawback.ledger l
WHERE l.kind <> 'review' AND NOT EXISTS (SELECT 1 FROM clawback.ledger_acknowledgements a WHERE a.entry_id = l.entry_id);
-- Superseded by ledger_queue: claims no longer look at applied_at.
DROP INDEX clawback.ledger_unapplied;

-- New entries join the queue, whoever writes them (a statement at a time: COPY writes thousands at once).
CREATE FUNCTION clawback.ledger_enqueue() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO clawback.ledger_queue (entry_id, transaction_id)
    SELECT entry_id, transaction_id FROM written WHERE kind <> 'review';
    RETURN NULL;
END;
$$;
CREATE TRIGGER ledger_enqueue AFTER INSERT ON clawback.ledger
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION clawback.ledger_enqueue();

-- Acknowledgements are as permanent as the ledger: no update; rows go only with their entry, under
-- clawback's own retention pruning.
CREATE FUNCTION clawback.acknowledgement_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF TG_OP = 'DELETE' AND coalesce(current_setting('clawback.ledger_retention_prune', true), '') = 'on'
        AND current_user = (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = TG_RELID)
    THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the acknowledgement of entry % is final', OLD.entry_id USING ERRCODE = 'CB010';
END;
$$;
CREATE TRIGGER acknowledgements_final BEFORE UPDATE OR DELETE ON clawback.ledger_acknowledgements
    FOR EACH ROW EXECUTE FUNCTION clawback.acknowledgement_guard();
CREATE TRIGGER acknowledgements_no_truncate BEFORE TRUNCATE ON clawback.ledger_acknowledgements
    FOR EACH STATEMENT EXECUTE FUNCTION clawback.ledger_refuse_truncate();

-- The ledger's guard, without back doors: rows go only through clawback's own retention pruning, run as the
-- ledger's owner with clawback.ledger_retention_prune set for its transaction (any role can set a custom
-- setting, so the setting alone proves nothing); nothing changes afterwards, applied_at included (a game
-- server still running older code that sets it by hand is refused, instead of leaving an entry that looks
-- applied but was never acknowledged).
CREATE OR REPLACE FUNCTION clawback.ledger_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF coalesce(current_setting('clawback.ledger_retention_prune', true), '') <> 'on'
            OR current_user <> (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = TG_RELID)
        THEN
            RAISE EXCEPTION 'clawback.ledger is append-only: entry % cannot be deleted', OLD.entry_id
                USING ERRCODE = 'CB010',
                      HINT = 'Only clawback prune, run as the ledger''s owner, removes entries past their retention.';
        END IF;
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'clawback.ledger is append-only: entry % cannot change', OLD.entry_id
        USING ERRCODE = 'CB010',
              HINT = 'The game acknowledges entries with clawback.acknowledge_clawback (docs/integrating.md, "Applying entries").';
END;
$$;

-- The units the game is to apply for an entry now. A take-back: its units. A give-back (a reversal, or an
-- adjustment downwards): what was actually taken beyond what is still owed after this entry, and never more
-- than the entry itself gives, so a player who paid part of a clawback is not handed back units still owed.
CREATE FUNCTION clawback.units_to_apply(p_entry clawback.ledger) RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE
        WHEN p_entry.units >= 0 THEN p_entry.units
        ELSE -greatest(0, least(-p_entry.units,
            coalesce((SELECT sum(a.units_applied) FROM clawback.ledger e JOIN clawback.ledger_acknowledgements a USING (entry_id)
                      WHERE e.transaction_id = p_entry.transaction_id AND e.entry_id < p_entry.entry_id), 0)
            - greatest(0, coalesce((SELECT sum(e.units) FROM clawback.ledger e
                                    WHERE e.transaction_id = p_entry.transaction_id AND e.entry_id <= p_entry.entry_id
                                      AND e.kind <> 'review'), 0))))
    END
$$;

-- Whether a take-back was reversed by Apple: a reversal follows it in the ledger.
CREATE FUNCTION clawback.reversed_before_applied(p_entry clawback.ledger) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT p_entry.units > 0 AND EXISTS (
        SELECT 1 FROM clawback.ledger r
        WHERE r.transaction_id = p_entry.transaction_id AND r.entry_id > p_entry.entry_id AND r.kind = 'reversal')
$$;

-- What a claim hands a game server: an entry and the units to apply to the player (> 0 take, < 0 give).
-- `reversed`: Apple has reversed this take-back since it was first handed out. If your records show it was
-- applied, acknowledge it `applied` (its reversal, handed out next, gives the units back); if not, apply
-- nothing and acknowledge it `superseded`.
CREATE TYPE clawback.claimed_entry AS (
    entry_id          bigint,
    kind              text,
    units             bigint,
    transaction_id    text,
    player_id         text,
    bundle_id         text,
    product_id        text,
    reverses_entry_id bigint,
    created_at        timestamptz,
    reversed          boolean
);

-- Hands `p_consumer` up to `p_limit` entries to apply, each leased to it for `p_lease`: queued entries no one
-- holds (SKIP LOCKED, unexpired leases), the first left of their transaction, in ledger order. Take-backs
-- Apple reversed before anyone was handed them, and give-backs with nothing left to give, are acknowledged
-- `superseded` here instead of being handed out. Each connection needs a name of its own. Commit the claim
-- before applying anything outside this database: an entry whose claim rolled back counts as never handed
-- out, and may be settled as above.
-- Set-based, a pass at a time: lock the candidates' queue rows (a lease taken or an acknowledgement made by
-- another consumer since the scan began changes or removes that row, so the lock's recheck skips it), then
-- settle or lease them in bulk.
CREATE FUNCTION clawback.claim_clawbacks(p_consumer text, p_limit integer DEFAULT 100, p_lease interval DEFAULT interval '5 minutes')
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

-- Records what the game (or staff) did with an entry, once:
--   applied     all the units claim handed out were taken (or given back)
--   partial     the player's balance covered only part of a take-back: p_units_applied were taken (0 or more)
--   waived      the studio chose not to take a take-back (a note saying why is required); for a review
--               entry, that a person looked at it and let it be
--   superseded  Apple reversed the refund before this take-back was applied
-- Returns true when recorded, false when this consumer recorded the same before (its retry). Anything else
-- for an acknowledged entry is refused (CB020), as are an unknown entry (CB021), a review entry with another
-- outcome than waived or from the game (CB022), bad values or a reserved name (CB023), an entry whose
-- transaction has earlier entries not acknowledged yet (CB024), and an entry handed to another consumer
-- (CB025). Reached through acknowledge_clawback (the game) and staff_waive (staff) only.
CREATE FUNCTION clawback.record_acknowledgement(
    p_entry_id      bigint,
    p_consumer      text,
    p_outcome       text,
    p_units_applied bigint,
    p_note          text,
    p_staff         boolean
) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    entry    clawback.ledger;
    queued   clawback.ledger_queue;
    earlier  clawback.ledger_acknowledgements;
    expected bigint;
    units    bigint;
BEGIN
    IF coalesce(p_consumer, '') = '' THEN
        RAISE EXCEPTION 'acknowledge_clawback needs the consumer''s name' USING ERRCODE = 'CB023';
    END IF;
    IF NOT p_staff AND (p_consumer LIKE 'staff:%' OR p_consumer IN ('clawback', 'before-0005')) THEN
        RAISE EXCEPTION 'the consumer name % is reserved (staff: names are for clawback ledger waive)', p_consumer
            USING ERRCODE = 'CB023';
    END IF;
    IF p_outcome IS NULL OR p_outcome NOT IN ('applied', 'partial', 'waived', 'superseded') THEN
        RAISE EXCEPTION 'outcome must be applied, partial, waived or superseded, not %', p_outcome USING ERRCODE = 'CB023';
    END IF;
    SELECT * INTO entry FROM clawback.ledger WHERE entry_id = p_entry_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'there is no ledger entry %', p_entry_id USING ERRCODE = 'CB021';
    END IF;
    IF entry.kind = 'review' THEN
        IF p_outcome <> 'waived' OR NOT p_staff THEN
            RAISE EXCEPTION 'entry % is a review for a person, not units to apply: staff can only waive it', p_entry_id
                USING ERRCODE = 'CB022', HINT = 'Staff settle reviews with clawback ledger waive.';
        END IF;
        -- Reviews are not queued: their row lock makes two waivers of one review take turns.
        PERFORM 1 FROM clawback.ledger WHERE entry_id = p_entry_id FOR NO KEY UPDATE;
    ELSE
        -- Locked: a concurrent acknowledgement of the same entry waits here, then finds it gone from the queue.
        SELECT * INTO queued FROM clawback.ledger_queue WHERE entry_id = p_entry_id FOR NO KEY UPDATE;
        -- In order, before anything is computed from the earlier entries: a later statement sees the
        -- acknowledgement of every earlier entry that has left the queue (both commit together).
        IF queued.entry_id IS NOT NULL AND EXISTS (
            SELECT 1 FROM clawback.ledger_queue e WHERE e.transaction_id = entry.transaction_id AND e.entry_id < entry.entry_id)
        THEN
            RAISE EXCEPTION 'entry % comes after entries of transaction % not acknowledged yet', p_entry_id, entry.transaction_id
                USING ERRCODE = 'CB024', HINT = 'Claim with claim_clawbacks: it hands a transaction''s entries out in order.';
        END IF;
    END IF;
    expected := CASE WHEN entry.kind = 'review' THEN 0 WHEN entry.units >= 0 THEN entry.units ELSE clawback.units_to_apply(entry) END;
    units := CASE p_outcome
        WHEN 'applied' THEN coalesce(p_units_applied, expected)
        WHEN 'partial' THEN p_units_applied
        ELSE coalesce(p_units_applied, 0)
    END;
    IF queued.entry_id IS NULL THEN
        SELECT * INTO earlier FROM clawback.ledger_acknowledgements WHERE entry_id = p_entry_id;
        IF earlier.entry_id IS NOT NULL THEN
            IF earlier.acknowledged_by = p_consumer AND earlier.outcome = p_outcome AND earlier.units_applied IS NOT DISTINCT FROM units
                AND earlier.note IS NOT DISTINCT FROM p_note
            THEN
                RETURN false;
            END IF;
            RAISE EXCEPTION 'entry % was acknowledged already, as % (% units) by % at %', p_entry_id, earlier.outcome,
                    earlier.units_applied, earlier.acknowledged_by, earlier.acknowledged_at
                USING ERRCODE = 'CB020', HINT = 'If this consumer applied it too, undo that: it was applied once already.';
        END IF;
        IF entry.kind <> 'review' THEN
            -- Neither queued nor acknowledged: written while the ledger's triggers were disabled (by its owner).
            RAISE EXCEPTION 'entry % is not waiting to be applied', p_entry_id USING ERRCODE = 'CB021';
        END IF;
    END IF;
    -- An entry handed out is its consumer's to acknowledge: another one (staff included) takes it over only
    -- by claiming it once the lease has ended, knowing it may have been applied.
    IF queued.consumer IS NOT NULL AND queued.consumer <> p_consumer THEN
        RAISE EXCEPTION 'entry % was handed to % (leased until %)', p_entry_id, queued.consumer, coalesce(queued.leased_until::text, 'no time')
            USING ERRCODE = 'CB025', HINT = 'Once the lease has ended, claim_clawbacks hands it to the next consumer.';
    END IF;
    IF p_outcome = 'applied' AND units <> expected THEN
        RAISE EXCEPTION 'entry % asks for % units; % were applied: acknowledge it as partial', p_entry_id, expected, units
            USING ERRCODE = 'CB023';
    ELSIF p_outcome = 'partial' AND (entry.units <= 0 OR units IS NULL OR units < 0 OR units >= expected) THEN
        RAISE EXCEPTION 'partial is for a take-back of which fewer than its % units were taken (0 or more), not %', expected, units
            USING ERRCODE = 'CB023';
    ELSIF p_outcome = 'waived' AND (coalesce(p_note, '') = '' OR units <> 0 OR entry.units < 0) THEN
        RAISE EXCEPTION 'waiving takes a note saying why, moves no units, and is for take-backs and reviews only (entry %)', p_entry_id
            USING ERRCODE = 'CB023';
    ELSIF p_outcome = 'superseded' AND (units <> 0 OR NOT (clawback.reversed_before_applied(entry) OR (entry.units < 0 AND expected = 0))) THEN
        RAISE EXCEPTION 'entry % was not reversed by Apple before it was applied', p_entry_id USING ERRCODE = 'CB023';
    END IF;
    INSERT INTO clawback.ledger_acknowledgements (entry_id, outcome, units_applied, note, acknowledged_by)
    VALUES (p_entry_id, p_outcome, units, p_note, p_consumer);
    DELETE FROM clawback.ledger_queue WHERE entry_id = p_entry_id;
    RETURN true;
END;
$$;


-- The game's door: take-backs and give-backs, under the consumer's own (unreserved) name.
CREATE FUNCTION clawback.acknowledge_clawback(
    p_entry_id      bigint,
    p_consumer      text,
    p_outcome       text,
    p_units_applied bigint DEFAULT NULL,
    p_note          text   DEFAULT NULL
) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT clawback.record_acknowledgement(p_entry_id, p_consumer, p_outcome, p_units_applied, p_note, false)
$$;

-- Staff's door (clawback ledger waive; not granted to the game): waive a review or a take-back no consumer
-- was handed, recorded as staff:<person>.
CREATE FUNCTION clawback.staff_waive(p_entry_id bigint, p_person text, p_note text) RETURNS boolean
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    SELECT clawback.record_acknowledgement(p_entry_id, 'staff:' || p_person, 'waived', 0, p_note, true)
$$;

-- The grant path's door runs as the schema's owner too, so the game needs no table privilege at all.
ALTER FUNCTION clawback.record_grant(text, text, text, text, text, text, bigint, timestamptz, integer, uuid, bigint, text, text, text)
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

-- No function of the schema is anyone's but its owner's, except what is granted below; nor are later ones.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA clawback FROM PUBLIC;
ALTER DEFAULT PRIVILEGES IN SCHEMA clawback REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;

-- The game's role: EXECUTE on the three doors, nothing else. Roles belong to the whole cluster: it is
-- created when the migrating role may (CREATEROLE), and granted whenever it exists. Roles that wrote grants
-- before (INSERT on clawback.grants) become members, so the grant path keeps working through the upgrade.
DO $$
DECLARE
    writer text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'clawback_game') THEN
        BEGIN
            CREATE ROLE clawback_game NOLOGIN;
        EXCEPTION
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'role clawback_game not created (no CREATEROLE): create it and rerun the grants in docs/integrating.md';
            -- Roles belong to the cluster: a migration of another database may have created it meanwhile.
            WHEN duplicate_object OR unique_violation THEN
                NULL;
        END;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'clawback_game') THEN
        GRANT USAGE ON SCHEMA clawback TO clawback_game;
        GRANT EXECUTE ON FUNCTION clawback.claim_clawbacks(text, integer, interval) TO clawback_game;
        GRANT EXECUTE ON FUNCTION clawback.acknowledge_clawback(bigint, text, text, bigint, text) TO clawback_game;
        GRANT EXECUTE ON FUNCTION
            clawback.record_grant(text, text, text, text, text, text, bigint, timestamptz, integer, uuid, bigint, text, text, text)
            TO clawback_game;
        FOR writer IN
            SELECT DISTINCT grantee FROM information_schema.role_table_grants
            WHERE table_schema = 'clawback' AND table_name = 'grants' AND privilege_type = 'INSERT'
              AND grantee NOT IN (current_user, 'PUBLIC', 'clawback_game')
              AND grantee IN (SELECT rolname FROM pg_roles)
        LOOP
            BEGIN
                EXECUTE format('GRANT clawback_game TO %I', writer);
            EXCEPTION
                -- PostgreSQL 16 and later: granting a role takes ADMIN OPTION on it, which the migrating role
                -- lacks when someone else created clawback_game. Said, not fatal: the grant is in the docs.
                WHEN insufficient_privilege THEN
                    RAISE NOTICE 'could not grant clawback_game to % (%): grant it by hand (docs/integrating.md)', writer, SQLERRM;
            END;
        END LOOP;
    END IF;
END;
$$;
