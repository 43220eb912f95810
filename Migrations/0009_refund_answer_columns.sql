-- What finance's report shows of an answer sent to Apple, in columns of its own: the delivery status, the
-- consumption percentage and the refund preference. The `answer` JSON stays the exact body sent (a rerun
-- sends exactly it again); the report no longer reads keys out of it, so a renamed or reshaped field in
-- Apple's body cannot silently empty a column of finance's report. Written together with `answer` by
-- RefundRequestStore.markSending; rows answered before this migration are filled from their JSON once.
ALTER TABLE clawback.refund_requests
    ADD COLUMN answer_delivery_status text,
    ADD COLUMN answer_consumption_percentage bigint,
    ADD COLUMN answer_refund_preference text;

UPDATE clawback.refund_requests
SET answer_delivery_status = answer ->> 'deliveryStatus',
    answer_consumption_percentage = (answer ->> 'consumptionPercentage')::bigint,
    answer_refund_preference = answer ->> 'refundPreference'
WHERE answer IS NOT NULL;

-- The columns say exactly what the stored body says, or nothing when there is no body: a writer that set
-- one without the other, or set them differently, is refused. (Apple's body always carries deliveryStatus.)
ALTER TABLE clawback.refund_requests
    ADD CONSTRAINT refund_requests_answer_columns CHECK (
        CASE WHEN answer IS NULL
            THEN answer_delivery_status IS NULL AND answer_consumption_percentage IS NULL AND answer_refund_preference IS NULL
            ELSE answer_delivery_status IS NOT NULL
                AND answer_delivery_status IS NOT DISTINCT FROM answer ->> 'deliveryStatus'
                AND answer_consumption_percentage IS NOT DISTINCT FROM (answer ->> 'consumptionPercentage')::bigint
                AND answer_refund_preference IS NOT DISTINCT FROM answer ->> 'refundPreference'
        END);
