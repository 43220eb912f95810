-- Stripe's disputes for finance: every dispute of a payment the game granted is kept, not only those that
-- awaited the studio's response (one first seen not awaiting a response is `observed`, and becomes `open`,
-- to answer, if Stripe later shows it awaiting one), with what it came to (won or lost, kept from the first
-- time Stripe states it) and its fee as its balance transactions state it, so the reports show disputes won
-- and lost with their fees. The times a dispute reached each state are kept, so a report as of an earlier
-- time shows the disputes as they stood then.
ALTER TABLE clawback.stripe_disputes
    -- When Stripe opened the dispute (its `created`), and its status when clawback first saw it.
    ADD COLUMN disputed_at       timestamptz,
    ADD COLUMN first_status      text,
    -- The disputed purchase's grant, as it was when the dispute was first seen (grants are pruned later).
    ADD COLUMN purchased_at      timestamptz,
    -- When the dispute was left, closed or refused; when an observed one began to await a response.
    ADD COLUMN settled_at        timestamptz,
    ADD COLUMN reopened_at       timestamptz,
    -- Whether the submit was sent before due_by, as it stood then.
    ADD COLUMN submitted_in_time boolean,
    -- won or lost: Stripe's final status, kept from the first run that read it (outcome_read_at).
    ADD COLUMN outcome           text CHECK (outcome IN ('won', 'lost')),
    ADD COLUMN outcome_read_at   timestamptz,
    -- The net fee of the dispute's balance transactions, in fee_currency's minor unit (Stripe's lowercase
    -- code; the settlement currency, which may differ from the dispute's), as read with the outcome; null
    -- when Stripe withdrew nothing, or when it could not be read (fee_unknown: asked again for 30 days).
    ADD COLUMN fee_minor         bigint,
    ADD COLUMN fee_currency      text,
    ADD COLUMN fee_unknown       boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT stripe_disputes_outcome_read CHECK ((outcome IS NULL) = (outcome_read_at IS NULL)),
    ADD CONSTRAINT stripe_disputes_fee_currency CHECK ((fee_minor IS NULL) = (fee_currency IS NULL)),
    ADD CONSTRAINT stripe_disputes_fee_unknown CHECK (NOT (fee_unknown AND fee_minor IS NOT NULL)),
    DROP CONSTRAINT stripe_disputes_state_check,
    ADD CONSTRAINT stripe_disputes_state_check CHECK (
        state IN ('open', 'set_aside', 'left', 'stored', 'staged', 'submitting', 'submitted', 'closed', 'refused', 'observed'));

-- Disputes recorded before: their grant as it is now, their first status as last read, settled when first
-- seen (the nearest time kept), in time as the deadline now reads.
UPDATE clawback.stripe_disputes d
SET purchased_at = g.purchased_at, product_id = coalesce(d.product_id, g.product_id), units_granted = coalesce(d.units_granted, g.units_granted)
FROM clawback.grants g
WHERE g.transaction_id = d.payment_intent AND g.store = 'stripe' AND g.bundle_id = d.shop;
UPDATE clawback.stripe_disputes
SET first_status = stripe_status,
    settled_at = CASE WHEN state IN ('left', 'closed', 'refused') THEN seen_at END,
    submitted_in_time = CASE WHEN submitted_at IS NOT NULL THEN coalesce(submitted_at <= due_by, false) END;

-- The reports read disputes by their purchase's date.
CREATE INDEX stripe_disputes_by_purchase ON clawback.stripe_disputes (coalesce(purchased_at, disputed_at, seen_at));
