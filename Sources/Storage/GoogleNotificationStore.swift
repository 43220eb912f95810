public import Foundation
import Postgres

/// A Pub/Sub message as clawback keeps it (migration 0017): what it means, or why it could not be read.
public struct KeptNotification: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case voided
        case refundReview = "refund_review"
        case test
        case notForClawback = "not_for_clawback"
        case unreadable
        case unknownPackage = "unknown_package"
    }

    /// A chargeback review the message opens.
    public struct Review: Sendable, Equatable {
        public var pendingRefundToken: String
        public var orderID: String
        public var refundReason: Int?
        public var obfuscatedAccountID: String?
        public var obfuscatedProfileID: String?

        public init(pendingRefundToken: String, orderID: String, refundReason: Int?, obfuscatedAccountID: String?, obfuscatedProfileID: String?) {
            self.pendingRefundToken = pendingRefundToken
            self.orderID = orderID
            self.refundReason = refundReason
            self.obfuscatedAccountID = obfuscatedAccountID
            self.obfuscatedProfileID = obfuscatedProfileID
        }
    }

    public var subscription: String
    public var messageID: String
    public var kind: Kind
    public var packageName: String?
    public var eventTime: Date?
    public var publishTime: Date?
    public var purchaseToken: String?
    public var orderID: String?
    public var data: [UInt8]?
    public var problem: String?
    public var review: Review?

    public init(
        subscription: String, messageID: String, kind: Kind, packageName: String? = nil, eventTime: Date? = nil, publishTime: Date? = nil,
        purchaseToken: String? = nil, orderID: String? = nil, data: [UInt8]?, problem: String? = nil, review: Review? = nil
    ) {
        self.subscription = subscription
        self.messageID = messageID
        self.kind = kind
        self.packageName = packageName
        self.eventTime = eventTime
        self.publishTime = publishTime
        self.purchaseToken = purchaseToken
        self.orderID = orderID
        self.data = data
        self.problem = problem
        self.review = review
    }
}

/// Google Play's real-time notifications and the chargeback reviews they open (migration 0017).
public enum GoogleNotificationStore {
    /// One `clawback google-play notifications` at a time: a second one exits 85.
    public static let lockKey = LockKey(name: "clawback google-play notifications")
    /// Google wants a chargeback review answered within 24 hours of its notification.
    public static let reviewWindow: TimeInterval = 24 * 3600

    /// Keeps `messages` (each once: a message kept before only counts a delivery more) and opens the reviews
    /// they carry (each token once), in one transaction: what commits here may be acknowledged. Returns the
    /// ids of the messages that were new.
    ///
    /// One message PostgreSQL will not take as read (a value out of a column's range, a character text cannot
    /// hold) never holds back the others: it is kept instead as unreadable, with PostgreSQL's reason, and its
    /// data as it came, for a person (`refusedAsRead` says which).
    public static func keep(_ messages: [KeptNotification], on connection: DatabaseConnection) throws -> Set<String> {
        try keepReporting(messages, on: connection).added
    }

    /// `keep`, also naming the messages PostgreSQL refused as read and kept as unreadable instead.
    public static func keepReporting(_ messages: [KeptNotification], on connection: DatabaseConnection) throws -> (
        added: Set<String>, refusedAsRead: [String: String]
    ) {
        try connection.withTransaction { connection in
            var added: Set<String> = []
            var refused: [String: String] = [:]
            for message in messages {
                try connection.execute("SAVEPOINT keep_message")
                let inserted: Bool
                do {
                    inserted = try insert(message, on: connection)
                    try connection.execute("RELEASE SAVEPOINT keep_message")
                } catch let error as PostgresError where error.isDataError {
                    try connection.execute("ROLLBACK TO SAVEPOINT keep_message")
                    let problem = "PostgreSQL would not keep it as read (\(error.message)); kept as it came"
                    let unreadable = KeptNotification(
                        subscription: message.subscription, messageID: Self.storableKey(message.messageID), kind: .unreadable, data: message.data,
                        problem: problem)
                    if try insert(unreadable, on: connection) {
                        added.insert(unreadable.messageID)
                        refused[unreadable.messageID] = problem
                    }
                    try connection.execute("RELEASE SAVEPOINT keep_message")
                    continue
                }
                if inserted { added.insert(message.messageID) }
            }
            return (added, refused)
        }
    }

