public import Foundation

/// What Google's order says about one grant's purchase, read fail closed: a definite statement only where
/// Google states it about exactly this purchase (its order id, its purchase token, its one line item's
/// product and quantity); anything pending, unknown to this reading or inconsistent is `undecided`, which
/// a run leaves unverified.
public enum OrderStatement: Sendable, Equatable {
    /// `PROCESSED`, with no refund, partial refund or cancellation recorded.
    case notRefunded
    /// `REFUNDED` with its `refundEvent`: the whole order, at `at`; `chargeback` when Google gives CHARGEBACK
    /// as the reason. `amountMilli` is what was refunded, when Google gives a well-formed amount (a full
    /// refund takes every unit back whatever the amount; finance sees the amount as unknown otherwise).
    case refunded(at: Date, chargeback: Bool, amountMilli: Int64?, currency: String?)
    /// `PARTIALLY_REFUNDED`, every partial refund processed, each a positive amount in the order's currency,
    /// together less than the order's total: the amount refunded (Google gives no unit count).
    case partiallyRefunded(at: Date, amountMilli: Int64, currency: String)
    /// `CANCELED` (Google: canceled before it was processed): a granted purchase Google never charged, for a
    /// person to review, never clawed back automatically.
    case canceled
    /// Google's order for the grant's order id is not the grant's purchase: another purchase token, or one
    /// line item of another product or quantity. Google's definite statement that the grant does not match its
    /// order (a person looks at it), unlike `undecided`, which asking again may settle.
    case disagrees(field: String, String)
    /// Google's answer cannot decide the grant yet, and why.
    case undecided(String)

    /// The purchase a grant recorded, as the order must show it.
    public struct Purchase: Sendable, Equatable {
        public var orderID: String
        public var purchaseToken: String
        public var productID: String
        public var quantity: Int

        public init(orderID: String, purchaseToken: String, productID: String, quantity: Int) {
            self.orderID = orderID
            self.purchaseToken = purchaseToken
            self.productID = productID
            self.quantity = quantity
        }
    }

    /// Reads `order` as Google's answer about `purchase`.
    public static func read(_ order: Order, about purchase: Purchase) -> OrderStatement {
        let id = purchase.orderID
        guard order.orderId == id else { return .undecided("Google's answer is about order \(order.orderId ?? "(none)"), not \(id)") }
        guard let token = order.purchaseToken, !token.isEmpty else {
            return .undecided("Google's order \(id) carries no purchase token")
        }
        guard token == purchase.purchaseToken else {
            return .disagrees(field: "purchase_token", "Google's order \(id) carries another purchase token than the grant")
        }
        guard let items = order.lineItems, items.count == 1, let item = items.first, let product = item.productId else {
            return .undecided("Google's order \(id) is not one line item of a product")
        }
        guard product == purchase.productID else {
            return .disagrees(field: "product_id", "Google's order \(id) is for \(product), not \(purchase.productID)")
        }
        // Google documents "absent means 1" for a purchase's quantity, not for a line item's: never assumed.
        guard let quantity = item.oneTimePurchaseDetails?.quantity else {
            return .undecided("Google's order \(id) shows no quantity for its line item")
        }
        guard quantity == purchase.quantity else {
            return .disagrees(field: "quantity", "Google's order \(id) is for \(quantity) items, the grant for \(purchase.quantity)")
        }
        let history = order.orderHistory
        switch order.state {
        case "PROCESSED":
            guard history?.refundEvent == nil, (history?.partialRefundEvents ?? []).isEmpty, history?.cancellationEvent == nil else {
                return .undecided("order \(id) is PROCESSED but records a refund or a cancellation")
            }
            return .notRefunded
        case "REFUNDED":
            guard let event = history?.refundEvent, let at = event.eventTime.flatMap(Self.date) else {
                return .undecided("order \(id) is REFUNDED without a refund event and its time")
            }
            guard event.refundReason == "OTHER" || event.refundReason == "CHARGEBACK" else {
                return .undecided("order \(id) is REFUNDED for a reason this reading does not know: \(event.refundReason ?? "(none)")")
            }
            let total = event.refundDetails?.total
            let amount = total?.milli
            return .refunded(
                at: at, chargeback: event.refundReason == "CHARGEBACK", amountMilli: amount, currency: amount == nil ? nil : total?.currencyCode)
        case "PARTIALLY_REFUNDED":
            return partialRefunds(order, id: id)
        case "CANCELED":
            return .canceled
        case let other:
            // PENDING, PENDING_REFUND, STATE_UNSPECIFIED, a value Google adds later, or none.
            return .undecided("order \(id) is \(other ?? "without a state"): not a final statement")
        }
    }

    private static func partialRefunds(_ order: Order, id: String) -> OrderStatement {
        let history = order.orderHistory
        let events = history?.partialRefundEvents ?? []
        guard history?.refundEvent == nil, !events.isEmpty, events.allSatisfy({ $0.state == "PROCESSED_SUCCESSFULLY" }) else {
            return .undecided("order \(id) is PARTIALLY_REFUNDED with a partial refund not processed, none recorded, or a full refund too")
        }
        guard let total = order.total?.milli, let currency = order.total?.currencyCode else {
            return .undecided("order \(id) is PARTIALLY_REFUNDED without a well-formed total")
        }
        var sum: Int64 = 0
        var latest: Date?
        for event in events {
            guard let amount = event.refundDetails?.total, let milli = amount.milli, milli > 0, amount.currencyCode == currency,
                let at = event.processTime.flatMap(Self.date)
            else { return .undecided("order \(id) has a partial refund without a positive amount in \(currency), or its time") }
            let (added, overflow) = sum.addingReportingOverflow(milli)
            guard !overflow else { return .undecided("order \(id): its partial refunds add up past any amount") }
            sum = added
            latest = max(latest ?? at, at)
        }
        guard sum < total, let latest else { return .undecided("order \(id): its partial refunds are not less than its total") }
        return .partiallyRefunded(at: latest, amountMilli: sum, currency: currency)
    }

    /// RFC 3339 as Google writes it: Z-normalized, with 0, 3, 6 or 9 fractional digits
    /// (`2026-10-03T12:00:00.123456789Z`). Anything else is nil: a time is never guessed.
    static func date(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z"), bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19)
        else { return nil }
        var nanos = 0
        if bytes.count > 20 {
            let digits = bytes.count - 21
            guard bytes[19] == UInt8(ascii: "."), [3, 6, 9].contains(digits), let fraction = number(20..<(20 + digits)) else { return nil }
            nanos = fraction * [3: 1_000_000, 6: 1_000, 9: 1][digits, default: 1]
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .gmt
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        // The calendar rolls a 13th month or a 30th of February over: every field must come back as written.
        guard let whole = calendar.date(from: components) else { return nil }
        let back = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: whole)
        guard back.year == year, back.month == month, back.day == day, back.hour == hour, back.minute == minute, back.second == second
        else { return nil }
        return whole + Double(nanos) / 1e9
    }
}
