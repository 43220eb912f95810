public import AppStore
public import Foundation
public import Logging
public import Reconciliation
import Synchronization

/// `--strategy notifications`: reads Apple's REFUND, REFUND_REVERSED and REVOKE notifications since the
/// window's start once (Get Notification History, 20 a page), verifies each with its nested signed
/// transaction, and answers every grant the feed covers from it, so Apple calls scale with refunds, not grants.
///
/// What the feed concludes, and what it leaves to Get Transaction Info:
/// - a grant the feed lists: Apple's signed transaction as of its latest notification (a definite verdict);
/// - a grant it does not list: `noRefundReported` (never `ok`: a feed cannot confirm a purchase, nor reveal an
///   unknown or mismatched grant), but only where the feed covers the grant: its app and environment were
///   read whole (every page, every notification verified), and the feed reaches back past the purchase
///   (Apple keeps 180 days of production history and 30 of sandbox);
/// - everything else is asked per transaction: a grant bought before the feed's reach, a grant with an open
///   clawback (silence cannot tell a reversal), a grant a rejected notification may be about, every grant of
///   a feed that could not be read whole, and the audit sample.
///
/// Precondition (documented): the app had an App Store Server Notifications URL configured over the
/// period; otherwise Apple keeps no history to read and the feed reports no refunds. `auditShare` of the
/// grants, chosen by a stable hash, are asked again with Get Transaction Info; a refund found that way but
/// absent from the feed is counted as missed (a metric and a report line) and decided from the
/// per-transaction answer.
public final class NotificationFeedGateway: AppleGateway {
    struct Entry {
        let date: Date
        let reversal: Bool
        let facts: AppleFacts

        /// The latest notification about a transaction is its current state; a reversal signed at the same
        /// millisecond as a refund comes after it (the feeds are read at once, in no set order).
        func isNewer(than other: Entry) -> Bool { (date, reversal ? 1 : 0) > (other.date, other.reversal ? 1 : 0) }
    }

    /// The notification types that change whether a purchase stands.
    static let types: [NotificationType] = [.refund, .refundReversed, .revoke]

    let apps: AppleApps
    let perTransaction: TransactionInfoGateway
    let auditShare: Double
    let auditSalt: String
    let logger: Logger
    /// Latest entry per `bundle|environment|transaction`.
    private let feed = Mutex<[String: Entry]>([:])
    /// Per `bundle|environment`: the first instant its feed covers, once every type was read whole.
    private let coverage = Mutex<[String: Date]>([:])
    /// Feeds (`bundle|environment`) that a rejected notification naming no readable transaction makes
    /// unusable for silence, and transactions a rejected notification names (read without trust, only to
    /// know whom to ask per transaction).
    private let suspects = Mutex<(feeds: Set<String>, transactions: Set<String>)>(([], []))
    private let counts = Mutex(FeedCounts())
    /// Per `bundle|environment`: how many of `types` were read whole.
    private let typesRead = Mutex<[String: Int]>([:])

    public struct FeedCounts: Sendable, Equatable {
        public var notifications = 0
        public var rejectedNotifications = 0
        public var audited = 0
        /// Refunds the audit found that the feed did not have.
        public var missed = 0
        /// Grants the feed could not cover, asked per transaction.
        public var askedPerTransaction = 0
        /// Feeds (app, environment, type) that could not be read whole.
        public var unreadFeeds = 0
    }

    public init(apps: AppleApps, auditShare: Double, auditSalt: String, logger: Logger) {
        self.apps = apps
        perTransaction = TransactionInfoGateway(apps: apps)
        self.auditShare = min(max(auditShare, 0), 1)
        self.auditSalt = auditSalt
        self.logger = logger
    }

    public var statistics: AppStoreAPICounters { apps.statistics }
    public var feedCounts: FeedCounts { counts.withLock { $0 } }

    public func prepare(window: ReconciliationWindow) async throws { await prepare(from: window.start) }

    public func contribute(to counters: inout RunCounters) {
        let feed = feedCounts
        counters.auditedGrants = feed.audited
        counters.missedNotifications = feed.missed
        counters.rejectedNotifications = feed.rejectedNotifications
    }

    /// Reads the feed of every configured app, in both environments, from `start` (clamped to how far
    /// back Apple keeps history: 180 days in production, 30 in the sandbox) until `now`. The feeds are read
    /// at once: each is a chain of pages, and each app and environment has a rate budget of its own (the
    /// sandbox a tenth of production's), so reading them one after the other added their times up. A feed
    /// that fails is logged and covers nothing: its grants are asked per transaction.
    public func prepare(from start: Date, now: Date = Date()) async {
        await withTaskGroup(of: Void.self) { group in
            for (bundleID, client) in apps.clients {
                for environment in [AppStoreEnvironment.production, .sandbox] {
                    let reach: Double = environment == .sandbox ? 29 : 179
                    let from = max(start, now - reach * 86_400)
                    let feedKey = bundleID + "|" + environment.rawValue
                    let expectation = AppExpectation(bundleID: bundleID, environment: environment, appAppleID: apps.appAppleIDs[bundleID])
                    for type in Self.types {
                        let request = NotificationHistoryRequest(
                            startDate: from.appleMilliseconds, endDate: now.appleMilliseconds, notificationType: type)
                        group.addTask {
                            do {
                                try await client.notificationHistory(request, environment: environment) { items in
                                    for item in items { await self.absorb(item, feedKey: feedKey, expectation: expectation) }
                                }
                                let whole = self.typesRead.withLock { read -> Bool in
                                    read[feedKey, default: 0] += 1
                                    return read[feedKey] == Self.types.count
                                }
                                if whole { self.coverage.withLock { $0[feedKey] = from } }
                            } catch {
                                self.counts.withLock { $0.unreadFeeds += 1 }
                                self.logger.warning("a refund feed could not be read whole; its grants are asked per transaction", metadata: [
                                    "bundle": "\(bundleID)", "environment": "\(environment.rawValue)", "type": "\(type.rawValue)",
                                    "error": "\(error)",
                                ])
                            }
                        }
                    }
                }
            }
        }
        logger.info("refund feed read", metadata: ["feed.notifications": "\(feedCounts.notifications)",
            "feed.rejected": "\(feedCounts.rejectedNotifications)", "feed.unread": "\(feedCounts.unreadFeeds)",
            "feed.transactions": "\(feed.withLock { $0.count })"])
    }

