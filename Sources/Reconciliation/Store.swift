/// The store a purchase was made in: the grants table's `store` (`clawback.store` in the schema), carried by
/// every grant, check and ledger entry so that one ledger holds both stores and finance can tell them apart.
public enum Store: String, Sendable, Equatable, CaseIterable, Codable {
    case appStore = "app_store"
    case googlePlay = "google_play"

    /// Who speaks for the store in messages for people: "Apple", "Google".
    public var company: String {
        switch self {
        case .appStore: "Apple"
        case .googlePlay: "Google"
        }
    }

    /// For people: "App Store", "Google Play".
    public var displayName: String {
        switch self {
        case .appStore: "App Store"
        case .googlePlay: "Google Play"
        }
    }
}

extension Verdict {
    /// Whether a run of `store`'s grants can reach this verdict (for summaries that list only those).
    public func applies(to store: Store) -> Bool {
        switch self {
        case .unknownToApple, .noRefundReported: store == .appStore
        case .unknownToGoogle: store == .googlePlay
        case .ok, .refunded, .revoked, .refundReversed, .mismatch, .unverified: true
        }
    }
}

extension Verdict {
    /// The verdict of a purchase `store` does not know: each store's under the name finance reads.
    public static func unknown(to store: Store) -> Verdict {
        switch store {
        case .appStore: .unknownToApple
        case .googlePlay: .unknownToGoogle
        }
    }
}
