public import AppStore
public import Foundation
public import Logging
public import Reconciliation
import Synchronization

/// `--strategy notifications`: reads Apple's REFUND and REFUND_REVERSED notifications since the window's
/// start once (Get Notification History, 20 a page), verifies each with its nested signed transaction, and
/// answers every grant from that feed, so Apple calls scale with refunds, not grants.
///
/// Precondition (documented): the app had an App Store Server Notifications URL configured over the
/// period; otherwise Apple keeps no history to read. `auditShare` of the grants, chosen by a stable hash,
/// are asked again with Get Transaction Info; a refund found that way but absent from the feed is counted
/// as missed (a metric and a report line) and decided from the per-transaction answer.
public final class NotificationFeedGateway: AppleGateway {
    struct Entry {
        let date: Date
        let reversal: Bool
        let facts: AppleFacts

        /// The latest notification about a transaction is its current state; a reversal signed at the same
        /// millisecond as a refund comes after it (the feeds are read at once, in no set order).
        func isNewer(than other: Entry) -> Bool { (date, reversal ? 1 : 0) > (other.date, other.reversal ? 1 : 0) }
    }

    let apps: AppleApps
    let perTransaction: TransactionInfoGateway
    let auditShare: Double
    let auditSalt: String
    let logger: Logger
    private let feed = Mutex<[String: Entry]>([:])
    private let starts = Mutex<[String: Date]>([:])
    private let counts = Mutex(FeedCounts())

    public struct FeedCounts: Sendable, Equatable {
        public var notifications = 0
        public var rejectedNotifications = 0
        public var audited = 0
        /// Refunds the audit found that the feed did not have.
        public var missed = 0
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

    public func prepare(window: ReconciliationWindow) async throws { try await prepare(from: window.start) }

    public func contribute(to counters: inout RunCounters) {
        let feed = feedCounts
        counters.auditedGrants = feed.audited
        counters.missedNotifications = feed.missed
        counters.rejectedNotifications = feed.rejectedNotifications
    }

    /// Reads the feed of every configured app, in both environments, from `start` (clamped to how far
    /// back Apple keeps history: 180 days in production, 30 in the sandbox) until `now`. The feeds are read
    /// at once: each is a chain of pages, and each app and environment has a rate budget of its own (the
    /// sandbox a tenth of production's), so reading them one after the other added their times up.
    public func prepare(from start: Date, now: Date = Date()) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (bundleID, client) in apps.clients {
                for environment in [AppStoreEnvironment.production, .sandbox] {
                    let reach: Double = environment == .sandbox ? 29 : 179
                    let from = max(start, now - reach * 86_400)
                    starts.withLock { $0[bundleID + "|" + environment.rawValue] = from }
                    for type in [NotificationType.refund, .refundReversed] {
                        let request = NotificationHistoryRequest(
                            startDate: from.appleMilliseconds, endDate: now.appleMilliseconds, notificationType: type)
                        group.addTask {
                            try await client.notificationHistory(request, environment: environment) { items in
                                for item in items { await self.absorb(item, bundleID: bundleID, environment: environment) }
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        logger.info("refund feed read", metadata: ["feed.notifications": "\(feedCounts.notifications)",
            "feed.rejected": "\(feedCounts.rejectedNotifications)", "feed.transactions": "\(feed.withLock { $0.count })"])
    }

    private func absorb(_ item: NotificationHistoryItem, bundleID: String, environment: AppStoreEnvironment) async {
        do {
            let verified = try await apps.verifier.verifyNotification(
                item.signedPayload, for: AppExpectation(bundleID: bundleID, environment: environment))
            guard let transaction = verified.transaction, let id = transaction.transactionID,
                let date = verified.notification.signedDate
            else { throw VerificationError(.invalidPayload("the notification carries no signed transaction")) }
            counts.withLock { $0.notifications += 1 }
            let entry = Entry(date: date, reversal: verified.notification.notificationType == .refundReversed, facts: AppleFacts(transaction))
            feed.withLock { feed in
                if let existing = feed[id], !entry.isNewer(than: existing) { return }
                feed[id] = entry
            }
        } catch {
            counts.withLock { $0.rejectedNotifications += 1 }
            logger.warning("a notification failed verification and was ignored", metadata: ["error": "\(error)"])
        }
    }

    /// Every grant but the audited ones is answered from the feed.
    public func localAnswer(for grant: Grant) -> AppleAnswer? {
        isAudited(grant) ? nil : feedAnswer(for: grant, entry: feed.withLock { $0[grant.transactionID] })
    }

    public func answer(for grant: Grant) async -> AppleAnswer {
        let entry = feed.withLock { $0[grant.transactionID] }
        if isAudited(grant) {
            counts.withLock { $0.audited += 1 }
            let answer = await perTransaction.answer(for: grant)
            if case .verified(let facts) = answer, facts.isRevoked, !(entry?.facts.isRevoked ?? false) {
                counts.withLock { $0.missed += 1 }
                logger.notice("the refund feed missed a refund", metadata: ["transaction": "\(grant.transactionID)"])
            }
            return answer
        }
        return feedAnswer(for: grant, entry: entry)
    }

    private func feedAnswer(for grant: Grant, entry: Entry?) -> AppleAnswer {
        if let entry { return .verified(entry.facts) }
        let since = starts.withLock { $0[grant.bundleID + "|" + grant.environment] } ?? grant.purchasedAt
        return .notInRefundFeed(since: since)
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
