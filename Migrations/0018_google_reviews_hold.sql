-- Google Play's chargeback reviews hold when the studio's hook, a message or the network misbehaves
-- (docs/google-play.md, "Chargeback reviews").
--
-- Set aside: a review whose facts the game's hooks could not give this time (clawback.units_consumed or
-- clawback.usage_events failed, or gave a value that is no share of the purchase) stays open with the reason,
-- is tried again by every run until its deadline, and no other review waits for it.
--
-- Sent until taken: Google records the first answer to a pending refund token and ignores later calls while
-- still answering OK, so the one stored body is sent again after any send whose fate is unknown (a 5xx, a
-- broken connection, a run killed while sending) until Google has taken it or the deadline's margin arrives.
-- `sends` counts the calls made; `unconfirmed_sends` those whose fate was never seen. A review the margin cuts
-- off is `unknown` when any send may have reached Google, `expired` when none can have.
ALTER TABLE clawback.google_refund_reviews
    ADD COLUMN set_aside_reason   text,
    ADD COLUMN set_aside_at       timestamptz,
    ADD COLUMN sends              integer NOT NULL DEFAULT 0 CHECK (sends >= 0),
    ADD COLUMN unconfirmed_sends  integer NOT NULL DEFAULT 0 CHECK (unconfirmed_sends >= 0);

COMMENT ON COLUMN clawback.google_refund_reviews.state IS
    'open, stored, sending, answered, refused (Google read the answer and will not take it), unknown (sent, Google''s taking it never seen before the deadline''s margin), unanswerable, expired.';
COMMENT ON COLUMN clawback.google_refund_reviews.set_aside_reason IS
    'Why the game''s hooks gave no usable facts on the last try (an error, or a value outside 0..units_granted): the review stays open and is tried again.';

-- Kept messages age out: a message no review points at is deleted by the notifications job once it is older
-- than Pub/Sub's longest retention (31 days) and the monthly re-check's three months (docs/google-play.md).
