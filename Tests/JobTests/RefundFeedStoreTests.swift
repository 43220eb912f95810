import AppStoreSimulator
import Foundation
import Reconciliation
import Testing

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// The compact refund feed answers exactly what a dictionary of whole entries would: the same entry for every
/// purchase after any sequence of merges, and nothing for a purchase it was not told of.
@Suite("The refund feed held compactly")
struct RefundFeedStoreTests {
    typealias Entry = NotificationFeedGateway.Entry

    /// Ids that are canonical numbers and ids that only look like them (leading zeros, signs, spaces, past
    /// UInt64, non-ASCII digits), which must never meet the number they resemble.
    static let ids = [
        "2000000123456789", "0", "1", "7", "02000000123456789", "002000000123456789", "+7", " 7", "7 ", "-7", "",
        "18446744073709551615", "18446744073709551616", "99999999999999999999", "00", "١٢٣", "12a", "2000000123456789\u{0}",
    ]
    static let feeds = ["com.studio.game|Production", "com.studio.game|Sandbox", "com.studio.other|Production", "", "=A1|Sandbox"]
    static let texts = [
        nil, "", "Production", "Sandbox", "com.studio.game", "gems.100", "EUR", "JPY", "FRA", "REFUND_FULL", "REFUND_PRORATED",
        "=cmd|' /C calc'!A0", "caf\u{e9}", "d3b07384-d9a7-4e2b-9c3b-1c4d5e6f7a8b", "D3B07384-D9A7-4E2B-9C3B-1C4D5E6F7A8B",
    ]

    static func pick<T>(_ values: [T], _ random: inout SeededGenerator) -> T { values[Int.random(in: 0..<values.count, using: &random)] }

    static func optional<T>(_ value: T, _ random: inout SeededGenerator) -> T? { Bool.random(using: &random) ? value : nil }

    /// Every kind, and unknown ones whose text is a known kind's stored value: each must come back as it went in.
    static let kinds: [RefundKind?] = [
        nil, .full, .prorated, .familyRevoke, .chargeback, .fraud, .unknown("CHARGEBACK"), .unknown("REFUND_FULL"), .unknown(""),
        .unknown("=cmd|' /C calc'!A0"),
    ]

    static func facts(_ id: String, _ random: inout SeededGenerator) -> StoreStatement {
        func text() -> String? { pick(texts, &random) }
        return StoreStatement(
            transactionID: id, environment: text().map(StoreEnvironment.init(rawValue:)), bundleID: text(), productID: text(),
            quantity: optional(Int32.random(in: Int32.min...Int32.max, using: &random), &random), appAccountToken: text(),
            reportsAppAccountToken: Bool.random(using: &random),
            revocationDate: optional(Date(timeIntervalSince1970: Double.random(in: 0...2e9, using: &random)), &random),
            refundKind: pick(kinds, &random),
            refundReason: optional(RevocationReason(rawValue: Int32.random(in: -1...1, using: &random)), &random),
            revocationPercentage: optional(Int32.random(in: 0...100_000, using: &random), &random),
            priceMilli: optional(Int64.random(in: Int64.min...Int64.max, using: &random), &random), currency: text(), storefront: text())
    }

    @Test("over generated feeds, every purchase's entry is the one a dictionary of whole entries holds, and unnamed purchases have none")
    func agreesWithDictionary() {
        var random = SeededGenerator(seed: 73)
        for _ in 0..<40 {
            var store = RefundFeedStore()
            var model: [String: [String: Entry]] = [:]
            // Few instants, so that refunds and reversals tie now and then.
            let instants = (0..<4).map { _ in Date(timeIntervalSince1970: 1_790_000_000 + Double.random(in: 0...1e6, using: &random)) }
            for _ in 0..<Int.random(in: 0...200, using: &random) {
                let feed = Self.pick(Self.feeds, &random)
                let id = Self.pick(Self.ids, &random)
                let entry = Entry(
                    date: Self.pick(instants, &random), reversal: Bool.random(using: &random), facts: Self.facts(id, &random))
                store.merge(entry, feed: feed)
                model[feed, default: [:]][id] = Entry.merge(entry, into: model[feed]?[id])
            }
            for feed in Self.feeds + ["com.studio.unknown|Production"] {
                for id in Self.ids + ["3", "2000000123456788"] {
                    let held = store.entry(feed: feed, transactionID: id)
                    let expected = model[feed]?[id]
                    #expect(held?.facts == expected?.facts && held?.date == expected?.date)
                    #expect(held?.reversal == expected?.reversal && held?.tied == expected?.tied)
                }
            }
            let expectedIDs = model.values.flatMap(\.keys).sorted()
            #expect(store.transactionIDs.sorted() == expectedIDs)
            #expect(store.count == expectedIDs.count)
        }
    }

    @Test("an id is a number only where the number's text is the id itself")
    func canonicalNumbers() {
        #expect(RefundFeedStore.canonicalNumber("2000000123456789") == 2_000_000_123_456_789)
        #expect(RefundFeedStore.canonicalNumber("0") == 0)
        #expect(RefundFeedStore.canonicalNumber("18446744073709551615") == UInt64.max)
        for text in ["", "00", "07", "+7", "-7", " 7", "7 ", "18446744073709551616", "99999999999999999999", "١٢٣", "1e3", "7\u{0}"] {
            #expect(RefundFeedStore.canonicalNumber(text) == nil, "\(text)")
        }
        var random = SeededGenerator(seed: 5)
        for _ in 0..<10_000 {
            let number = UInt64.random(in: 0...UInt64.max, using: &random) >> UInt64.random(in: 0...63, using: &random)
            #expect(RefundFeedStore.canonicalNumber(String(number)) == number)
        }
    }
}
