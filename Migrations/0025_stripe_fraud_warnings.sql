-- Radar's early fraud warnings about the web shop's granted payments, kept for finance by `clawback stripe
-- disputes` (docs/stripe.md, "Early fraud warnings"): the issuer reported the charge as fraud. A warning
-- moves no money and clawback never refunds; a fraud dispute often follows it. One row per warning, first
-- seen once; whether Stripe still deems it actionable as last read.
CREATE TABLE clawback.stripe_fraud_warnings (
    warning_id      text        PRIMARY KEY CHECK (warning_id <> ''),
    shop            text        NOT NULL CHECK (shop <> ''),
    payment_intent  text        NOT NULL,
    charge          text,
    fraud_type      text        NOT NULL,
    actionable      boolean     NOT NULL,
    warned_at       timestamptz NOT NULL,
    seen_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- The warned purchase's grant, as it was when the warning was first seen (grants are pruned later).
    purchased_at    timestamptz,
    product_id      text,
    units_granted   bigint
);

COMMENT ON TABLE clawback.stripe_fraud_warnings IS
    'Stripe Radar early fraud warnings about granted web-shop payments, kept for finance''s reports.';

CREATE INDEX stripe_fraud_warnings_by_purchase ON clawback.stripe_fraud_warnings (coalesce(purchased_at, warned_at));
CREATE INDEX stripe_fraud_warnings_by_payment ON clawback.stripe_fraud_warnings (payment_intent);
