-- The demo's game server: a wallet per player and the consumer loop of docs/integrating.md, in plain SQL.
-- Run with psql after each `clawback run`: it claims what the run recorded, applies it to the wallets and
-- acknowledges what really happened. Some players spent most of their gems (the clawback is partial), two
-- players are let off with a note (waived), and reversals give back only what was taken.
\set ON_ERROR_STOP on
\pset footer off
SET client_min_messages = warning;

CREATE SCHEMA IF NOT EXISTS demo_game;
-- Every player starts with what was granted; one in four has spent 90% of it since.
CREATE TABLE IF NOT EXISTS demo_game.wallets AS
SELECT player_id,
       CASE WHEN abs(hashtext(player_id)) % 4 = 0 THEN sum(units_granted) / 10 ELSE sum(units_granted) END AS gems
FROM clawback.grants GROUP BY player_id;
CREATE TABLE IF NOT EXISTS demo_game.goodwill (player_id text PRIMARY KEY);

DO $$
DECLARE
    entry   record;
    taken   bigint;
    handed  integer;
BEGIN
    LOOP
        handed := 0;
        FOR entry IN SELECT * FROM clawback.claim_clawbacks('demo-game', 500, interval '5 minutes') LOOP
            handed := handed + 1;
            IF entry.kind = 'review' THEN
                CONTINUE;  -- claims never hand out reviews; staff settle them
            ELSIF entry.reversed THEN
                -- Handed out before and reversed since: this consumer never applied it (it acknowledges at once).
                PERFORM clawback.acknowledge_clawback(entry.entry_id, 'demo-game', 'superseded');
            ELSIF entry.units < 0 THEN
                UPDATE demo_game.wallets SET gems = gems - entry.units WHERE player_id = entry.player_id;
                PERFORM clawback.acknowledge_clawback(entry.entry_id, 'demo-game', 'applied');
            ELSIF (SELECT count(*) FROM demo_game.goodwill) < 2 AND abs(hashtext(entry.player_id)) % 7 = 0 THEN
                INSERT INTO demo_game.goodwill VALUES (entry.player_id) ON CONFLICT DO NOTHING;
                PERFORM clawback.acknowledge_clawback(entry.entry_id, 'demo-game', 'waived', 0,
                    'demo: goodwill for a player who reported the store outage');
            ELSE
                UPDATE demo_game.wallets w SET gems = w.gems - least(w.gems, entry.units)
                FROM (SELECT gems FROM demo_game.wallets WHERE player_id = entry.player_id FOR UPDATE) AS before
                WHERE w.player_id = entry.player_id
                RETURNING least(before.gems, entry.units) INTO taken;
                taken := coalesce(taken, 0);
                IF taken = entry.units THEN
                    PERFORM clawback.acknowledge_clawback(entry.entry_id, 'demo-game', 'applied');
                ELSE
                    PERFORM clawback.acknowledge_clawback(entry.entry_id, 'demo-game', 'partial', taken);
                END IF;
            END IF;
        END LOOP;
        EXIT WHEN handed = 0;
    END LOOP;
END;
$$;

SELECT CASE WHEN l.units >= 0 THEN 'take back' ELSE 'give back' END AS entries, a.outcome,
       count(*) AS count, sum(l.units) AS units_asked, sum(a.units_applied) AS units_applied
FROM clawback.ledger l JOIN clawback.ledger_acknowledgements a USING (entry_id)
WHERE l.kind <> 'review'
GROUP BY 1, 2 ORDER BY 1 DESC, 2;
