-- 0006_refund_requests: answering Apple's refund requests. When a customer asks Apple for a refund, Apple
-- sends CONSUMPTION_REQUEST and weighs the developer's answer (Send Consumption Information) if it comes
-- within 12 hours. `clawback refund-requests answer` (hourly) records each request here once, keyed by
-- Apple's notificationUUID, answers it at most once per decided answer, and joins Apple's later decision
-- (REFUND or REFUND_DECLINED) to it.

CREATE TABLE clawback.refund_requests (
    notification_uuid       uuid        PRIMARY KEY,
    bundle_id               text        NOT NULL CHECK (bundle_id <> ''),
    environment             text        NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
    transaction_id          text        NOT NULL CHECK (transaction_id <> ''),
    original_transaction_id text,
    product_id              text,
    -- Apple's product type (Consumable, Auto-Renewable Subscription, ...): percentages are not sent for
    -- auto-renewables.
    product_type            text,
    -- Apple's purchaseDate: a purchase without a grant counts as undelivered only while grants of its month are kept.
    purchased_at            timestamptz,
    -- consumptionRequestReason (UNINTENDED_PURCHASE, FULFILLMENT_ISSUE, ...), as Apple sent it.
    reason                  text,
    -- The notification's signedDate: when Apple asked. Apple wants the answer within 12 hours of it.
    requested_at            timestamptz NOT NULL,
    deadline                timestamptz NOT NULL,
    received_at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- received: to answer; sending: the answer is decided and stored, and was (or is being) sent, so a
    -- rerun sends exactly that body again (PUT is idempotent) rather than deciding anew;
    -- answered: Apple accepted it (202); not_consented: the app has no consent to answer, so it is never
    -- answered, as Apple asks; unanswerable: the game cannot tell whether it delivered the purchase (no
    -- grant, and grants of that date are not known complete), so nothing is said (last_error says why);
    -- refused: Apple answered 400 or 404 (its code is kept); expired: the deadline passed without an
    -- answer Apple accepted.
    state                   text        NOT NULL DEFAULT 'received'
        CHECK (state IN ('received', 'sending', 'answered', 'not_consented', 'unanswerable', 'refused', 'expired')),
    -- The ConsumptionRequest body decided (exactly what is sent), and the facts it came from.
    answer                  jsonb,
    player_id               text,
    units_granted           bigint,
    units_consumed          bigint,
    attempts                integer     NOT NULL DEFAULT 0,
    answered_at             timestamptz,
    -- When the request reached a final state (answered, not_consented, unanswerable, refused, expired):
    -- reports as of an earlier time show it still open.
    settled_at              timestamptz,
    apple_status            integer,
    apple_error_code        bigint,
    last_error              text,
    -- Apple's decision, from the first REFUND or REFUND_DECLINED about the transaction after the request.
    outcome                 text        CHECK (outcome IN ('REFUND', 'REFUND_DECLINED')),
    outcome_at              timestamptz,
    outcome_notification_uuid uuid,
    CHECK (state <> 'answered' OR (answer IS NOT NULL AND answered_at IS NOT NULL)),
    CHECK (state <> 'sending' OR answer IS NOT NULL),
    CHECK ((state IN ('received', 'sending')) = (settled_at IS NULL))
);

COMMENT ON TABLE clawback.refund_requests IS
    'Apple''s CONSUMPTION_REQUEST notifications, one row per notificationUUID, with the answer sent and Apple''s decision.';

CREATE INDEX refund_requests_transaction ON clawback.refund_requests (transaction_id, requested_at);
CREATE INDEX refund_requests_open ON clawback.refund_requests (deadline) WHERE state IN ('received', 'sending');
CREATE INDEX refund_requests_requested_at ON clawback.refund_requests (requested_at);
-- One request per decision: joining the same REFUND or REFUND_DECLINED again (the overlap) finds it here.
CREATE UNIQUE INDEX refund_requests_decision ON clawback.refund_requests (outcome_notification_uuid)
    WHERE outcome_notification_uuid IS NOT NULL;

-- Where each app's notification feed was read up to, whole (every page of every type verified).
CREATE TABLE clawback.refund_request_cursors (
    bundle_id   text        NOT NULL,
    environment text        NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
    read_until  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (bundle_id, environment)
);

-- THE HOOK: how much of a purchase the player has consumed, in the purchase's units, or NULL when the game
-- does not know (the answer then leaves consumptionPercentage out). The studio replaces this body with its
-- own (CREATE OR REPLACE FUNCTION, same signature), for example from its wallet or spend history; clawback
-- turns it into Apple's milli-percent of units_granted. It runs inside clawback's transaction: it must only
-- read.
CREATE FUNCTION clawback.units_consumed(
    p_transaction_id text, p_player_id text, p_product_id text, p_units_granted bigint
) RETURNS bigint
LANGUAGE sql STABLE
AS $$ SELECT NULL::bigint $$;

COMMENT ON FUNCTION clawback.units_consumed(text, text, text, bigint) IS
    'Hook the studio replaces: units of the purchase the player consumed, or NULL when unknown (docs/refund-requests.md).';