    /// A message id as a key PostgreSQL always takes: without NUL characters (which text cannot hold) and
    /// short enough for the primary key's index, the same for every delivery of the same id.
    static func storableKey(_ id: String) -> String {
        let clean = id.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}")
        guard clean.utf8.count > 256 else { return clean.isEmpty ? "(empty)" : clean }
        // Cut by bytes (one character can be many), at a character's edge, and told apart by a checksum.
        var prefix = ""
        for character in clean {
            guard prefix.utf8.count + String(character).utf8.count <= 200 else { break }
            prefix.append(character)
        }
        let checksum = clean.utf8.reduce(UInt64(14_695_981_039_346_656_037)) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 }
        return prefix + "… (\(id.utf8.count) bytes, fnv1a \(String(checksum, radix: 16)))"
    }

    /// Inserts one message and the review it opens; false when it was kept before (a delivery more).
    private static func insert(_ message: KeptNotification, on connection: DatabaseConnection) throws(PostgresError) -> Bool {
        let inserted = try connection.query(
            """
            INSERT INTO clawback.google_notifications (subscription, message_id, kind, package_name, event_time, publish_time,
                purchase_token, order_id, data, problem)
            VALUES (\(message.subscription), \(message.messageID), \(message.kind.rawValue), \(message.packageName), \(message.eventTime),
                \(message.publishTime), \(message.purchaseToken), \(message.orderID),
                decode(\(message.data.map { Data($0).base64EncodedString() }), 'base64'), \(message.problem))
            ON CONFLICT (subscription, message_id) DO UPDATE SET deliveries = google_notifications.deliveries + 1
            RETURNING xmax = 0
            """
        ).first?.decode(Bool.self, at: 0)
        guard inserted == true else { return false }
        guard let review = message.review, let packageName = message.packageName, let notified = message.eventTime else { return true }
        try connection.execute(
            """
            INSERT INTO clawback.google_refund_reviews (pending_refund_token, package_name, order_id, refund_reason,
                obfuscated_account_id, obfuscated_profile_id, notified_at, deadline, subscription, message_id)
            VALUES (\(review.pendingRefundToken), \(packageName), \(review.orderID), \(review.refundReason), \(review.obfuscatedAccountID),
                \(review.obfuscatedProfileID), \(notified), \(notified + reviewWindow), \(message.subscription), \(message.messageID))
            ON CONFLICT (pending_refund_token) DO NOTHING
            """)
        return true
    }

    /// How long a kept message no review points at is kept: past Pub/Sub's longest retention (31 days, so a
    /// redelivery is still known as one) and the monthly re-check's three months (the daily run's voids).
    public static let messageRetention: TimeInterval = 120 * 86_400

    /// Deletes kept messages older than `messageRetention` that no review points at, at most `limit` a call;
    /// returns how many went.
    @discardableResult
    public static func pruneMessages(now: Date, limit: Int = 10_000, on connection: DatabaseConnection) throws -> Int {
        try connection.execute(
            """
            DELETE FROM clawback.google_notifications n
            WHERE (n.subscription, n.message_id) IN (
                SELECT m.subscription, m.message_id FROM clawback.google_notifications m
                WHERE m.received_at < \(now - messageRetention)
                  AND NOT EXISTS (
                      SELECT 1 FROM clawback.google_refund_reviews r WHERE r.subscription = m.subscription AND r.message_id = m.message_id)
                LIMIT \(limit)
            )
            """)
    }

    /// A review still to answer.
    public struct OpenReview: Sendable, Equatable {
        public var pendingRefundToken: String
        public var packageName: String
        public var orderID: String
        public var notifiedAt: Date
        public var deadline: Date
        public var obfuscatedAccountID: String?
        /// The answer stored by an earlier run and not yet sent: sent as it is, never decided anew.
        public var storedAnswer: String?

        public init(
            pendingRefundToken: String, packageName: String, orderID: String, notifiedAt: Date, deadline: Date, obfuscatedAccountID: String?,
            storedAnswer: String?
        ) {
            self.pendingRefundToken = pendingRefundToken
            self.packageName = packageName
            self.orderID = orderID
            self.notifiedAt = notifiedAt
            self.deadline = deadline
            self.obfuscatedAccountID = obfuscatedAccountID
            self.storedAnswer = storedAnswer
        }
    }

    /// Settles what a run cannot finish. A review left `sending` by a run that stopped is `stored` again, its
    /// send counted as unconfirmed: Google keeps the first answer to a token and ignores later calls, so
    /// sending the same stored body again cannot make a second answer. A review the deadline's margin has
    /// reached without Google taking its answer is settled: `unknown` when a send may have reached Google,
    /// `expired` when none can have. Runs are single-flight, so no other run is sending. Returns (unknown,
    /// expired).
    public static func settleStale(now: Date, on connection: DatabaseConnection) throws -> (unknown: Int, expired: Int) {
        try connection.withTransaction { connection in
            try connection.execute(
                """
                UPDATE clawback.google_refund_reviews
                SET state = 'stored', unconfirmed_sends = unconfirmed_sends + 1,
                    last_error = 'a run stopped while sending this answer: sent again, as Google keeps only the first'
                WHERE state = 'sending'
                """)
            let unknown = try connection.execute(
                """
                UPDATE clawback.google_refund_reviews
                SET state = 'unknown', settled_at = \(now),
                    last_error = coalesce(last_error, 'sent, but Google was never seen to take it before the deadline')
                WHERE state = 'stored' AND unconfirmed_sends > 0 AND deadline <= \(now + sendingMargin)
                """)
            let expired = try connection.execute(
                """
                UPDATE clawback.google_refund_reviews
                SET state = 'expired', settled_at = \(now),
                    last_error = coalesce(last_error, set_aside_reason, 'no answer was sent before the 24-hour deadline')
                WHERE state IN ('open', 'stored') AND deadline <= \(now + sendingMargin)
                """)
            return (unknown, expired)
        }
    }

    /// Sets `token` aside for this run: the game's hooks gave no usable facts (`reason` says what they did).
    /// It stays open, tried again by the next run until its deadline.
    public static func setAside(_ token: String, reason: String, now: Date, on connection: DatabaseConnection) throws {
        try connection.execute(
            """
            UPDATE clawback.google_refund_reviews SET set_aside_reason = \(reason), set_aside_at = coalesce(set_aside_at, \(now))
            WHERE pending_refund_token = \(token) AND state = 'open'
            """)
    }

    /// Order ids of `packageName` that Google has answered before (a review's, a grant's), asked beside a
    /// review's own order so that Google's 404 for the review's order stands beside an answered order: only
    /// then does it say Google does not know that order, not that it cannot be reached.
    public static func knownOrders(packageName: String, on connection: DatabaseConnection) throws -> [String] {
        try connection.query(
            """
            (SELECT order_id FROM clawback.google_refund_reviews
             WHERE package_name = \(packageName) AND state = 'answered' ORDER BY answered_at DESC LIMIT 1)
            UNION
            (SELECT order_id FROM clawback.grants
             WHERE store = 'google_play' AND bundle_id = \(packageName) AND order_id IS NOT NULL ORDER BY purchased_at DESC LIMIT 1)
            """
        ).rows.map { row throws(PostgresError) in try row.decode(String.self, at: 0) }
    }

    /// The pending refund tokens among `tokens` that already have a review (a preview's read-only check).
    public static func recordedTokens(_ tokens: [String], on connection: DatabaseConnection) throws -> Set<String> {
        guard !tokens.isEmpty else { return [] }
        var found: Set<String> = []
        for token in tokens
        where try connection.query("SELECT 1 FROM clawback.google_refund_reviews WHERE pending_refund_token = \(token)").first != nil {
            found.insert(token)
        }
        return found
    }

    /// Reviews to answer before their deadline, the nearest deadline first.
    /// `includingSending`: also those a stopped run left `sending` (a preview's: the run settles them first).
    public static func open(now: Date, includingSending: Bool = false, on connection: DatabaseConnection) throws -> [OpenReview] {
        try connection.query(
            """
            SELECT pending_refund_token, package_name, order_id, notified_at, deadline, obfuscated_account_id, answer::text
            FROM clawback.google_refund_reviews
            WHERE (state IN ('open', 'stored') OR (\(includingSending) AND state = 'sending')) AND deadline > \(now + sendingMargin)
            ORDER BY deadline, pending_refund_token
            """
        ).rows.map { row throws(PostgresError) in
            OpenReview(
                pendingRefundToken: try row.decode(String.self, at: 0), packageName: try row.decode(String.self, at: 1),
                orderID: try row.decode(String.self, at: 2), notifiedAt: try row.decode(Date.self, at: 3), deadline: try row.decode(Date.self, at: 4),
                obfuscatedAccountID: try row.decode(String?.self, at: 5), storedAnswer: try row.decode(String?.self, at: 6))
        }
    }

    /// The game's facts about a Google purchase: its grant (the purchase token is its transaction id), the
    /// studio's hooks (units consumed, usage events, the latest 1,000), or, without a grant, whether the
    /// game can know it did not deliver: a purchase made since the grants are complete whose month is kept.
    public static func facts(
        purchaseToken: String, packageName: String, purchasedAt: Date?, grantsCompleteSince: Date?, on connection: DatabaseConnection
    ) throws -> GoogleDeliveryFacts {
        if let granted = try GameHooks.granted(transactionID: purchaseToken, store: "google_play", bundleID: packageName, on: connection) {
            return GoogleDeliveryFacts(
                delivery: .delivered, transactionID: granted.transactionID, playerID: granted.playerID, productID: granted.productID,
                unitsGranted: granted.unitsGranted, obfuscatedAccountID: granted.obfuscatedAccountID, unitsConsumed: granted.unitsConsumed,
                uses: try GameHooks.uses(of: granted, on: connection))
        }
        guard let purchasedAt, let grantsCompleteSince, purchasedAt >= grantsCompleteSince,
            try GrantPartitions.holdsMonth(of: purchasedAt, on: connection)
        else { return GoogleDeliveryFacts(delivery: .unknown) }
        return GoogleDeliveryFacts(delivery: .notDelivered)
    }

    /// Stores the answer decided for `token` (`stored`), with the facts it came from, before anything is sent.
    public static func store(_ answer: StoredReviewAnswer, token: String, now: Date, on connection: DatabaseConnection) throws {
        try connection.execute(
            """
            UPDATE clawback.google_refund_reviews
            SET state = 'stored', set_aside_reason = NULL, answer = \(answer.body)::jsonb, answer_preference = \(answer.preference),
                answer_consumed_milliunits = \(answer.consumedMilliunits), answer_usage_events = \(answer.usageEvents),
                transaction_id = \(answer.facts.transactionID), purchased_at = \(answer.purchasedAt), player_id = \(answer.facts.playerID), units_granted = \(answer.facts.unitsGranted),
                units_consumed = \(answer.facts.unitsConsumed), delivered = \(answer.facts.delivery == .delivered), reason = \(answer.reason),
                stored_at = \(now)
            WHERE pending_refund_token = \(token) AND state = 'open'
            """)
    }

    /// The answer stored for `token`, while it is still to send.
    public static func storedAnswer(_ token: String, on connection: DatabaseConnection) throws -> String? {
        try connection.query(
            "SELECT answer::text FROM clawback.google_refund_reviews WHERE pending_refund_token = \(token) AND state = 'stored'"
        ).first?.decode(String?.self, at: 0)
    }

    /// How long before its deadline an answer is sent at the latest: the call, its retries and their pauses
    /// (at most three tries of Google's timeout) end before the 24 hours do, whatever the clocks' skew.
    public static let sendingMargin: TimeInterval = 5 * 60

    /// Marks `token` as being sent, committed before the call: a run that stops after this finds it `sending`
    /// and counts that send as unconfirmed. False when it is not to be sent: no longer stored, or too near its
    /// deadline (it settles as `unknown` or `expired`).
    public static func markSending(_ token: String, now: Date, on connection: DatabaseConnection) throws -> Bool {
        try connection.execute(
            """
            UPDATE clawback.google_refund_reviews SET state = 'sending', sent_at = coalesce(sent_at, \(now)), sends = sends + 1
            WHERE pending_refund_token = \(token) AND state = 'stored' AND deadline > \(now + sendingMargin)
            """
        ) == 1
    }

    /// How sending ended, as stored.
    public enum SendResult: Sendable, Equatable {
        case answered
        /// Google read the answer and will not take it (400, 404): final, a person reads why.
        case refused(status: Int, String)
        /// Google did not take the call (429, 503, a refused permission, never sent): `stored`, sent again.
        case notTaken(status: Int?, String)
        /// Google may have taken it (5xx, a broken connection): `stored`, sent again (Google keeps the first).
        case unconfirmed(String)
    }

    public static func record(_ result: SendResult, token: String, now: Date, on connection: DatabaseConnection) throws {
        let (state, status, error, unconfirmed): (String, Int?, String?, Int) =
            switch result {
            case .answered: ("answered", 200, nil, 0)
            case .refused(let status, let message): ("refused", status, message, 0)
            case .notTaken(let status, let message): ("stored", status, message, 0)
            case .unconfirmed(let message): ("stored", nil, message, 1)
            }
        try connection.execute(
            """
            UPDATE clawback.google_refund_reviews
            -- Refused after a send that may have been taken: Google may hold that first answer (its refusal
            -- can be "the window is closed" as well as "not this"), so it is unknown, not refused.
            SET state = CASE WHEN \(state) = 'refused' AND unconfirmed_sends > 0 THEN 'unknown' ELSE \(state) END,
                google_status = \(status), last_error = \(error), unconfirmed_sends = unconfirmed_sends + \(unconfirmed),
                answered_at = CASE WHEN \(state) = 'answered' THEN \(now)::timestamptz END,
                settled_at = CASE WHEN \(state) IN ('stored') THEN NULL ELSE \(now)::timestamptz END
            WHERE pending_refund_token = \(token) AND state = 'sending'
            """)
    }

    /// A review the game cannot answer (it cannot say whether it delivered, or Google does not know the order):
    /// final, with why.
    @discardableResult
    public static func markUnanswerable(_ token: String, reason: String, now: Date, on connection: DatabaseConnection) throws -> Bool {
        try connection.execute(
            """
            UPDATE clawback.google_refund_reviews
            SET state = CASE WHEN unconfirmed_sends > 0 THEN 'unknown' ELSE 'unanswerable' END, reason = \(reason), settled_at = \(now)
            WHERE pending_refund_token = \(token) AND state IN ('open', 'stored')
            """) == 1
    }

    /// When the last test notification arrived (the Play Console's "Send test notification"), and how many
    /// messages are kept for a person (unreadable, or about an app not configured).
    public static func health(on connection: DatabaseConnection) throws -> (lastTest: Date?, keptUnread: Int) {
        let row = try connection.query(
            """
            SELECT max(received_at) FILTER (WHERE kind = 'test'),
                count(*) FILTER (WHERE kind IN ('unreadable', 'unknown_package'))::bigint
            FROM clawback.google_notifications
            """
        ).first
        return (try row?.decode(Date?.self, at: 0) ?? nil, try row?.decode(Int.self, at: 1) ?? 0)
    }

    /// A settled review whose chargeback's outcome is not known yet.
    public struct AwaitingOutcome: Sendable, Equatable {
        public var pendingRefundToken: String
        public var packageName: String
        public var orderID: String
        public var deadline: Date
    }

    /// Settled reviews without an outcome, not read in the last day, notified within the last 120 days
    /// (card networks' dispute windows; older ones stay without an outcome).
    public static func awaitingOutcome(now: Date, on connection: DatabaseConnection) throws -> [AwaitingOutcome] {
        try connection.query(
            """
            SELECT pending_refund_token, package_name, order_id, deadline FROM clawback.google_refund_reviews
            WHERE outcome IS NULL AND settled_at IS NOT NULL AND notified_at > \(now)::timestamptz - interval '120 days'
              AND (outcome_read_at IS NULL OR outcome_read_at < \(now)::timestamptz - interval '1 day')
            ORDER BY package_name, order_id
            """
        ).rows.map { row throws(PostgresError) in
            AwaitingOutcome(
                pendingRefundToken: try row.decode(String.self, at: 0), packageName: try row.decode(String.self, at: 1),
                orderID: try row.decode(String.self, at: 2), deadline: try row.decode(Date.self, at: 3))
        }
    }

    /// Records what the order said of a review's chargeback: `refunded`, `notRefunded`, or nil (not decided
    /// yet: only when it was read).
    public static func recordOutcome(_ refunded: Bool?, token: String, now: Date, on connection: DatabaseConnection) throws {
        let outcome = refunded.map { $0 ? "refunded" : "not_refunded" }
        try connection.execute(
            """
            UPDATE clawback.google_refund_reviews SET outcome = \(outcome), outcome_read_at = \(now)
            WHERE pending_refund_token = \(token) AND outcome IS NULL
            """)
    }

    /// Reviews by state, and the oldest open one's age: for the outcome and the metrics.
    public static func counts(now: Date, on connection: DatabaseConnection) throws -> (byState: [String: Int], oldestOpenAge: Double) {
        var byState: [String: Int] = [:]
        for row in try connection.query("SELECT state, count(*)::bigint FROM clawback.google_refund_reviews GROUP BY state").rows {
            byState[try row.decode(String.self, at: 0)] = try row.decode(Int.self, at: 1)
        }
        let oldest =
            try connection.query(
                "SELECT min(notified_at) FROM clawback.google_refund_reviews WHERE state IN ('open', 'stored', 'sending') AND deadline > \(now)"
            ).first?.decode(Date?.self, at: 0)
        return (byState, oldest.map { now.timeIntervalSince($0) } ?? 0)
    }
}

