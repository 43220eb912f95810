public import Foundation
import Postgres
public import Reconciliation

// What finance's reports read from the database, as typed rows: the runs a report covers, each flagged
// purchase with its ledger position, and the refund requests of the window. Decoded once, by column name,
// at this edge (ReportStore); the Reports module renders them and never sees SQL.

/// Which runs a report covers.
public enum ReportScope: Sendable, Equatable, CustomStringConvertible {
    /// One run, whatever its window, shard or dry-run flag.
    case run(Int64)
    /// Every run (not dry runs) of exactly this window, merged: its shards, its per-bundle runs, and later
    /// reruns, each purchase reported from the latest run that checked it.
    case window(ReconciliationWindow)

    public var description: String {
        switch self {
        case .run(let id): "run \(id)"
        case .window(let window): "window \(window.label)"
        }
    }
}

/// A refund request's state in `clawback.refund_requests` (migration 0006 says what each means).
public enum RefundRequestState: String, Sendable, Equatable, CaseIterable {
    /// Recorded; to answer.
    case received
    /// The answer is decided and stored, and was (or is being) sent: a rerun sends exactly it again.
    case sending
    /// Apple accepted the answer (202).
    case answered
    /// The app has no customer consent to answer with: never answered, as Apple asks.
    case notConsented = "not_consented"
    /// The game cannot tell whether it delivered the purchase: nothing true can be said.
    case unanswerable
    /// Apple refused the answer for good (400 or 404; its code is kept).
    case refused
    /// The 12 hours passed without an answer Apple accepted.
    case expired
}

/// Apple's decision on a refund request: the REFUND or REFUND_DECLINED notification that answered it.
public enum RefundDecision: String, Sendable, Equatable, CaseIterable {
    case refunded = "REFUND"
    case declined = "REFUND_DECLINED"
}

/// A run a report covers, as the runs table and its checks describe it.
public struct ReportRun: Sendable, Equatable {
    public var runID: Int64
    public var windowStart: Date
    public var windowEnd: Date
    public var shardIndex: Int
    public var shardCount: Int
    public var strategy: RunStrategy
    public var dryRun: Bool
    public var status: RunStatus
    public var attempts: Int
    /// Narrowed runs (a player, a transaction, some bundles), described for the summary; nil: the whole window.
    public var narrowedTo: String?
    /// From the run's last attempt (the runs table keeps the latest counters).
    public var grantsInScope: Int
    public var storeRequests: Int
    public var storeRateLimited: Int
    /// Google Play: the apps whose kept voids did not cover the run's window, with why.
    public var voidsNotCovered: [String]
    /// Notifications strategy: notifications that failed verification (their grants were asked per
    /// transaction), and refunds the audit sample found that the feed missed.
    public var rejectedNotifications: Int
    public var missedNotifications: Int
    /// Checks the run holds (all attempts).
    public var checks: Int

    public init(
        runID: Int64, windowStart: Date, windowEnd: Date, shardIndex: Int = 0, shardCount: Int = 1, strategy: RunStrategy, dryRun: Bool = false,
        status: RunStatus, attempts: Int = 1, narrowedTo: String? = nil, grantsInScope: Int = 0, storeRequests: Int = 0,
        storeRateLimited: Int = 0, voidsNotCovered: [String] = [], rejectedNotifications: Int = 0, missedNotifications: Int = 0,
        checks: Int = 0
    ) {
        self.runID = runID
        self.windowStart = windowStart
        self.windowEnd = windowEnd
        self.shardIndex = shardIndex
        self.shardCount = shardCount
        self.strategy = strategy
        self.dryRun = dryRun
        self.status = status
        self.attempts = attempts
        self.narrowedTo = narrowedTo
        self.grantsInScope = grantsInScope
        self.storeRequests = storeRequests
        self.storeRateLimited = storeRateLimited
        self.voidsNotCovered = voidsNotCovered
        self.rejectedNotifications = rejectedNotifications
        self.missedNotifications = missedNotifications
        self.checks = checks
    }
}

