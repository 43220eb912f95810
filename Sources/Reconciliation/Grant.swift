public import Foundation

/// A granted purchase, as the game recorded it in `clawback.grants`.
public struct Grant: Sendable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    public var bundleID: String
    public var productID: String
    /// "Production" or "Sandbox".
    public var environment: String
    public var playerID: String
    public var appAccountToken: UUID?
    public var quantity: Int32
    public var unitsGranted: Int64
    public var priceMilli: Int64?
    public var currency: String?
    public var storefront: String?
    public var purchasedAt: Date
    /// Legacy base64 receipt, when that is all the grant path kept.
    public var receipt: String?

    public init(
        transactionID: String, originalTransactionID: String? = nil, bundleID: String, productID: String,
        environment: String = "Production", playerID: String, appAccountToken: UUID? = nil, quantity: Int32 = 1,
        unitsGranted: Int64, priceMilli: Int64? = nil, currency: String? = nil, storefront: String? = nil, purchasedAt: Date,
        receipt: String? = nil
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID ?? transactionID
        self.bundleID = bundleID
        self.productID = productID
        self.environment = environment
        self.playerID = playerID
        self.appAccountToken = appAccountToken
        self.quantity = quantity
        self.unitsGranted = unitsGranted
        self.priceMilli = priceMilli
        self.currency = currency
        self.storefront = storefront
        self.purchasedAt = purchasedAt
        self.receipt = receipt
    }
}

/// What Apple said about a grant's transaction.
public enum AppleAnswer: Sendable, Equatable {
    /// A signed answer that verified: Apple's facts.
    case verified(AppleFacts)
    /// 4040010 in every environment asked: Apple does not know the transaction.
    case unknownToApple(environments: [String])
    /// No App Store purchase can have this id: it is not decimal digits, or Apple refused it with 4000006
    /// InvalidTransactionIdError. Judged like an unknown transaction (a forged or corrupted grant), never
    /// left unverified: asking again could never give another answer.
    case invalidTransactionID(reason: String)
    /// No verified answer (transport, 5xx, rate-limit budget, bad signature, ...): never counted as ok.
    case unverified(reason: String)
    /// Notifications strategy: Apple's verified refund feed (REFUND / REFUND_REVERSED notifications since
    /// `since`) has nothing about this transaction. Not a per-transaction answer: it reads as "not
    /// refunded", and never as proof that an open clawback was reversed.
    case notInRefundFeed(since: Date)
    /// Refund-history strategy, incremental: the customer's refund history since the stored revision does
    /// not list this transaction. Nothing new: an open clawback stands, a clean grant stays clean.
    case noNewRefund
}

/// The fields of Apple's signed transaction that reconciliation reads.
public struct AppleFacts: Sendable, Equatable {
    public var environment: String?
    public var bundleID: String?
    public var productID: String?
    public var quantity: Int32?
    public var appAccountToken: String?
    public var revocationDate: Date?
    /// REFUND_FULL, REFUND_PRORATED, FAMILY_REVOKE, or a value Apple adds later.
    public var revocationType: String?
    public var revocationReason: Int32?
    /// Milli-percent.
    public var revocationPercentage: Int32?
    public var priceMilli: Int64?
    public var currency: String?
    public var storefront: String?

    public init(
        environment: String? = nil, bundleID: String? = nil, productID: String? = nil, quantity: Int32? = nil,
        appAccountToken: String? = nil, revocationDate: Date? = nil, revocationType: String? = nil,
        revocationReason: Int32? = nil, revocationPercentage: Int32? = nil, priceMilli: Int64? = nil,
        currency: String? = nil, storefront: String? = nil
    ) {
        self.environment = environment
        self.bundleID = bundleID
        self.productID = productID
        self.quantity = quantity
        self.appAccountToken = appAccountToken
        self.revocationDate = revocationDate
        self.revocationType = revocationType
        self.revocationReason = revocationReason
        self.revocationPercentage = revocationPercentage
        self.priceMilli = priceMilli
        self.currency = currency
        self.storefront = storefront
    }

    /// Apple shows the purchase refunded or revoked.
    public var isRevoked: Bool { revocationDate != nil || revocationType != nil }
}
