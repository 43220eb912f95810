public import Foundation

/// One line of a world file (JSONL). A line is an app (`"record": "app"`) or, by default, a transaction.
///
/// App line:
///     {"record":"app","bundleId":"com.studio.game","appAppleId":6450000001,"issuerId":"…",
///      "keys":[{"keyId":"SIMKEY0001","publicKey":"-----BEGIN PUBLIC KEY-----…"}],"sharedSecret":"…"}
/// Transaction line:
///     {"transactionId":"2000000000000001","originalTransactionId":"2000000000000001","customerId":"c1",
///      "bundleId":"com.studio.game","productId":"gems_600","type":"Consumable","quantity":1,
///      "priceMilli":4990,"currency":"USD","storefront":"USA","environment":"Production",
///      "purchaseDate":"2026-10-03T12:00:00Z","appAccountToken":"…","orderId":"MK5TTTVWJH",
///      "refund":{"date":"2026-10-20T08:00:00Z","reason":1,"type":"REFUND_PRORATED","percentage":50000,
///                "reversedDate":"2026-10-25T08:00:00Z"}}
public enum WorldLine: Sendable, Equatable {
    case app(AppRecord)
    case transaction(TransactionRecord)
}

/// An app of the world, with the public keys whose JWTs it accepts.
public struct AppRecord: Sendable, Codable, Equatable {
    public var record = "app"
    public var bundleId: String
    public var appAppleId: Int64
    public var issuerId: String
    public var keys: [Key]
    /// The app's App Store Connect shared secret, required by /verifyReceipt when set.
    public var sharedSecret: String?

    public struct Key: Sendable, Codable, Equatable {
        public var keyId: String
        /// PEM of the P-256 public key.
        public var publicKey: String

        public init(keyId: String, publicKey: String) {
            self.keyId = keyId
            self.publicKey = publicKey
        }
    }

    public init(bundleId: String, appAppleId: Int64, issuerId: String, keys: [Key], sharedSecret: String? = nil) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.issuerId = issuerId
        self.keys = keys
        self.sharedSecret = sharedSecret
    }
}

/// A purchase as Apple knows it, with its refund story.
public struct TransactionRecord: Sendable, Codable, Equatable {
    public var transactionId: String
    public var originalTransactionId: String
    /// The Apple account: Transaction History and Refund History group by it. Defaults to the original id.
    public var customerId: String?
    public var bundleId: String
    public var productId: String
    /// Apple's product type, e.g. "Consumable".
    public var type: String
    public var quantity: Int32
    public var priceMilli: Int64?
    public var currency: String?
    public var storefront: String?
    /// "Production" or "Sandbox".
    public var environment: String
    public var purchaseDate: Date
    public var appAccountToken: String?
    public var orderId: String?
    public var refund: RefundRecord?
    /// The customer asked Apple for a refund, and Apple sent CONSUMPTION_REQUEST.
    public var refundRequest: RefundRequestRecord?

    public init(
        transactionId: String, originalTransactionId: String? = nil, customerId: String? = nil, bundleId: String,
        productId: String, type: String = "Consumable", quantity: Int32 = 1, priceMilli: Int64? = nil,
        currency: String? = nil, storefront: String? = nil, environment: String = "Production", purchaseDate: Date,
        appAccountToken: String? = nil, orderId: String? = nil, refund: RefundRecord? = nil, refundRequest: RefundRequestRecord? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId ?? transactionId
        self.customerId = customerId
        self.bundleId = bundleId
        self.productId = productId
        self.type = type
        self.quantity = quantity
        self.priceMilli = priceMilli
        self.currency = currency
        self.storefront = storefront
        self.environment = environment
        self.purchaseDate = purchaseDate
        self.appAccountToken = appAccountToken
        self.orderId = orderId
        self.refund = refund
        self.refundRequest = refundRequest
    }

    /// Who the purchase belongs to, for the per-customer endpoints.
    public var customer: String { customerId ?? originalTransactionId }
}

