-- The game's facts for a refund request are found by the purchase's transaction id or, for a renewal credited
-- under the first purchase, by its original transaction id. Only the first had an index (the primary key):
-- every hourly `refund-requests answer` read every partition of the grants table once per open request
-- (83 ms a request over 1.5 million grants), again each hour for a request still waiting on a late grant.
-- Built on the partitioned table, so every partition has it and every partition created later gets it.
-- Building it holds a SHARE lock on the grants table: the grant path's inserts wait meanwhile (see
-- docs/operations.md, "What every deployment needs": 5.3 s at 10,000,000 grants; migrate in a quiet hour).
CREATE INDEX grants_original_transaction_id ON clawback.grants (original_transaction_id);
