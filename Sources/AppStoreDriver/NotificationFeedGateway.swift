public import AppStore
import Foundation
public import Job
import Locking
public import Logging
public import Reconciliation
public import Storage

/// `--strategy notifications`: reads Apple's REFUND, REFUND_REVERSED and REVOKE notifications since the
/// window's start once (Get Notification History, 20 a page), verifies each with its nested signed
/// transaction, and answers every grant the feed covers from it, so Apple calls scale with refunds, not grants.
///
/// What the feed concludes, and what it leaves to Get Transaction Info:
/// - a grant the feed lists: Apple's signed transaction as of its latest notification (a definite verdict);
/// - a grant it does not list: `noRefundReported` (never `ok`: a feed cannot confirm a purchase, nor reveal an
///   unknown or mismatched grant);
/// - both only where the feed is trusted and covers the grant: its app and environment were read whole
///   (every page, every notification verified), the audit found nothing the feed got wrong there, and the
///   feed reaches back past the purchase (Apple keeps 180 days of production history and 30 of sandbox);
/// - everything else is asked per transaction: a grant bought before the feed's reach, a grant with an open
///   clawback (silence cannot tell a reversal), a grant a rejected notification may be about, a grant whose
///   notifications tie at one instant, every grant of a feed that could not be read whole or that the audit
///   caught wrong.
///
/// Precondition (documented): the app had an App Store Server Notifications V2 URL configured over the
/// period; otherwise Apple keeps no history and the feed reports no refunds. The audit is the evidence:
/// before any grant is answered, `auditShare` of the selection's grants (chosen by a stable hash) are asked
/// with Get Transaction Info, and a feed is trusted only when the sample reached it and every sampled grant
/// agrees with it (refunded or not). A refund the feed missed is counted (a metric and a report line), and
/// the audited grants are decided on their per-transaction answers. With no audit, no feed is trusted.
public final class NotificationFeedGateway: StoreGateway {
    struct Entry {
        let date: Date
        let reversal: Bool
        let facts: StoreStatement
        /// Notifications of different kinds signed at the same instant: which came last is unknown (Apple
        /// documents only "the most recent signedDate"), so the grant is asked per transaction.
        var tied = false

        /// The latest notification about a transaction is its current state (Apple: use the notification
        /// with the most recent signedDate; a resent one keeps its signedDate).
        func isNewer(than other: Entry) -> Bool { date > other.date }

        /// The entry that stands once `entry` arrives (the feeds are read at once, in no set order).
        static func merge(_ entry: Entry, into existing: Entry?) -> Entry {
            guard let existing else { return entry }
            if entry.isNewer(than: existing) { return entry }
            var kept = existing
            if entry.date == existing.date && entry.reversal != existing.reversal { kept.tied = true }
            return kept
        }
    }

    /// The notification types that change whether a purchase stands.
    static let types: [NotificationType] = [.refund, .refundReversed, .revoke]

    let apps: AppleApps
    let perTransaction: TransactionInfoGateway
    let auditShare: Double
    let auditSalt: String
    let logger: Logger
    /// Latest entry per feed (`bundle|environment`) and transaction.
    private let feed = Locked(RefundFeedStore())
    /// Per `bundle|environment`: the first instant its feed covers, once every type was read whole.
    private let coverage = Locked<[String: Date]>([:])
    /// Feeds (`bundle|environment`) that a rejected notification naming no readable transaction makes
    /// unusable for silence, and transactions a rejected notification names (read without trust, only to
    /// know whom to ask per transaction).
    private let suspects = Locked<(feeds: Set<String>, transactions: Set<String>)>(([], []))
    private let counts = Locked(FeedCounts())
    /// Per `bundle|environment`: which of `types` were read whole.
    private let typesRead = Locked<[String: Set<String>]>([:])
    /// Feeds (`bundle|environment`) the audit found wrong, and those it reached and found right.
    private let audit = Locked<(wrong: Set<String>, confirmed: Set<String>)>(([], []))
    /// The audited grants' per-transaction answers, by transaction id.
    private let auditAnswers = Locked<[String: StoreAnswer]>([:])

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

    /// Exactly these transactions are audited, when set (tests choose the sample).
    let chosenSample: Set<String>?

    public init(apps: AppleApps, auditShare: Double, auditSalt: String, logger: Logger) {
        self.apps = apps
        perTransaction = TransactionInfoGateway(apps: apps)
        self.auditShare = min(max(auditShare, 0), 1)
        self.auditSalt = auditSalt
        self.logger = logger
        chosenSample = nil
    }

    /// Audits exactly `sample`.
    init(apps: AppleApps, sample: Set<String>, logger: Logger) {
        self.apps = apps
        perTransaction = TransactionInfoGateway(apps: apps)
        auditShare = sample.isEmpty ? 0 : 1
        auditSalt = ""
        self.logger = logger
        chosenSample = sample
    }

