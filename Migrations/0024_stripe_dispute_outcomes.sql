-- Stripe's disputes for finance: every dispute of a payment the game granted is kept (not only those that
-- awaited the studio's response), with what it came to (won or lost, read from Stripe and kept from the
-- first time Stripe states it) and its fee as its balance transactions state it, so the reports show disputes
-- won and lost with their fees. The times a dispute reached each state are kept, so a report as of an
-- earlier time shows the disputes as they stood then. Nullable columns only: nothing is rewritten.
ALTER TABLE clawback.stripe_disputes
    -- When Stripe opened the dispute (its `created`).
    ADD COLUMN disputed_at     timestamptz,
    -- The disputed purchase's grant, as it was when the dispute was first seen (grants are pruned later).
    ADD COLUMN purchased_at    timestamptz,
    -- When the dispute was left, closed or refused.
    ADD COLUMN settled_at      timestamptz,
    -- won or lost: Stripe's final status, kept from the first run that read it (outcome_read_at).
    ADD COLUMN outcome         text CHECK (outcome IN ('won', 'lost')),
    ADD COLUMN outcome_read_at timestamptz,
    -- The net fee of the dispute's balance transactions, in fee_currency's minor unit (Stripe's lowercase
    -- code; the settlement currency, which may differ from the dispute's), as read with the outcome; null
    -- when Stripe withdrew nothing or the fee could not be read.
    ADD COLUMN fee_minor       bigint,
    ADD COLUMN fee_currency    text,
    ADD CONSTRAINT stripe_disputes_outcome_read CHECK ((outcome IS NULL) = (outcome_read_at IS NULL)),
    ADD CONSTRAINT stripe_disputes_fee_currency CHECK ((fee_minor IS NULL) = (fee_currency IS NULL));

-- The reports read disputes by their purchase's date.
CREATE INDEX stripe_disputes_by_purchase ON clawback.stripe_disputes (coalesce(purchased_at, disputed_at, seen_at));