/// One purchase a report lists: a check whose verdict is not ok, with the ledger movement of the report's runs.
public struct FlaggedPurchase: Sendable, Equatable {
    public var runID: Int64
    public var bundleID: String
    public var environment: String
    public var transactionID: String
    public var originalTransactionID: String
    public var playerID: String
    public var productID: String
    public var quantity: Int
    public var unitsGranted: Int64
    /// Units taken back from the player for this purchase once the run's decision is applied (the position).
    public var unitsClawedBack: Int64
    /// Units the report's runs moved in the ledger for it: > 0 taken back, < 0 given back, 0 already recorded.
    public var unitsChange: Int64
    public var verdict: Verdict
    public var action: CheckAction
    public var revocationDate: Date?
    public var revocationType: String?
    public var revocationReason: Int?
    /// Apple's revocationPercentage: milli-percent, 100000 = 100%.
    public var revocationPercentage: Int?
    public var purchasedAt: Date
    public var storePriceMilli: Int64?
    public var storeCurrency: String?
    public var storefront: String?
    public var detail: String?
    /// The latest take-back or give-back the report's runs wrote for it, with the game's acknowledgement.
    public var position: LedgerPosition?
    /// The store the purchase was made in.
    public var store: Store
    /// The units a Google quantity-based partial refund voided.
    public var revokedQuantity: Int?
    /// What the store says it refunded (Google states it), in `storeCurrency`; nil for Apple's.
    public var storeRefundedAmountMilli: Int64?
    /// The store's own order id (Google Play's `GPA.…`), by which finance finds the purchase in the store's
    /// console; nil for App Store purchases, whose transaction id is that.
    public var orderID: String?

    public init(
        runID: Int64, bundleID: String, environment: String, transactionID: String, originalTransactionID: String, playerID: String,
        productID: String, quantity: Int = 1, unitsGranted: Int64, unitsClawedBack: Int64 = 0, unitsChange: Int64 = 0, verdict: Verdict,
        action: CheckAction, revocationDate: Date? = nil, revocationType: String? = nil, revocationReason: Int? = nil,
        revocationPercentage: Int? = nil, purchasedAt: Date, storePriceMilli: Int64? = nil, storeCurrency: String? = nil,
        storefront: String? = nil, detail: String? = nil, position: LedgerPosition? = nil, store: Store = StoreCatalog.importDefault,
        revokedQuantity: Int? = nil, storeRefundedAmountMilli: Int64? = nil, orderID: String? = nil
    ) {
        self.orderID = orderID
        self.runID = runID
        self.bundleID = bundleID
        self.environment = environment
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.playerID = playerID
        self.productID = productID
        self.quantity = quantity
        self.unitsGranted = unitsGranted
        self.unitsClawedBack = unitsClawedBack
        self.unitsChange = unitsChange
        self.verdict = verdict
        self.action = action
        self.revocationDate = revocationDate
        self.revocationType = revocationType
        self.revocationReason = revocationReason
        self.revocationPercentage = revocationPercentage
        self.purchasedAt = purchasedAt
        self.storePriceMilli = storePriceMilli
        self.storeCurrency = storeCurrency
        self.storefront = storefront
        self.detail = detail
        self.position = position
        self.store = store
        self.revokedQuantity = revokedQuantity
        self.storeRefundedAmountMilli = storeRefundedAmountMilli
    }
}

/// What the report's runs moved in the ledger for one purchase, gross (`ReportStore.movements`).
public struct PurchaseMovement: Sendable, Equatable {
    public var transactionID: String
    public var unitsGranted: Int64
    /// Units of the runs' entries above 0 (clawbacks, adjustments up).
    public var taken: Int64
    /// Units of their entries below 0 (reversals, adjustments down), as a positive number.
    public var given: Int64
    /// The store's price and currency from the purchase's latest check of those runs, if it had one.
    public var priceMilli: Int64?
    public var currency: String?

    public init(transactionID: String, unitsGranted: Int64, taken: Int64, given: Int64, priceMilli: Int64?, currency: String?) {
        self.transactionID = transactionID
        self.unitsGranted = unitsGranted
        self.taken = taken
        self.given = given
        self.priceMilli = priceMilli
        self.currency = currency
    }
}

public struct LedgerPosition: Sendable, Equatable {
    public var entryID: Int64
    /// > 0 units to take back from the player, < 0 to give back.
    public var units: Int64
    public var createdAt: Date
    /// applied, partial, waived or superseded; nil while the game has not acknowledged it.
    public var outcome: AcknowledgementOutcome?
    /// What the game actually did: > 0 taken, < 0 given back (nil while pending).
    public var unitsApplied: Int64?
    public var acknowledgedAt: Date?

