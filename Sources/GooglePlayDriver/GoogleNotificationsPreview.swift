public import Foundation
import GooglePlay
import HTTP
public import Job
public import Logging
public import Storage

/// `clawback google-play notifications --dry-run`: what the hourly run would answer now, changing nothing.
/// It reads the open reviews and the messages waiting in the subscription, asks Google for their orders
/// (reads) and calls the studio's hooks, and prints each review's answer. It writes nothing to the database
/// (no message kept, no answer stored), sends no answer, acknowledges no message: what it pulled it hands back
/// at once (`modifyAckDeadline` 0), so the next run gets every message as if no preview had run. It takes no
/// lock, so it never keeps the hourly run from starting.
public enum GoogleNotificationsPreview {
    /// One review and what the run would do about it.
    public struct Line: Sendable, Equatable, Codable {
        public var packageName: String
        public var orderID: String
        public var pendingRefundToken: String
        /// Whether its message still waits in the subscription (not kept yet).
        public var waiting: Bool
        /// `send` (the answer below), `resend` (the stored answer, not taken by Google yet), `set_aside`,
        /// `unanswerable`, `not_now` (its order unread this time), `expires` (too near its deadline).
        public var action: String
        public var preference: String?
        public var consumedMilliunits: Int?
        public var usageEvents: Int?
        public var reason: String
    }

    public struct Outcome: Sendable, Equatable, Codable {
        public var messagesWaiting = 0
        /// Deliveries the preview could not hand back: their messages come again when the lease ends.
        public var notHandedBack = 0
        public var reviews: [Line] = []
        /// Why the subscription could not be read whole, if it could not.
        public var pubSubFailure: String?
    }

    public typealias Failure = ScheduledJobFailure<GoogleNotificationsRun.Outcome>

    /// How long the preview holds what it pulled before handing it all back: Pub/Sub's longest lease.
    static let previewLeaseSeconds = 600

    public static func perform(
        database: DatabaseConfiguration, configuration: ClawbackConfiguration, logger: Logger, now: @escaping @Sendable () -> Date = Date.init
    ) async throws(Failure) -> Outcome {
        guard let settings = configuration.google.notifications else {
            throw .configuration(.asked("google.notifications is not configured: name the Pub/Sub subscription Google Play's notifications reach"))
        }
        let clients: (PubSubClient, [String: OrdersClient], HTTPClient)
        do {
            let http = try HTTPClients.start(for: "Google Play", timeout: configuration.google.timeout)
            let key = try GooglePlayAppsFactory.notificationsKey(configuration)
            var orders: [String: OrdersClient] = [:]
            for (index, app) in configuration.googleApps.enumerated() {
                orders[app.packageName] = OrdersClient(
                    packageName: app.packageName, baseURL: configuration.google.apiURL,
                    tokens: AccessTokenProvider(key: try GooglePlayAppsFactory.key(index, configuration), http: http), http: http)
            }
            let pubSub = PubSubClient(
                subscription: settings.subscription, baseURL: settings.pubsubURL,
                tokens: AccessTokenProvider(key: key, http: http, scopes: PubSubScope.pubsub), http: http)
            clients = (pubSub, orders, http)
        } catch {
            throw .configuration(.invalid(error))
        }
        let (pubSub, orders, http) = clients
        defer { http.shutdown() }
        let session = try await JobStart.database(database, logger: logger, failing: Failure.self)
        do {
            try await session.run { try $0.forbidWrites() }
            return try await preview(
                pubSub: pubSub, orders: orders, settings: settings, configuration: configuration, session: session, now: now)
        } catch let error as DatabaseError {
            throw .database(error)
        } catch {
            throw .unavailable(Unavailable(cause: error))
        }
    }

