import CrashPoints
public import Foundation
import GooglePlay
import HTTP
public import Job
public import Logging
public import Storage

/// `clawback google-play notifications`, run every hour: reads Google Play's real-time developer notifications
/// from the studio's Pub/Sub pull subscription, keeps each message once and acknowledges only what is kept,
/// then answers each chargeback review once, before its 24-hour deadline, with `orders.reviewrefund`.
///
/// Kept before acknowledged: a message is stored in the transaction that records what it means (a void for
/// the next Google daily run, a review to answer), and acknowledged after that commits; a run killed in
/// between has it delivered again, and a message kept before only counts a delivery more.
///
/// One answer, sent until taken: an answer is decided once and stored (`stored`) before it is sent, and that
/// stored body is the only one ever sent for its review. Google records the first call for a token and ignores
/// later ones while still answering OK, so after a send whose fate is unknown (a 5xx, a broken connection, a
/// run killed while `sending`) the same body is sent again until Google has taken it or the deadline's margin
/// arrives (`unknown` then). A review whose facts the game's hooks cannot give this time is set aside with
/// the reason and tried again next run; no other review waits for it. Single-flight (an advisory lock); a
/// second run exits 85.
public enum GoogleNotificationsRun {
    public struct Outcome: Sendable, Equatable, Codable {
        public var messagesRead = 0
        public var newMessages = 0
        /// Deliveries of messages kept before: Pub/Sub delivers at least once.
        public var duplicates = 0
        public var voids = 0
        public var reviewsOpened = 0
        public var tests = 0
        /// Kept for a person: not a notification clawback can read, or about an app not configured.
        public var unreadable = 0
        public var unknownPackages = 0
        /// Kept but not acknowledged (Pub/Sub's acknowledge failed): delivered again, counted once.
        public var notAcknowledged = 0
        /// The subscription could not be read to its end (Pub/Sub failed, or the run's message limit).
        public var subscriptionLeft = false
        /// Why Pub/Sub could not be read to its end, when it failed (unreachable, refused, an answer too large).
        public var pubSubFailure: String?
        public var answered = 0
        public var refusedByGoogle = 0
        /// Sends this run whose fate Google did not show (5xx, a broken connection): sent again next run.
        public var unconfirmed = 0
        /// Sends Google did not take this run (429, 503, a refused permission, never left): sent again.
        public var notTaken = 0
        /// Reviews left open this run because the game's hooks gave no usable facts (an error, or a value that
        /// is no share of the purchase): tried again next run.
        public var setAside = 0
        /// Reviews settled by this run as sent but never seen taken before the deadline's margin.
        public var unknownOutcome = 0
        public var unanswerable = 0
        public var expired = 0
        /// Reviews still to answer before their deadline, after this run.
        public var open = 0
        public var oldestOpenAgeSeconds = 0.0
        /// Outcomes read this run: the order refunded (the chargeback lost), or still processed 30 days on.
        public var chargebacksLost = 0
        public var chargebacksWon = 0
        public var googleRequests = 0
        /// Kept messages older than their retention deleted by this run.
        public var messagesPruned = 0

        public init() {}

        /// Whether anything needs the next run: exit 75.
        public var isUnfinished: Bool { open > 0 || subscriptionLeft || notAcknowledged > 0 }
    }

    public typealias Failure = ScheduledJobFailure<Outcome>