    public init(
        entryID: Int64, units: Int64, createdAt: Date, outcome: AcknowledgementOutcome? = nil, unitsApplied: Int64? = nil, acknowledgedAt: Date? = nil
    ) {
        self.entryID = entryID
        self.units = units
        self.createdAt = createdAt
        self.outcome = outcome
        self.unitsApplied = unitsApplied
        self.acknowledgedAt = acknowledgedAt
    }

    /// A take-back (the ledger's functions count a 0-unit entry as one too).
    public var isTakeBack: Bool { units >= 0 }
}

/// A refund request as finance reads it: what Apple asked, what the studio answered and when, and what
/// Apple decided.
public struct RefundRequestLine: Sendable, Equatable {
    public var notificationUUID: String
    public var bundleID: String
    public var environment: String
    public var transactionID: String
    public var productID: String
    public var reason: String?
    public var requestedAt: Date
    public var deadline: Date
    /// As of the report's time: a request settled later shows as received, or sending once its answer was stored.
    public var state: RefundRequestState
    public var answeredAt: Date?
    public var deliveryStatus: String?
    public var consumptionPercentage: Int64?
    public var refundPreference: String?
    public var unitsGranted: Int64?
    public var unitsConsumed: Int64?
    public var appleErrorCode: Int64?
    public var lastError: String?
    /// Apple's decision, when it had decided by the report's time.
    public var outcome: RefundDecision?
    public var outcomeAt: Date?

    public var answeredInTime: Bool { answeredAt.map { $0 <= deadline } ?? false }

    /// Units that stayed with the player because Apple declined the refund (the grant's units).
    public var unitsKept: Int64 { outcome == .declined ? unitsGranted ?? 0 : 0 }
}

/// A Google Play chargeback review as finance's report shows it (migration 0017), as of the report's time.
public struct ChargebackReviewLine: Sendable, Equatable {
    public var packageName: String
    public var orderID: String
    /// The purchase token, once the order was read.
    public var transactionID: String?
    public var productID: String?
    public var notifiedAt: Date
    public var deadline: Date
    /// As of the report's time: a review settled later shows as it was then (open, or stored once answered).
    public var state: String
    public var answeredAt: Date?
    public var refundPreference: String?
    public var consumedMilliunits: Int64?
    public var usageEvents: Int64?
    public var unitsGranted: Int64?
    public var unitsConsumed: Int64?
    public var reason: String?
    public var googleStatus: Int64?
    public var lastError: String?
    /// `refunded` (the chargeback lost) or `not_refunded` (won), once read by the report's time.
    public var outcome: String?
    public var outcomeReadAt: Date?
    /// Why the review was open without an answer as of the report's time: the game's hooks gave no usable
    /// facts on the last try (an error, or a value outside 0...units granted).
    public var setAsideReason: String?

    public var answeredInTime: Bool { answeredAt.map { $0 <= deadline } ?? false }

    public init(
        packageName: String, orderID: String, transactionID: String?, productID: String?, notifiedAt: Date, deadline: Date, state: String,
        answeredAt: Date?, refundPreference: String?, consumedMilliunits: Int64?, usageEvents: Int64?, unitsGranted: Int64?,
        unitsConsumed: Int64?, reason: String?, googleStatus: Int64?, lastError: String?, outcome: String?, outcomeReadAt: Date?,
        setAsideReason: String? = nil
    ) {
        self.setAsideReason = setAsideReason
        self.packageName = packageName
        self.orderID = orderID
        self.transactionID = transactionID
        self.productID = productID
        self.notifiedAt = notifiedAt
        self.deadline = deadline
        self.state = state
        self.answeredAt = answeredAt
        self.refundPreference = refundPreference
        self.consumedMilliunits = consumedMilliunits
        self.usageEvents = usageEvents
        self.unitsGranted = unitsGranted
        self.unitsConsumed = unitsConsumed
        self.reason = reason
        self.googleStatus = googleStatus
        self.lastError = lastError
        self.outcome = outcome
        self.outcomeReadAt = outcomeReadAt
    }
}