    public var statistics: AppStoreAPICounters { apps.statistics }
    public var feedCounts: FeedCounts { counts.withLock { $0 } }

    /// Reads the feeds and asks about the audit sample at once (Get Notification History and Get Transaction
    /// Info have rate budgets of their own, and finding the sample reads every grant of the selection while
    /// the feeds' pages arrive), then judges each feed by the sample: before any grant is answered.
    public func prepare(_ context: RunContext) async throws {
        reset()
        async let feeds: Void = readFeeds(from: context.selection.window.start, now: Date())
        let sample: [(Grant, StoreAnswer)]
        do {
            sample = try await askAuditSample(context)
        } catch {
            await feeds
            throw error
        }
        await feeds
        for (grant, answer) in sample { judge(grant, answer) }
        let (wrong, confirmed) = audit.withLock { ($0.wrong, $0.confirmed) }
        if auditShare > 0 {
            logger.info(
                "audit sample asked per transaction",
                metadata: [
                    "audit.grants": "\(sample.count)", "audit.missed": "\(feedCounts.missed)",
                    "feeds.wrong": "\(wrong.sorted().joined(separator: ", "))",
                    "feeds.confirmed": "\(confirmed.subtracting(wrong).sorted().joined(separator: ", "))",
                ])
        }
    }

    /// Get Transaction Info's answer for each grant of the selection's audit sample.
    func askAuditSample(_ context: RunContext) async throws -> [(Grant, StoreAnswer)] {
        guard auditShare > 0 else {
            logger.notice("no audit sample: no refund feed is trusted, so grants the feeds do not decide are asked per transaction")
            return []
        }
        // Asked as the scan finds them: the scan of a large selection takes as long as many requests.
        return try await withThrowingTaskGroup(of: (Grant, StoreAnswer).self) { group in
            var answers: [(Grant, StoreAnswer)] = []
            var inFlight = 0
            var cursor: GrantCursor?
            repeat {
                let page = try await context.database.run { [cursor] connection in
                    try GrantStore.page(context.selection, after: cursor, excludingCheckedBy: nil, limit: 5000, on: connection)
                }
                for grant in page.grants where isAudited(grant) {
                    if inFlight >= 32, let done = try await group.next() {
                        inFlight -= 1
                        answers.append(done)
                    }
                    group.addTask { (grant, await self.perTransaction.answer(for: grant)) }
                    inFlight += 1
                }
                cursor = page.next
            } while cursor != nil
            for try await done in group { answers.append(done) }
            return answers
        }
    }

    /// Reads the feeds from `start` until `now` and returns every transaction they name, verified or not
    /// (the daily run checks each per transaction). Throws when a feed could not be read whole: what it holds
    /// is unknown, so the daily run fails and the next one reads from the same point again.
    func transactionsNamed(from start: Date, now: Date = Date()) async throws(FeedNotReadWhole) -> Set<String> {
        reset()
        await readFeeds(from: start, now: now)
        let unread = feedCounts.unreadFeeds
        guard unread == 0 else { throw FeedNotReadWhole(feeds: unread) }
        var named = Set(feed.withLock { $0.transactionIDs })
        let suspects = suspects.withLock { $0 }
        named.formUnion(suspects.transactions)
        for feedKey in suspects.feeds.sorted() {
            logger.warning(
                "a notification failed verification and names no transaction: the monthly run checks every purchase of its feed",
                metadata: ["feed": "\(feedKey)"])
        }
        return named
    }