    public static func perform(
        database: DatabaseConfiguration, configuration: ClawbackConfiguration, logger: Logger, now: @escaping @Sendable () -> Date = Date.init
    ) async throws(Failure) -> Outcome {
        guard let settings = configuration.google.notifications else {
            throw .configuration(.asked("google.notifications is not configured: name the Pub/Sub subscription Google Play's notifications reach"))
        }
        let key: ServiceAccountKey
        let ordersKeys: [String: ServiceAccountKey]
        do {
            key = try GooglePlayAppsFactory.notificationsKey(configuration)
            var keys: [String: ServiceAccountKey] = [:]
            for (index, app) in configuration.googleApps.enumerated() { keys[app.packageName] = try GooglePlayAppsFactory.key(index, configuration) }
            ordersKeys = keys
        } catch {
            throw .configuration(.invalid(error))
        }
        // Each batch of messages commits before it is acknowledged and each answer is stored before it is sent.
        let start = try await ScheduledJobStart.open(
            store: "Google Play", timeout: configuration.google.timeout, database: database, lockKey: GoogleNotificationStore.lockKey, logger: logger,
            failing: Failure.self)
        let (http, session) = (start.http, start.session)
        defer { http.shutdown() }
        let pubSub = PubSubClient(
            subscription: settings.subscription, baseURL: settings.pubsubURL,
            tokens: AccessTokenProvider(key: key, http: http, scopes: PubSubScope.pubsub), http: http)
        let orders = Dictionary(
            uniqueKeysWithValues: ordersKeys.map { packageName, key in
                (
                    packageName,
                    OrdersClient(
                        packageName: packageName, baseURL: configuration.google.apiURL, tokens: AccessTokenProvider(key: key, http: http), http: http)
                )
            })
        let work = GoogleNotificationsWork(
            configuration: configuration, settings: settings, pubSub: pubSub, orders: orders, session: session, logger: logger, now: now)
        let outcome = try await start.holdingLock { try await work.run() }
        guard !outcome.isUnfinished else { throw .unfinished(outcome) }
        return outcome
    }
}

/// One run's work, on a session that holds the lock.
struct GoogleNotificationsWork {
    let configuration: ClawbackConfiguration
    let settings: ClawbackConfiguration.GoogleNotifications
    let pubSub: PubSubClient
    let orders: [String: OrdersClient]
    let session: DatabaseSession
    let logger: Logger
    let now: @Sendable () -> Date

    func run() async throws -> GoogleNotificationsRun.Outcome {
        var outcome = GoogleNotificationsRun.Outcome()
        try await read(into: &outcome)
        try await answer(into: &outcome)
        try await readOutcomes(into: &outcome)
        let counts = try await session.run { [now] in try GoogleNotificationStore.counts(now: now(), on: $0) }
        outcome.open = (counts.byState["open"] ?? 0) + (counts.byState["stored"] ?? 0)
        outcome.oldestOpenAgeSeconds = counts.oldestOpenAge
        outcome.messagesPruned = try await session.run { [now] in try GoogleNotificationStore.pruneMessages(now: now(), on: $0) }
        outcome.googleRequests = pubSub.statistics.requests + orders.values.reduce(0) { $0 + $1.statistics.requests }
        return outcome
    }

    /// Pulls until the subscription is empty (or the run's limit), keeping each batch before acknowledging it.
    ///
    /// Only a pull that reached Pub/Sub and then waited past the timeout means nothing waits: Pub/Sub holds a
    /// pull on an empty subscription. One that never connected (a black-holed address, a refused TLS) is an
    /// outage, said by `pubSubFailure` and exit 75. A pull answer over the cap cuts the pull size eightfold: its
    /// messages are leased to nobody until their lease ends, so the run then says the subscription is left.
    func read(into outcome: inout GoogleNotificationsRun.Outcome) async throws {
        let configured = Set(configuration.googleApps.map(\.packageName))
        var pullSize = PubSubClient.maximumPull
        while outcome.messagesRead < settings.maximumMessagesPerRun {
            let messages: [PubSubClient.ReceivedMessage]
            do {
                messages = try await pubSub.pull(maximum: min(pullSize, settings.maximumMessagesPerRun - outcome.messagesRead))
            } catch  where error.timedOut && error.kind == .transport {
                // Connected, asked, and held past the timeout: nothing more waits now, but for what an earlier
                // pull too large to read leased.
                logger.info("the pull waited past the timeout: nothing more waits", metadata: ["subscription": "\(pubSub.subscription)"])
                if outcome.pubSubFailure != nil { outcome.subscriptionLeft = true }
                return
            } catch  where error.kind == .answerTooLarge && pullSize > 1 {
                outcome.pubSubFailure =
                    "a pull of \(pullSize) messages answered more than \(PubSubClient.maximumPullAnswerBytes) bytes: its messages come again when their lease ends"
                pullSize = max(1, pullSize / 8)
                logger.warning("a pull's answer was too large; pulling fewer at a time", metadata: ["pull_size": "\(pullSize)"])
                continue
            } catch {
                outcome.pubSubFailure = "\(error)"
                logger.warning(
                    "Google's notifications could not be pulled", metadata: ["subscription": "\(pubSub.subscription)", "error": "\(error)"])
                outcome.subscriptionLeft = true
                return
            }
            guard !messages.isEmpty else {
                if outcome.pubSubFailure != nil { outcome.subscriptionLeft = true }
                return
            }
            outcome.messagesRead += messages.count
            let kept = messages.map { Self.kept($0, subscription: pubSub.subscription, configured: configured) }
            let keeping = try await session.run { try GoogleNotificationStore.keepReporting(kept, on: $0) }
            var added = keeping.added
            outcome.newMessages += added.count
            outcome.duplicates += messages.count - added.count
            // Refused as read by PostgreSQL and kept as unreadable instead: counted so, whatever they said.
            for messageID in keeping.refusedAsRead.keys where added.remove(messageID) != nil { outcome.unreadable += 1 }
            // Each message counted once, the first time it is kept (a pull may deliver one twice).
            for message in kept where added.remove(message.messageID) != nil {
                switch message.kind {
                case .voided: outcome.voids += 1
                case .refundReview: outcome.reviewsOpened += 1
                case .test: outcome.tests += 1
                case .unreadable: outcome.unreadable += 1
                case .unknownPackage: outcome.unknownPackages += 1
                case .notForClawback: break
                }
            }
            for message in kept where message.kind == .unreadable || message.kind == .unknownPackage {
                // Once per delivery: a person reads the kept row; the log says it came.
                logger.warning(
                    "a Google notification was kept for a person",
                    metadata: ["message_id": "\(message.messageID)", "problem": "\(message.problem ?? "")"])
            }
            for (messageID, problem) in keeping.refusedAsRead.sorted(by: { $0.key < $1.key }) {
                logger.warning("a Google notification was kept for a person", metadata: ["message_id": "\(messageID)", "problem": "\(problem)"])
            }
            do {
                try await pubSub.acknowledge(messages.map(\.ackID))
            } catch {
                // Kept already: delivered again, it only counts a delivery more.
                outcome.notAcknowledged += messages.count
                logger.warning("kept notifications could not be acknowledged", metadata: ["error": "\(error)"])
                return
            }
        }
        outcome.subscriptionLeft = true
    }

