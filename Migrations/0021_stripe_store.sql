-- Stripe, the web shop's payments, as a store: its grants, checks and ledger entries carry store 'stripe'
-- (a grant's transaction_id is its PaymentIntent's id, pi_…). The value is added to the enumeration; nothing
-- is rewritten. It cannot be used before this migration's transaction commits, and nothing here uses it.
ALTER TYPE clawback.store ADD VALUE IF NOT EXISTS 'stripe';
