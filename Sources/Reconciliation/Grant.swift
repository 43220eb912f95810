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

/// What Apple said about a grant's transaction. Only `.verified` carries Apple's facts, and only facts
/// about the grant's own transaction id lead to a definite verdict: every other case is either a narrower
/// statement (`noRefundReported`, `unknownToApple`) or no statement at all (`unverified`).
public enum AppleAnswer: Sendable, Equatable {
    /// A signed answer that verified: Apple's current facts about exactly this transaction.
    case verified(AppleFacts)
    /// 4040010 in every environment asked: Apple does not know the transaction.
    case unknownToApple(environments: [String])
    /// No App Store purchase can have this id: it is not decimal digits, or Apple refused it with 4000006
    /// InvalidTransactionIdError. Judged like an unknown transaction (a forged or corrupted grant), never
    /// left unverified: asking again could never give another answer.
    case invalidTransactionID(reason: String)
    /// No verified answer (transport, 5xx, refused credentials, rate-limit budget, bad signature, an answer
    /// that cannot cover the grant, ...): never counted as ok, retried by the next run.
    case unverified(reason: String)
    /// A verified refund feed that covers the grant (its app, its environment and every instant since its
    /// purchase) lists no refund or revocation of it. Weaker than `.verified`: Apple did not confirm the
    /// purchase, it only reported no refund, so the verdict is `no_refund_reported`, never `ok`, and it can
    /// never close an open clawback (a strategy asks per transaction then).
    case noRefundReported(source: String)
}

/// The fields of Apple's signed transaction that reconciliation reads.
public struct AppleFacts: Sendable, Equatable {
    /// The transaction Apple's answer is about: facts about another id decide nothing for a grant.
    public var transactionID: String
    public var environment: String?
    public var bundleID: String?
    public var productID: String?
    public var quantity: Int32?
    public var appAccountToken: String?
    /// Whether the source carries `appAccountToken` at all (signed transactions do; legacy receipts do
    /// not). Where it does, a token missing from Apple's answer is a disagreement; where it does not,
    /// nothing can be said about the token.
    public var reportsAppAccountToken: Bool
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
        transactionID: String, environment: String? = nil, bundleID: String? = nil, productID: String? = nil, quantity: Int32? = nil,
        appAccountToken: String? = nil, reportsAppAccountToken: Bool = true, revocationDate: Date? = nil, revocationType: String? = nil,
        revocationReason: Int32? = nil, revocationPercentage: Int32? = nil, priceMilli: Int64? = nil,
        currency: String? = nil, storefront: String? = nil
    ) {
        self.transactionID = transactionID
        self.environment = environment
        self.bundleID = bundleID
        self.productID = productID
        self.quantity = quantity
        self.appAccountToken = appAccountToken
        self.reportsAppAccountToken = reportsAppAccountToken
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