    /// A message as kept: what it says, or why it cannot be read.
    static func kept(_ message: PubSubClient.ReceivedMessage, subscription: String, configured: Set<String>) -> KeptNotification {
        var kept = KeptNotification(
            subscription: subscription, messageID: message.messageID, kind: .unreadable, publishTime: message.publishTime, data: message.data)
        guard let data = message.data else {
            kept.problem = "the message's data is not base64: \(message.rawData.prefix(200))"
            return kept
        }
        let read: ReadNotification
        do {
            read = try DeveloperNotification.read(data)
        } catch {
            kept.problem = String(error.description.prefix(1_000))
            return kept
        }
        // A review's 24 hours run from its event time: one far past the message's own publication would never
        // end (and no event is published before it happens).
        if read.eventTime > (message.publishTime ?? Date()) + 86_400 {
            kept.problem = "eventTimeMillis is more than a day after the message was published: not the time of an event"
            return kept
        }
        kept.packageName = read.packageName
        kept.eventTime = read.eventTime
        guard configured.contains(read.packageName) else {
            kept.kind = .unknownPackage
            let name = read.packageName.count > 200 ? read.packageName.prefix(200) + "… (\(read.packageName.utf8.count) bytes)" : read.packageName
            kept.problem = "about \(name), which is not under google_apps"
            return kept
        }
        switch read.content {
        case .voided(let token, let order, _, _):
            kept.kind = .voided
            kept.purchaseToken = token
            kept.orderID = order
        case .refundReview(let review, let token, let order):
            kept.kind = .refundReview
            kept.orderID = order
            kept.review = KeptNotification.Review(
                pendingRefundToken: token, orderID: order, refundReason: review.refundReason, obfuscatedAccountID: review.obfuscatedAccountId,
                obfuscatedProfileID: review.obfuscatedProfileId)
        case .test: kept.kind = .test
        case .notForClawback: kept.kind = .notForClawback
        }
        return kept
    }

