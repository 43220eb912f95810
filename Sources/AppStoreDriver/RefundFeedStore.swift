import Foundation
import Job
import Reconciliation

/// The refund feeds' latest entry per purchase, held compactly.
///
/// At 10,000,000 grants a quarter's feeds name about 100,000 purchases. Held as `[String: Entry]` (a
/// `bundle|environment|transaction` key string and a 220-byte `StoreStatement` inline per bucket, every bucket of
/// the dictionary's capacity paid for, and a handful of heap strings per entry) that took about 120 MB at the
/// peak of a resize: most of B4's 187 MB at 10,000,000 grants. Here a bucket is a 16-byte key and a 4-byte
/// position; an entry is 80 bytes in one array; the strings purchases share (environment, bundle, product,
/// currency, storefront, revocation type) are stored once; a transaction id of decimal digits is a number.
///
/// Lossless: `entry(feed:transactionID:)` gives back exactly the `Entry` merged in (a test round-trips
/// generated entries, hostile strings and ids that are not canonical numbers among them).
struct RefundFeedStore {
    /// A purchase's place: its feed (`bundle|environment`, by number) and its transaction id as a number when
    /// it is one written canonically (digits, no leading zero), which maps back to exactly the same text.
    private struct NumericKey: Hashable {
        let id: UInt64
        let feed: UInt16
    }

    /// Any other transaction id: kept as text (Apple's ids are digits, so in practice none).
    private struct TextKey: Hashable {
        let id: String
        let feed: UInt16
    }

    /// An entry as stored: optional numbers carry a presence bit in `present`; strings are table positions.
    private struct Stored {
        var date: Date
        var revocationDate: Date
        var priceMilli: Int64
        var quantity: Int32
        var revocationReason: Int32
        var revocationPercentage: Int32
        var environment: UInt32
        var bundleID: UInt32
        var productID: UInt32
        var currency: UInt32
        var storefront: UInt32
        /// The unknown kind's text (a position), for `RefundKindTag.unknown` only.
        var unknownKind: UInt32
        var appAccountToken: String?
        var flags: UInt8
        var kind: RefundKindTag
    }

    /// The refund's kind in a byte: the kinds are kept apart exactly (an App Store type this version does not
    /// know stays unknown, whatever its text).
    private enum RefundKindTag: UInt8 {
        case none, full, prorated, familyRevoke, chargeback, fraud, unknown
    }

    private enum Flag {
        static let reversal: UInt8 = 1 << 0
        static let tied: UInt8 = 1 << 1
        static let reportsAppAccountToken: UInt8 = 1 << 2
        static let quantity: UInt8 = 1 << 3
        static let revocationDate: UInt8 = 1 << 4
        static let revocationReason: UInt8 = 1 << 5
        static let revocationPercentage: UInt8 = 1 << 6
        static let priceMilli: UInt8 = 1 << 7
    }

    private var feedNumbers: [String: UInt16] = [:]
    private var feeds: [String] = []
    private var strings = StringTable()
    private var numeric: [NumericKey: Int32] = [:]
    private var text: [TextKey: Int32] = [:]
    private var entries: ContiguousArray<Stored> = []

    /// Purchases held.
    var count: Int { entries.count }

    /// Every transaction id held, in no set order.
    var transactionIDs: [String] {
        var all: [String] = []
        all.reserveCapacity(count)
        for (key, _) in numeric { all.append(String(key.id)) }
        for (key, _) in text { all.append(key.id) }
        return all
    }

    /// The entry standing for `transactionID` in `feed`, if the feeds named it.
    func entry(feed: String, transactionID: String) -> NotificationFeedGateway.Entry? {
        guard let feedNumber = feedNumbers[feed], let position = position(feedNumber, transactionID) else { return nil }
        return decode(entries[Int(position)], transactionID: transactionID)
    }

    /// Keeps whichever of `entry` and the entry already held stands (`Entry.merge`).
    mutating func merge(_ entry: NotificationFeedGateway.Entry, feed: String) {
        let feedNumber = number(ofFeed: feed)
        let transactionID = entry.facts.transactionID
        if let position = position(feedNumber, transactionID) {
            let existing = decode(entries[Int(position)], transactionID: transactionID)
            entries[Int(position)] = encode(NotificationFeedGateway.Entry.merge(entry, into: existing))
            return
        }
        let position = Int32(entries.count)
        entries.append(encode(entry))
        if let id = Self.canonicalNumber(transactionID) {
            numeric[NumericKey(id: id, feed: feedNumber)] = position
        } else {
            text[TextKey(id: transactionID, feed: feedNumber)] = position
        }
    }

    mutating func removeAll() { self = RefundFeedStore() }

    private func position(_ feed: UInt16, _ transactionID: String) -> Int32? {
        if let id = Self.canonicalNumber(transactionID) { return numeric[NumericKey(id: id, feed: feed)] }
        return text[TextKey(id: transactionID, feed: feed)]
    }