/// What the game knows of a Google purchase under review.
public struct GoogleDeliveryFacts: Sendable, Equatable {
    public enum Delivery: Sendable, Equatable { case delivered, notDelivered, unknown }

    public typealias Use = PurchaseUse

    public var delivery: Delivery
    public var transactionID: String?
    public var playerID: String?
    public var productID: String?
    public var unitsGranted: Int64?
    public var obfuscatedAccountID: String?
    public var unitsConsumed: Int64?
    public var uses: [Use]

    public init(
        delivery: Delivery, transactionID: String? = nil, playerID: String? = nil, productID: String? = nil, unitsGranted: Int64? = nil,
        obfuscatedAccountID: String? = nil, unitsConsumed: Int64? = nil, uses: [Use] = []
    ) {
        self.delivery = delivery
        self.transactionID = transactionID
        self.playerID = playerID
        self.productID = productID
        self.unitsGranted = unitsGranted
        self.obfuscatedAccountID = obfuscatedAccountID
        self.unitsConsumed = unitsConsumed
        self.uses = uses
    }
}

/// An answer decided for a review, with its facts, as stored before it is sent.
public struct StoredReviewAnswer: Sendable, Equatable {
    /// The exact JSON body sent to `orders.reviewrefund`.
    public var body: String
    public var preference: String
    public var consumedMilliunits: Int?
    public var usageEvents: Int
    public var facts: GoogleDeliveryFacts
    /// Why this answer, in a sentence finance can read.
    public var reason: String
    /// The order's createTime.
    public var purchasedAt: Date?

    public init(
        body: String, preference: String, consumedMilliunits: Int?, usageEvents: Int, facts: GoogleDeliveryFacts, reason: String,
        purchasedAt: Date?
    ) {
        self.purchasedAt = purchasedAt
        self.body = body
        self.preference = preference
        self.consumedMilliunits = consumedMilliunits
        self.usageEvents = usageEvents
        self.facts = facts
        self.reason = reason
    }
}
