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
    /// The store the purchase was made in. For Google Play, `transactionID` is the purchase token (the
    /// grant's identity) and `bundleID` the package name.
    public var store: Store
    /// Google Play's order id (the Orders API's key); nil for App Store grants.
    public var orderID: String?

    public init(
        transactionID: String, originalTransactionID: String? = nil, bundleID: String, productID: String,
        environment: String = "Production", playerID: String, appAccountToken: UUID? = nil, quantity: Int32 = 1,
        unitsGranted: Int64, priceMilli: Int64? = nil, currency: String? = nil, storefront: String? = nil, purchasedAt: Date,
        receipt: String? = nil, store: Store = .appStore, orderID: String? = nil
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
        self.store = store
        self.orderID = orderID
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
    /// The store's own answer that calls for a person, never for units moved (Google's Orders API does not
    /// know the order, shows it canceled, or no longer shows a refund it showed).
    case review(StoreReview, detail: String)
}

/// What a store said that a person has to look at: each is a review entry of its own kind, never a clawback.
public enum StoreReview: String, Sendable, Equatable, CaseIterable {
    /// Google's `orders.get` answered 404 `notFound` for the grant's order (Google does not document that
    /// this proves the order never existed).
    case unknownToGoogle = "unknown_to_google"
    /// The grant has no order id, so Google's Orders API cannot be asked (a promotion code's purchase has
    /// none, and no money was paid): asking again could never give another answer.
    case withoutOrderID = "google_grant_without_order_id"
    /// The voids the sweep kept disagree with the order (a void of another order, a void while the order
    /// shows nothing refunded, voided units that do not match the refunded amount): Google warns the two
    /// may disagree; a person decides, and a later run still claws back what the order comes to state.
    case voidsDisagree = "google_voids_disagree_with_order"
    /// Google's order for the grant's order id is another purchase (token), product or quantity: the grant
    /// does not match what Google sold, whatever happened to the order since.
    case orderDisagrees = "google_order_disagrees_with_grant"
    /// Google shows the order CANCELED: canceled before it was processed, so never charged.
    case canceledAtGoogle = "canceled_at_google"
    /// Google shows the order not refunded while a clawback of it is open: Google documents no reversal of
    /// a refund, so whether to give back is a person's decision.
    case refundNoLongerShown = "refund_no_longer_shown_by_google"
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
    /// The exact share refunded, where the store gives it as a ratio rather than Apple's milli-percent
    /// (Google: the amount refunded of the order's total, or the units voided of its quantity). With
    /// REFUND_PRORATED it decides the units; `revocationPercentage` then only shows it, rounded.
    public var refundedShare: RefundedShare?
    /// The units of the purchase's quantity a quantity-based partial refund voided (Google's
    /// `voidedQuantity`), when that is how the share was given.
    public var revokedQuantity: Int32?
    /// The amount refunded, where the store states it (Google's refund events; Apple's is computed from the
    /// price and the percentage), in the currency of `currency`.
    public var refundedAmountMilli: Int64?
    public var priceMilli: Int64?
    public var currency: String?
    public var storefront: String?

    public init(
        transactionID: String, environment: String? = nil, bundleID: String? = nil, productID: String? = nil, quantity: Int32? = nil,
        appAccountToken: String? = nil, reportsAppAccountToken: Bool = true, revocationDate: Date? = nil, revocationType: String? = nil,
        revocationReason: Int32? = nil, revocationPercentage: Int32? = nil, priceMilli: Int64? = nil,
        currency: String? = nil, storefront: String? = nil, refundedShare: RefundedShare? = nil,
        revokedQuantity: Int32? = nil, refundedAmountMilli: Int64? = nil
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
        self.refundedShare = refundedShare
        self.revokedQuantity = revokedQuantity
        self.refundedAmountMilli = refundedAmountMilli
    }

    /// Apple shows the purchase refunded or revoked.
    public var isRevoked: Bool { revocationDate != nil || revocationType != nil }
}

/// A share of a purchase as a ratio of whole numbers (1 of 3 units, 4,990 of 14,970 milli-euros): unit math on
/// it is exact, where a milli-percent would round first.
public struct RefundedShare: Sendable, Equatable {
    public var numerator: Int64
    public var denominator: Int64

    public init(_ numerator: Int64, of denominator: Int64) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// Strictly between nothing and the whole: a partial refund.
    public var isPartial: Bool { numerator > 0 && denominator > 0 && numerator < denominator }

    /// The share in milli-percent, rounded to the nearest (for showing it beside Apple's).
    public var percentageMilli: Int32? {
        guard isPartial else { return nil }
        let (high, low) = numerator.multipliedFullWidth(by: 100_000)
        let (quotient, remainder) = denominator.dividingFullWidth((high, low))
        return Int32(remainder >= denominator - remainder ? quotient + 1 : quotient)
    }
}