    /// Compares an audited grant's per-transaction answer with the feed (read whole by then).
    private func judge(_ grant: Grant, _ answer: StoreAnswer) {
        auditAnswers.withLock { $0[grant.transactionID] = answer }
        counts.withLock { $0.audited += 1 }
        guard case .verified(let facts) = answer, facts.transactionID == grant.transactionID else { return }
        let feedKey = grant.bundleID + "|" + grant.environment.rawValue
        let entry = feed.withLock { $0.entry(feed: feedKey, transactionID: grant.transactionID) }
        let feedSaysRevoked = entry?.facts.isRevoked ?? false
        if facts.isRevoked && !feedSaysRevoked {
            counts.withLock { $0.missed += 1 }
            logger.notice("the refund feed missed a refund", metadata: ["transaction": "\(grant.transactionID)", "feed": "\(feedKey)"])
        }
        _ = audit.withLock { audit in
            facts.isRevoked == feedSaysRevoked ? audit.confirmed.insert(feedKey) : audit.wrong.insert(feedKey)
        }
    }

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
    func readFeeds(from start: Date, now: Date) async {
        await withTaskGroup(of: Void.self) { group in
            for (bundleID, client) in apps.clients {
                for environment in [AppStoreEnvironment.production, .sandbox] {
                    // A day before the window: a grant whose recorded purchase time is a little later than Apple's
                    // is still covered at the window's first instant.
                    let from = max(start - 86_400, now - NotificationHistoryRequest.reach(environment))
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
                                    read[feedKey, default: []].insert(type.rawValue)
                                    return read[feedKey]?.count == Self.types.count
                                }
                                if whole { self.coverage.withLock { $0[feedKey] = from } }
                            } catch {
                                self.counts.withLock { $0.unreadFeeds += 1 }
                                self.logger.warning(
                                    "a refund feed could not be read whole; its grants are asked per transaction",
                                    metadata: [
                                        "bundle": "\(bundleID)", "environment": "\(environment.rawValue)", "type": "\(type.rawValue)",
                                        "error": "\(error)",
                                    ])
                            }
                        }
                    }
                }
            }
        }
        logger.info(
            "refund feed read",
            metadata: [
                "feed.notifications": "\(feedCounts.notifications)",
                "feed.rejected": "\(feedCounts.rejectedNotifications)", "feed.unread": "\(feedCounts.unreadFeeds)",
                "feed.transactions": "\(feed.withLock { $0.count })",
            ])
    }

    /// Forgets an earlier attempt's feeds and sample.
    private func reset() {
        feed.withLock { $0.removeAll() }
        coverage.withLock { $0.removeAll() }
        typesRead.withLock { $0.removeAll() }
        suspects.withLock { $0 = ([], []) }
        audit.withLock { $0 = ([], []) }
        auditAnswers.withLock { $0.removeAll() }
        counts.withLock { $0 = FeedCounts() }
    }

    private func absorb(_ item: NotificationHistoryItem, feedKey: String, expectation: AppExpectation) async {
        do {
            let verified = try await apps.verifier.verifyNotification(item.signedPayload, for: expectation)
            guard let transaction = verified.transaction, transaction.transactionID != nil,
                let date = verified.notification.signedDate
            else { throw VerificationError(.invalidPayload("the notification carries no signed transaction")) }
            counts.withLock { $0.notifications += 1 }
            let entry = Entry(date: date, reversal: verified.notification.notificationType == .refundReversed, facts: StoreStatement(transaction))
            feed.withLock { $0.merge(entry, feed: feedKey) }
        } catch {
            counts.withLock { $0.rejectedNotifications += 1 }
            // A refund hidden in a notification that failed verification must not read as silence.
            let named = SignedDataVerifier.unverifiedTransactionID(ofNotification: item.signedPayload)
            suspects.withLock { suspects in
                if let named { _ = suspects.transactions.insert(named) } else { _ = suspects.feeds.insert(feedKey) }
            }
            logger.warning(
                "a notification failed verification: the grants it may be about are asked per transaction",
                metadata: [
                    "error": "\(error)", "feed": "\(feedKey)", "transaction": "\(named ?? "unreadable")",
                ])
        }
    }

    /// Every grant is answered without a request (from the audit's answers or the feed) but those the feed
    /// cannot cover.
    public func localAnswer(for grant: Grant, ledger: LedgerHistory) -> StoreAnswer? {
        if let audited = auditAnswers.withLock({ $0[grant.transactionID] }) { return audited }
        return feedAnswer(for: grant, ledger: ledger)
    }

    public func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer {
        if let answer = localAnswer(for: grant, ledger: ledger) { return answer }
        counts.withLock { $0.askedPerTransaction += 1 }
        return await perTransaction.answer(for: grant)
    }

    /// The feed's answer, or nil where the feed cannot conclude (the grant is then asked per transaction).
    private func feedAnswer(for grant: Grant, ledger: LedgerHistory) -> StoreAnswer? {
        let feedKey = grant.bundleID + "|" + grant.environment.rawValue
        guard let from = coverage.withLock({ $0[feedKey] }) else { return nil }
        let trusted = audit.withLock { $0.confirmed.contains(feedKey) && !$0.wrong.contains(feedKey) }
        let suspect = suspects.withLock { $0.feeds.contains(feedKey) || $0.transactions.contains(grant.transactionID) }
        guard trusted, !suspect else { return nil }
        if let entry = feed.withLock({ $0.entry(feed: feedKey, transactionID: grant.transactionID) }) {
            return entry.tied ? nil : .verified(entry.facts)
        }
        // Silence speaks only for what the feed reaches (with a day's margin for a purchase time recorded
        // late: the feed starts a day before the window where Apple's reach allows), and never about an open
        // clawback.
        guard grant.purchasedAt >= from + 86_400, ledger.outstandingUnits == 0 else { return nil }
        return .noRefundReported(source: "no REFUND, REFUND_REVERSED or REVOKE notification since \(from.formatted(Self.utcDay))")
    }

    static let utcDay = Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day()

    /// A stable choice per run and transaction: the same run audits the same grants when resumed.
    func isAudited(_ grant: Grant) -> Bool {
        if let chosenSample { return chosenSample.contains(grant.transactionID) }
        guard auditShare > 0 else { return false }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (auditSalt + "|" + grant.transactionID).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Double(hash % 1_000_000) / 1_000_000 < auditShare
    }
}
