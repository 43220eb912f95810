-- Stripe's disputes, answered with the game's evidence by `clawback stripe disputes` (docs/stripe.md,
-- "Disputes answered"). One row per dispute, recorded when a run first sees it awaiting the studio's
-- response. The evidence is decided once from the game's facts and stored (`stored`) before anything is
-- sent; it is staged on Stripe (`submit=false`), then `submitting` is written just before the one POST that
-- submits it (`submit=true`), each POST under an Idempotency-Key derived from the dispute, so a rerun after a
-- kill repeats the same request and Stripe answers it with the first answer. No dispute is ever accepted.
CREATE TABLE clawback.stripe_disputes (
    dispute_id       text        PRIMARY KEY CHECK (dispute_id <> ''),
    shop             text        NOT NULL CHECK (shop <> ''),
    payment_intent   text,
    charge           text,
    -- Stripe's reason (fraudulent, product_not_received, …) and status when last read.
    reason           text,
    stripe_status    text        NOT NULL,
    amount_minor     bigint      NOT NULL,
    currency         text        NOT NULL,
    -- evidence_details.due_by: null when Stripe gave none.
    due_by           timestamptz,
    seen_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- open: to decide; set_aside: the game's facts (or the stored evidence) could not be read, tried again
    -- next run; left: not answered by policy (why says which: not delivered, no response allowed, too near
    -- its deadline); stored: the evidence is decided and stored, not yet staged; staged: on Stripe, not
    -- submitted; submitting: the submit was being sent (or was sent, its answer not read); submitted: Stripe
    -- took it; closed: no longer awaiting a response before clawback submitted (answered in the Dashboard,
    -- or past its stage), or no longer known to Stripe; refused: Stripe refused the evidence itself (a 400
    -- that no retry changes), why says how.
    state            text        NOT NULL DEFAULT 'open'
        CHECK (state IN ('open', 'set_aside', 'left', 'stored', 'staged', 'submitting', 'submitted', 'closed', 'refused')),
    why              text,
    -- The game's facts the evidence came from.
    transaction_id   text,
    player_id        text,
    product_id       text,
    units_granted    bigint,
    units_consumed   bigint,
    usage_events     integer,
    -- The exact form fields staged, in order, as [[name, value], …].
    evidence         jsonb,
    stored_at        timestamptz,
    staged_at        timestamptz,
    submitted_at     timestamptz,
    posts            integer     NOT NULL DEFAULT 0 CHECK (posts >= 0),
    -- Which Idempotency-Keys the next POSTs use: a new generation once Stripe stored a 5xx under the old
    -- ones (it replays a stored 500 for 24 hours) and the dispute shows nothing submitted.
    key_generation   integer     NOT NULL DEFAULT 0 CHECK (key_generation >= 0),
    last_error       text,
    CHECK ((state IN ('stored', 'staged', 'submitting', 'submitted')) <= (jsonb_typeof(evidence) = 'array' AND jsonb_array_length(evidence) > 0)),
    CHECK ((state IN ('set_aside', 'left', 'closed', 'refused')) <= (why IS NOT NULL))
);

COMMENT ON TABLE clawback.stripe_disputes IS
    'Stripe disputes awaiting the studio''s response and the evidence clawback stored, staged and submitted for them.';

CREATE INDEX stripe_disputes_to_do ON clawback.stripe_disputes (due_by) WHERE state IN ('open', 'set_aside', 'stored', 'staged', 'submitting');
