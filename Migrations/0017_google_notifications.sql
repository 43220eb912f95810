-- Google Play's real-time developer notifications (RTDN), read from the studio's Pub/Sub pull subscription by
-- `clawback google-play notifications`, and the chargeback reviews they open, answered with
-- `orders.reviewrefund` (docs/google-play.md).
--
-- Every message is kept once (Pub/Sub delivers at least once: a duplicate only counts a delivery more), in the
-- transaction that records what it means, and acknowledged only after that commits. A message clawback cannot
-- read, or about an app it does not serve, is kept too, with why, for a person.
CREATE TABLE clawback.google_notifications (
    subscription   text        NOT NULL CHECK (subscription <> ''),
    message_id     text        NOT NULL CHECK (message_id <> ''),
    -- voided: a purchase voided (the next Google daily run checks its order); refund_review: a chargeback to
    -- answer; test: the Play Console's test; not_for_clawback: a purchase or subscription event, read and left;
    -- unreadable: not a notification clawback can read (problem says why); unknown_package: about an app not
    -- configured.
    kind           text        NOT NULL
        CHECK (kind IN ('voided', 'refund_review', 'test', 'not_for_clawback', 'unreadable', 'unknown_package')),
    package_name   text,
    event_time     timestamptz,
    publish_time   timestamptz,
    purchase_token text,
    order_id       text,
    -- The message's data, base64-decoded, as it came (null when it was not base64).
    data           bytea,
    problem        text,
    received_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    deliveries     integer     NOT NULL DEFAULT 1 CHECK (deliveries > 0),
    PRIMARY KEY (subscription, message_id),
    CHECK ((kind IN ('unreadable', 'unknown_package')) = (problem IS NOT NULL)),
    CHECK (kind <> 'voided' OR (purchase_token IS NOT NULL AND order_id IS NOT NULL AND package_name IS NOT NULL))
);

COMMENT ON TABLE clawback.google_notifications IS
    'Google Play''s real-time developer notifications, one row per Pub/Sub message, kept before they are acknowledged.';

-- The Google daily run's "voids named since": by the notifications as by the sweep's voids.
CREATE INDEX google_notifications_voided ON clawback.google_notifications (package_name, received_at) WHERE kind = 'voided';
CREATE INDEX google_notifications_received_at ON clawback.google_notifications (received_at);

-- A chargeback Google asks the studio to review, one row per pending refund token, and the answer: decided
-- once and stored (`stored`) before anything is sent; `sending` is written just before the call, so a run
-- killed after it cannot know whether Google got the answer and never sends it again (`unknown`): at most
-- once, as Google keeps only the first answer for a token anyway.
CREATE TABLE clawback.google_refund_reviews (
    pending_refund_token   text        PRIMARY KEY CHECK (pending_refund_token <> ''),
    package_name           text        NOT NULL CHECK (package_name <> ''),
    order_id               text        NOT NULL CHECK (order_id <> ''),
    -- The notification's refundReason (7: chargeback) and the buyer's obfuscated ids, as Google sent them.
    refund_reason          integer,
    obfuscated_account_id  text,
    obfuscated_profile_id  text,
    -- The notification's eventTime: Google wants the answer within 24 hours of it.
    notified_at            timestamptz NOT NULL,
    deadline               timestamptz NOT NULL,
    subscription           text        NOT NULL,
    message_id             text        NOT NULL,
    received_at            timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- open: to answer; stored: the answer is decided and stored, not sent; sending: being sent (or sent, the
    -- result unknown); answered: Google took it; refused: Google refused it (status and message kept);
    -- unknown: whether Google got it cannot be known, never sent again; unanswerable: the game cannot say
    -- whether it delivered (reason says why); expired: the deadline passed without an answer sent.
    state                  text        NOT NULL DEFAULT 'open'
        CHECK (state IN ('open', 'stored', 'sending', 'answered', 'refused', 'unknown', 'unanswerable', 'expired')),
    -- The OrdersReviewRefundRequest body decided (exactly what is sent), and the facts it came from.
    answer                 jsonb,
    answer_preference      text        CHECK (answer_preference IN ('DECLINE', 'APPROVE', 'NEUTRAL')),
    answer_consumed_milliunits integer CHECK (answer_consumed_milliunits BETWEEN 0 AND 100000),
    answer_usage_events    integer,
    transaction_id         text,
    -- The order's createTime: which report window the review belongs to (the notification's time until read).
    purchased_at           timestamptz,
    player_id              text,
    units_granted          bigint,
    units_consumed         bigint,
    delivered              boolean,
    reason                 text,
    stored_at              timestamptz,
    sent_at                timestamptz,
    answered_at            timestamptz,
    settled_at             timestamptz,
    google_status          integer,
    last_error             text,
    -- The chargeback's outcome, read back from the order once the review is settled: refunded (the order
    -- shows a refund: the chargeback was lost) or not_refunded (still processed 30 days after the deadline).
    outcome                text        CHECK (outcome IN ('refunded', 'not_refunded')),
    outcome_read_at        timestamptz,
    CHECK (state NOT IN ('stored', 'sending', 'answered', 'unknown') OR answer IS NOT NULL),
    CHECK (state <> 'answered' OR answered_at IS NOT NULL),
    CHECK ((state IN ('open', 'stored', 'sending')) = (settled_at IS NULL)),
    FOREIGN KEY (subscription, message_id) REFERENCES clawback.google_notifications
);

COMMENT ON TABLE clawback.google_refund_reviews IS
    'Google Play''s chargeback reviews (pendingRefundReviewNotification), one row per pending refund token, with the answer sent and the outcome.';

CREATE INDEX google_refund_reviews_open ON clawback.google_refund_reviews (deadline) WHERE state IN ('open', 'stored', 'sending');
CREATE INDEX google_refund_reviews_notified_at ON clawback.google_refund_reviews (notified_at);

-- THE HOOK, the second: instances of the player using the purchase, for Google's consumptionUsageEvents (at
-- most 1,000 are sent, the latest). The studio replaces this body (same signature) with a read of its own
-- logs; by default the game has none to give. Like units_consumed it runs inside clawback's transaction and
-- must only read.
CREATE FUNCTION clawback.usage_events(
    p_transaction_id text, p_player_id text, p_product_id text
) RETURNS TABLE (used_at timestamptz, description text)
LANGUAGE sql STABLE
AS $$ SELECT NULL::timestamptz, NULL::text WHERE false $$;

COMMENT ON FUNCTION clawback.usage_events(text, text, text) IS
    'Hook the studio replaces: when and how the player used the purchase, for Google''s chargeback reviews (docs/google-play.md).';