/// Apple refunded (or Family-revoked) the purchase, and maybe reversed that later.
public struct RefundRecord: Sendable, Codable, Equatable {
    public var date: Date
    /// 0 other, 1 issue within the app.
    public var reason: Int32
    /// REFUND_FULL, REFUND_PRORATED or FAMILY_REVOKE.
    public var type: String
    /// Milli-percent, 0 to 100000 (prorated refunds).
    public var percentage: Int32?
    /// When Apple reversed the refund; from then on the transaction shows no revocation.
    public var reversedDate: Date?
    /// false: Apple never sent notifications about this refund (the app's notification URL was down or
    /// not configured), so Notification History does not have it.
    public var notified: Bool?

    public init(date: Date, reason: Int32 = 0, type: String = "REFUND_FULL", percentage: Int32? = nil, reversedDate: Date? = nil) {
        self.date = date
        self.reason = reason
        self.type = type
        self.percentage = percentage
        self.reversedDate = reversedDate
    }

    /// Whether Apple shows the revocation at `now`.
    public func isActive(at now: Date) -> Bool {
        date <= now && (reversedDate.map { $0 > now } ?? true)
    }
}

/// A customer's refund request: Apple sent CONSUMPTION_REQUEST at `date` and decides at `decidedAt`. A
/// decided request granted has the transaction's `refund` dated `decidedAt`; a declined one is
/// announced by REFUND_DECLINED then. An undecided one (`decision` nil) is decided by the simulator once
/// its clock passes the decision time, from the answer it received by then (see `RefundDecisions`).
public struct RefundRequestRecord: Sendable, Codable, Equatable {
    public var date: Date
    /// `consumptionRequestReason`, e.g. UNINTENDED_PURCHASE.
    public var reason: String
    /// "REFUND" or "REFUND_DECLINED"; nil while Apple has not decided.
    public var decision: String?
    public var decidedAt: Date?

    public init(date: Date, reason: String = "UNINTENDED_PURCHASE", decision: String? = nil, decidedAt: Date? = nil) {
        self.date = date
        self.reason = reason
        self.decision = decision
        self.decidedAt = decidedAt
    }
}

extension FaultPlan {
    /// Decodes with every field optional, so a control request names only the faults it wants.
    public init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        latencyMilliseconds = try container.decodeIfPresent(Int.self, forKey: .latencyMilliseconds) ?? latencyMilliseconds
        jitterMilliseconds = try container.decodeIfPresent(Int.self, forKey: .jitterMilliseconds) ?? jitterMilliseconds
        internalErrorShare = try container.decodeIfPresent(Double.self, forKey: .internalErrorShare) ?? internalErrorShare
        retryableErrorShare = try container.decodeIfPresent(Double.self, forKey: .retryableErrorShare) ?? retryableErrorShare
        resetShare = try container.decodeIfPresent(Double.self, forKey: .resetShare) ?? resetShare
        truncatedShare = try container.decodeIfPresent(Double.self, forKey: .truncatedShare) ?? truncatedShare
        malformedShare = try container.decodeIfPresent(Double.self, forKey: .malformedShare) ?? malformedShare
        hostileShare = try container.decodeIfPresent(Double.self, forKey: .hostileShare) ?? hostileShare
        hostileKind = try container.decodeIfPresent(String.self, forKey: .hostileKind) ?? hostileKind
        stallShare = try container.decodeIfPresent(Double.self, forKey: .stallShare) ?? stallShare
        stallSeconds = try container.decodeIfPresent(Double.self, forKey: .stallSeconds) ?? stallSeconds
        unauthorizedBundles = try container.decodeIfPresent([String].self, forKey: .unauthorizedBundles) ?? []
        unauthorizedEnvironments = try container.decodeIfPresent([String].self, forKey: .unauthorizedEnvironments) ?? []
        rateLimitBurstEverySeconds = try container.decodeIfPresent(Double.self, forKey: .rateLimitBurstEverySeconds) ?? 0
        rateLimitBurstMilliseconds = try container.decodeIfPresent(Int.self, forKey: .rateLimitBurstMilliseconds) ?? 0
        seed = try container.decodeIfPresent(UInt64.self, forKey: .seed) ?? seed
    }

    enum CodingKeys: String, CodingKey {
        case latencyMilliseconds, jitterMilliseconds, internalErrorShare, retryableErrorShare, resetShare, truncatedShare
        case malformedShare, hostileShare, hostileKind, stallShare, stallSeconds, unauthorizedBundles, unauthorizedEnvironments
        case rateLimitBurstEverySeconds, rateLimitBurstMilliseconds, seed
    }
}
