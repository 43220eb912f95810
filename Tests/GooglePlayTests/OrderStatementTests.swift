import AppStoreSimulator
import Foundation
import GooglePlay
import Testing

/// What an order states, read fail closed.
@Suite("Google Play: what an order states")
struct OrderStatementTests {
    static func statement(_ record: GoogleOrderRecord, id: String? = nil, token: String? = nil) -> OrderStatement {
        OrderStatement.read(record.order, orderID: id ?? record.orderId, purchaseToken: token ?? record.purchaseToken)
    }

    @Test("each final state is its statement; a pending one, an unknown one or an order about another purchase decides nothing")
    func states() {
        let bought = GooglePlayFixture.order(2).purchaseTime
        #expect(Self.statement(GooglePlayFixture.order(2)) == .notRefunded)
        #expect(
            Self.statement(GooglePlayFixture.order(2, state: "REFUNDED"))
                == .refunded(at: bought + 86_400, chargeback: true, amountMilli: 4_990, currency: "EUR"))
        #expect(
            Self.statement(GooglePlayFixture.order(3, state: "REFUNDED"))
                == .refunded(at: GooglePlayFixture.order(3).purchaseTime + 86_400, chargeback: false, amountMilli: 4_990, currency: "EUR"))
        #expect(
            Self.statement(GooglePlayFixture.order(2, state: "PARTIALLY_REFUNDED"))
                == .partiallyRefunded(at: bought + 7_200, amountMilli: 1_990, currency: "EUR"))
        #expect(Self.statement(GooglePlayFixture.order(2, state: "CANCELED")) == .canceled)
        for state in ["PENDING", "PENDING_REFUND", "STATE_UNSPECIFIED", "REFUNDED_LATER", ""] {
            guard case .undecided = Self.statement(GooglePlayFixture.order(2, state: state)) else {
                Issue.record("\(state) decided something")
                continue
            }
        }
        var pending = GooglePlayFixture.order(4, state: "PARTIALLY_REFUNDED")
        pending.partialRefunds?.append(.init(date: bought, amountMilli: 10, processed: false))
        var withoutEvent = GooglePlayFixture.order(5, state: "REFUNDED")
        withoutEvent.refund = nil
        var refundedButProcessed = GooglePlayFixture.order(6, state: "REFUNDED")
        refundedButProcessed.state = "PROCESSED"
        let undecidable = [
            ("another order id", Self.statement(GooglePlayFixture.order(2), id: "GPA.other")),
            ("another purchase token", Self.statement(GooglePlayFixture.order(2), token: "another-token")),
            ("a partial refund still pending", Self.statement(pending)), ("REFUNDED without its event", Self.statement(withoutEvent)),
            ("PROCESSED with a refund recorded", Self.statement(refundedButProcessed)),
        ]
        for (what, statement) in undecidable {
            if case .undecided = statement { continue }
            Issue.record("\(what) decided \(statement)")
        }
    }

    @Test("Google's money: units as text plus nanos of the same sign, to thousandths; anything else is no amount")
    func money() {
        #expect(Money(currencyCode: "EUR", units: "4", nanos: 990_000_000).milli == 4_990)
        #expect(Money(currencyCode: "EUR", units: "-1", nanos: -750_000_000).milli == -1_750)
        #expect(Money(currencyCode: "JPY", units: "600", nanos: nil).milli == 600_000)
        for bad in [
            Money(currencyCode: "EUR", units: "1", nanos: -1), Money(currencyCode: "EUR", units: "1.5", nanos: 0),
            Money(currencyCode: "EUR", units: "1", nanos: 1_000_000_000), Money(currencyCode: "EUR", units: "0", nanos: 1),
            Money(currencyCode: "EUR", units: "9223372036854775807", nanos: 0),
        ] {
            #expect(bad.milli == nil, "\(bad)")
        }
    }

    @Test("Google's times: Z-normalized RFC 3339 with 0, 3, 6 or 9 fractional digits; nothing else")
    func times() {
        let second = Date(timeIntervalSince1970: 1_790_000_000)
        let order = { (time: String) in
            Order(
                orderId: "o", purchaseToken: nil, state: "REFUNDED",
                orderHistory: .init(refundEvent: .init(eventTime: time, refundReason: "OTHER", refundDetails: nil)))
        }
        for (text, date) in [
            ("2026-09-21T14:13:20Z", second), ("2026-09-21T14:13:20.250Z", second + 0.25), ("2026-09-21T14:13:20.250000Z", second + 0.25),
            ("2026-09-21T14:13:20.250000000Z", second + 0.25),
        ] {
            #expect(
                OrderStatement.read(order(text), orderID: "o", purchaseToken: nil)
                    == .refunded(at: date, chargeback: false, amountMilli: nil, currency: nil))
        }
        for text in ["2026-09-21T14:13:20+02:00", "2026-09-21 14:13:20Z", "2026-09-21T14:13:20.25Z", "2026-02-30T00:00:00Z", "2026-09-21T24:00:00Z"] {
            guard case .undecided = OrderStatement.read(order(text), orderID: "o", purchaseToken: nil) else {
                Issue.record("\(text) was read as a time")
                continue
            }
        }
    }
}
