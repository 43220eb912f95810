public import Foundation

/// The fields of a store's verified statement about one purchase that reconciliation reads: the App Store's
/// signed transaction, or Google Play's order with the voids kept for it, each read by its store's gateway.
public struct StoreStatement: Sendable, Equatable {
    /// The purchase the statement is about (the grant's `transactionID`: Apple's transaction id, Google's
    /// purchase token): a statement about another purchase decides nothing for a grant.
    public var transactionID: String
    public var environment: StoreEnvironment?
    public var bundleID: String?
    public var productID: String?
    public var quantity: Int32?
    public var appAccountToken: String?
    /// Whether the source carries `appAccountToken` at all (Apple's signed transactions do; legacy receipts
    /// and Google's orders do not). Where it does, a token missing from the answer is a disagreement; where
    /// it does not, nothing can be said about the token.
    public var reportsAppAccountToken: Bool
    /// When the store refunded or revoked the purchase; nil while it shows no refund.
    public var revocationDate: Date?
    /// How the store refunded or revoked it; nil while it shows no refund (or, with a date, states no kind).
    public var refundKind: RefundKind?
    /// Why, where the store gives a code for it (the App Store's `revocationReason`).
    public var refundReason: RevocationReason?
    /// Milli-percent, for a prorated refund.
    public var revocationPercentage: Int32?
    /// The exact share refunded, where the store gives it as a ratio rather than a milli-percent (Google:
    /// the amount refunded of the order's total, or the units voided of its quantity). With a prorated
    /// refund it decides the units; `revocationPercentage` then only shows it, rounded.
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
    /// The store documents no reversal or reduction of a refund (Google Play): a statement that takes back
    /// fewer units than are already taken is an inconsistent view, for a person, never units given back.
    /// Where the store does document a reversal (the App Store's REFUND_REVERSED), a smaller statement is
    /// the store's word and the difference is given back.
    public var refundsOnlyGrow: Bool
    /// Whether the refund also revoked the purchase, where the store says: false when the store refunded
    /// without revoking (Google Play: a refund made in the Play Console without revoke, which its voided
    /// purchases then never list), nil when it does not say or cannot be told. The studio chooses what such a
    /// refund means (`ReconciliationPolicy.refundsKeepingAccess`).
    public var refundRevokedAccess: Bool?
    /// The refunded share was stated as an amount of money, not as units (Google's partial refund by
    /// amount): the studio chooses what it means for units (`ReconciliationPolicy.amountRefunds`).
    public var refundedByAmount: Bool

    public init(
        transactionID: String, environment: StoreEnvironment? = nil, bundleID: String? = nil, productID: String? = nil,
        quantity: Int32? = nil, appAccountToken: String? = nil, reportsAppAccountToken: Bool = true, revocationDate: Date? = nil,
        refundKind: RefundKind? = nil, refundReason: RevocationReason? = nil, revocationPercentage: Int32? = nil, priceMilli: Int64? = nil,
        currency: String? = nil, storefront: String? = nil, refundedShare: RefundedShare? = nil, revokedQuantity: Int32? = nil,
        refundedAmountMilli: Int64? = nil, refundsOnlyGrow: Bool = false, refundRevokedAccess: Bool? = nil, refundedByAmount: Bool = false
    ) {
        self.refundRevokedAccess = refundRevokedAccess
        self.refundedByAmount = refundedByAmount
        self.transactionID = transactionID
        self.environment = environment
        self.bundleID = bundleID
        self.productID = productID
        self.quantity = quantity
        self.appAccountToken = appAccountToken
        self.reportsAppAccountToken = reportsAppAccountToken
        self.revocationDate = revocationDate
        self.refundKind = refundKind
        self.refundReason = refundReason
        self.revocationPercentage = revocationPercentage
        self.priceMilli = priceMilli
        self.currency = currency
        self.storefront = storefront
        self.refundedShare = refundedShare
        self.revokedQuantity = revokedQuantity
        self.refundedAmountMilli = refundedAmountMilli
        self.refundsOnlyGrow = refundsOnlyGrow
    }

    /// The store shows the purchase refunded or revoked.
    public var isRevoked: Bool { revocationDate != nil || refundKind != nil }
}

/// How a store refunded or revoked a purchase. Stored as the check's and ledger's `revocation_type`
/// (`storedValue`), which finance's reports read: the App Store's own values for its refunds, and
/// `CHARGEBACK` and `FRAUD` for the reasons Google Play's full refunds are kept apart by.
public enum RefundKind: Sendable, Equatable, CustomStringConvertible {
    /// Everything refunded.
    case full
    /// A share refunded: the statement's `refundedShare`, or its `revocationPercentage`.
    case prorated
    /// Access revoked through family sharing, not refunded.
    case familyRevoke
    /// Refunded in full through the buyer's bank or card issuer.
    case chargeback
    /// Refunded in full as fraud (fraudulent or friendly fraud).
    case fraud
    /// A kind this version does not know, kept as the store gave it for a person: never units moved.
    case unknown(String)

    /// The stored `revocation_type`.
    public var storedValue: String {
        switch self {
        case .full: "REFUND_FULL"
        case .prorated: "REFUND_PRORATED"
        case .familyRevoke: "FAMILY_REVOKE"
        case .chargeback: "CHARGEBACK"
        case .fraud: "FRAUD"
        case .unknown(let value): value
        }
    }

    /// The kind a stored `revocation_type` names (the inverse of `storedValue`).
    public init(storedValue: String) {
        switch storedValue {
        case "REFUND_FULL": self = .full
        case "REFUND_PRORATED": self = .prorated
        case "FAMILY_REVOKE": self = .familyRevoke
        case "CHARGEBACK": self = .chargeback
        case "FRAUD": self = .fraud
        default: self = .unknown(storedValue)
        }
    }

    public var description: String { storedValue }
}

/// Where a purchase happened: the grants table's `environment` (`Production` or `Sandbox`), or, in a store's
/// statement, another environment the store names (never one a grant can have).
public enum StoreEnvironment: Sendable, Hashable, CustomStringConvertible {
    case production
    case sandbox
    case other(String)

    public init(rawValue: String) {
        switch rawValue {
        case "Production": self = .production
        case "Sandbox": self = .sandbox
        default: self = .other(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .production: "Production"
        case .sandbox: "Sandbox"
        case .other(let value): value
        }
    }

    public var description: String { rawValue }
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

    /// The share in milli-percent, rounded to the nearest (for showing it beside a store's own).
    public var percentageMilli: Int32? {
        guard isPartial else { return nil }
        let (high, low) = numerator.multipliedFullWidth(by: 100_000)
        let (quotient, remainder) = denominator.dividingFullWidth((high, low))
        return Int32(remainder >= denominator - remainder ? quotient + 1 : quotient)
    }
}
