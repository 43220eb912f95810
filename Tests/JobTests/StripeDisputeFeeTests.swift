import Foundation
import Stripe
import Testing

/// A dispute's fee, read from its balance transactions fail closed: none withdrawn (an empty list), a net sum
/// in one currency, or unknown (absent, unreadable, several currencies, an overflow), never 0 for unknown.
@Suite("Stripe: a dispute's fee")
struct StripeDisputeFeeTests {
    static func fee(_ transactions: String?) throws -> DisputeFee {
        let field = transactions.map { #","balance_transactions":\#($0)"# } ?? ""
        let json = #"{"id":"dp_1","amount":1000,"currency":"eur","status":"lost","created":1790000000\#(field)}"#
        return try JSONDecoder().decode(Dispute.self, from: Data(json.utf8)).fee
    }

    @Test("none, charged, returned, unknown")
    func readings() throws {
        #expect(try Self.fee(nil) == .unknown, "absent: Stripe's spec requires the field")
        #expect(try Self.fee("null") == .unknown)
        #expect(try Self.fee("[]") == .none)
        #expect(try Self.fee(#"[{"fee":1500,"currency":"eur","amount":-1000}]"#) == .charged(minor: 1500, currency: "eur"))
        #expect(
            try Self.fee(#"[{"fee":1500,"currency":"usd"},{"fee":-1500,"currency":"usd"}]"#) == .charged(minor: 0, currency: "usd"),
            "a reinstatement that returns the fee")
        #expect(try Self.fee(#"[{"fee":1500,"currency":"usd"},{"fee":0,"currency":"eur"}]"#) == .unknown, "two currencies")
        #expect(try Self.fee(#"[{"fee":"1500","currency":"usd"}]"#) == .unknown, "a fee that is no integer")
        #expect(try Self.fee(#"["txn_1"]"#) == .unknown, "an id, not the object")
        #expect(try Self.fee(#"{"fee":1}"#) == .unknown, "not a list")
        #expect(try Self.fee(#"[{"fee":9223372036854775807,"currency":"usd"},{"fee":1,"currency":"usd"}]"#) == .unknown, "an overflow")
    }
}
