public import Foundation

/// A run a report covers, as the runs table and its checks describe it.
public struct ReportRun: Sendable, Equatable {
    public var runID: Int64
    public var windowStart: Date
    public var windowEnd: Date
    public var shardIndex: Int
    public var shardCount: Int
    public var strategy: String
    public var dryRun: Bool
    public var status: String
    public var attempts: Int
    /// Narrowed runs (a player, a transaction, some bundles), described for the summary; nil: the whole window.
    public var narrowedTo: String?
    /// From the run's last attempt (the runs table keeps the latest counters).
    public var grantsInScope: Int
    public var appleRequests: Int
    public var appleRateLimited: Int
    /// Notifications strategy: notifications that failed verification (their grants were asked per
    /// transaction), and refunds the audit sample found that the feed missed.
    public var rejectedNotifications: Int
    public var missedNotifications: Int
    /// Checks the run holds (all attempts).
    public var checks: Int

    public init(
        runID: Int64, windowStart: Date, windowEnd: Date, shardIndex: Int = 0, shardCount: Int = 1, strategy: String, dryRun: Bool = false,
        status: String, attempts: Int = 1, narrowedTo: String? = nil, grantsInScope: Int = 0, appleRequests: Int = 0,
        appleRateLimited: Int = 0, rejectedNotifications: Int = 0, missedNotifications: Int = 0, checks: Int = 0
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
        self.appleRequests = appleRequests
        self.appleRateLimited = appleRateLimited
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
    public var verdict: String
    public var action: String
    public var revocationDate: Date?
    public var revocationType: String?
    public var revocationReason: Int?
    /// Apple's revocationPercentage: milli-percent, 100000 = 100%.
    public var revocationPercentage: Int?
    public var purchasedAt: Date
    public var applePriceMilli: Int64?
    public var appleCurrency: String?
    public var appleStorefront: String?
    public var detail: String?
    /// The latest take-back or give-back the report's runs wrote for it, with the game's acknowledgement.
    public var position: LedgerPosition?

    public init(
        runID: Int64, bundleID: String, environment: String, transactionID: String, originalTransactionID: String, playerID: String,
        productID: String, quantity: Int = 1, unitsGranted: Int64, unitsClawedBack: Int64 = 0, unitsChange: Int64 = 0, verdict: String,
        action: String, revocationDate: Date? = nil, revocationType: String? = nil, revocationReason: Int? = nil,
        revocationPercentage: Int? = nil, purchasedAt: Date, applePriceMilli: Int64? = nil, appleCurrency: String? = nil,
        appleStorefront: String? = nil, detail: String? = nil, position: LedgerPosition? = nil
    ) {
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
        self.applePriceMilli = applePriceMilli
        self.appleCurrency = appleCurrency
        self.appleStorefront = appleStorefront
        self.detail = detail
        self.position = position
    }

    /// Refunded or revoked by Apple (the verdicts that take units back).
    public var isRefund: Bool { verdict == "refunded" || verdict == "revoked" }

    /// Needs a person: Apple does not know it, disagrees with the grant, or could not be asked.
    public var needsReview: Bool { ["unknown_to_apple", "mismatch", "unverified"].contains(verdict) }

    /// Apple's price of what was refunded, in milliunits (informational): the whole price, or the prorated
    /// share. Nil when Apple gave no price or this is not a refund.
    public var refundedAmountMilli: Int64? {
        guard isRefund, let price = applePriceMilli else { return nil }
        guard revocationType == "REFUND_PRORATED", let percentage = revocationPercentage else { return price }
        return Money.share(ofMilli: price, percentageMilli: percentage)
    }
}

extension FlaggedPurchase {
    /// The value of the ledger position's units at the purchase's price, rounded to the currency as a report
    /// row shows it (informational). Nil without a position or a price from Apple.
    public var entryAmountMilli: Int64? { value(ofUnits: position?.units) }

    /// The value of the units the game actually applied (nil until acknowledged).
    public var recoveredAmountMilli: Int64? { value(ofUnits: position?.unitsApplied) }

    private func value(ofUnits units: Int64?) -> Int64? {
        guard let units, let price = applePriceMilli,
            let value = Money.value(ofUnits: units, granted: unitsGranted, priceMilli: price)
        else { return nil }
        return Money.rounded(milli: value, currency: appleCurrency)
    }
}

/// What Apple's revocationReason means (App Store Server API, revocationReason).
public enum RevocationReason {
    public static func meaning(_ reason: Int?) -> String? {
        switch reason {
        case nil: nil
        case 0: "other reason (e.g. accidental purchase)"
        case 1: "actual or perceived issue within the app"
        case let code?: "code \(code), not documented by Apple"
        }
    }
}
