-- Google Play's Voided Purchases feed shows only its last 30 days; clawback keeps what it read there, so a
-- run over a three-month window can use a void Google no longer lists (a chargeback's reason, a
-- quantity-based partial refund's units). The sweep (`clawback google-play sweep-voids`, daily) reads each
-- app's feed from its cursor and records each void once, with the cursor, in one transaction.
CREATE TABLE clawback.google_voided_purchases (
    package_name    text        NOT NULL CHECK (package_name <> ''),
    purchase_token  text        NOT NULL CHECK (purchase_token <> ''),
    order_id        text        CHECK (order_id <> ''),
    purchased_at    timestamptz,
    voided_at       timestamptz NOT NULL,
    -- Google's codes as it gives them: source 0 user, 1 developer, 2 Google; reason 0 to 8 (7 chargeback).
    voided_source   smallint,
    voided_reason   smallint,
    -- Units voided by a quantity-based partial refund; NULL: the whole remaining quantity.
    voided_quantity integer     CHECK (voided_quantity > 0),
    read_at         timestamptz NOT NULL DEFAULT now()
);

-- Once per void: Google does not say whether overlapping reads can return a void twice, nor gives it an id.
-- The order id is not part of the key: a void read once with it and once without is one void.
CREATE UNIQUE INDEX google_voided_purchases_once ON clawback.google_voided_purchases
    (package_name, purchase_token, voided_at, (coalesce(voided_quantity, 0)));
CREATE INDEX google_voided_purchases_order_id ON clawback.google_voided_purchases (order_id);

-- Per app: the feed was read whole up to this instant (Google's recorded time, which the feed filters on),
-- and the last stretch Google could no longer show when the app was swept again (kept, so it stays known).
CREATE TABLE clawback.google_void_cursors (
    package_name text        PRIMARY KEY CHECK (package_name <> ''),
    read_until   timestamptz NOT NULL,
    swept_at     timestamptz NOT NULL DEFAULT now(),
    gap_from     timestamptz,
    gap_until    timestamptz,
    CHECK ((gap_from IS NULL) = (gap_until IS NULL) AND (gap_from IS NULL OR gap_from < gap_until))
);
