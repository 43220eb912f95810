-- An inquiry the issuer escalates to a chargeback is the same Stripe dispute, its status moved from a
-- `warning_…` one to `needs_response` (docs/stripe.md, "An inquiry that becomes a chargeback"). The chargeback
-- is a new question with its own deadline: a dispute whose inquiry clawback answered, left, closed or saw
-- refused is reopened and answered once more, and its inquiry's answer is kept beside it. Stripe does not say
-- whether `submission_count` starts again at the chargeback, so each stage is judged against the submissions
-- counted before it.
ALTER TABLE clawback.stripe_disputes
    -- The stage the row's answer is for: `inquiry` (a `warning_…` status) or `chargeback`.
    ADD COLUMN stage                    text CHECK (stage IN ('inquiry', 'chargeback')),
    -- evidence_details.submission_count as Stripe last stated it (read, or in its answer to a POST).
    ADD COLUMN submission_count         integer CHECK (submission_count >= 0),
    -- Submissions Stripe counted before the stage began: the stage is answered once submission_count exceeds it.
    ADD COLUMN submissions_before_stage integer NOT NULL DEFAULT 0 CHECK (submissions_before_stage >= 0),
    -- When clawback first read the dispute as a chargeback after an inquiry.
    ADD COLUMN escalated_at             timestamptz,
    -- The inquiry's answer as it stood when clawback read the dispute escalated (finance's reports as of before
    -- show it): its state, why, deadline and status, the times it was stored, staged, submitted and settled,
    -- whether in time, the facts it counted and the evidence.
    ADD COLUMN inquiry_answer           jsonb CHECK (jsonb_typeof(inquiry_answer) = 'object'),
    ADD CONSTRAINT stripe_disputes_inquiry_answer_escalated CHECK (inquiry_answer IS NULL OR escalated_at IS NOT NULL);

-- Disputes recorded before: the stage their status now reads (an inquiry still, or a chargeback), except an
-- inquiry the release before left at rest (answered, left, closed or refused) that has since become a
-- chargeback awaiting a response: still an inquiry's answer, so the next run reads it escalated and
-- answers the chargeback.
UPDATE clawback.stripe_disputes
SET stage = CASE
    WHEN stripe_status LIKE 'warning\_%' THEN 'inquiry'
    WHEN first_status LIKE 'warning\_%' AND stripe_status = 'needs_response' AND state IN ('submitted', 'left', 'closed', 'refused')
        THEN 'inquiry'
    ELSE 'chargeback' END;

ALTER TABLE clawback.stripe_disputes ALTER COLUMN stage SET NOT NULL;
