import Foundation

/// One row of Google's Voided Purchases feed (`schemas.VoidedPurchase`): a purchase Google voided (refund,
/// chargeback, cancellation) and needs revoked. Google types the numbers int64-as-string and int32, and its
/// own sample writes the int32s as strings too: both are read.
public struct VoidedPurchase: Sendable, Equatable, Codable {
    public var orderId: String?
    public var purchaseToken: String?
    public var purchaseTimeMillis: Int64?
    public var voidedTimeMillis: Int64?
    /// 0 user, 1 developer, 2 Google.
    public var voidedSource: Int32?
    /// 0 Other, 1 Remorse, 2 Not_received, 3 Defective, 4 Accidental_purchase, 5 Fraud, 6 Friendly_fraud,
    /// 7 Chargeback, 8 Unacknowledged_purchase.
    public var voidedReason: Int32?
    /// Units voided by a quantity-based partial refund; absent when the whole (remaining) quantity was.
    public var voidedQuantity: Int32?

    public init(
        orderId: String?, purchaseToken: String?, purchaseTimeMillis: Int64?, voidedTimeMillis: Int64?, voidedSource: Int32?,
        voidedReason: Int32?, voidedQuantity: Int32? = nil
    ) {
        self.orderId = orderId
        self.purchaseToken = purchaseToken
        self.purchaseTimeMillis = purchaseTimeMillis
        self.voidedTimeMillis = voidedTimeMillis
        self.voidedSource = voidedSource
        self.voidedReason = voidedReason
        self.voidedQuantity = voidedQuantity
    }

    enum CodingKeys: String, CodingKey {
        case orderId, purchaseToken, purchaseTimeMillis, voidedTimeMillis, voidedSource, voidedReason, voidedQuantity
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        orderId = try container.decodeIfPresent(String.self, forKey: .orderId)
        purchaseToken = try container.decodeIfPresent(String.self, forKey: .purchaseToken)
        purchaseTimeMillis = try Self.number(container, .purchaseTimeMillis)
        voidedTimeMillis = try Self.number(container, .voidedTimeMillis)
        voidedSource = try Self.number(container, .voidedSource)
        voidedReason = try Self.number(container, .voidedReason)
        // Absent means the whole remaining quantity; an explicit null says nothing, and is not read as absent.
        if container.contains(.voidedQuantity), try container.decodeNil(forKey: .voidedQuantity) {
            throw DecodingError.dataCorruptedError(
                forKey: .voidedQuantity, in: container, debugDescription: "voidedQuantity is null: neither a quantity nor absent")
        }
        voidedQuantity = try Self.number(container, .voidedQuantity)
    }

    public func encode(to encoder: any Encoder) throws {
        // As Google writes them: int64 as strings, int32 as numbers.
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(orderId, forKey: .orderId)
        try container.encodeIfPresent(purchaseToken, forKey: .purchaseToken)
        try container.encodeIfPresent(purchaseTimeMillis.map(String.init), forKey: .purchaseTimeMillis)
        try container.encodeIfPresent(voidedTimeMillis.map(String.init), forKey: .voidedTimeMillis)
        try container.encodeIfPresent(voidedSource, forKey: .voidedSource)
        try container.encodeIfPresent(voidedReason, forKey: .voidedReason)
        try container.encodeIfPresent(voidedQuantity, forKey: .voidedQuantity)
    }

    /// A number written as a JSON number or as a string of digits; anything else is an error, never nil.
    static func number<T: FixedWidthInteger & Decodable>(_ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> T? {
        guard container.contains(key), try !container.decodeNil(forKey: key) else { return nil }
        if let value = try? container.decode(T.self, forKey: key) { return value }
        let text = try container.decode(String.self, forKey: key)
        guard let value = T(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "\(key.stringValue) is not an integer: \(text)")
        }
        return value
    }
}
