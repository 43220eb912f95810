import Foundation
import TestSupport
import Testing

@testable import AppStore

@Suite("Receipts")
struct ReceiptTests {
    @Test("Xcode's app receipt with a purchase yields its transaction and product")
    func xcodeWithTransaction() throws {
        let receipt = try ReceiptParser.parse(base64: try AppleVectors.text("xcode/xcode-app-receipt-with-transaction"))
        guard case .appReceipt(let bundleID, let type, let purchases) = receipt else {
            Issue.record("not parsed as an app receipt")
            return
        }
        #expect(bundleID == "com.example.naturelab.backyardbirds.example")
        #expect(type == "Xcode")
        #expect(purchases.count == 1)
        #expect(purchases.first?.transactionID == "0")  // what Apple's ReceiptUtility returns for this file
        #expect(purchases.first?.productID == "pass.premium")
        #expect(purchases.first?.quantity == 1)
        #expect(purchases.first?.purchaseDate == "2023-10-19T01:45:36Z")
        #expect(receipt.transactionIDs == ["0"])
    }

    @Test("Xcode's empty app receipt has no purchases")
    func xcodeEmpty() throws {
        let receipt = try ReceiptParser.parse(base64: try AppleVectors.text("xcode/xcode-app-receipt-empty"))
        #expect(receipt.transactionIDs.isEmpty)
        guard case .appReceipt(let bundleID, _, _) = receipt else {
            Issue.record("not an app receipt")
            return
        }
        #expect(bundleID == "com.example.naturelab.backyardbirds.example")
    }

    @Test("an SK1 transaction receipt yields its transaction id")
    func transactionReceipt() throws {
        let receipt = try ReceiptParser.parse(base64: try AppleVectors.text("mock/legacyTransaction"))
        #expect(receipt == .transactionReceipt(transactionID: "33993399", originalTransactionID: nil, productID: nil))
    }

    @Test("every in-app purchase of a receipt is found, with cancellation dates")
    func severalPurchases() throws {
        // A DER receipt built here: two purchases, the second cancelled.
        func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
            der(0x30, integer(type) + integer(1) + der(0x04, value))
        }
        func utf8(_ text: String) -> [UInt8] { der(0x0C, Array(text.utf8)) }
        func ia5(_ text: String) -> [UInt8] { der(0x16, Array(text.utf8)) }
        func purchase(_ id: String, _ product: String, cancelled: String) -> [UInt8] {
            der(
                0x31,
                attribute(1703, utf8(id)) + attribute(1702, utf8(product)) + attribute(1712, ia5(cancelled))
                    + attribute(1701, integer(3)))
        }
        let payload = der(
            0x31,
            attribute(2, utf8("com.studio.game")) + attribute(17, purchase("1000000001", "gems_600", cancelled: ""))
                + attribute(17, purchase("1000000002", "gems_100", cancelled: "2026-10-01T10:00:00Z")))
        let receipt = der(
            0x30,
            oid([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02])
                + der(
                    0xA0,
                    der(
                        0x30,
                        der(0x02, [1]) + der(0x31, [])
                            + der(0x30, oid([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]) + der(0xA0, der(0x04, payload))))))
        let parsed = try ReceiptParser.parse(base64: Base64.encodeStandard(receipt))
        guard case .appReceipt(let bundleID, _, let purchases) = parsed else {
            Issue.record("not parsed")
            return
        }
        #expect(bundleID == "com.studio.game")
        #expect(purchases.map(\.transactionID) == ["1000000001", "1000000002"])
        #expect(purchases.map(\.cancellationDate) == [nil, "2026-10-01T10:00:00Z"])
        #expect(purchases.map(\.quantity) == [3, 3])
    }

    @Test(
        "garbage is refused with a clear reason, never a crash",
        arguments: ["", "not base64 at all!", "MA==", "MIIBAAAA", "AAAA", "eyJhbGciOiJFUzI1NiJ9", "MIAGCSqGSIb3DQEHAqCAMIA="])
    func garbage(text: String) {
        #expect(throws: ReceiptError.self) { try ReceiptParser.parse(base64: text) }
    }

    @Test("deep nesting and lengths past the end are refused with the offset")
    func hostileBER() {
        let deep: [UInt8] = Array(Array(repeating: [0x30, 0x80], count: 200).joined())
        #expect(throws: ReceiptError.self) { try ReceiptParser.parse(base64: Base64.encodeStandard(deep)) }
        let error = #expect(throws: ReceiptError.self) {
            try ReceiptParser.parse(base64: Base64.encodeStandard([0x30, 0x84, 0x7F, 0xFF, 0xFF, 0xFF, 0x00]))
        }
        #expect(error?.description.contains("at byte 0") == true)
    }

    @Test("verifyReceipt statuses: temporary ones retry, others fail")
    func statuses() {
        for status in [21002, 21005, 21009, 21100, 21199] { #expect(VerifyReceiptClient.isTemporary(status, isRetryable: nil)) }
        #expect(!VerifyReceiptClient.isTemporary(21150, isRetryable: false))
        for status in [0, 21003, 21004, 21007, 21008, 21010] { #expect(!VerifyReceiptClient.isTemporary(status, isRetryable: nil)) }
    }
}

/// DER TLV with a definite length.
func der(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
    let count = content.count
    let length: [UInt8] = count < 128 ? [UInt8(count)] : count < 256 ? [0x81, UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
    return [tag] + length + content
}

func oid(_ encoded: [UInt8]) -> [UInt8] { der(0x06, encoded) }

/// DER INTEGER of a small non-negative value.
func integer(_ value: Int) -> [UInt8] {
    var bytes: [UInt8] = []
    var rest = value
    repeat {
        bytes.insert(UInt8(rest & 0xFF), at: 0)
        rest >>= 8
    } while rest > 0
    if let first = bytes.first, first & 0x80 != 0 { bytes.insert(0, at: 0) }
    return der(0x02, bytes)
}
