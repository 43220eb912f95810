public import Foundation

/// What Google's order says about one grant's purchase, read fail closed: a definite statement only where
/// Google states it about exactly this order (its id, and its purchase token when the grant kept one);
/// anything pending, unknown to this reading or inconsistent is `undecided`, which a run leaves unverified.
public enum OrderStatement: Sendable, Equatable {
    /// `PROCESSED`, with no refund and no partial refund recorded.
    case notRefunded
    /// `REFUNDED` with its `refundEvent`: the whole order, at `at`; `chargeback` when Google gives CHARGEBACK
    /// as the reason. `amountMilli` is what was refunded, when Google's amount is well formed.
    case refunded(at: Date, chargeback: Bool, amountMilli: Int64?, currency: String?)
    /// `PARTIALLY_REFUNDED`, every partial refund processed: the amounts refunded (Google gives no unit count).
    case partiallyRefunded(at: Date, amountMilli: Int64, currency: String)
    /// `CANCELED` (Google: canceled before it was processed): a granted purchase Google never charged, for a
    /// person to review, never clawed back automatically.
    case canceled
    /// Google's answer cannot decide the grant yet, and why.
    case undecided(String)

    /// Reads `order` as the answer about `orderID` (and `purchaseToken`, when the grant has one).
    public static func read(_ order: Order, orderID: String, purchaseToken: String?) -> OrderStatement {
        guard order.orderId == orderID else {
            return .undecided("Google's answer is about order \(order.orderId ?? "(none)"), not \(orderID)")
        }
        if let purchaseToken, order.purchaseToken != purchaseToken {
            return .undecided("Google's order \(orderID) carries another purchase token than the grant")
        }
        let history = order.orderHistory
        switch order.state {
        case "PROCESSED":
            guard history?.refundEvent == nil, (history?.partialRefundEvents ?? []).isEmpty else {
                return .undecided("order \(orderID) is PROCESSED but records refunds")
            }
            return .notRefunded
        case "REFUNDED":
            guard let event = history?.refundEvent, let at = event.eventTime.flatMap(Self.date) else {
                return .undecided("order \(orderID) is REFUNDED without a refund event and its time")
            }
            guard event.refundReason == "OTHER" || event.refundReason == "CHARGEBACK" else {
                return .undecided("order \(orderID) is REFUNDED for a reason this reading does not know: \(event.refundReason ?? "(none)")")
            }
            let total = event.refundDetails?.total
            return .refunded(at: at, chargeback: event.refundReason == "CHARGEBACK", amountMilli: total?.milli, currency: total?.currencyCode)
        case "PARTIALLY_REFUNDED":
            let events = history?.partialRefundEvents ?? []
            guard !events.isEmpty, events.allSatisfy({ $0.state == "PROCESSED_SUCCESSFULLY" }) else {
                return .undecided("order \(orderID) is PARTIALLY_REFUNDED with a partial refund not yet processed, or none recorded")
            }
            var sum: Int64 = 0
            var currency: String?
            var latest: Date?
            for event in events {
                guard let amount = event.refundDetails?.total, let milli = amount.milli, let code = amount.currencyCode,
                    currency == nil || currency == code, let at = event.processTime.flatMap(Self.date)
                else { return .undecided("order \(orderID) has a partial refund without a well-formed amount, currency or time") }
                currency = code
                sum += milli
                latest = max(latest ?? at, at)
            }
            guard let currency, let latest else { return .undecided("order \(orderID): no partial refund amount") }
            return .partiallyRefunded(at: latest, amountMilli: sum, currency: currency)
        case "CANCELED":
            return .canceled
        case let other:
            // PENDING, PENDING_REFUND, STATE_UNSPECIFIED, a value Google adds later, or none.
            return .undecided("order \(orderID) is \(other ?? "without a state"): not a final statement")
        }
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
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month, day)
        (components.hour, components.minute, components.second) = (hour, minute, second)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .gmt
        guard let whole = calendar.date(from: components), calendar.component(.day, from: whole) == day,
            (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second)
        else { return nil }
        return whole + Double(nanos) / 1e9
    }
}
