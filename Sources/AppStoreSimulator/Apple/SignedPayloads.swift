import AppStore
import Foundation

/// Builds the JSON Apple signs for transactions and notifications.
enum SignedPayloads {
    /// The signed transaction payload as Apple would sign it at `now`: revocation fields while a refund is
    /// in force, none once it is reversed (revocationPercentage is documented to disappear; the simulator
    /// removes all of them, which is what "Apple no longer shows a revocation" means to clawback).
    static func transaction(_ record: TransactionRecord, at now: Date, signedAt: Date? = nil) -> [UInt8] {
        var payload = TransactionJSON(
            transactionId: record.transactionId, originalTransactionId: record.originalTransactionId,
            bundleId: record.bundleId, productId: record.productId, purchaseDate: record.purchaseDate.appleMilliseconds,
            originalPurchaseDate: record.purchaseDate.appleMilliseconds, quantity: record.quantity, type: record.type,
            inAppOwnershipType: "PURCHASED", signedDate: (signedAt ?? now).appleMilliseconds, environment: record.environment,
            transactionReason: "PURCHASE", storefront: record.storefront, storefrontId: record.storefront.map(storefrontID),
            price: record.priceMilli, currency: record.priceMilli == nil ? nil : record.currency,
            appAccountToken: record.appAccountToken)
        if let refund = record.refund, refund.isActive(at: now) {
            payload.revocationDate = refund.date.appleMilliseconds
            payload.revocationReason = refund.reason
            payload.revocationType = refund.type
            payload.revocationPercentage = refund.type == "REFUND_PRORATED" ? refund.percentage : (refund.type == "REFUND_FULL" ? 100_000 : nil)
        }
        return encode(payload)
    }

    /// A notification of `event` (REFUND, REFUND_REVERSED, CONSUMPTION_REQUEST…), as sent at the event: its transaction is signed as it was then.
    static func notification(_ event: World.RefundEvent, record: TransactionRecord, app: AppRecord?, signedTransaction: String) -> [UInt8] {
        let payload = NotificationJSON(
            notificationType: event.kind.rawValue, notificationUUID: notificationUUID(event),
            data: .init(
                appAppleId: app?.appAppleId, bundleId: record.bundleId, bundleVersion: "1", environment: record.environment,
                signedTransactionInfo: signedTransaction,
                consumptionRequestReason: event.kind == .consumptionRequest ? record.refundRequest?.reason : nil),
            version: "2.0", signedDate: event.date.appleMilliseconds)
        return encode(payload)
    }

    /// Stable per event, so that history pages and reruns agree.
    static func notificationUUID(_ event: World.RefundEvent) -> String {
        var hash = StableHash()
        hash.combine(event.kind.rawValue)
        hash.combine(event.transactionID)
        hash.combine(String(event.date.appleMilliseconds))
        let a = hash.value
        hash.combine("second half")
        let b = hash.value
        let hex = String(format: "%016llx%016llx", a, b)
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }

    /// Apple's numeric storefront ids for a few countries; a stable made-up one for the rest.
    static func storefrontID(_ storefront: String) -> String {
        let known = [
            "USA": "143441", "GBR": "143444", "DEU": "143443", "FRA": "143442", "JPN": "143462", "CAN": "143455",
            "AUS": "143460", "BRA": "143503", "KOR": "143466", "CHN": "143465", "BHR": "143559",
        ]
        if let id = known[storefront] { return id }
        var hash = StableHash()
        hash.combine(storefront)
        return String(143_000 + hash.value % 1000)
    }

    static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(value)) ?? Data("{}".utf8))
    }

    struct TransactionJSON: Encodable {
        var transactionId: String
        var originalTransactionId: String
        var bundleId: String
        var productId: String
        var purchaseDate: Int64
        var originalPurchaseDate: Int64
        var quantity: Int32
        var type: String
        var inAppOwnershipType: String
        var signedDate: Int64
        var environment: String
        var transactionReason: String
        var storefront: String?
        var storefrontId: String?
        var price: Int64?
        var currency: String?
        var appAccountToken: String?
        var revocationDate: Int64?
        var revocationReason: Int32?
        var revocationType: String?
        var revocationPercentage: Int32?
    }

    struct NotificationJSON: Encodable {
        struct DataJSON: Encodable {
            var appAppleId: Int64?
            var bundleId: String
            var bundleVersion: String
            var environment: String
            var signedTransactionInfo: String
            var consumptionRequestReason: String?
        }

        var notificationType: String
        var notificationUUID: String
        var data: DataJSON
        var version: String
        var signedDate: Int64
    }
}

/// FNV-1a 64: stable across runs and machines (Swift's Hasher is seeded per process).
struct StableHash {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func combine(_ text: String) {
        for byte in text.utf8 { combine(byte) }
        combine(UInt8(0xFF))
    }

    mutating func combine(_ number: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { combine(UInt8(truncatingIfNeeded: number >> UInt64(shift))) }
    }

    mutating func combine(_ byte: UInt8) {
        value ^= UInt64(byte)
        value = value &* 0x0000_0100_0000_01b3
    }

    /// A number in [0, 1) from the hash (after a final mix), for deterministic choices.
    var unitInterval: Double {
        var mixed = value
        mixed ^= mixed >> 33
        mixed = mixed &* 0xff51_afd7_ed55_8ccd
        mixed ^= mixed >> 33
        mixed = mixed &* 0xc4ce_b9fe_1a85_ec53
        mixed ^= mixed >> 33
        return Double(mixed >> 11) / Double(1 << 53)
    }
}
