import Foundation

/// One in-app purchase found in an app receipt (unverified: use it only to ask Apple, as Apple advises).
public struct ReceiptInAppPurchase: Sendable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String?
    public var productID: String?
    public var quantity: Int64?
    /// RFC 3339 text, as the receipt has it.
    public var purchaseDate: String?
    /// Present (non-empty) when the purchase was refunded or revoked.
    public var cancellationDate: String?
}

/// What a receipt holds, as far as clawback needs it.
public enum ParsedReceipt: Sendable, Equatable {
    /// A PKCS#7 app receipt (StoreKit 1, iOS 7+; also Xcode's).
    case appReceipt(bundleID: String?, receiptType: String?, purchases: [ReceiptInAppPurchase])
    /// An old-style SK1 transaction receipt (`{"purchase-info" = "...";}`).
    case transactionReceipt(transactionID: String, originalTransactionID: String?, productID: String?)

    /// Every transaction id in the receipt.
    public var transactionIDs: [String] {
        switch self {
        case .appReceipt(_, _, let purchases): purchases.map(\.transactionID)
        case .transactionReceipt(let transactionID, _, _): [transactionID]
        }
    }
}

/// Why a receipt could not be read.
public struct ReceiptError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Reads App Store receipts without verifying them: Apple's own libraries do the same, and say the ids must
/// only be used to call the App Store Server API, which then gives the signed truth.
public enum ReceiptParser {
    static let signedDataOID = "1.2.840.113549.1.7.2"
    static let dataOID = "1.2.840.113549.1.7.1"
    /// Receipts are a few kilobytes; a grant row holding megabytes is refused before decoding.
    static let maximumLength = 4 * 1024 * 1024

    enum AttributeType {
        static let bundleID: Int64 = 2
        static let receiptType: Int64 = 0
        static let inAppPurchase: Int64 = 17
        static let quantity: Int64 = 1701
        static let productID: Int64 = 1702
        static let transactionID: Int64 = 1703
        static let purchaseDate: Int64 = 1704
        static let originalTransactionID: Int64 = 1705
        static let cancellationDate: Int64 = 1712
    }

    /// Parses a base64 receipt of either kind.
    public static func parse(base64 text: String) throws(ReceiptError) -> ParsedReceipt {
        guard text.utf8.count <= maximumLength else { throw ReceiptError("the receipt is larger than \(maximumLength) bytes") }
        guard let bytes = Base64.decodeStandard(text.trimmingCharacters(in: .whitespacesAndNewlines)), !bytes.isEmpty else {
            throw ReceiptError("the receipt is not base64")
        }
        if bytes.first == 0x30 { return try parseAppReceipt(bytes) }
        return try parseTransactionReceipt(bytes)
    }

    static func parseAppReceipt(_ bytes: [UInt8]) throws(ReceiptError) -> ParsedReceipt {
        do {
            let contentInfo = try BERNode.parse(bytes[...])
            guard contentInfo.isUniversal(BERNode.universalSequence), contentInfo.children.count >= 2,
                try contentInfo.children[0].objectIdentifier() == signedDataOID,
                contentInfo.children[1].isContext(0), let signedData = contentInfo.children[1].children.first,
                signedData.isUniversal(BERNode.universalSequence), signedData.children.count >= 3
            else { throw ReceiptError("not a PKCS#7 SignedData receipt") }
            let encapsulated = signedData.children[2]
            guard encapsulated.isUniversal(BERNode.universalSequence), encapsulated.children.count >= 2,
                try encapsulated.children[0].objectIdentifier() == dataOID, encapsulated.children[1].isContext(0),
                let content = encapsulated.children[1].children.first, content.isUniversal(BERNode.universalOctetString)
            else { throw ReceiptError("the receipt's signed content is missing") }

            var bundleID: String?
            var receiptType: String?
            var purchases: [ReceiptInAppPurchase] = []
            for (type, value) in try attributes(of: try content.parseContent()) {
                switch type {
                case AttributeType.bundleID: bundleID = try? value.parseContent().text()
                case AttributeType.receiptType: receiptType = try? value.parseContent().text()
                case AttributeType.inAppPurchase: purchases.append(try inAppPurchase(try value.parseContent()))
                default: continue
                }
            }
            return .appReceipt(bundleID: bundleID, receiptType: receiptType, purchases: purchases)
        } catch let error as ReceiptError {
            throw error
        } catch let error as BERError {
            throw ReceiptError("the receipt is not valid ASN.1 at byte \(error.offset): \(error.problem)")
        } catch {
            throw ReceiptError("the receipt could not be read: \(error)")
        }
    }

    /// The receipt payload: a SET of SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }.
    static func attributes(of set: BERNode) throws -> [(Int64, BERNode)] {
        guard set.isUniversal(BERNode.universalSet) else { throw ReceiptError("the receipt payload is not a SET of attributes") }
        return try set.children.map { attribute in
            guard attribute.isUniversal(BERNode.universalSequence), attribute.children.count == 3,
                attribute.children[2].isUniversal(BERNode.universalOctetString)
            else { throw ReceiptError("a receipt attribute at byte \(attribute.offset) is malformed") }
            return (try attribute.children[0].integer(), attribute.children[2])
        }
    }

    static func inAppPurchase(_ set: BERNode) throws -> ReceiptInAppPurchase {
        var purchase = ReceiptInAppPurchase(transactionID: "")
        for (type, value) in try attributes(of: set) {
            switch type {
            case AttributeType.transactionID: purchase.transactionID = try value.parseContent().text()
            case AttributeType.originalTransactionID: purchase.originalTransactionID = try value.parseContent().text()
            case AttributeType.productID: purchase.productID = try value.parseContent().text()
            case AttributeType.quantity: purchase.quantity = try value.parseContent().integer()
            case AttributeType.purchaseDate: purchase.purchaseDate = try value.parseContent().text()
            case AttributeType.cancellationDate:
                let date = try value.parseContent().text()
                purchase.cancellationDate = date.isEmpty ? nil : date
            default: continue
            }
        }
        guard !purchase.transactionID.isEmpty else { throw ReceiptError("an in-app purchase in the receipt has no transaction id") }
        return purchase
    }

    /// `{ "signature" = "..."; "purchase-info" = "<base64 of { "transaction-id" = "..."; ... }>"; }`.
    static func parseTransactionReceipt(_ bytes: [UInt8]) throws(ReceiptError) -> ParsedReceipt {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let purchaseInfo = quotedValue(of: "purchase-info", in: text),
            let decoded = Base64.decodeStandard(purchaseInfo)
        else { throw ReceiptError("neither a PKCS#7 app receipt nor a transaction receipt with purchase-info") }
        let info = String(decoding: decoded, as: UTF8.self)
        guard let transactionID = quotedValue(of: "transaction-id", in: info), !transactionID.isEmpty,
            transactionID.allSatisfy(\.isNumber)
        else { throw ReceiptError("the transaction receipt's purchase-info has no numeric transaction-id") }
        return .transactionReceipt(
            transactionID: transactionID, originalTransactionID: quotedValue(of: "original-transaction-id", in: info),
            productID: quotedValue(of: "product-id", in: info))
    }

    /// The value of `"key" = "value";` in Apple's old plist-like text.
    static func quotedValue(of key: String, in text: String) -> String? {
        guard let keyRange = text.range(of: "\"\(key)\"") else { return nil }
        var rest = text[keyRange.upperBound...].drop { $0 == " " || $0 == "\t" }
        guard rest.first == "=" else { return nil }
        rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
        guard rest.first == "\"" else { return nil }
        rest = rest.dropFirst()
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }
}
