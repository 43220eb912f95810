import AppStore
import AppStoreSimulator
import Foundation
import TestSupport
import Testing

/// The fast path for flat JSON never answers what `JSONDecoder` would not: over generated payloads, from
/// Apple's own shape to hostile text, it either gives JSONDecoder's value or steps aside.
@Suite("Flat JSON fast path")
struct FlatJSONTests {
    /// Generated JSON objects: the payload's fields (of their type, another type, or null), unknown keys with
    /// nested values, strings with escapes and non-ASCII text, every form of JSON number, repeated keys,
    /// whitespace, and some bytes cut or changed.
    struct PayloadText {
        var generator: SeededGenerator

        static let keys = [
            "transactionId", "originalTransactionId", "webOrderLineItemId", "bundleId", "productId", "subscriptionGroupIdentifier",
            "purchaseDate", "originalPurchaseDate", "expiresDate", "quantity", "type", "appAccountToken", "inAppOwnershipType",
            "signedDate", "revocationReason", "revocationDate", "isUpgraded", "offerType", "offerIdentifier", "environment",
            "storefront", "storefrontId", "transactionReason", "currency", "price", "offerDiscountType", "offerPeriod",
            "appTransactionId", "revocationType", "revocationPercentage",
        ]
        static let numbers = [
            "0", "1", "-1", "-0", "600", "2147483647", "2147483648", "-2147483649", "1698148900000", "1698148900000.5",
            "999999999999999999", "1000000000000000000", "9223372036854775807", "9223372036854775808", "-9300000000000000000",
            "99999999999999999999", "9007199254740993", "1e3", "1E3", "01", "-", "1.", "4990",
        ]
        static let strings = [
            "\"2000000123\"", "\"com.studio.game\"", "\"Production\"", "\"Consumable\"", "\"REFUND_FULL\"", "\"\"",
            "\"a\\\"b\"", "\"caf\u{e9}\"", "\"\\u00e9\"", "\"tab\there\"", "\"=cmd|' /C calc'!A0\"", "\"d3b07384-d9a7-4e2b-9c3b-1c4d5e6f7a8b\"",
        ]
        static let others = ["true", "false", "null", "{\"a\":1}", "[1,2]", "[]", "{}", "tru", "nul"]

        static let integerKeys: Set = [
            "purchaseDate", "originalPurchaseDate", "expiresDate", "quantity", "signedDate", "revocationReason", "revocationDate",
            "offerType", "price", "revocationPercentage",
        ]

        /// Mostly of the field's type (as Apple sends it), else anything.
        mutating func value(for key: String) -> String {
            guard Int.random(in: 0..<6, using: &generator) != 0 else { return value() }
            if key == "isUpgraded" { return Bool.random(using: &generator) ? "true" : "false" }
            if Self.integerKeys.contains(key) {
                return Int.random(in: 0..<4, using: &generator) == 0
                    ? pick(Self.numbers) : String(Int64.random(in: 0...1_800_000_000_000, using: &generator))
            }
            return pick(Self.strings)
        }

        mutating func value() -> String {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<4: pick(Self.numbers)
            case 4..<8: pick(Self.strings)
            default: pick(Self.others)
            }
        }

        mutating func pick(_ choices: [String]) -> String { choices[Int.random(in: 0..<choices.count, using: &generator)] }

        mutating func space() -> String { pick(["", "", "", " ", "\n\t", "\r\n  "]) }

        mutating func object() -> [UInt8] {
            var members: [String] = []
            for _ in 0..<Int.random(in: 0...8, using: &generator) {
                let key =
                    Int.random(in: 0..<8, using: &generator) == 0
                    ? pick(["unknownField", "advancedCommerceInfo", "transactionI\\u0064"])
                    : pick(Self.keys)
                members.append("\(space())\"\(key)\"\(space()):\(space())\(value(for: key))\(space())")
            }
            var text = Array("\(space()){\(members.joined(separator: ","))}\(space())".utf8)
            if !text.isEmpty, Int.random(in: 0..<12, using: &generator) == 0 {
                let index = Int.random(in: 0..<text.count, using: &generator)
                if Bool.random(using: &generator) {
                    text.removeSubrange(index...)
                } else {
                    text[index] = UInt8.random(in: 0...255, using: &generator)
                }
            }
            return text
        }
    }

    @Test("a transaction's payload: the fast path's value is JSONDecoder's, or it steps aside", arguments: [1, 2, 3])
    func transactionPayload(seed: UInt64) throws {
        var text = PayloadText(generator: SeededGenerator(seed: seed))
        var fast = 0
        var general = 0
        for _ in 0..<20_000 {
            let bytes = text.object()
            let reference = try? JSONDecoder().decode(TransactionPayload.self, from: Data(bytes))
            if let quick = TransactionPayload(flatJSON: bytes) {
                fast += 1
                #expect(reference == quick, "\(String(decoding: bytes, as: UTF8.self))")
            } else {
                general += 1
            }
            // What the verifier uses answers as JSONDecoder does either way.
            #expect((try? decodePayload(TransactionPayload.self, from: bytes)) == reference)
        }
        // Both paths are exercised, the fast one by a good share of the objects.
        #expect(fast > 2_000 && general > 2_000, "fast \(fast), general \(general)")
    }

    @Test("Apple's real signed transactions take the fast path and give JSONDecoder's value")
    func realTransactions() throws {
        let transactions = try AppleVectors.realVectors().filter { $0.kind == "transaction" }
        #expect(transactions.count > 10)
        for vector in transactions {
            let segments = try AppleVectors.text(vector.file).split(separator: ".", omittingEmptySubsequences: false)
            var base64 = segments[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
            let payload = Array(try #require(Data(base64Encoded: base64)))
            let quick = try #require(TransactionPayload(flatJSON: payload), "\(vector.file) left the fast path")
            #expect(quick == (try JSONDecoder().decode(TransactionPayload.self, from: Data(payload))), "\(vector.file)")
        }
    }

    @Test("Get Transaction Info's answer: the fast path's value is JSONDecoder's, or it steps aside")
    func transactionInfoResponse() throws {
        var generator = SeededGenerator(seed: 4)
        let answers = [
            #"{"signedTransactionInfo":"eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.c2ln"}"#, #"{"signedTransactionInfo":null}"#, #"{}"#,
            #"{"signedTransactionInfo":1}"#, #"{"signedTransactionInfo":"a\/b"}"#, #" { "other" : true , "signedTransactionInfo" : "x" } "#,
            #"{"signedTransactionInfo":"x","signedTransactionInfo":"y"}"#, #"{"signedTransactionInfo":"x"#, #"[]"#,
            #"{"signedTransactionInfo":"x","nested":{"a":[1]}}"#,
        ]
        for answer in answers
            + (0..<200).map({ _ in String(answers[Int.random(in: 0..<answers.count, using: &generator)].shuffled(using: &generator)) })
        {
            let bytes = Array(answer.utf8)
            let reference = try? JSONDecoder().decode(TransactionInfoResponse.self, from: Data(bytes)).signedTransactionInfo
            if let quick = TransactionInfoResponse(flatJSON: bytes) {
                #expect(quick.signedTransactionInfo == reference, "\(answer)")
            }
            let decoded = try? AppStoreServerAPIClient.decode(TransactionInfoResponse.self, from: bytes, endpoint: .transactionInfo)
            #expect(decoded?.signedTransactionInfo == reference, "\(answer)")
        }
    }
}
