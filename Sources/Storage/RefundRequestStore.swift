public import Foundation
import Postgres

/// A CONSUMPTION_REQUEST as Apple sent it (verified), to be recorded once.
public struct RefundRequestNotice: Sendable, Equatable {
    public var notificationUUID: UUID
    public var bundleID: String
    public var environment: String
    public var transactionID: String
    public var originalTransactionID: String?
    public var productID: String?
    public var productType: String?
    public var purchasedAt: Date?
    public var reason: String?
    public var requestedAt: Date

    public init(
        notificationUUID: UUID, bundleID: String, environment: String, transactionID: String, originalTransactionID: String?,
        productID: String?, productType: String?, purchasedAt: Date?, reason: String?, requestedAt: Date
    ) {
        self.notificationUUID = notificationUUID
        self.bundleID = bundleID
        self.environment = environment
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.productType = productType
        self.purchasedAt = purchasedAt
        self.reason = reason
        self.requestedAt = requestedAt
    }

    /// Apple asks for the answer within 12 hours of the request.
    public static let answerWindow: TimeInterval = 12 * 3600
}

/// Apple's decision about a refund: a verified REFUND or REFUND_DECLINED notification.
public struct RefundDecisionNotice: Sendable, Equatable {
    public typealias Decision = RefundDecision
    public var notificationUUID: UUID
    public var bundleID: String
    public var environment: String
    public var transactionID: String
    public var decision: Decision
    public var decidedAt: Date

    public init(notificationUUID: UUID, bundleID: String, environment: String, transactionID: String, decision: Decision, decidedAt: Date) {
        self.notificationUUID = notificationUUID
        self.bundleID = bundleID
        self.environment = environment
        self.transactionID = transactionID
        self.decision = decision
        self.decidedAt = decidedAt
    }
}

/// A request still waiting for an answer Apple accepted.
public struct OpenRefundRequest: Sendable, Equatable {
    public var notificationUUID: UUID
    public var bundleID: String
    public var environment: String
    public var transactionID: String
    public var productID: String?
    public var productType: String?
    public var purchasedAt: Date?
    public var requestedAt: Date
    public var deadline: Date
    /// The answer decided earlier and maybe sent (state `sending`): sent again exactly, never re-decided.
    public var storedAnswer: String?
    public var attempts: Int
    public var originalTransactionID: String?
}

extension OpenRefundRequest {
    /// A request as a feed names it, before any run recorded it (a preview's).
    public init(notice: RefundRequestNotice) {
        notificationUUID = notice.notificationUUID
        bundleID = notice.bundleID
        environment = notice.environment
        transactionID = notice.transactionID
        productID = notice.productID
        productType = notice.productType
        purchasedAt = notice.purchasedAt
        requestedAt = notice.requestedAt
        deadline = notice.requestedAt + RefundRequestNotice.answerWindow
        storedAnswer = nil
        attempts = 0
        originalTransactionID = notice.originalTransactionID
    }
}

/// What the game knows about a purchase: whether it was delivered (granted), and how much of it was used.
public struct DeliveryFacts: Sendable, Equatable {
    public enum Delivery: Sendable, Equatable {
        /// A grant exists.
        case delivered
        /// No grant, and the grants table covers the purchase date (its partition is kept).
        case notDelivered
        /// No grant, but grants of that date may have been pruned: the game cannot say.
        case unknown
    }

    public var delivery: Delivery
    public var playerID: String?
    public var unitsGranted: Int64?
    /// From the studio's hook `clawback.units_consumed`; nil when it does not know.
    public var unitsConsumed: Int64?

    public init(delivery: Delivery, playerID: String? = nil, unitsGranted: Int64? = nil, unitsConsumed: Int64? = nil) {
        self.delivery = delivery
        self.playerID = playerID
        self.unitsGranted = unitsGranted
        self.unitsConsumed = unitsConsumed
    }
}

/// The refund-requests tables: requests recorded once per notificationUUID, their answers' states, Apple's
/// decisions, and each app's feed cursor.
public enum RefundRequestStore {
    public static let lockKey = LockKey(name: "clawback refund-requests")

    /// The ids among `ids` that a run has recorded (a preview's read-only check).
    public static func recorded(_ ids: [UUID], on connection: DatabaseConnection) throws -> Set<UUID> {
        var found: Set<UUID> = []
        for id in ids where try connection.query("SELECT 1 FROM clawback.refund_requests WHERE notification_uuid = \(id)").first != nil {
            found.insert(id)
        }
        return found
    }

