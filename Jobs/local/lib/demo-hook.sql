-- The demo game's answer to "how much of this purchase has the player used?" (clawback.units_consumed, the
-- hook of docs/refund-requests.md). A real game reads its spend history; the demo makes one up from the
-- same rule as its wallets: one player in four spent 90% of what they bought, a third of the other
-- purchases have no spend history (NULL: the answer then states no percentage), the rest spent some.
\set ON_ERROR_STOP on
SET client_min_messages = warning;

CREATE OR REPLACE FUNCTION clawback.units_consumed(
    p_transaction_id text, p_player_id text, p_product_id text, p_units_granted bigint
) RETURNS bigint
LANGUAGE sql STABLE
AS $$
    SELECT CASE
        WHEN abs(hashtext(p_player_id)) % 4 = 0 THEN p_units_granted * 9 / 10
        WHEN abs(hashtext(p_transaction_id)) % 3 = 0 THEN NULL
        ELSE p_units_granted * (abs(hashtext(p_transaction_id)) % 45) / 100
    END
$$;
