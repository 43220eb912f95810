public import AppStore
import Foundation
public import Job
public import Logging
public import Reconciliation
public import Storage

/// `--strategy notified-refunds`, the daily run (`clawback run --daily`): reads the apps' REFUND,
/// REFUND_REVERSED and REVOKE feeds from where the last daily run of the same window, apps and shard that
/// succeeded started (with a day's margin; the window's start the first time), and checks exactly the grants those
/// notifications name, each with Get Transaction Info. So its Apple calls and writes follow the refunds of
/// the day, and each verdict is the reference's own answer: the feed only says whom to ask. It concludes
/// nothing about any other grant; the monthly run checks every one, and writes nothing a daily run wrote (a
/// ledger entry's key is Apple's facts).
///
/// A feed that cannot be read whole fails the run (the next one reads from the same point again); a
/// notification that fails verification names its transaction for a check when it can be read, and is
/// logged when it cannot (the monthly run covers its purchase).
public final class NotifiedRefundsGateway: StoreGateway {
    let feed: NotificationFeedGateway
    let perTransaction: TransactionInfoGateway
    let logger: Logger
    private let named = NamedPurchases()

    public init(apps: AppleApps, logger: Logger) {
        feed = NotificationFeedGateway(apps: apps, auditShare: 0, auditSalt: "", logger: logger)
        perTransaction = TransactionInfoGateway(apps: apps)
        self.logger = logger
    }

    public var statistics: AppStoreAPICounters { perTransaction.statistics }

    public func prepare(_ context: RunContext) async throws {
        let selection = context.selection
        let last = try await context.database.run { try RunStore.lastSucceededStart(of: .notifiedRefunds, like: selection, on: $0) }
        let from = max(selection.window.start, last ?? selection.window.start)
        let transactions = try await feed.transactionsNamed(from: from)
        named.set(transactions)
        logger.info(
            "refund feed read for the daily run",
            metadata: [
                "feed.from": "\(from)", "feed.notifications": "\(feed.feedCounts.notifications)",
                "feed.rejected": "\(feed.feedCounts.rejectedNotifications)", "feed.transactions": "\(transactions.count)",
            ])
    }

    public func narrowing(_ selection: GrantSelection) -> GrantSelection { named.narrowing(selection) }

    public func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer { await perTransaction.answer(for: grant) }

    public func contribute(to counters: inout RunCounters) {
        counters.rejectedNotifications = feed.feedCounts.rejectedNotifications
    }
}

/// Some refund feeds could not be read whole.
public struct FeedNotReadWhole: Error, Sendable, CustomStringConvertible {
    public let feeds: Int
    public var description: String {
        "\(feeds) refund feed\(feeds == 1 ? "" : "s") (app, environment and notification type) could not be read whole: "
            + "the run checks nothing, and the next daily run reads from the same point again"
    }
}