    /// Records requests not seen before (`not_consented` straight away for apps without consent); returns
    /// how many were new.
    @discardableResult
    public static func record(_ notices: [RefundRequestNotice], consented: (String) -> Bool, on connection: DatabaseConnection) throws -> Int {
        var inserted = 0
        for notice in notices {
            let state = (consented(notice.bundleID) ? RefundRequestState.received : .notConsented).rawValue
            inserted += try connection.execute(
                """
                INSERT INTO clawback.refund_requests (notification_uuid, bundle_id, environment, transaction_id, original_transaction_id,
                    product_id, product_type, purchased_at, reason, requested_at, deadline, state, settled_at, player_id, units_granted)
                SELECT \(notice.notificationUUID), \(notice.bundleID), \(notice.environment), \(notice.transactionID),
                    \(notice.originalTransactionID), \(notice.productID), \(notice.productType), \(notice.purchasedAt), \(notice.reason),
                    \(notice.requestedAt), \(notice.requestedAt + RefundRequestNotice.answerWindow), \(state),
                    CASE WHEN \(state) = 'received' THEN NULL ELSE clock_timestamp() END, g.player_id, g.units_granted
                -- The grant as recorded now (finance's units kept when Apple declines, whatever the answer).
                FROM (SELECT 1) AS one
                LEFT JOIN LATERAL (
                    SELECT player_id, units_granted FROM clawback.grants
                    WHERE transaction_id = \(notice.transactionID) AND store = 'app_store' LIMIT 1
                ) g ON true
                ON CONFLICT (notification_uuid) DO NOTHING
                """)
        }
        return inserted
    }

    /// Joins Apple's decisions to the requests they answer: each decision goes to the latest undecided
    /// request of its transaction made before it. Returns how many requests got an outcome.
    @discardableResult
    public static func recordDecisions(_ notices: [RefundDecisionNotice], on connection: DatabaseConnection) throws -> Int {
        var joined = 0
        for notice in notices.sorted(by: { $0.decidedAt < $1.decidedAt }) {
            joined += try connection.execute(
                """
                UPDATE clawback.refund_requests SET outcome = \(notice.decision.rawValue), outcome_at = \(notice.decidedAt),
                    outcome_notification_uuid = \(notice.notificationUUID)
                WHERE notification_uuid = (
                    SELECT notification_uuid FROM clawback.refund_requests
                    WHERE transaction_id = \(notice.transactionID) AND bundle_id = \(notice.bundleID)
                      AND environment = \(notice.environment) AND requested_at <= \(notice.decidedAt) AND outcome IS NULL
                      -- Apple decides within days; a much later decision is about something else.
                      AND requested_at > \(notice.decidedAt)::timestamptz - interval '60 days'
                      AND NOT EXISTS (SELECT 1 FROM clawback.refund_requests d WHERE d.outcome_notification_uuid = \(notice.notificationUUID))
                    ORDER BY requested_at DESC LIMIT 1)
                """)
        }
        return joined
    }

    /// Where the feed of an app and environment was last read whole up to.
    public static func cursor(bundleID: String, environment: String, on connection: DatabaseConnection) throws -> Date? {
        try connection.query(
            "SELECT read_until FROM clawback.refund_request_cursors WHERE bundle_id = \(bundleID) AND environment = \(environment)"
        ).first?.decode(Date.self, at: 0)
    }

    /// Moves the cursor forward (never back).
    public static func advanceCursor(bundleID: String, environment: String, to date: Date, on connection: DatabaseConnection) throws {
        try connection.execute(
            """
            INSERT INTO clawback.refund_request_cursors (bundle_id, environment, read_until) VALUES (\(bundleID), \(environment), \(date))
            ON CONFLICT (bundle_id, environment) DO UPDATE
            SET read_until = greatest(clawback.refund_request_cursors.read_until, excluded.read_until), updated_at = clock_timestamp()
            """)
    }

    /// A feed read as one unit of work: its new requests and Apple's decisions recorded, and each feed read
    /// whole moved forward to `readUntil`, in one transaction, so that a cursor never passes what was not
    /// kept. Returns the new requests and the decisions joined to their requests.
    public static func recordFeeds(
        requests: [RefundRequestNotice], decisions: [RefundDecisionNotice], consented: (String) -> Bool,
        readWhole: [(bundleID: String, environment: String, readUntil: Date)], on connection: DatabaseConnection
    ) throws -> (newRequests: Int, decisionsJoined: Int) {
        try connection.withTransaction { connection in
            let new = try record(requests, consented: consented, on: connection)
            let joined = try recordDecisions(decisions, on: connection)
            for feed in readWhole {
                try advanceCursor(bundleID: feed.bundleID, environment: feed.environment, to: feed.readUntil, on: connection)
            }
            return (new, joined)
        }
    }

