import AppStoreSimulator
import Foundation
import GooglePlay
import Testing

/// What an order states, read fail closed.
@Suite("Google Play: what an order states")
struct OrderStatementTests {
    static func purchase(_ record: GoogleOrderRecord) -> OrderStatement.Purchase {
        .init(orderID: record.orderId, purchaseToken: record.purchaseToken, productID: record.productId, quantity: record.quantity)
    }

    static func statement(_ record: GoogleOrderRecord, _ change: (inout OrderStatement.Purchase) -> Void = { _ in }) -> OrderStatement {
        var purchase = purchase(record)
        change(&purchase)
        return OrderStatement.read(record.order, about: purchase)
    }

    static func expectUndecided(_ cases: [(String, OrderStatement)]) {
        for (what, statement) in cases {
            if case .undecided = statement { continue }
            Issue.record("\(what) decided \(statement)")
        }
    }

    @Test("each final state is its statement")
    func states() {
        let bought = GoogleClientFixture.order(2).purchaseTime
        #expect(Self.statement(GoogleClientFixture.order(2)) == .notRefunded)
        #expect(
            Self.statement(GoogleClientFixture.order(2, state: "REFUNDED"))
                == .refunded(at: bought + 86_400, chargeback: true, amountMilli: 4_990, currency: "EUR"))
        #expect(
            Self.statement(GoogleClientFixture.order(3, state: "REFUNDED"))
                == .refunded(at: GoogleClientFixture.order(3).purchaseTime + 86_400, chargeback: false, amountMilli: 4_990, currency: "EUR"))
        #expect(
            Self.statement(GoogleClientFixture.order(2, state: "PARTIALLY_REFUNDED"))
                == .partiallyRefunded(at: bought + 7_200, amountMilli: 1_990, currency: "EUR"))
        #expect(Self.statement(GoogleClientFixture.order(2, state: "CANCELED")) == .canceled)
    }

    @Test("a pending or unknown state, an order about another purchase, or an inconsistent one decides nothing")
    func undecided() {
        let bought = GoogleClientFixture.order(2).purchaseTime
        var pending = GoogleClientFixture.order(4, state: "PARTIALLY_REFUNDED")
        pending.partialRefunds?.append(.init(date: bought, amountMilli: 10, processed: false))
        var withoutEvent = GoogleClientFixture.order(5, state: "REFUNDED")
        withoutEvent.refund = nil
        var refundedButProcessed = GoogleClientFixture.order(6, state: "REFUNDED")
        refundedButProcessed.state = "PROCESSED"
        var partlyAndWhole = GoogleClientFixture.order(8, state: "PARTIALLY_REFUNDED")
        partlyAndWhole.refund = .init(date: bought, reason: "OTHER", amountMilli: 4_990)
        var partlyAll = GoogleClientFixture.order(10, state: "PARTIALLY_REFUNDED")
        partlyAll.partialRefunds = [.init(date: bought, amountMilli: 4_990, processed: true)]
        var partlyNothing = GoogleClientFixture.order(12, state: "PARTIALLY_REFUNDED")
        partlyNothing.partialRefunds = [.init(date: bought, amountMilli: 0, processed: true)]
        var partlyOverflow = GoogleClientFixture.order(14, state: "PARTIALLY_REFUNDED")
        let half = GoogleOrderRecord.PartialRefund(date: bought, amountMilli: Int64.max / 2 + 1, processed: true)
        partlyOverflow.partialRefunds = [half, half]
        let canceledButProcessed: OrderStatement = {
            var order = GoogleClientFixture.order(16).order
            order.orderHistory?.cancellationEvent = .init(eventTime: "2026-09-21T14:13:20Z")
            return OrderStatement.read(order, about: Self.purchase(GoogleClientFixture.order(16)))
        }()
        let withoutQuantity: OrderStatement = {
            var order = GoogleClientFixture.order(18).order
            order.lineItems?[0].oneTimePurchaseDetails = nil
            return OrderStatement.read(order, about: Self.purchase(GoogleClientFixture.order(18)))
        }()
        let twoItems: OrderStatement = {
            var order = GoogleClientFixture.order(20).order
            let items = order.lineItems ?? []
            order.lineItems = items + items
            return OrderStatement.read(order, about: Self.purchase(GoogleClientFixture.order(20)))
        }()
        Self.expectUndecided(
            ["PENDING", "PENDING_REFUND", "STATE_UNSPECIFIED", "REFUNDED_LATER", ""].map {
                ($0, Self.statement(GoogleClientFixture.order(2, state: $0)))
            }
                + [
                    ("another order id", Self.statement(GoogleClientFixture.order(2)) { $0.orderID = "GPA.other" }),
                    ("no quantity on the line item", withoutQuantity), ("two line items", twoItems),
                    ("a partial refund still pending", Self.statement(pending)), ("REFUNDED without its event", Self.statement(withoutEvent)),
                    ("PROCESSED with a refund recorded", Self.statement(refundedButProcessed)),
                    ("PROCESSED with a cancellation", canceledButProcessed),
                    ("PARTIALLY_REFUNDED with a full refund too", Self.statement(partlyAndWhole)),
                    ("partial refunds of the whole total", Self.statement(partlyAll)),
                    ("a partial refund of nothing", Self.statement(partlyNothing)),
                    ("partial refunds past Int64", Self.statement(partlyOverflow)),
                ])
    }

    @Test("an order of another purchase token, product or quantity is Google's statement that the grant does not match it")
    func disagrees() {
        func field(_ statement: OrderStatement) -> String? {
            if case .disagrees(let field, _) = statement { return field }
            return nil
        }
        #expect(field(Self.statement(GoogleClientFixture.order(2)) { $0.purchaseToken = "another" }) == "purchase_token")
        #expect(field(Self.statement(GoogleClientFixture.order(2)) { $0.productID = "gems_100" }) == "product_id")
        #expect(field(Self.statement(GoogleClientFixture.order(2)) { $0.quantity += 1 }) == "quantity")
        // Refunded or not, the disagreement comes first: units never move on an order that is not the grant's.
        #expect(field(Self.statement(GoogleClientFixture.order(2, state: "REFUNDED")) { $0.productID = "gems_100" }) == "product_id")
    }

    @Test("Google's money: units as text plus nanos of the same sign, to thousandths; anything else is no amount")
    func money() {
        #expect(Money(currencyCode: "EUR", units: "4", nanos: 990_000_000).milli == 4_990)
        #expect(Money(currencyCode: "EUR", units: "-1", nanos: -750_000_000).milli == -1_750)
        #expect(Money(currencyCode: "JPY", units: "600", nanos: nil).milli == 600_000)
        #expect(Money(currencyCode: "EUR", units: nil, nanos: 990_000_000).milli == 990)
        for bad in [
            Money(currencyCode: "EUR", units: "1", nanos: -1), Money(currencyCode: "EUR", units: "1.5", nanos: 0),
            Money(currencyCode: "EUR", units: "1", nanos: 1_000_000_000), Money(currencyCode: "EUR", units: "0", nanos: 1),
            Money(currencyCode: "EUR", units: "9223372036854775807", nanos: 0),
        ] {
            #expect(bad.milli == nil, "\(bad)")
        }
    }

    @Test("Google's times: Z-normalized RFC 3339 with 0, 3, 6 or 9 fractional digits; nothing else, no date rolled over")
    func times() {
        let second = Date(timeIntervalSince1970: 1_790_000_000)
        let read = { (time: String) in
            let order = Order(
                orderId: "o", purchaseToken: "t", state: "REFUNDED", lineItems: [.init(productId: "p", quantity: 1)],
                orderHistory: .init(refundEvent: .init(eventTime: time, refundReason: "OTHER", refundDetails: nil)))
            return OrderStatement.read(order, about: .init(orderID: "o", purchaseToken: "t", productID: "p", quantity: 1))
        }
        for (text, date) in [
            ("2026-09-21T14:13:20Z", second), ("2026-09-21T14:13:20.250Z", second + 0.25), ("2026-09-21T14:13:20.250000Z", second + 0.25),
            ("2026-09-21T14:13:20.250000000Z", second + 0.25),
        ] {
            // A full refund without Google's amount still takes every unit back; its amount is unknown.
            #expect(read(text) == .refunded(at: date, chargeback: false, amountMilli: nil, currency: nil))
        }
        Self.expectUndecided(
            [
                "2026-09-21T14:13:20+02:00", "2026-09-21 14:13:20Z", "2026-09-21T14:13:20.25Z", "2026-02-30T00:00:00Z", "2026-09-21T24:00:00Z",
                "2026-13-05T00:00:00Z", "2026-00-05T00:00:00Z", "2026-09-00T00:00:00Z", "2026-09-21T14:60:00Z", "2026-09-21T14:13:61Z",
            ].map { ($0, read($0)) })
    }
}