    private mutating func number(ofFeed feed: String) -> UInt16 {
        if let number = feedNumbers[feed] { return number }
        // Feeds are an app and an environment each: a studio has a handful.
        precondition(feeds.count < Int(UInt16.max), "more than 65,535 refund feeds")
        let number = UInt16(feeds.count)
        feeds.append(feed)
        feedNumbers[feed] = number
        return number
    }

    /// `text` as a number when `String(number)` gives back exactly `text`: 1 to 20 ASCII digits without a
    /// leading zero (or "0" itself), within UInt64.
    static func canonicalNumber(_ text: String) -> UInt64? {
        var text = text
        return text.withUTF8(canonicalNumber)
    }

    private static func canonicalNumber(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard !bytes.isEmpty, bytes.count <= 20, bytes[0] != UInt8(ascii: "0") || bytes.count == 1 else { return nil }
        var value: UInt64 = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    private mutating func encode(_ entry: NotificationFeedGateway.Entry) -> Stored {
        let facts = entry.facts
        var flags: UInt8 = 0
        if entry.reversal { flags |= Flag.reversal }
        if entry.tied { flags |= Flag.tied }
        if facts.reportsAppAccountToken { flags |= Flag.reportsAppAccountToken }
        if facts.quantity != nil { flags |= Flag.quantity }
        if facts.revocationDate != nil { flags |= Flag.revocationDate }
        if facts.refundReason != nil { flags |= Flag.revocationReason }
        if facts.revocationPercentage != nil { flags |= Flag.revocationPercentage }
        if facts.priceMilli != nil { flags |= Flag.priceMilli }
        var unknownKind: String?
        let kind: RefundKindTag
        switch facts.refundKind {
        case nil: kind = .none
        case .full: kind = .full
        case .prorated: kind = .prorated
        case .familyRevoke: kind = .familyRevoke
        case .chargeback: kind = .chargeback
        case .fraud: kind = .fraud
        case .unknown(let text):
            kind = .unknown
            unknownKind = text
        }
        return Stored(
            date: entry.date, revocationDate: facts.revocationDate ?? Date(timeIntervalSinceReferenceDate: 0),
            priceMilli: facts.priceMilli ?? 0, quantity: facts.quantity ?? 0, revocationReason: facts.refundReason?.rawValue ?? 0,
            revocationPercentage: facts.revocationPercentage ?? 0, environment: strings.position(of: facts.environment?.rawValue),
            bundleID: strings.position(of: facts.bundleID), productID: strings.position(of: facts.productID),
            currency: strings.position(of: facts.currency), storefront: strings.position(of: facts.storefront),
            unknownKind: strings.position(of: unknownKind), appAccountToken: facts.appAccountToken, flags: flags, kind: kind)
    }

    private func decode(_ stored: Stored, transactionID: String) -> NotificationFeedGateway.Entry {
        func has(_ flag: UInt8) -> Bool { stored.flags & flag != 0 }
        let kind: RefundKind? =
            switch stored.kind {
            case .none: nil
            case .full: .full
            case .prorated: .prorated
            case .familyRevoke: .familyRevoke
            case .chargeback: .chargeback
            case .fraud: .fraud
            case .unknown: .unknown(strings.string(at: stored.unknownKind) ?? "")
            }
        let facts = StoreStatement(
            transactionID: transactionID, environment: strings.string(at: stored.environment).map(StoreEnvironment.init(rawValue:)),
            bundleID: strings.string(at: stored.bundleID),
            productID: strings.string(at: stored.productID), quantity: has(Flag.quantity) ? stored.quantity : nil,
            appAccountToken: stored.appAccountToken, reportsAppAccountToken: has(Flag.reportsAppAccountToken),
            revocationDate: has(Flag.revocationDate) ? stored.revocationDate : nil, refundKind: kind,
            refundReason: has(Flag.revocationReason) ? RevocationReason(rawValue: stored.revocationReason) : nil,
            revocationPercentage: has(Flag.revocationPercentage) ? stored.revocationPercentage : nil,
            priceMilli: has(Flag.priceMilli) ? stored.priceMilli : nil, currency: strings.string(at: stored.currency),
            storefront: strings.string(at: stored.storefront))
        return NotificationFeedGateway.Entry(date: stored.date, reversal: has(Flag.reversal), facts: facts, tied: has(Flag.tied))
    }
}

/// Strings many entries share, each stored once; position 0 is nil.
private struct StringTable {
    private var positions: [String: UInt32] = [:]
    private var strings: [String] = []

    mutating func position(of string: String?) -> UInt32 {
        guard let string else { return 0 }
        if let position = positions[string] { return position }
        strings.append(string)
        let position = UInt32(strings.count)
        positions[string] = position
        return position
    }

    func string(at position: UInt32) -> String? { position == 0 ? nil : strings[Int(position) - 1] }
}
