/// The store a purchase was made in: the grants table's `store` (`clawback.store` in the schema), carried by
/// every grant, check and ledger entry so that one ledger holds every store and finance can tell them apart.
///
/// An open set: a store is what a driver registers (its `StoreDescription`, in the `StoreCatalog`), and the
/// shared code asks the catalog for a store's words and rules instead of naming one. A stored value no
/// registered driver knows does not decode: a newer clawback's store stops an older one rather than reading
/// as another store.
public struct Store: RawRepresentable, Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: String

    /// A registered store; nil for a value no driver registered.
    public init?(rawValue: String) {
        guard StoreCatalog.description(named: rawValue) != nil else { return nil }
        self.rawValue = rawValue
    }

    /// A store's identity as its driver declares it (the `clawback.store` value), before it is registered.
    public init(identifier: String) { rawValue = identifier }

    public var description: String { rawValue }

    /// Who speaks for the store in messages for people ("Apple", "Google").
    public var company: String { StoreCatalog.description(of: self)?.company ?? rawValue }

    /// For people ("App Store", "Google Play").
    public var displayName: String { StoreCatalog.description(of: self)?.displayName ?? rawValue }

    public static func < (lhs: Store, rhs: Store) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let store = Store(rawValue: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "no registered store is \(text)"))
        }
        self = store
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension Verdict {
    /// Whether a run of `store`'s grants can reach this verdict (for summaries that list only those): every
    /// verdict no store claims as its own, and the store's own (its "unknown" verdict, and the others its
    /// description names). `unknown_to_store` is only the stores' that conclude it.
    public func applies(to store: Store) -> Bool {
        let owners = StoreCatalog.descriptions.filter { $0.ownVerdicts.contains(self) }
        guard !owners.isEmpty else { return self != .unknownToStore }
        return owners.contains { $0.store == store }
    }

    /// The verdict of a purchase `store` does not know: each store's under the name finance reads
    /// (`unknown_to_store` for a store that declares none of its own).
    public static func unknown(to store: Store) -> Verdict {
        StoreCatalog.description(of: store)?.unknownVerdict ?? .unknownToStore
    }
}

extension Verdict {
    /// A store does not know the purchase: some store's `unknownVerdict` (a review, never units).
    public var isUnknownToItsStore: Bool {
        self == .unknownToStore || StoreCatalog.descriptions.contains { $0.unknownVerdict == self }
    }
}