    /// Requests whose deadline passed without an accepted answer become `expired`; returns how many.
    @discardableResult
    public static func expire(now: Date, on connection: DatabaseConnection) throws -> Int {
        try connection.execute(
            """
            UPDATE clawback.refund_requests SET state = 'expired', settled_at = clock_timestamp(),
                last_error = CASE WHEN state = 'sending'
                    THEN 'the answer was sent, but Apple''s acceptance was not seen before the deadline (it may have been accepted); '
                        || coalesce(last_error, '')
                    ELSE last_error END
            WHERE state IN ('received', 'sending') AND deadline <= \(now)
            """)
    }

    /// Requests still to answer before their deadline, soonest deadline first.
    public static func open(now: Date, on connection: DatabaseConnection) throws -> [OpenRefundRequest] {
        try connection.query(
            """
            SELECT notification_uuid, bundle_id, environment, transaction_id, product_id, product_type, requested_at, deadline,
                CASE WHEN state = 'sending' THEN answer::text END, attempts, purchased_at, original_transaction_id
            FROM clawback.refund_requests WHERE state IN ('received', 'sending') AND deadline > \(now)
            ORDER BY deadline, notification_uuid
            """
        ).rows.map { row in
            OpenRefundRequest(
                notificationUUID: try row.decode(UUID.self, at: 0), bundleID: try row.decode(String.self, at: 1),
                environment: try row.decode(String.self, at: 2), transactionID: try row.decode(String.self, at: 3),
                productID: try row.decode(String?.self, at: 4), productType: try row.decode(String?.self, at: 5),
                purchasedAt: try row.decode(Date?.self, at: 10), requestedAt: try row.decode(Date.self, at: 6),
                deadline: try row.decode(Date.self, at: 7), storedAnswer: try row.decode(String?.self, at: 8),
                attempts: try row.decode(Int.self, at: 9), originalTransactionID: try row.decode(String?.self, at: 11))
        }
    }

    /// The game's facts about a purchase: its grant (by transaction id, in any partition) and the hook's
    /// units consumed. A grant of the transaction id, or of its original transaction id (a renewal credited
    /// under the first purchase), under any app or environment, counts as delivered (the game handed
    /// something out for it: saying otherwise would ask Apple to refund delivered goods). A
    /// purchase without a grant counts as not delivered only when it was made since the grants are known
    /// complete (`grantsCompleteSince`, the studio's word) and the grants of its month are still kept (its
    /// partition exists: pruning drops whole months); otherwise the game cannot know. The grant is chosen
    /// first and the studio's hook called for it alone (in the select list of the same query, it ran for every
    /// matching row before the LIMIT); both lookups use an index (migration 0010), never a scan of every partition.
    public static func facts(
        transactionID: String, originalTransactionID: String?, bundleID: String, purchasedAt: Date?, grantsCompleteSince: Date?,
        on connection: DatabaseConnection
    ) throws -> DeliveryFacts {
        if let row = try connection.query(
            """
            SELECT chosen.player_id, chosen.units_granted,
                clawback.units_consumed(chosen.transaction_id, chosen.player_id, chosen.product_id, chosen.units_granted)
            FROM (
                SELECT g.transaction_id, g.player_id, g.product_id, g.units_granted
                FROM clawback.grants g
                WHERE (g.transaction_id = \(transactionID) OR g.original_transaction_id = \(originalTransactionID ?? transactionID))
                  AND g.store = 'app_store'
                ORDER BY (g.transaction_id = \(transactionID)) DESC, (g.bundle_id = \(bundleID)) DESC, g.purchased_at
                LIMIT 1
            ) chosen
            """
        ).first {
            return DeliveryFacts(
                delivery: .delivered, playerID: try row.decode(String.self, at: 0), unitsGranted: try row.decode(Int64.self, at: 1),
                unitsConsumed: try row.decode(Int64?.self, at: 2))
        }
        guard let purchasedAt, let grantsCompleteSince, purchasedAt >= grantsCompleteSince else { return DeliveryFacts(delivery: .unknown) }
        return DeliveryFacts(delivery: try GrantPartitions.holdsMonth(of: purchasedAt, on: connection) ? .notDelivered : .unknown)
    }

    /// An answer as stored: the exact JSON body sent to Apple, and what finance's report shows of it, in
    /// columns of their own (migration 0009), so that no report reads keys out of the JSON.
    public struct StoredAnswer: Sendable, Equatable {
        public var body: String
        public var deliveryStatus: String
        public var consumptionPercentage: Int64?
        public var refundPreference: String?

        public init(body: String, deliveryStatus: String, consumptionPercentage: Int64?, refundPreference: String?) {
            self.body = body
            self.deliveryStatus = deliveryStatus
            self.consumptionPercentage = consumptionPercentage
            self.refundPreference = refundPreference
        }
    }

