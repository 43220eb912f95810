public import Foundation
import Postgres

/// Stripe's disputes awaiting the studio's response, and the evidence `clawback stripe disputes` decided,
/// stored, staged and submitted for each (migration 0022; docs/stripe.md, "Disputes answered").
public enum StripeDisputeStore {
    /// One `clawback stripe disputes` at a time: a second exits 85.
    public static let lockKey = LockKey(name: "clawback stripe disputes")

    /// A dispute as a run read it from Stripe.
    public struct Seen: Sendable, Equatable {
        public var disputeID: String
        public var shop: String
        public var paymentIntent: String?
        public var charge: String?
        public var reason: String?
        public var status: String
        public var amountMinor: Int64
        public var currency: String
        public var dueBy: Date?
        /// When Stripe opened it.
        public var disputedAt: Date
        /// It awaits the studio's response: recorded `open`, to answer; otherwise recorded `observed`, for
        /// finance, and opened once Stripe shows it awaiting a response.
        public var awaiting: Bool
        /// Its net fee so far, in `fee.currency`'s minor unit; nil when none was withdrawn or it is unknown.
        public var fee: Fee?
        /// Its balance transactions could not be read for a fee (not the same as none withdrawn).
        public var feeUnknown: Bool
        /// Recorded when first seen; false: only a dispute recorded before is brought up to date (a dispute of
        /// a payment the game did not grant, no longer awaiting a response, is none of the studio's business).
        public var recordIfNew: Bool
        /// `evidence_details.submission_count`: the submissions Stripe counted so far, every stage's.
        public var submissionCount: Int

        public init(
            disputeID: String, shop: String, paymentIntent: String?, charge: String?, reason: String?, status: String, amountMinor: Int64,
            currency: String, dueBy: Date?, disputedAt: Date, awaiting: Bool, fee: Fee? = nil, feeUnknown: Bool = false,
            recordIfNew: Bool = true, submissionCount: Int = 0
        ) {
            self.disputeID = disputeID
            self.shop = shop
            self.paymentIntent = paymentIntent
            self.charge = charge
            self.reason = reason
            self.status = status
            self.amountMinor = amountMinor
            self.currency = currency
            self.dueBy = dueBy
            self.disputedAt = disputedAt
            self.awaiting = awaiting
            self.fee = fee
            self.feeUnknown = feeUnknown
            self.recordIfNew = recordIfNew
            self.submissionCount = submissionCount
        }
    }

    /// A dispute's net fee, in `currency`'s minor unit (Stripe's lowercase code: the settlement currency).
    public struct Fee: Sendable, Equatable {
        public var minor: Int64
        public var currency: String

        public init(minor: Int64, currency: String) {
            self.minor = minor
            self.currency = currency
        }
    }

    /// Stripe's statuses after which a dispute's outcome does not change: `won` and `lost` are its outcome.
    public static let outcomes: Set<String> = ["won", "lost"]

    /// Where a dispute's answer stands (the table's `state`).
    public enum State: String, Sendable, CaseIterable {
        case open
        case setAside = "set_aside"
        case left, stored, staged, submitting, submitted, closed, refused
        /// Recorded for finance: not awaiting a response when first seen; opened if it comes to await one.
        case observed
    }

    /// A dispute still to work on, with the evidence stored for it.
    public struct Work: Sendable, Equatable {
        public var disputeID: String
        public var shop: String
        public var paymentIntent: String?
        public var state: State
        public var dueBy: Date?
        /// The Idempotency-Keys' generation (`clawback-dispute-<id>-<generation>-stage`).
        public var keyGeneration: Int
        /// The submissions Stripe counted before the dispute's stage (its inquiry's): the stage is answered
        /// once `submission_count` exceeds it.
        public var submissionsBefore: Int
        /// Whether the answer is for an inquiry (`inquiry`) or a chargeback (`chargeback`).
        public var isInquiry: Bool

        /// Whether Stripe's `status` is of another stage than the one this answer is for (an inquiry escalated
        /// since the row was read): nothing more is sent under its keys until the escalation is recorded.
        public func stageDiffers(from status: String) -> Bool {
            isInquiry ? StripeDisputeStore.chargebackStatuses.contains(status) : StripeDisputeStore.isInquiry(status)
        }
        /// The stored form fields, in order.
        public var evidence: [[String]]?
    }