    static func preview(
        pubSub: PubSubClient, orders: [String: OrdersClient], settings: ClawbackConfiguration.GoogleNotifications,
        configuration: ClawbackConfiguration, session: DatabaseSession, now: @escaping @Sendable () -> Date
    ) async throws -> Outcome {
        var outcome = Outcome()
        // The waiting messages' reviews, each handed back at once after its pull.
        let configured = Set(configuration.googleApps.map(\.packageName))
        var waiting: [GoogleNotificationStore.OpenReview] = []
        var leased: [String] = []
        var seenMessages = Set<String>()
        while outcome.messagesWaiting < settings.maximumMessagesPerRun {
            let messages: [PubSubClient.ReceivedMessage]
            do {
                messages = try await pubSub.pull(maximum: PubSubClient.maximumPull)
            } catch  where error.timedOut && error.kind == .transport {
                break
            } catch {
                outcome.pubSubFailure = "\(error)"
                break
            }
            leased += messages.map(\.ackID)
            // Each batch's lease is lengthened at once, so that a short acknowledgement deadline does not hand a
            // message back to this same loop; a pull that brings nothing new ends it.
            try? await pubSub.modifyAckDeadline(messages.map(\.ackID), seconds: Self.previewLeaseSeconds)
            let new = messages.filter { seenMessages.insert($0.messageID).inserted }
            guard !new.isEmpty else { break }
            outcome.messagesWaiting += new.count
            for message in new {
                let kept = GoogleNotificationsWork.kept(message, subscription: pubSub.subscription, configured: configured)
                guard let review = kept.review, let packageName = kept.packageName, let notified = kept.eventTime else { continue }
                waiting.append(
                    .init(
                        pendingRefundToken: review.pendingRefundToken, packageName: packageName, orderID: review.orderID, notifiedAt: notified,
                        deadline: notified + GoogleNotificationStore.reviewWindow, obfuscatedAccountID: review.obfuscatedAccountID,
                        storedAnswer: nil))
            }
        }
        // Handed back: the next run is delivered every message as if nothing had pulled it. One not handed back
        // comes again when its lease ends (at most `previewLeaseSeconds`); the output says so.
        for start in stride(from: 0, to: leased.count, by: PubSubClient.maximumPull) {
            do {
                try await pubSub.modifyAckDeadline(Array(leased[start..<min(start + PubSubClient.maximumPull, leased.count)]), seconds: 0)
            } catch {
                outcome.notHandedBack += min(PubSubClient.maximumPull, leased.count - start)
            }
        }
        let tokens = waiting.map(\.pendingRefundToken)
        let recorded = try await session.run { try GoogleNotificationStore.recordedTokens(tokens, on: $0) }
        var seen = Set<String>()
        let fresh = waiting.filter { !recorded.contains($0.pendingRefundToken) && seen.insert($0.pendingRefundToken).inserted }
        // A review a stopped run left `sending` is stored again and sent by the next run: shown as a resend.
        let open = try await session.run { [now] in try GoogleNotificationStore.open(now: now(), includingSending: true, on: $0) }
        let reviews = open.map { ($0, false) } + fresh.map { ($0, true) }
        let ordersRead = try await GoogleNotificationsWork.readOrders(of: reviews.map(\.0), from: orders, session: session)
        for (review, isWaiting) in reviews {
            var line = Line(
                packageName: review.packageName, orderID: review.orderID, pendingRefundToken: review.pendingRefundToken, waiting: isWaiting,
                action: "", reason: "")
            if review.deadline <= now() + GoogleNotificationStore.sendingMargin {
                (line.action, line.reason) = ("expires", "less than 5 minutes before Google's 24-hour deadline: nothing would be sent")
            } else if orders[review.packageName] == nil {
                (line.action, line.reason) = ("unanswerable", "\(review.packageName) is no longer under google_apps")
            } else if let stored = review.storedAnswer {
                let answer = try? JSONDecoder().decode(RefundReviewAnswer.self, from: Data(stored.utf8))
                line.action = "resend"
                line.preference = answer?.refundPreference.rawValue
                line.consumedMilliunits = answer?.consumptionPercentageMilliunits
                line.usageEvents = answer?.consumptionUsageEvents?.count ?? 0
                line.reason = "the answer stored earlier, not taken by Google yet: sent again as it is"
            } else {
                switch try await ReviewDecision.make(review, order: ordersRead[review.orderID], configuration: configuration, session: session) {
                case .answer(let answer):
                    line.action = "send"
                    line.preference = answer.preference
                    line.consumedMilliunits = answer.consumedMilliunits
                    line.usageEvents = answer.usageEvents
                    line.reason = answer.reason
                case .unanswerable(let reason): (line.action, line.reason) = ("unanswerable", reason)
                case .setAside(let reason): (line.action, line.reason) = ("set_aside", reason)
                case .notNow(let reason): (line.action, line.reason) = ("not_now", reason)
                }
            }
            outcome.reviews.append(line)
        }
        return outcome
    }
}

extension GoogleNotificationsPreview.Outcome {
    /// What the preview prints: one row per review, or (`--json`) JSON.
    public func rendered(json: Bool, oneLine: Bool) -> String {
        if json || oneLine { return SummaryJSON.render(self, oneLine: oneLine) }
        var rows = [["DRY RUN", "nothing kept, stored, sent or acknowledged"], ["messages waiting", String(messagesWaiting)]]
        if let pubSubFailure { rows.append(["Pub/Sub not read whole", pubSubFailure]) }
        if notHandedBack > 0 { rows.append(["not handed back", "\(notHandedBack) deliveries: their messages come again within 10 minutes"]) }
        var table = TextTable.render(rows)
        let reviewRows = reviews.map { line in
            [
                line.orderID, line.action, line.preference ?? "", line.consumedMilliunits.map { String(Double($0) / 1000) + "%" } ?? "",
                line.waiting ? "waiting" : "recorded", line.reason,
            ]
        }
        table += "\n" + TextTable.render([["order", "would", "preference", "consumed", "message", "why"]] + reviewRows)
        return table
    }
}
