import Foundation
import Stripe

/// The charges the monthly run listed, by PaymentIntent: at a million payments, the run's largest memory.
/// Most payments have one charge, with ids of Stripe's usual length and a status and currency of Stripe's
/// usual words: such a charge is held inline in one array (128 bytes a payment, found through a sorted index
/// of 4 bytes a payment; a dictionary of `[Charge]` took 460), built in chunks so that no array is ever
/// copied whole to grow. Any other payment (several charges, or a charge that cannot be held inline) keeps
/// its charges as they were read. Either way a payment's charges come back exactly as read, in order.
/// `add` every charge, then `seal()` once, then ask `charges(of:)`.
struct ListedCharges: Sendable {
    private struct Entry: Sendable {
        let payment: InlineText
        let charge: CompactCharge
        let order: UInt32
    }

    /// Entries as they come, in chunks of `chunkSize`; moved into `entries` by `seal()`.
    private var chunks: [[Entry]] = []
    private var entries: [Entry] = []
    /// `entries`' positions, by payment then order: what `charges(of:)` searches.
    private var index: [UInt32] = []
    /// Charges not held inline, with their order, until `seal()` gathers every payment of several into `other`.
    private var apart: [String: [(order: UInt32, charge: Charge)]] = [:]
    private var other: [String: [Charge]] = [:]
    private var added: UInt32 = 0

    /// Entries a chunk holds (8 MB of them by default).
    let chunkSize: Int

    init(chunkSize: Int = 65_536) { self.chunkSize = chunkSize }

    private var sealed = false

    mutating func add(_ charge: Charge, of paymentIntent: String) {
        precondition(!sealed, "ListedCharges: a charge added after seal()")
        defer { added += 1 }
        guard let key = InlineText(paymentIntent), charge.paymentIntent == paymentIntent, let compact = CompactCharge(charge) else {
            apart[paymentIntent, default: []].append((added, charge))
            return
        }
        if chunks.last.map({ $0.count == chunkSize }) ?? true {
            chunks.append([])
            chunks[chunks.count - 1].reserveCapacity(chunkSize)
        }
        chunks[chunks.count - 1].append(Entry(payment: key, charge: compact, order: added))
    }

    /// Ends the adding: the entries in one array of exactly their number (each chunk freed as it is moved),
    /// sorted through the index, and every payment with several charges, or one not held inline, apart.
    mutating func seal() {
        precondition(!sealed, "ListedCharges: sealed twice")
        sealed = true
        entries.reserveCapacity(entries.count + chunks.reduce(0) { $0 + $1.count })
        while let chunk = chunks.popLast() { entries.append(contentsOf: chunk) }
        var order = (0..<UInt32(entries.count)).map { $0 }
        order.sort {
            entries[Int($0)].payment < entries[Int($1)].payment
                || (entries[Int($0)].payment == entries[Int($1)].payment && entries[Int($0)].order < entries[Int($1)].order)
        }
        var kept: [UInt32] = []
        kept.reserveCapacity(order.count)
        var start = 0
        while start < order.count {
            let payment = entries[Int(order[start])].payment
            var end = start + 1
            while end < order.count && entries[Int(order[end])].payment == payment { end += 1 }
            let text = payment.text
            if end - start > 1 || apart[text] != nil {
                apart[text, default: []] += order[start..<end].map { (entries[Int($0)].order, entries[Int($0)].charge.charge(of: text)) }
            } else {
                kept.append(order[start])
            }
            start = end
        }
        // A copy of exactly its count: one slot a payment indexed, not one an entry.
        index = [UInt32](unsafeUninitializedCapacity: kept.count) { buffer, count in
            count = buffer.initialize(fromContentsOf: kept)
        }
        for (payment, charges) in apart { other[payment] = charges.sorted { $0.order < $1.order }.map(\.charge) }
        apart = [:]
    }

    /// The charges listed of `paymentIntent`, as read; nil when none was. Only after `seal()`.
    func charges(of paymentIntent: String) -> [Charge]? {
        if let charges = other[paymentIntent] { return charges }
        guard let key = InlineText(paymentIntent) else { return nil }
        var low = 0
        var high = index.count
        while low < high {
            let middle = (low + high) / 2
            if entries[Int(index[middle])].payment < key { low = middle + 1 } else { high = middle }
        }
        guard low < index.count, entries[Int(index[low])].payment == key else { return nil }
        return [entries[Int(index[low])].charge.charge(of: paymentIntent)]
    }
}

/// Text of up to 32 UTF-8 bytes held inline (Stripe's ids are 27 or so ASCII characters): no allocation,
/// where a `String` of more than 15 bytes takes one.
struct InlineText: Hashable, Comparable, Sendable {
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

    /// An order of the bytes (not the text's): enough for a sorted index.
    static func < (left: InlineText, right: InlineText) -> Bool {
        (left.words.0, left.words.1, left.words.2, left.words.3, left.count) < (
            right.words.0, right.words.1, right.words.2, right.words.3, right.count
        )
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