    /// Stores the decided answer before it is sent: from here on a rerun sends exactly this body again.
    /// False when another process took the request meanwhile (then nothing is sent).
    public static func markSending(
        _ id: UUID, answer: StoredAnswer, facts: DeliveryFacts, on connection: DatabaseConnection
    ) throws -> Bool {
        try connection.execute(
            """
            UPDATE clawback.refund_requests SET state = 'sending', answer = \(answer.body)::jsonb,
                answer_delivery_status = \(answer.deliveryStatus), answer_consumption_percentage = \(answer.consumptionPercentage),
                answer_refund_preference = \(answer.refundPreference), player_id = \(facts.playerID),
                units_granted = \(facts.unitsGranted), units_consumed = \(facts.unitsConsumed), attempts = attempts + 1
            WHERE notification_uuid = \(id) AND state = 'received'
            """) == 1
    }

    /// A resend of a stored answer is one more attempt.
    public static func countAttempt(_ id: UUID, on connection: DatabaseConnection) throws {
        try connection.execute("UPDATE clawback.refund_requests SET attempts = attempts + 1 WHERE notification_uuid = \(id) AND state = 'sending'")
    }

    public static func markAnswered(_ id: UUID, at date: Date, on connection: DatabaseConnection) throws {
        try connection.execute(
            """
            UPDATE clawback.refund_requests SET state = 'answered', answered_at = \(date), settled_at = \(date), last_error = NULL,
                apple_status = 202
            WHERE notification_uuid = \(id) AND state = 'sending'
            """)
    }

    /// Nothing can be said (the game cannot tell whether it delivered, or consent was withdrawn): final, with
    /// the reason. `state` is `unanswerable` or `not_consented`. Only a request with no answer stored: one
    /// stored as `sending` may have reached Apple, and is never called unanswered.
    /// The two final states a request reaches without an answer.
    public enum Unanswered: Sendable {
        case unanswerable
        case notConsented

        var state: RefundRequestState { self == .unanswerable ? .unanswerable : .notConsented }
    }

    public static func markUnanswered(_ id: UUID, state unanswered: Unanswered, reason: String, on connection: DatabaseConnection) throws {
        let state = unanswered.state
        try connection.execute(
            """
            UPDATE clawback.refund_requests SET state = \(state.rawValue), last_error = \(reason), settled_at = clock_timestamp()
            WHERE notification_uuid = \(id) AND state = 'received'
            """)
    }

    /// Apple refused the answer for good (HTTP 400 or 404): kept with its code, never sent again.
    public static func markRefused(_ id: UUID, status: Int, code: Int64?, message: String, on connection: DatabaseConnection) throws {
        try connection.execute(
            """
            UPDATE clawback.refund_requests SET state = 'refused', apple_status = \(status), apple_error_code = \(code), last_error = \(message),
                settled_at = clock_timestamp()
            WHERE notification_uuid = \(id) AND state IN ('received', 'sending')
            """)
    }

    /// Not answered this time (Apple unreachable, a hook error, a rule broken): retried by the next run
    /// until the deadline.
    public static func noteFailure(_ id: UUID, status: Int?, code: Int64?, message: String, on connection: DatabaseConnection) throws {
        try connection.execute(
            """
            UPDATE clawback.refund_requests SET last_error = \(message), apple_status = \(status), apple_error_code = \(code)
            WHERE notification_uuid = \(id)
            """)
    }
}

extension RefundRequestStore {
    /// Every column of the requests whose notificationUUID or transaction id is `key`, oldest first, as
    /// (column, value) pairs for staff (`clawback refund-requests show`); NULL is "".
    public static func show(_ key: String, on connection: DatabaseConnection) throws -> [[(String, String)]] {
        let result = try connection.query(
            """
            SELECT notification_uuid::text, bundle_id, environment, transaction_id, original_transaction_id, product_id, product_type,
                purchased_at::text, reason, requested_at::text, deadline::text, received_at::text, state, answer::text, player_id,
                units_granted::text, units_consumed::text, attempts::text, answered_at::text,
                CASE WHEN answered_at IS NULL THEN '' WHEN answered_at <= deadline THEN 'yes' ELSE 'no' END,
                apple_status::text, apple_error_code::text, last_error, outcome, outcome_at::text, outcome_notification_uuid::text
            FROM clawback.refund_requests
            WHERE notification_uuid::text = lower(\(key)) OR transaction_id = \(key)
            ORDER BY requested_at, notification_uuid
            """)
        let names = [
            "notification_uuid", "bundle_id", "environment", "transaction_id", "original_transaction_id", "product_id", "product_type",
            "purchased_at", "reason", "requested_at", "deadline", "received_at", "state", "answer", "player_id", "units_granted",
            "units_consumed", "attempts", "answered_at", "answered_in_time", "apple_status", "apple_error_code", "last_error", "outcome",
            "outcome_at", "outcome_notification_uuid",
        ]
        return try result.rows.map { row in
            try names.enumerated().map { index, name in (name, try row.decode(String?.self, at: index) ?? "") }
        }
    }
}
