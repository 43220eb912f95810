import Foundation
import Stripe

/// The charges the monthly run listed, by PaymentIntent: at a million payments, the run's largest memory.
/// Most payments have one charge, with ids of Stripe's usual length and a status and currency of Stripe's
/// usual words: such a charge is held inline, with no allocation of its own (some 150 bytes a payment,
/// where a dictionary of `[Charge]` took 460). Any other payment keeps its charges as they were read.
/// Either way a payment's charges come back exactly as read.
struct ListedCharges: Sendable {
    private var single: [InlineText: CompactCharge] = [:]
    private var other: [String: [Charge]] = [:]

    var isEmpty: Bool { single.isEmpty && other.isEmpty }

    mutating func add(_ charge: Charge, of paymentIntent: String) {
        if other[paymentIntent] != nil {
            other[paymentIntent]?.append(charge)
        } else if let key = InlineText(paymentIntent), let held = single[key] {
            single[key] = nil
            other[paymentIntent] = [held.charge(of: paymentIntent), charge]
        } else if let key = InlineText(paymentIntent), charge.paymentIntent == paymentIntent, let compact = CompactCharge(charge) {
            single[key] = compact
        } else {
            other[paymentIntent] = [charge]
        }
    }

    /// The charges listed of `paymentIntent`, as read; nil when none was.
    func charges(of paymentIntent: String) -> [Charge]? {
        if let charges = other[paymentIntent] { return charges }
        return InlineText(paymentIntent).flatMap { single[$0] }.map { [$0.charge(of: paymentIntent)] }
    }
}

/// Text of up to 32 UTF-8 bytes held inline (Stripe's ids are 27 or so ASCII characters): no allocation,
/// where a `String` of more than 15 bytes takes one.
struct InlineText: Hashable, Sendable {
    private var words: (UInt64, UInt64, UInt64, UInt64)
    private var count: UInt8

    static let capacity = 32

    init?(_ text: String) {
        var bytes = Array(text.utf8)
        guard bytes.count <= Self.capacity else { return nil }
        count = UInt8(bytes.count)
        bytes += [UInt8](repeating: 0, count: Self.capacity - bytes.count)
        func word(_ index: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[index * 8 + $1]) << (8 * $1) } }
        words = (word(0), word(1), word(2), word(3))
    }

    var text: String {
        let all = [words.0, words.1, words.2, words.3].flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
        return String(decoding: all.prefix(Int(count)), as: UTF8.self)
    }

    static func == (left: InlineText, right: InlineText) -> Bool {
        left.count == right.count && left.words.0 == right.words.0 && left.words.1 == right.words.1 && left.words.2 == right.words.2
            && left.words.3 == right.words.3
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
        hasher.combine(count)
    }
}

/// A charge held inline: its id, amounts, time and flags, its status one of Stripe's three and its currency
/// three letters. Built only when it gives the charge back exactly (`init?` refuses anything else).
struct CompactCharge: Sendable {
    static let statuses = ["succeeded", "pending", "failed"]

    let id: InlineText
    let amount: Int64
    let amountCaptured: Int64
    let amountRefunded: Int64
    let created: Date
    /// Up to three bytes of the currency, and their count in the top byte.
    let currency: UInt32
    let status: UInt8
    let paid: Bool
    let captured: Bool
    let livemode: Bool

    init?(_ charge: Charge) {
        let code = Array(charge.currency.utf8)
        guard let id = InlineText(charge.id), code.count <= 3, let status = Self.statuses.firstIndex(of: charge.status) else { return nil }
        self.id = id
        amount = charge.amount
        amountCaptured = charge.amountCaptured
        amountRefunded = charge.amountRefunded
        created = charge.created
        currency = code.enumerated().reduce(UInt32(code.count) << 24) { $0 | UInt32($1.element) << (8 * $1.offset) }
        self.status = UInt8(status)
        paid = charge.paid
        captured = charge.captured
        livemode = charge.livemode
    }

    func charge(of paymentIntent: String) -> Charge {
        let code = (0..<Int(currency >> 24)).map { UInt8(truncatingIfNeeded: currency >> (8 * $0)) }
        return Charge(
            id: id.text, amount: amount, amountCaptured: amountCaptured, amountRefunded: amountRefunded,
            currency: String(decoding: code, as: UTF8.self), status: Self.statuses[Int(status)], paid: paid, captured: captured,
            paymentIntent: paymentIntent, created: created, livemode: livemode)
    }
}