    /// Settles what earlier runs left, then answers each open review: its order from Google (its purchase
    /// token and date; every undecided review of an app asked in one call), the game's facts, the answer
    /// stored, then sent until Google takes it. A review that cannot go on this time is left for the next run
    /// and never stops the others.
    func answer(into outcome: inout GoogleNotificationsRun.Outcome) async throws {
        let settled = try await session.run { [now] in try GoogleNotificationStore.settleStale(now: now(), on: $0) }
        outcome.unknownOutcome += settled.unknown
        outcome.expired += settled.expired
        let open = try await session.run { [now] in try GoogleNotificationStore.open(now: now(), on: $0) }
        let ordersRead = try await Self.readOrders(of: open, from: orders, session: session)
        for review in open {
            guard let client = orders[review.packageName] else {
                try await unanswerable(review, "\(review.packageName) is no longer under google_apps", into: &outcome)
                continue
            }
            if review.storedAnswer == nil {
                guard try await decide(review, order: ordersRead[review.orderID], into: &outcome) else { continue }
            }
            try await send(review, client: client, into: &outcome)
        }
    }

    /// The orders of the undecided reviews (those without a stored answer), one call per app. Each is asked
    /// beside an order Google has answered before: Google's 404 for a review's order then says it does not
    /// know that order; alone, it could as well be an app Google will not serve to this account.
    static func readOrders(
        of reviews: [GoogleNotificationStore.OpenReview], from orders: [String: OrdersClient], session: DatabaseSession
    ) async throws -> [String: OrderAnswer] {
        var ordersRead: [String: OrderAnswer] = [:]
        for (packageName, group) in Dictionary(grouping: reviews.filter { $0.storedAnswer == nil }, by: \.packageName) {
            guard let client = orders[packageName] else { continue }
            let known = try await session.run { try GoogleNotificationStore.knownOrders(packageName: packageName, on: $0) }
            ordersRead.merge(await client.orders(group.map(\.orderID) + known)) { first, _ in first }
        }
        return ordersRead
    }

    /// Reads the outcome of settled reviews' chargebacks from their orders: a refund on the order is a lost
    /// chargeback (`refunded`; the daily run claws its units back like any refund), an order still processed
    /// 30 days after the deadline a won one (`not_refunded`). Each review at most once a day, whatever Google
    /// answered.
    func readOutcomes(into outcome: inout GoogleNotificationsRun.Outcome) async throws {
        let awaiting = try await session.run { [now] in try GoogleNotificationStore.awaitingOutcome(now: now(), on: $0) }
        for (packageName, reviews) in Dictionary(grouping: awaiting, by: \.packageName) {
            guard let client = orders[packageName] else { continue }
            let answers = await client.orders(reviews.map(\.orderID))
            for review in reviews {
                let refunded: Bool? =
                    switch answers[review.orderID] {
                    // A partial refund is not the chargeback's (a bank charges back the whole): not decided yet.
                    case .order(let order) where order.state == "REFUNDED": true
                    case .order(let order) where order.state == "PROCESSED" && now() > review.deadline + Self.outcomeSettlesAfter: false
                    default: nil
                    }
                if refunded == true { outcome.chargebacksLost += 1 }
                if refunded == false { outcome.chargebacksWon += 1 }
                // Recorded as read even when Google did not answer: asked again tomorrow, not every hour.
                try await session.run { [now] in
                    try GoogleNotificationStore.recordOutcome(refunded, token: review.pendingRefundToken, now: now(), on: $0)
                }
            }
        }
    }

    /// An order still processed this long after its review's deadline counts as a chargeback won.
    static let outcomeSettlesAfter: TimeInterval = 30 * 86_400

    /// Decides and stores the answer for `review` from its `order` as Google answered it; false when there is
    /// none to send (unanswerable; the order not read this time; the game's hooks set it aside).
    func decide(_ review: GoogleNotificationStore.OpenReview, order answer: OrderAnswer?, into outcome: inout GoogleNotificationsRun.Outcome)
        async throws -> Bool
    {
        switch try await ReviewDecision.make(review, order: answer, configuration: configuration, session: session) {
        case .answer(let stored):
            try await session.run { [now] in try GoogleNotificationStore.store(stored, token: review.pendingRefundToken, now: now(), on: $0) }
            return true
        case .unanswerable(let reason):
            try await unanswerable(review, reason, into: &outcome)
        case .setAside(let reason):
            try await setAside(review, reason, into: &outcome)
        case .notNow(let why):
            logger.warning(
                "a chargeback review's order could not be read; asked again next run", metadata: ["order": "\(review.orderID)", "why": "\(why)"])
        }
        return false
    }