    /// Records each dispute the first time it is seen (`open` when it awaits a response, else `observed`, with
    /// its grant's purchase time, product and units), and brings one seen before up to date: Stripe's status,
    /// deadline and submission count, `observed` to `open` once it awaits a response, and its outcome and fee
    /// the first time Stripe states it won or lost (kept from then on, so a report of that time reads the same
    /// later; a fee that could not be read is read again, for 30 days).
    ///
    /// An inquiry read again as a chargeback (escalated: the same dispute, a `warning_…` status before, a
    /// chargeback's now) is a new question. Its stage becomes `chargeback`, judged against the submissions
    /// Stripe counted before it (`submissionsBefore`), under a new generation of Idempotency-Keys, with the
    /// inquiry's answer as it stood kept in `inquiry_answer` (for the reports as of before); an inquiry
    /// already answered, left, closed or refused is reopened (`open`) when the chargeback awaits a response,
    /// else closed; evidence staged or being submitted for the inquiry is staged again before the
    /// chargeback's submit. Returns how many were reopened.
    @discardableResult
    public static func record(_ seen: [Seen], now: Date, on connection: DatabaseConnection) throws -> Int {
        var reopened = 0
        for dispute in seen {
            if dispute.recordIfNew {
                let why = dispute.awaiting ? nil : "not awaiting a response when first seen (\(dispute.status))"
                try connection.execute(
                    """
                    INSERT INTO clawback.stripe_disputes (
                        dispute_id, shop, payment_intent, charge, reason, stripe_status, first_status, amount_minor, currency, due_by,
                        disputed_at, state, why, purchased_at, product_id, units_granted, stage, submission_count)
                    SELECT \(dispute.disputeID), \(dispute.shop), \(dispute.paymentIntent), \(dispute.charge), \(dispute.reason),
                        \(dispute.status), \(dispute.status), \(dispute.amountMinor), \(dispute.currency), \(dispute.dueBy)::timestamptz,
                        \(dispute.disputedAt)::timestamptz, \(dispute.awaiting ? "open" : "observed"), \(why), g.purchased_at, g.product_id,
                        g.units_granted, \(Self.isInquiry(dispute.status) ? "inquiry" : "chargeback"), \(dispute.submissionCount)
                    FROM (SELECT 1) AS one
                    LEFT JOIN LATERAL (
                        SELECT purchased_at, product_id, units_granted FROM clawback.grants
                        WHERE transaction_id = \(dispute.paymentIntent) AND store = 'stripe' AND bundle_id = \(dispute.shop) LIMIT 1
                    ) AS g ON true
                    ON CONFLICT (dispute_id) DO NOTHING
                    """)
            }
            let outcome = outcomes.contains(dispute.status) ? dispute.status : nil
            let escalatedNow = Self.chargebackStatuses.contains(dispute.status)
            let closedWhy = "the inquiry became a chargeback (\(dispute.status)) that does not await clawback's response"
            // `was` is the row before this read: every right-hand side reads it, so the outcome and the fee are
            // written together, once, and an escalation is judged against the status last read.
            reopened += try connection.query(
                """
                WITH was AS (
                    SELECT dispute_id, state,
                        stage = 'inquiry' AND \(escalatedNow)::boolean AS escalated,
                        state IN ('submitted', 'left', 'closed', 'refused') AS at_rest,
                        CASE WHEN state = 'submitting' THEN \(dispute.submissionCount)::integer
                             ELSE least(coalesce(submission_count, \(dispute.submissionCount)::integer), \(dispute.submissionCount)::integer)
                        END AS submissions_before
                    FROM clawback.stripe_disputes WHERE dispute_id = \(dispute.disputeID) FOR UPDATE
                )
                UPDATE clawback.stripe_disputes d
                SET stripe_status = \(dispute.status), due_by = \(dispute.dueBy)::timestamptz, submission_count = \(dispute.submissionCount)::integer,
                    stage = CASE WHEN was.escalated THEN 'chargeback' ELSE d.stage END,
                    escalated_at = CASE WHEN was.escalated THEN \(now)::timestamptz ELSE d.escalated_at END,
                    submissions_before_stage = CASE WHEN was.escalated THEN was.submissions_before ELSE d.submissions_before_stage END,
                    key_generation = d.key_generation + CASE WHEN was.escalated THEN 1 ELSE 0 END,
                    inquiry_answer = CASE WHEN was.escalated AND d.state <> 'observed' THEN jsonb_build_object(
                        'state', d.state, 'why', d.why, 'stored_at', d.stored_at, 'staged_at', d.staged_at, 'submitted_at', d.submitted_at,
                        'submitted_in_time', d.submitted_in_time, 'settled_at', d.settled_at, 'units_consumed', d.units_consumed,
                        'usage_events', d.usage_events, 'submission_count', d.submission_count, 'evidence', d.evidence,
                        'due_by', d.due_by, 'stripe_status', d.stripe_status)
                        ELSE d.inquiry_answer END,
                    state = CASE
                        WHEN was.escalated AND was.at_rest THEN CASE WHEN \(dispute.awaiting)::boolean THEN 'open' ELSE 'closed' END
                        WHEN was.escalated AND d.state IN ('staged', 'submitting') AND \(dispute.awaiting)::boolean THEN 'stored'
                        WHEN d.state = 'observed' AND \(dispute.awaiting)::boolean THEN 'open'
                        ELSE d.state END,
                    why = CASE
                        WHEN was.escalated AND was.at_rest THEN CASE WHEN \(dispute.awaiting)::boolean THEN NULL ELSE \(closedWhy)::text END
                        WHEN d.state = 'observed' AND \(dispute.awaiting)::boolean THEN NULL
                        ELSE d.why END,
                    evidence = CASE WHEN was.escalated AND was.at_rest THEN NULL ELSE d.evidence END,
                    stored_at = CASE WHEN was.escalated AND was.at_rest THEN NULL ELSE d.stored_at END,
                    staged_at = CASE WHEN was.escalated AND (was.at_rest OR (d.state IN ('staged', 'submitting') AND \(dispute.awaiting)::boolean))
                        THEN NULL ELSE d.staged_at END,
                    submitted_at = CASE WHEN was.escalated AND was.at_rest THEN NULL ELSE d.submitted_at END,
                    submitted_in_time = CASE WHEN was.escalated AND was.at_rest THEN NULL ELSE d.submitted_in_time END,
                    settled_at = CASE WHEN was.escalated AND was.at_rest
                        THEN CASE WHEN \(dispute.awaiting)::boolean THEN NULL ELSE \(now)::timestamptz END ELSE d.settled_at END,
                    units_consumed = CASE WHEN was.escalated AND was.at_rest THEN NULL ELSE d.units_consumed END,
                    usage_events = CASE WHEN was.escalated AND was.at_rest THEN NULL ELSE d.usage_events END,
                    last_error = CASE WHEN was.escalated THEN NULL ELSE d.last_error END,
                    reopened_at = CASE WHEN d.state = 'observed' AND \(dispute.awaiting)::boolean THEN \(now)::timestamptz ELSE d.reopened_at END,
                    outcome_read_at = CASE WHEN d.outcome IS NULL AND \(outcome)::text IS NOT NULL THEN \(now)::timestamptz ELSE d.outcome_read_at END,
                    fee_minor = CASE WHEN d.outcome IS NULL OR d.fee_unknown THEN \(dispute.fee?.minor)::bigint ELSE d.fee_minor END,
                    fee_currency = CASE WHEN d.outcome IS NULL OR d.fee_unknown THEN \(dispute.fee?.currency)::text ELSE d.fee_currency END,
                    fee_unknown = CASE WHEN d.outcome IS NULL OR d.fee_unknown THEN \(dispute.feeUnknown)::boolean ELSE d.fee_unknown END,
                    outcome = coalesce(d.outcome, \(outcome)::text)
                FROM was
                WHERE d.dispute_id = was.dispute_id
                RETURNING was.escalated AND was.at_rest AND \(dispute.awaiting)::boolean
                """
            ).rows.filter { try $0.decode(Bool.self, at: 0) }.count
        }
        return reopened
    }

