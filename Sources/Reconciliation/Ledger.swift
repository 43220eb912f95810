/// The kinds of clawback ledger entries.
public enum LedgerKind: String, Sendable, Equatable, CaseIterable {
    /// A refund or revocation was found: units to take back.
    case clawback
    /// An earlier clawback changed (a prorated refund became full): the difference.
    case adjustment
    /// The store reversed the refund: units to give back (negative), closing the clawback it names.
    case reversal
    /// Flagged for a person (unknown to the store, mismatch); no units unless configured.
    case review
}

/// How the game (or staff) acknowledged an entry: final, one per entry (clawback.ledger_acknowledgements).
public enum AcknowledgementOutcome: String, Sendable, Equatable, CaseIterable {
    /// Every unit applied.
    case applied
    /// Some units applied (the wallet held fewer); `units_applied` says how many.
    case partial
    /// Staff decided not to take the units back, with a reason.
    case waived
    /// A later entry of the same transaction replaced it before the game applied it.
    case superseded
}

/// An entry already in the ledger for a transaction.
public struct LedgerEntry: Sendable, Equatable {
    public var entryID: Int64
    public var kind: LedgerKind
    public var idempotencyKey: String
    /// > 0 taken back, < 0 given back.
    public var units: Int64
    public var reversesEntryID: Int64?

    public init(entryID: Int64, kind: LedgerKind, idempotencyKey: String, units: Int64, reversesEntryID: Int64? = nil) {
        self.entryID = entryID
        self.kind = kind
        self.idempotencyKey = idempotencyKey
        self.units = units
        self.reversesEntryID = reversesEntryID
    }
}

/// A transaction's ledger so far.
public struct LedgerHistory: Sendable, Equatable {
    public var entries: [LedgerEntry]

    public init(_ entries: [LedgerEntry] = []) { self.entries = entries }

    /// Units currently taken back from the player (clawbacks and adjustments minus reversals).
    public var outstandingUnits: Int64 { entries.filter { $0.kind != .review }.reduce(0) { $0 + $1.units } }

    /// The most recent entry that took units back (a clawback, or an adjustment upwards) and that no
    /// reversal has closed yet: what a reversal refers to.
    public var lastOpenTakeBack: LedgerEntry? {
        let reversed = Set(entries.compactMap(\.reversesEntryID))
        return entries.last { ($0.kind == .clawback || $0.kind == .adjustment) && $0.units > 0 && !reversed.contains($0.entryID) }
    }

    public func contains(key: String) -> Bool { entries.contains { $0.idempotencyKey == key } }
}

/// An entry to write. Its idempotency key is derived from the store's statement, so writing the same decision
/// twice (a rerun, a resumed run, an overlapping shard) collides on the ledger's unique key instead of
/// writing twice.
public struct LedgerEntryDraft: Sendable, Equatable {
    public var kind: LedgerKind
    public var idempotencyKey: String
    public var units: Int64
    public var reversesEntryID: Int64?
    /// Why, for review entries ("unknown_to_apple", "mismatch: product_id").
    public var reason: String?

    public init(kind: LedgerKind, idempotencyKey: String, units: Int64, reversesEntryID: Int64? = nil, reason: String? = nil) {
        self.kind = kind
        self.idempotencyKey = idempotencyKey
        self.units = units
        self.reversesEntryID = reversesEntryID
        self.reason = reason
    }
}