    private func unanswerable(_ review: GoogleNotificationStore.OpenReview, _ reason: String, into outcome: inout GoogleNotificationsRun.Outcome)
        async throws
    {
        let marked = try await session.run { [now] in
            try GoogleNotificationStore.markUnanswerable(review.pendingRefundToken, reason: reason, now: now(), on: $0)
        }
        if marked { outcome.unanswerable += 1 }
    }

    private func setAside(_ review: GoogleNotificationStore.OpenReview, _ reason: String, into outcome: inout GoogleNotificationsRun.Outcome)
        async throws
    {
        try await session.run { [now] in try GoogleNotificationStore.setAside(review.pendingRefundToken, reason: reason, now: now(), on: $0) }
        outcome.setAside += 1
        logger.warning(
            "a chargeback review was set aside: the game's facts could not be read; tried again next run",
            metadata: ["order": "\(review.orderID)", "reason": "\(reason)"])
    }

    /// Sends the stored answer of `review`: `sending` committed first; back to `stored` (sent again by the next
    /// run) unless Google took it or refused it for good.
    func send(_ review: GoogleNotificationStore.OpenReview, client: OrdersClient, into outcome: inout GoogleNotificationsRun.Outcome) async throws {
        let stored = try await session.run { try GoogleNotificationStore.storedAnswer(review.pendingRefundToken, on: $0) }
        guard let stored else { return }
        guard let answer = try? JSONDecoder().decode(RefundReviewAnswer.self, from: Data(stored.utf8)) else {
            logger.error("a stored chargeback review answer cannot be read back: not sent", metadata: ["order": "\(review.orderID)"])
            return
        }
        guard try await session.run({ [now] in try GoogleNotificationStore.markSending(review.pendingRefundToken, now: now(), on: $0) }) else {
            return
        }
        CrashPoint.reached("google-notifications.before-send")
        let result: GoogleNotificationStore.SendResult
        switch await client.reviewRefund(orderID: review.orderID, answer: answer) {
        case .recorded:
            result = .answered
            outcome.answered += 1
        case .refused(let status, let why):
            result = .refused(status: status, why)
            outcome.refusedByGoogle += 1
        case .unconfirmed(let why):
            result = .unconfirmed(why)
            outcome.unconfirmed += 1
        case .notTaken(let status, let why):
            result = .notTaken(status: status, why)
            outcome.notTaken += 1
        }
        CrashPoint.reached("google-notifications.after-send")
        try await session.run { [now] in try GoogleNotificationStore.record(result, token: review.pendingRefundToken, now: now(), on: $0) }
    }
}

extension GoogleNotificationsRun.Outcome {
    /// The end-of-job summary on stdout: a table, or (`--json`, or `--log-format json`) JSON.
    public func rendered(json: Bool, oneLine: Bool) -> String {
        if json || oneLine { return SummaryJSON.render(self, oneLine: oneLine) }
        return TextTable.render([
            ["messages read", String(messagesRead)], ["new", String(newMessages)], ["duplicates", String(duplicates)],
            ["voids", String(voids)], ["chargeback reviews opened", String(reviewsOpened)], ["test notifications", String(tests)],
            ["kept for a person", String(unreadable + unknownPackages)], ["not acknowledged", String(notAcknowledged)],
            ["subscription read to its end", subscriptionLeft ? "no" : "yes"], ["reviews answered", String(answered)],
            ["refused by Google", String(refusedByGoogle)], ["sent, not confirmed (sent again)", String(unconfirmed)],
            ["not taken by Google (sent again)", String(notTaken)], ["set aside (the game's facts unreadable)", String(setAside)],
            ["settled unknown (never seen taken)", String(unknownOutcome)], ["unanswerable", String(unanswerable)], ["expired", String(expired)],
            ["still open", String(open)],
            ["chargebacks lost (order refunded)", String(chargebacksLost)], ["chargebacks won (still processed)", String(chargebacksWon)],
        ])
    }
}

extension GoogleNotificationsRun.Outcome: ScheduledJobOutcome {
    public static let command = "clawback google-play notifications"

    public var unfinishedDescription: String {
        var parts = ["\(open) chargeback reviews are still unanswered"]
        if setAside > 0 { parts.append("\(setAside) of them set aside because the game's facts could not be read") }
        parts.append("\(notAcknowledged) messages not acknowledged")
        if subscriptionLeft { parts.append("the subscription was not read to its end" + (pubSubFailure.map { " (\($0))" } ?? "")) }
        return parts.joined(separator: ", ") + ": the next run goes on"
    }
}