    /// Stripe's inquiry statuses (`warning_…`: the bank asks, no money moved) and the chargeback's an inquiry
    /// may become (`prevented`, undefined in the spec, is neither).
    static func isInquiry(_ status: String) -> Bool { status.hasPrefix("warning_") }
    static let chargebackStatuses: Set<String> = ["needs_response", "under_review", "won", "lost"]

    /// Disputes recorded for the first time that awaited a response (or came to await one): the job's "new".
    public static func answerable(on connection: DatabaseConnection) throws -> Int {
        try connection.query("SELECT count(*)::bigint FROM clawback.stripe_disputes WHERE state <> 'observed'").first?.decode(Int.self, at: 0) ?? 0
    }

    /// The disputes recorded before whose outcome Stripe has not stated yet and which are not being answered,
    /// and those whose fee could not be read with their outcome (for 30 days): the run asks each one its list
    /// (the last 60 days) did not hold, each with whether it is still an inquiry (which may have become a
    /// chargeback awaiting an answer). A dispute Stripe no longer knows is not asked again.
    public static func awaitingOutcome(now: Date, on connection: DatabaseConnection) throws -> [(id: String, isInquiry: Bool)] {
        try connection.query(
            """
            SELECT dispute_id, stage = 'inquiry' FROM clawback.stripe_disputes
            WHERE state IN ('left', 'submitted', 'closed', 'refused', 'observed') AND coalesce(why, '') NOT LIKE 'no longer known to Stripe%'
              AND ((outcome IS NULL AND stripe_status NOT IN ('warning_closed', 'prevented'))
                   OR (fee_unknown AND outcome_read_at > \(now)::timestamptz - interval '30 days'))
            ORDER BY dispute_id
            """
        ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(Bool.self, at: 1)) }
    }

    /// The disputes still to work on (or only `disputeID`, if it is one), the nearest deadline first.
    public static func work(only disputeID: String? = nil, on connection: DatabaseConnection) throws -> [Work] {
        try connection.query(
            """
            SELECT dispute_id, shop, payment_intent, state, due_by, evidence::text, key_generation, submissions_before_stage, stage
            FROM clawback.stripe_disputes
            WHERE state IN ('open', 'set_aside', 'stored', 'staged', 'submitting') AND (\(disputeID)::text IS NULL OR dispute_id = \(disputeID))
            ORDER BY due_by NULLS LAST, dispute_id
            """
        ).rows.map { row throws(PostgresError) in
            let stateText = try row.decode(String.self, at: 3)
            let evidenceText = try row.decode(String?.self, at: 5)
            return Work(
                disputeID: try row.decode(String.self, at: 0), shop: try row.decode(String.self, at: 1),
                // The query selects five states by name, so every row's is one of them.
                paymentIntent: try row.decode(String?.self, at: 2), state: State(rawValue: stateText) ?? .setAside,
                dueBy: try row.decode(Date?.self, at: 4), keyGeneration: try row.decode(Int.self, at: 6),
                submissionsBefore: try row.decode(Int.self, at: 7), isInquiry: try row.decode(String.self, at: 8) == "inquiry",
                evidence: evidenceText.flatMap { try? JSONDecoder().decode([[String]].self, from: Data($0.utf8)) })
        }
    }

    /// Stores the evidence decided for `disputeID` with the facts it came from, before anything is sent.
    public static func store(
        _ disputeID: String, evidence: [(String, String)], facts: DisputeFacts, now: Date, on connection: DatabaseConnection
    ) throws {
        let json = String(decoding: try JSONEncoder().encode(evidence.map { [$0.0, $0.1] }), as: UTF8.self)
        try connection.execute(
            """
            UPDATE clawback.stripe_disputes
            SET state = 'stored', why = NULL, evidence = \(json)::jsonb, stored_at = \(now), transaction_id = \(facts.transactionID),
                player_id = \(facts.playerID), product_id = \(facts.productID), units_granted = \(facts.unitsGranted),
                units_consumed = \(facts.unitsConsumed), usage_events = \(facts.uses.count)
            WHERE dispute_id = \(disputeID) AND state IN ('open', 'set_aside')
            """)
    }

    /// Moves `disputeID` to `state` (with why, for `set_aside`, `left` and `closed`), counting a POST sent, with
    /// the submission count Stripe stated in its answer.
    public static func settle(
        _ disputeID: String, _ state: State, why: String? = nil, posted: Bool = false, error: String? = nil, submissionCount: Int? = nil,
        now: Date, on connection: DatabaseConnection
    ) throws {
        try connection.execute(
            """
            UPDATE clawback.stripe_disputes
            SET state = \(state.rawValue), why = coalesce(\(why), why), posts = posts + \(posted ? 1 : 0), last_error = \(error),
                submission_count = coalesce(\(submissionCount)::integer, submission_count),
                staged_at = CASE WHEN \(state.rawValue) = 'staged' THEN \(now) ELSE staged_at END,
                submitted_at = CASE WHEN \(state.rawValue) = 'submitted' THEN coalesce(submitted_at, \(now)) ELSE submitted_at END,
                submitted_in_time = CASE WHEN \(state.rawValue) = 'submitted'
                    THEN coalesce(submitted_in_time, coalesce(\(now)::timestamptz <= due_by, false)) ELSE submitted_in_time END,
                settled_at = CASE WHEN \(state.rawValue) IN ('left', 'closed', 'refused') THEN coalesce(settled_at, \(now)) ELSE settled_at END
            WHERE dispute_id = \(disputeID)
            """)
    }

    /// Records a POST that failed, leaving the dispute where it was for the next run; `newKeys`: the next POSTs
    /// use a new generation of Idempotency-Keys (Stripe stored a 5xx under these and replays it for 24 hours).
    public static func failed(_ disputeID: String, error: String, newKeys: Bool, on connection: DatabaseConnection) throws {
        try connection.execute(
            """
            UPDATE clawback.stripe_disputes
            SET posts = posts + 1, last_error = \(error), key_generation = key_generation + \(newKeys ? 1 : 0)
            WHERE dispute_id = \(disputeID)
            """)
    }

    /// How many disputes stand in each state.
    public static func states(on connection: DatabaseConnection) throws -> [String: Int] {
        var byState: [String: Int] = [:]
        for row in try connection.query("SELECT state, count(*)::bigint FROM clawback.stripe_disputes GROUP BY state").rows {
            byState[try row.decode(String.self, at: 0)] = try row.decode(Int.self, at: 1)
        }
        return byState
    }

    /// The shop whose Stripe grant `paymentIntent` is, among `shops` (nil: the game has no grant of it).
    public static func shop(ofPaymentIntent paymentIntent: String, among shops: [String], on connection: DatabaseConnection) throws -> String? {
        try connection.query(
            """
            SELECT bundle_id FROM clawback.grants
            WHERE transaction_id = \(paymentIntent) AND store = 'stripe' AND bundle_id = ANY(\(shops)::text[]) LIMIT 1
            """
        ).first?.decode(String.self, at: 0)
    }

    /// The game's facts about the web-shop purchase `paymentIntent` (a Stripe grant's transaction id) of
    /// `shop`: its grant and the studio's hooks (units consumed, the latest 1,000 usage events). Without a
    /// grant, whether it was delivered is unknown: a Stripe grant may have been pruned or never recorded.
    public static func facts(paymentIntent: String, shop: String, on connection: DatabaseConnection) throws -> DisputeFacts {
        guard let granted = try GameHooks.granted(transactionID: paymentIntent, store: "stripe", bundleID: shop, on: connection) else {
            return DisputeFacts(delivered: false)
        }
        return DisputeFacts(
            delivered: true, transactionID: granted.transactionID, playerID: granted.playerID, productID: granted.productID,
            unitsGranted: granted.unitsGranted, purchasedAt: granted.purchasedAt, unitsConsumed: granted.unitsConsumed,
            uses: try GameHooks.uses(of: granted, on: connection))
    }
}