    private func absorb(_ item: NotificationHistoryItem, feedKey: String, expectation: AppExpectation) async {
        do {
            let verified = try await apps.verifier.verifyNotification(item.signedPayload, for: expectation)
            guard let transaction = verified.transaction, let id = transaction.transactionID,
                let date = verified.notification.signedDate
            else { throw VerificationError(.invalidPayload("the notification carries no signed transaction")) }
            counts.withLock { $0.notifications += 1 }
            let entry = Entry(date: date, reversal: verified.notification.notificationType == .refundReversed, facts: AppleFacts(transaction))
            feed.withLock { feed in
                let key = feedKey + "|" + id
                if let existing = feed[key], !entry.isNewer(than: existing) { return }
                feed[key] = entry
            }
        } catch {
            counts.withLock { $0.rejectedNotifications += 1 }
            // A refund hidden in a notification that failed verification must not read as silence.
            let named = Self.unverifiedTransactionID(in: item.signedPayload)
            suspects.withLock { suspects in
                if let named { _ = suspects.transactions.insert(named) } else { _ = suspects.feeds.insert(feedKey) }
            }
            logger.warning("a notification failed verification: the grants it may be about are asked per transaction", metadata: [
                "error": "\(error)", "feed": "\(feedKey)", "transaction": "\(named ?? "unreadable")",
            ])
        }
    }

    /// Every grant but the audited ones and those the feed cannot cover is answered from the feed.
    public func localAnswer(for grant: Grant, ledger: LedgerHistory) -> AppleAnswer? {
        isAudited(grant) ? nil : feedAnswer(for: grant, ledger: ledger)
    }

    public func answer(for grant: Grant, ledger: LedgerHistory) async -> AppleAnswer {
        if isAudited(grant) {
            let entry = feed.withLock { $0[Self.key(grant)] }
            counts.withLock { $0.audited += 1 }
            let answer = await perTransaction.answer(for: grant)
            if case .verified(let facts) = answer, facts.isRevoked, !(entry?.facts.isRevoked ?? false) {
                counts.withLock { $0.missed += 1 }
                logger.notice("the refund feed missed a refund", metadata: ["transaction": "\(grant.transactionID)"])
            }
            return answer
        }
        if let answer = feedAnswer(for: grant, ledger: ledger) { return answer }
        counts.withLock { $0.askedPerTransaction += 1 }
        return await perTransaction.answer(for: grant)
    }

    /// The feed's answer, or nil where the feed cannot conclude (the grant is then asked per transaction).
    private func feedAnswer(for grant: Grant, ledger: LedgerHistory) -> AppleAnswer? {
        let feedKey = grant.bundleID + "|" + grant.environment
        guard let from = coverage.withLock({ $0[feedKey] }) else { return nil }
        let suspect = suspects.withLock { $0.feeds.contains(feedKey) || $0.transactions.contains(grant.transactionID) }
        guard !suspect else { return nil }
        if let entry = feed.withLock({ $0[Self.key(grant)] }) { return .verified(entry.facts) }
        // Silence speaks only for what the feed reaches (with a day's margin for a purchase time recorded
        // late), and never about an open clawback.
        guard grant.purchasedAt >= from + 86_400, ledger.outstandingUnits == 0 else { return nil }
        return .noRefundReported(source: "no REFUND, REFUND_REVERSED or REVOKE notification since \(from.formatted(Self.utcDay))")
    }

    static let utcDay = Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day()

    static func key(_ grant: Grant) -> String { grant.bundleID + "|" + grant.environment + "|" + grant.transactionID }

    /// The transaction id inside a notification that failed verification, read without trusting it: used
    /// only to choose which grant to ask per transaction, never as a fact.
    static func unverifiedTransactionID(in signedPayload: String) -> String? {
        func payload(_ jws: String) -> [String: Any]? {
            let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, let bytes = Base64.decodeURL(parts[1]) else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
        }
        guard let notification = payload(signedPayload), let data = notification["data"] as? [String: Any],
            let signed = data["signedTransactionInfo"] as? String, let transaction = payload(signed)
        else { return nil }
        return transaction["transactionId"] as? String
    }

    /// A stable choice per run and transaction: the same run audits the same grants when resumed.
    func isAudited(_ grant: Grant) -> Bool {
        guard auditShare > 0 else { return false }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (auditSalt + "|" + grant.transactionID).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Double(hash % 1_000_000) / 1_000_000 < auditShare
    }
}
