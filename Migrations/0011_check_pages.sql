-- A run's unflagged grants, a page at a time: the notifications strategy concludes `no_refund_reported` for
-- every grant a trusted refund feed covers and does not list, which at 10,000,000 grants and 1% refunded is
-- 99% of the run. A check row each (about 410 bytes with its primary key entry) made the run's cost follow
-- grants, not refunds: writing them was half of a million-grant run. Such a check carries nothing of its own
-- (no Apple facts, no units taken, no ledger entry), only the feed's statement, which is the same for every
-- grant of an app and environment; so it is kept once per batch, app, environment and statement, with the
-- exact grants it covers. Like the checks table, a page copies what identifies each grant (the grants are
-- pruned while runs are kept with the financial records): transaction id, purchase time, player, product
-- and units granted, as arrays in the grants' order. clawback.run_checks below reads both tables as one
-- row per grant and run.
--
-- Written in the same transaction as the checks and ledger entries of the same batch; a grant is in at most
-- one of a run's pages and never also in the run's checks (the job deletes an unverified check of an earlier
-- attempt when a page takes its grant over, and refuses the batch if a decided check exists).
CREATE TABLE clawback.check_pages (
    run_id             bigint        NOT NULL REFERENCES clawback.runs ON DELETE CASCADE,
    page_id            bigint        GENERATED ALWAYS AS IDENTITY,
    bundle_id          text          NOT NULL,
    environment        text          NOT NULL,
    verdict            text          NOT NULL CHECK (verdict = 'no_refund_reported'),
    -- The feed's statement, for example "no REFUND, REFUND_REVERSED or REVOKE notification since 2026-05-29".
    detail             text          NOT NULL,
    -- The grants, one element each (the transaction id with its purchase time is the grants table's key),
    -- and the purchase times they span: a resumed run skips what its earlier attempts' pages decided by
    -- looking up the pages whose span meets the span of each page of grants it reads.
    transaction_ids    text[]        NOT NULL,
    purchased_ats      timestamptz[] NOT NULL,
    player_ids         text[]        NOT NULL,
    product_ids        text[]        NOT NULL,
    units_granted      bigint[]      NOT NULL,
    first_purchased_at timestamptz   NOT NULL,
    last_purchased_at  timestamptz   NOT NULL,
    grants             integer       NOT NULL CHECK (grants > 0),
    checked_at         timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, page_id),
    CHECK (cardinality(transaction_ids) = grants AND cardinality(purchased_ats) = grants AND cardinality(player_ids) = grants
           AND cardinality(product_ids) = grants AND cardinality(units_granted) = grants),
    CHECK (first_purchased_at <= last_purchased_at)
);
-- A resumed run's lookup: the pages whose span meets a span of purchase times (of every run, then this one's).
CREATE INDEX check_pages_span ON clawback.check_pages USING gist (tstzrange(first_purchased_at, last_purchased_at, '[]'));

COMMENT ON TABLE clawback.check_pages IS
    'Unflagged checks (no_refund_reported) of a run, one row per page of grants with the same statement; '
    'read them one per grant through clawback.run_checks.';

-- Every check of every run, one row per grant: the checks table's rows, and each page's grants, with the
-- columns both have (`in_page` says which table a row comes from). What "what did run N decide about
-- transaction T, and for whom" reads; the reports over several runs take each purchase's latest check from it.
CREATE VIEW clawback.run_checks AS
    SELECT run_id, transaction_id, bundle_id, environment, player_id, product_id, units_granted, purchased_at, verdict,
           action, units_clawed_back, detail, checked_at, false AS in_page
    FROM clawback.checks
    UNION ALL
    SELECT p.run_id, g.transaction_id, p.bundle_id, p.environment, g.player_id, g.product_id, g.units_granted, g.purchased_at,
           p.verdict, 'none', 0::bigint, p.detail, p.checked_at, true
    FROM clawback.check_pages p
    CROSS JOIN LATERAL unnest(p.transaction_ids, p.purchased_ats, p.player_ids, p.product_ids, p.units_granted)
        AS g(transaction_id, purchased_at, player_id, product_id, units_granted);

COMMENT ON VIEW clawback.run_checks IS
    'One row per grant and run: clawback.checks and the grants of clawback.check_pages, with the columns both have.';