/// What the game knows of a disputed web-shop purchase: its grant, and what the studio's hooks say of it.
public struct DisputeFacts: Sendable, Equatable {
    public typealias Use = PurchaseUse

    /// Whether the game has a grant of it (false: not known to have been delivered).
    public var delivered: Bool
    public var transactionID: String?
    public var playerID: String?
    public var productID: String?
    public var unitsGranted: Int64?
    public var purchasedAt: Date?
    public var unitsConsumed: Int64?
    public var uses: [Use] = []

    public init(
        delivered: Bool, transactionID: String? = nil, playerID: String? = nil, productID: String? = nil, unitsGranted: Int64? = nil,
        purchasedAt: Date? = nil, unitsConsumed: Int64? = nil, uses: [Use] = []
    ) {
        self.delivered = delivered
        self.transactionID = transactionID
        self.playerID = playerID
        self.productID = productID
        self.unitsGranted = unitsGranted
        self.purchasedAt = purchasedAt
        self.unitsConsumed = unitsConsumed
        self.uses = uses
    }
}

extension StripeDisputeStore {
    /// Disputes, once nothing is left to answer: by the latest time anything happened to them.
    public static let records = StoreRecords(
        label: "Stripe disputes", table: "clawback.stripe_disputes",
        lastTouched: "greatest(seen_at, disputed_at, reopened_at, escalated_at, settled_at, submitted_at, outcome_read_at)",
        keepWhile: "state IN ('open', 'set_aside', 'stored', 'staged', 'submitting')")
}
